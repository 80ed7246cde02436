"""Reports: the table, the JSON document and per-second CSV time series."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from .engine import RunResult
from .runner import RunSpec

# Per-second CSV columns (docs/simulator.md explains each).
SERIES_COLUMNS = (
    "t_s",
    "queue_len",  # new requests waiting for room
    "max_wait_s",  # how long the oldest of them has waited so far
    "cloud_active",  # cloud nodes Ready (cordoned ones draining included)
    "cloud_booting",  # cloud VMs started, not Ready yet
    "ram_occupancy_pct",  # RAM requests / RAM of running nodes
    "cpu_occupancy_pct",
    "onprem_ram_pct",  # RAM requests on on-prem nodes / on-prem RAM
    "moved_waiting",  # moved servers waiting for room (their delay is downtime, not a wait)
)


def per_second(result: RunResult) -> dict[str, Any]:
    """Expand the run's step-function series to one row per simulated second."""
    import numpy as np

    rows = np.array(result.series, dtype=float) if result.series else np.zeros((0, 11))
    seconds = np.arange(result.simulated_s, dtype=float)
    if len(rows) == 0:
        zeros = np.zeros_like(seconds)
        return {c: (seconds if c == "t_s" else zeros) for c in SERIES_COLUMNS}
    # Row in force at each second: the last change at or before it.
    idx = np.searchsorted(rows[:, 0], seconds, side="right") - 1
    valid = idx >= 0
    idx = np.clip(idx, 0, None)
    at = rows[idx]
    at[~valid] = 0.0
    queue, oldest = at[:, 1], at[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        ram = np.where(at[:, 8] > 0, at[:, 6] / at[:, 8] * 100.0, 0.0)
        cpu = np.where(at[:, 7] > 0, at[:, 5] / at[:, 7] * 100.0, 0.0)
    onprem = at[:, 9] / result.onprem_ram * 100.0 if result.onprem_ram else np.zeros_like(seconds)
    return {
        "t_s": seconds,
        "queue_len": queue,
        "max_wait_s": np.where(queue > 0, seconds - oldest, 0.0),
        "cloud_active": at[:, 3],
        "cloud_booting": at[:, 4],
        "ram_occupancy_pct": ram,
        "cpu_occupancy_pct": cpu,
        "onprem_ram_pct": onprem,
        "moved_waiting": at[:, 10],
    }


def run_filename(summary: dict[str, Any]) -> str:
    """POLICY-MODE[-thetaV]: the run's `RunSpec.label`."""
    return RunSpec(summary["policy"], summary["mode"], summary["theta_out"]).label


def write_series_csv(result: RunResult, path: Path) -> None:
    """One row per simulated second. Written straight from the step rows
    (each formatted once), which is several times faster than numpy's
    savetxt on two days of seconds."""
    rows = result.series
    onprem = result.onprem_ram
    lines = [",".join(SERIES_COLUMNS)]
    j = -1
    queue = oldest = 0
    tail = "0,0,0.00,0.00,0.00,0"
    for t in range(result.simulated_s):
        while j + 1 < len(rows) and rows[j + 1][0] <= t:
            j += 1
            _, queue, oldest, active, booting, cpu, ram, cpu_run, ram_run, onprem_ram, moved = rows[j]
            ram_pct = ram / ram_run * 100.0 if ram_run else 0.0
            cpu_pct = cpu / cpu_run * 100.0 if cpu_run else 0.0
            onprem_pct = onprem_ram / onprem * 100.0 if onprem else 0.0
            tail = f"{active},{booting},{ram_pct:.2f},{cpu_pct:.2f},{onprem_pct:.2f},{moved}"
        wait = t - oldest if queue else 0
        lines.append(f"{t},{queue},{wait},{tail}")
    path.write_text("\n".join(lines) + "\n")


def write_outputs(results: Sequence[RunResult], summaries: Sequence[dict], out: Path,
                  document: dict[str, Any]) -> list[Path]:
    """CSV per run, runs.json and runs.csv; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for result, summary in zip(results, summaries):
        path = out / f"{run_filename(summary)}.csv"
        write_series_csv(result, path)
        written.append(path)
    path = out / "runs.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    written.append(path)
    path = out / "runs.csv"
    flat = [{k: v for k, v in s.items() if not isinstance(v, (dict, list))} for s in summaries]
    if flat:
        lines = [",".join(flat[0])]
        lines += [",".join("" if v is None else str(v) for v in row.values()) for row in flat]
        path.write_text("\n".join(lines) + "\n")
        written.append(path)
    return written


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


TABLE_COLUMNS = (
    ("policy", "policy"),
    ("mode", "mode"),
    ("theta_out", "theta_out"),
    ("cloud_node_hours", "node-h"),
    ("wait_mean_s", "wait mean s"),
    ("wait_p95_s", "p95 s"),
    ("wait_max_s", "max s"),
    ("waited", "waited"),
    ("servers", "servers"),
    ("migrations", "migr."),
    ("migration_downtime_max_s", "down max s"),
    ("scale_outs", "outs"),
    ("scale_ins", "ins"),
    ("wall_s", "wall s"),
)


def format_table(summaries: Sequence[dict[str, Any]]) -> str:
    header = [title for _, title in TABLE_COLUMNS]
    rows = []
    for s in summaries:
        row = []
        for key, _ in TABLE_COLUMNS:
            value = s[key]
            row.append(f"{value:.2f}" if key == "wall_s" else _fmt(value))
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    left = {0, 1}  # text columns

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = [line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    for s in summaries:  # their waits are counted up to the end: a floor, and easy to miss in the row
        if s.get("still_queued"):
            out.append(f"note: {s['policy']} {s['mode']} {_fmt(s['theta_out'])}: {s['still_queued']} server(s) "
                       "still waiting when the simulation ends (no room for them in this mode, or not yet), "
                       "counted as waiting until then: the run's waits are at least those shown")
    return "\n".join(out)


def is_terminal(stream) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False
