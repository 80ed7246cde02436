#!/usr/bin/env python
"""Is `elastic` no worse than `paper` on every axis, at every threshold?

For each workload (the paper scenario seeds 1-10, `teaching-day`, `weekend`),
theta_out and mode (no-migration, migration): `elastic`'s cloud node-hours,
p95 wait and max wait against `paper`'s, same workload, theta and mode.
A cell is "dominates" when elastic is no worse on all three and better on at
least one, "equal" when all three are equal, else it names the axes where
elastic is worse, with both values. Uses every core (one process per
workload).

    python benchmarks/dominance.py [--seeds 1-10] [--thetas 60,70,80,90,95] [--option theta_in=5 ...]
                                   [--move-method restart|live] [--hub cloud_node_ru=100 ...]
                                   [--lifetime-mean-min 30 --lifetime-sd-min 7.5]
    python benchmarks/dominance.py --ablation-plot docs/_static/strategies-dominance.png

`--ablation-plot` runs the whole table once per variant of the issue-12
rules (`ABLATION`) and draws, per theta_out, the cells where `elastic` is
worse and its node-hours and max wait relative to `paper`. `--timeline-plot`
draws cloud nodes and queue over day 2's class bursts, paper seed 1 at
theta_out 90 with migration, for `paper` and `elastic` with thrift 0 and 1;
`--standing-plot` `paper` and `elastic` with and without the standing
reserve against theta_out (seed 1, migration).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time

from elastichub.simulator import ClusterParams, make_workload
from elastichub.simulator.workload import LifetimeModel
from elastichub.simulator.runner import STRATEGY_OPTIONS, plan_runs, run_all, summary

AXES = (("cloud_node_hours", "node-h"), ("wait_p95_s", "p95"), ("wait_max_s", "max"))
MODES = ["no-migration", "migration"]


def _one(job):
    name, seed, thetas, options, hub, lifetime = job
    workload = make_workload(name, seed=seed, lifetime=LifetimeModel(**lifetime))
    params = ClusterParams(**hub)
    if options:
        base = STRATEGY_OPTIONS["elastic"]
        STRATEGY_OPTIONS["elastic"] = lambda w, p: {**base(w, p), **options}
    results = run_all(plan_runs(["paper", "elastic"], MODES, thetas), workload, params, seed)
    rows = {(r.policy, r.mode, r.theta_out): summary(r) for r in results}
    cells = []
    for mode in MODES:
        for theta in thetas:
            p, e = rows[("paper", mode, theta)], rows[("elastic", mode, theta)]
            worse = [(label, e[key], p[key]) for key, label in AXES if e[key] > p[key] + 1e-9]
            better = [label for key, label in AXES if e[key] < p[key] - 1e-9]
            cells.append({"workload": f"{name}:{seed}", "mode": mode, "theta": theta, "worse": worse,
                          "better": better, "paper": [p[k] for k, _ in AXES], "elastic": [e[k] for k, _ in AXES]})
    return cells


def run_cells(workloads, seeds, thetas, options, hub=None, lifetime=None) -> tuple[list[dict], float]:
    """Every cell; `hub`: ClusterParams fields to change, `lifetime`:
    LifetimeModel fields (seconds) of the generated workloads."""
    jobs = []
    for name in workloads:
        for seed in (seeds if name == "paper" else [1]):
            jobs.append((name, seed, thetas, options, hub or {}, lifetime or {}))
    t0 = time.perf_counter()
    with multiprocessing.Pool() as pool:
        cells = [c for chunk in pool.map(_one, jobs) for c in chunk]
    return cells, time.perf_counter() - t0


def table(cells: list[dict], thetas: list[float]) -> str:
    """Cells where elastic is worse on some axis, per theta_out and mode."""
    lines = [f"{'theta_out':>9} " + " ".join(f"{m:>13}" for m in MODES) + f" {'of':>4}"]
    for theta in thetas:
        row = [c for c in cells if c["theta"] == theta]
        counts = [sum(1 for c in row if c["mode"] == m and c["worse"]) for m in MODES]
        lines.append(f"{theta:9g} " + " ".join(f"{n:13d}" for n in counts) + f" {len(row):4d}")
    return "\n".join(lines)


def mean_table(cells: list[dict], thetas: list[float]) -> str:
    """Per theta_out and mode, each axis averaged over the workloads, paper
    -> elastic, and whether elastic is no worse on all three (the question
    asked of one hub over many days, rather than of every day)."""
    lines = [f"{'theta_out':>9} {'mode':13} {'node-h':>17} {'p95 wait s':>17} {'max wait s':>17}  elastic"]
    for theta in thetas:
        for mode in MODES:
            row = [c for c in cells if c["theta"] == theta and c["mode"] == mode]
            p = [sum(c["paper"][i] for c in row) / len(row) for i in range(len(AXES))]
            e = [sum(c["elastic"][i] for c in row) / len(row) for i in range(len(AXES))]
            verdict = "no worse" if all(b <= a + 1e-9 for a, b in zip(p, e)) else "worse"
            lines.append(f"{theta:9g} {mode:13} " + " ".join(f"{a:7.2f} -> {b:7.2f}" for a, b in zip(p, e))
                         + f"  {verdict}")
    return "\n".join(lines)


# (label, elastic options): the rules of issue 12 taken away one by one
ABLATION = (
    ("thrift 0: no departures, no patience", {"thrift": 0.0}),
    ("thrift 1, no patience: departures only", {"thrift": 1.0, "queue_patience_s": 0.0}),
    ("default: thrift 0 up to 80 %, 1 from 90 %", {}),
    ("thrift 1 at every theta_out", {"thrift": 1.0}),
)


def ablation_plot(path: str, workloads, seeds, thetas) -> None:
    import statistics

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    width = 0.8 / len(ABLATION)
    for k, (label, options) in enumerate(ABLATION):
        cells, wall = run_cells(workloads, seeds, thetas, options)
        print(f"{label}: {sum(1 for c in cells if c['worse'])} cells worse ({wall:.0f} s)")
        print(table(cells, thetas))
        xs = [i + (k - (len(ABLATION) - 1) / 2) * width for i in range(len(thetas))]
        worse = [sum(1 for c in cells if c["theta"] == t and c["worse"]) for t in thetas]
        axes[0].bar(xs, worse, width, label=label)
        for ax, axis in ((axes[1], 0), (axes[2], 2)):
            ratios = [statistics.median(c["elastic"][axis] / c["paper"][axis] for c in cells
                                        if c["theta"] == t and c["paper"][axis] > 0) for t in thetas]
            ax.plot(range(len(thetas)), ratios, marker="o", label=label)
    titles = ("cells where elastic is worse than paper (of 24)", "elastic / paper cloud node-hours (median)",
              "elastic / paper max wait (median)")
    for ax, title in zip(axes, titles):
        ax.set_xticks(range(len(thetas)), [f"{t:g}" for t in thetas])
        ax.set_xlabel("theta_out (%)")
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[1:]:
        ax.axhline(1.0, color="black", lw=0.8)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote", path)


def timeline_plot(path: str, seed: int = 1, mode: str = "migration", theta: float = 90.0) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from elastichub.simulator.runner import RunSpec, execute

    workload, params = make_workload("paper", seed=seed), ClusterParams()
    runs = (("paper", "paper", {}), ("elastic, thrift 0 (no departures, no patience)", "elastic", {"thrift": 0.0}),
            ("elastic (default: thrift 1 at 90 %)", "elastic", {}))
    lo, hi = 36.5 * 3600, 41.5 * 3600
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    for label, policy, options in runs:
        result = execute(RunSpec(policy, mode, theta, options=options), workload, params, seed)
        s = summary(result)
        rows = [r for r in result.series if lo <= r[0] <= hi]
        hours = [r[0] / 3600 - 24 for r in rows]
        text = f"{label}: {s['cloud_node_hours']:.1f} node-h, p95 {s['wait_p95_s']:.0f} s, max {s['wait_max_s']} s"
        top.step(hours, [r[3] + r[4] for r in rows], where="post", label=text)
        bottom.step(hours, [r[1] for r in rows], where="post", label=label)
    top.set_ylabel("cloud nodes (up + booting)")
    bottom.set_ylabel("new requests queued")
    bottom.set_xlabel(f"hour of day 2 (paper scenario, seed {seed}, {mode}, theta_out {theta:g} %)")
    top.legend(fontsize=8, loc="center")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote", path)


def standing_plot(path: str, seed: int = 1, mode: str = "migration") -> None:
    """`paper` and `elastic` with and without the standing reserve against
    theta_out: cloud node-hours, p95 and max wait (paper scenario)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from elastichub.simulator.runner import RunSpec, execute

    workload, params = make_workload("paper", seed=seed), ClusterParams()
    thetas = [60.0, 65.0, 70.0, 75.0, 80.0, 85.0, 90.0, 95.0]
    runs = (("paper", "paper", {}), ("elastic, no standing reserve", "elastic", {"standing_reserve": 0.0}),
            ("elastic (default)", "elastic", {}))
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for label, policy, options in runs:
        rows = [summary(execute(RunSpec(policy, mode, t, options=options), workload, params, seed)) for t in thetas]
        for ax, key in zip(axes, ("cloud_node_hours", "wait_p95_s", "wait_max_s")):
            ax.plot(thetas, [r[key] for r in rows], marker="o", label=label)
    for ax, title in zip(axes, ("cloud node-hours", "p95 wait (s)", "max wait (s)")):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(f"theta_out (%), paper scenario seed {seed}, {mode}")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote", path)


