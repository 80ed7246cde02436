"""PNG plots of a set of runs (matplotlib, from the `[sim]` extra).

Time series are drawn per minute (max of the waiting time, mean of the
rest) so two days stay readable and fast to draw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .engine import RunResult
from .report import per_second, run_filename

BIN_S = 60


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt
    from cycler import cycler

    # Sweeps draw a dozen lines: tab20's ten strong colours first, then
    # their light partners (the default cycle has only 10).
    colours = plt.get_cmap("tab20").colors
    plt.rcParams["axes.prop_cycle"] = cycler(color=colours[::2] + colours[1::2])
    return plt


def _binned(values, how: str):
    import numpy as np

    n = len(values) // BIN_S * BIN_S
    if n == 0:
        return np.asarray(values, dtype=float)
    chunks = np.asarray(values[:n], dtype=float).reshape(-1, BIN_S)
    return chunks.max(axis=1) if how == "max" else chunks.mean(axis=1)


def plot_timeseries(results: Sequence[RunResult], summaries: Sequence[dict], out: Path,
                    caption: str | None = None) -> list[Path]:
    plt = _pyplot()
    import numpy as np

    series = [per_second(r) for r in results]
    hours = [np.arange(len(_binned(s["t_s"], "mean"))) * BIN_S / 3600.0 for s in series]
    written = []

    fig, (ax_wait, ax_queue, ax_down) = plt.subplots(3, 1, figsize=(11, 9.5), sharex=True)
    for s, h, summary, result in zip(series, hours, summaries, results):
        line, = ax_wait.plot(h, _binned(s["max_wait_s"], "max"), lw=0.9, label=run_filename(summary))
        ax_queue.plot(h, _binned(s["queue_len"], "max"), lw=0.9)
        if result.downtimes:
            ax_down.scatter([t / 3600.0 for t, _ in result.downtimes], [d for _, d in result.downtimes],
                            s=8, color=line.get_color())
    ax_wait.set_ylabel("longest current wait (s)")
    ax_wait.set_yscale("symlog", linthresh=10)
    ax_wait.set_ylim(bottom=0)  # waits are never negative; symlog would show a mirror axis
    ax_wait.set_title("New requests waiting for a server (per minute, max)")
    ax_queue.set_ylabel("new requests waiting")
    ax_down.set_ylabel("downtime per move (s)")
    ax_down.set_ylim(bottom=0)
    ax_down.set_title("Migration downtime of moved servers (restart + wait for room): not a wait", fontsize=9)
    ax_down.set_xlabel("simulated time (h)")
    ax_wait.legend(fontsize=7, ncol=2)
    written.append(_save(fig, out / "waiting.png", caption))

    cloud_runs = [(s, h, sm) for s, h, sm in zip(series, hours, summaries) if sm["mode"] != "onprem-only"]
    if cloud_runs:
        # One panel per run: overlaid, the paper policy's start/stop churn is unreadable.
        fig, axes = plt.subplots(len(cloud_runs), 1, figsize=(11, 1.2 + 1.5 * len(cloud_runs)),
                                 sharex=True, sharey=True, squeeze=False)
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, ((s, h, summary), ax) in enumerate(zip(cloud_runs, axes[:, 0])):
            active = _binned(s["cloud_active"], "mean")
            booting = _binned(s["cloud_booting"], "mean")
            colour = colours[i % len(colours)]
            ax.fill_between(h, 0, active, step="post", color=colour, alpha=0.6, lw=0)
            ax.step(h, active + booting, where="post", lw=0.6, ls=":", color=colour)
            ax.set_title(f"{run_filename(summary)}: {summary['cloud_node_hours']:.1f} node-h", fontsize=8, loc="left")
            ax.set_ylabel("nodes", fontsize=8)
        axes[-1, 0].set_xlabel("simulated time (h)")
        fig.suptitle("Active cloud nodes (dotted: + booting)")
        written.append(_save(fig, out / "cloud_nodes.png", caption))

    fig, (ax_all, ax_onprem) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    for s, h, summary in zip(series, hours, summaries):
        ax_all.plot(h, _binned(s["ram_occupancy_pct"], "mean"), lw=0.8, label=run_filename(summary))
        ax_onprem.plot(h, _binned(s["onprem_ram_pct"], "mean"), lw=0.8)
    for theta in sorted({sm["theta_out"] for sm in summaries if sm["theta_out"] is not None}):
        ax_all.axhline(theta, color="grey", lw=0.5, ls="--")
    ax_all.set_ylabel("RAM requested / running nodes (%)")
    ax_all.set_title("Occupancy (dashed: theta_out)")
    ax_onprem.set_ylabel("on-prem RAM requested (%)")
    ax_onprem.set_xlabel("simulated time (h)")
    ax_all.legend(fontsize=7, ncol=2)
    written.append(_save(fig, out / "occupancy.png", caption))
    return written


def plot_tradeoff(summaries: Sequence[dict], out: Path, caption: str | None = None) -> Path:
    """Node-hours and waiting against theta_out, one line per policy and mode."""
    plt = _pyplot()
    fig, (ax_cost, ax_wait) = plt.subplots(1, 2, figsize=(12, 4.5))
    curves: dict[tuple[str, str], list[dict]] = {}
    for s in summaries:
        if s["theta_out"] is not None:
            curves.setdefault((s["policy"], s["mode"]), []).append(s)
    for (policy, mode), points in curves.items():
        points.sort(key=lambda p: p["theta_out"])
        x = [p["theta_out"] for p in points]
        label = f"{policy} {mode}"
        line, = ax_cost.plot(x, [p["cloud_node_hours"] for p in points], marker="o", label=label)
        color = line.get_color()
        ax_wait.plot(x, [p["wait_p95_s"] for p in points], marker="o", color=color, label=f"{label}: p95")
        ax_wait.plot(x, [p["wait_max_s"] for p in points], marker="^", ls="--", color=color, label=f"{label}: max")
    for s in summaries:
        if s["theta_out"] is None:  # on-prem only: the reference without cloud
            ax_wait.axhline(s["wait_max_s"], color="grey", ls=":", lw=1,
                            label=f"{s['policy']} on-prem only: max {s['wait_max_s']} s")
    ax_cost.set_xlabel("theta_out (% RAM)")
    ax_cost.set_ylabel("cloud node-hours")
    ax_cost.set_title("Cost")
    ax_wait.set_xlabel("theta_out (% RAM)")
    ax_wait.set_ylabel("waiting time (s)")
    ax_wait.set_yscale("symlog", linthresh=10)
    ax_wait.set_ylim(bottom=0)
    ax_wait.set_title("Waiting")
    if curves:  # on-prem-only runs draw no cost curve
        ax_cost.legend(fontsize=7)
    ax_wait.legend(fontsize=7)
    fig.suptitle("theta_out trade-off: lower thresholds start cloud nodes earlier")
    return _save(fig, out / "tradeoff.png", caption)


def _save(fig, path: Path, caption: str | None) -> Path:
    from .pareto import finish

    return finish(fig, path, caption, dpi=110)


def write_plots(results: Sequence[RunResult], summaries: Sequence[dict], out: Path,
                caption: str | None = None) -> list[Path]:
    """Every plot of the runs; `caption` (what the replay left out) under each."""
    from .pareto import plot_pareto

    out.mkdir(parents=True, exist_ok=True)
    pareto = plot_pareto(summaries, out, caption)  # None unless several policies or thetas ran
    return (plot_timeseries(results, summaries, out, caption) + [plot_tradeoff(summaries, out, caption)]
            + ([pareto] if pareto else []))
