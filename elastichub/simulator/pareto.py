"""The Pareto plot: cloud node-hours against p95 and max waiting time.

One point per run (strategy x mode x theta_out), joined along theta_out
within a strategy and mode. Points no other run beats on both cost and
waiting (the Pareto front) are ringed: an admin picks among those. Written by
`elastichub simulate --out DIR` when several policies or thetas ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

MARKERS = {"migration": "o", "no-migration": "s", "onprem-only": "X"}


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates (lower or equal on
    both coordinates, lower on one), sorted by the first coordinate."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], float("inf")
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def wants_pareto(summaries: Sequence[dict[str, Any]]) -> bool:
    combos = {(s["policy"], s["theta_out"]) for s in summaries if s["theta_out"] is not None}
    return len(combos) > 1


def plot_pareto(summaries: Sequence[dict[str, Any]], out: Path, caption: str | None = None) -> Path | None:
    if not wants_pareto(summaries):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    policies = sorted({s["policy"] for s in summaries})
    colors = {p: plt.get_cmap("tab10")(i % 10) for i, p in enumerate(policies)}
    groups: dict[tuple[str, str], list[dict]] = {}
    for s in summaries:
        groups.setdefault((s["policy"], s["mode"]), []).append(s)
    for runs in groups.values():
        runs.sort(key=lambda s: -1 if s["theta_out"] is None else s["theta_out"])
    cloud = [s for s in summaries if s["theta_out"] is not None]
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    for ax, metric, title in ((axes[0], "wait_p95_s", "p95 waiting time"),
                              (axes[1], "wait_max_s", "max waiting time")):
        for (policy, mode), runs in sorted(groups.items()):
            x = [s["cloud_node_hours"] for s in runs]
            y = [s[metric] for s in runs]
            ax.plot(x, y, marker=MARKERS.get(mode, "o"), color=colors[policy], lw=1,
                    ls="-" if mode == "migration" else ":", label=f"{policy} {mode}")
            for s in runs:
                if s["theta_out"] is not None:
                    ax.annotate(f"{s['theta_out']:g}", (s["cloud_node_hours"], s[metric]),
                                textcoords="offset points", xytext=(4, 4), fontsize=7, color=colors[policy])
        ring_front(ax, [(s["cloud_node_hours"], s[metric]) for s in cloud])
        ax.set_ylabel(f"{title} (s)")
        ax.set_title(f"cost vs {title} (labels: theta_out %)")
    return save(fig, axes, "Strategies x theta_out: lower-left is better", out / "pareto.png", caption)


def ring_front(ax, points: Sequence[tuple[float, float]]) -> None:
    """Ring the Pareto front of (node-hours, wait) points on a cost axis."""
    front = pareto_front(points)
    ax.scatter([points[i][0] for i in front], [points[i][1] for i in front],
               s=160, facecolors="none", edgecolors="black", lw=1.2, label="Pareto front", zorder=3)
    ax.set_xlabel("cloud node-hours")
    ax.grid(alpha=0.3)


def save(fig, axes, title: str, path: Path, caption: str | None = None) -> Path:
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    return finish(fig, path, caption, dpi=100)


def finish(fig, path: Path, caption: str | None, dpi: int) -> Path:
    """Lay out, write and close a figure; `caption`, what the replay left out, under it (a plot passed on
    alone must not read as the whole history)."""
    import textwrap

    import matplotlib.pyplot as plt

    if caption:
        lines = textwrap.fill(caption, int(fig.get_figwidth() * 17), break_on_hyphens=False, break_long_words=False)
        fig.text(0.01, 0.01, lines, fontsize=7, va="bottom", ha="left")
        fig.tight_layout(rect=(0, (0.15 + 0.13 * (lines.count("\n") + 1)) / fig.get_figheight(), 1, 1))
    else:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
