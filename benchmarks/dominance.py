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
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time

from elastichub.simulator import ClusterParams, make_workload
from elastichub.simulator.runner import STRATEGY_OPTIONS, plan_runs, run_all, summary

AXES = (("cloud_node_hours", "node-h"), ("wait_p95_s", "p95"), ("wait_max_s", "max"))
MODES = ["no-migration", "migration"]


def _one(job):
    name, seed, thetas, options = job
    workload = make_workload(name, seed=seed)
    params = ClusterParams()
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


def _value(text: str):
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
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    thetas = [float(t) for t in a.thetas.split(",")]
    options = {k: _value(v) for k, v in (o.split("=", 1) for o in a.option)}
    jobs = []
    for name in a.workloads.split(","):
        for seed in (seeds if name == "paper" else [1]):
            jobs.append((name, seed, thetas, options))
    t0 = time.perf_counter()
    with multiprocessing.Pool() as pool:
        cells = [c for chunk in pool.map(_one, jobs) for c in chunk]
    wall = time.perf_counter() - t0
    bad = [c for c in cells if c["worse"]]
    if a.json:
        print(json.dumps({"cells": cells, "worse": len(bad), "wall_s": round(wall, 1)}, indent=2))
        return 0 if not bad else 1
    for c in bad:
        detail = ", ".join(f"{label} {e:g} vs {p:g}" for label, e, p in c["worse"])
        print(f"WORSE  {c['workload']:15} {c['mode']:12} theta {c['theta']:4g}: {detail}"
              f"   (elastic {c['elastic']}, paper {c['paper']})")
    dominated = sum(1 for c in cells if not c["worse"] and c["better"])
    equal = sum(1 for c in cells if not c["worse"] and not c["better"])
    print(f"{len(cells)} cells: elastic dominates in {dominated}, equal in {equal}, worse on some axis in "
          f"{len(bad)} ({wall:.0f} s)")
    return 0 if not bad else 1


if __name__ == "__main__":
    raise SystemExit(main())