def _value(text: str):
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return float(text)
    except ValueError:
        return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--thetas", default="60,70,80,90,95")
    ap.add_argument("--workloads", default="paper,teaching-day,weekend")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="an elastic strategy option to try (a number, or a word)")
    ap.add_argument("--move-method", default="restart", choices=("restart", "live"),
                    help="how moved servers move (both strategies alike; default the paper's restart)")
    ap.add_argument("--hub", action="append", default=[], metavar="NAME=VALUE",
                    help="another hub: a ClusterParams field, e.g. cloud_node_ru=100 or cloud_boot_s=600")
    ap.add_argument("--lifetime-mean-min", type=float, help="session lifetime of the workloads (default 60)")
    ap.add_argument("--lifetime-sd-min", type=float, help="its standard deviation (default 15)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--ablation-plot", metavar="PNG", help="run every variant of ABLATION and draw them")
    ap.add_argument("--timeline-plot", metavar="PNG", help="draw day 2's bursts for paper and elastic")
    ap.add_argument("--standing-plot", metavar="PNG", help="elastic with and without the standing reserve")
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    thetas = [float(t) for t in a.thetas.split(",")]
    workloads = a.workloads.split(",")
    if a.standing_plot:
        standing_plot(a.standing_plot)
    if a.ablation_plot or a.timeline_plot or a.standing_plot:
        if a.ablation_plot:
            ablation_plot(a.ablation_plot, workloads, seeds, thetas)
        if a.timeline_plot:
            timeline_plot(a.timeline_plot)
        return 0
    options = {k: _value(v) for k, v in (o.split("=", 1) for o in a.option)}
    hub = {"move_method": a.move_method, **{k: _value(v) for k, v in (h.split("=", 1) for h in a.hub)}}
    lifetime = {k: 60.0 * v for k, v in (("mean_s", a.lifetime_mean_min), ("sd_s", a.lifetime_sd_min))
                if v is not None}
    cells, wall = run_cells(workloads, seeds, thetas, options, hub, lifetime)
    bad = [c for c in cells if c["worse"]]
    if a.json:
        print(json.dumps({"cells": cells, "worse": len(bad), "wall_s": round(wall, 1)}, indent=2))
        return 0 if not bad else 1
    for c in bad:
        detail = ", ".join(f"{label} {e:g} vs {p:g}" for label, e, p in c["worse"])
        print(f"WORSE  {c['workload']:15} {c['mode']:12} theta {c['theta']:4g}: {detail}"
              f"   (elastic {c['elastic']}, paper {c['paper']})")
    print(table(cells, thetas))
    print("means over the workloads, paper -> elastic:")
    print(mean_table(cells, thetas))
    dominated = sum(1 for c in cells if not c["worse"] and c["better"])
    equal = sum(1 for c in cells if not c["worse"] and not c["better"])
    print(f"{len(cells)} cells: elastic dominates in {dominated}, equal in {equal}, worse on some axis in "
          f"{len(bad)} ({wall:.0f} s)")
    if bad:
        by_axis = ", ".join(f"{label} {sum(1 for c in bad if any(w[0] == label for w in c['worse']))}"
                            for _, label in AXES)
        both = sum(1 for c in bad if len(c["better"]) == len(AXES) - 1)
        print(f"worse cells by axis: {by_axis}; better on both other axes in {both} of them")
    return 0 if not bad else 1


if __name__ == "__main__":
    raise SystemExit(main())
