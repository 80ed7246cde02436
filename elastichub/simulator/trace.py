"""Replay of a hub's own history: a CSV trace of server requests.

Format (docs/simulator.md): a header row naming at least the columns
`arrival_s,duration_s,cpu,ram_gib` (any order; other columns are ignored),
then one row per server:

- arrival_s: when the user asked for the server, seconds from the start
- duration_s: how long the server ran once started, seconds (> 0)
- cpu: CPU request in cores; ram_gib: RAM request in GiB (>= 0, not both 0)

Rows need not be sorted. Every error names the file, the line and the column.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from ..policy import GiB, Resources
from .workload import HOUR_S, Request, Workload

COLUMNS = ("arrival_s", "duration_s", "cpu", "ram_gib")


class TraceError(ValueError):
    """A trace file that cannot be replayed; the message names the line."""


def load_trace(path: str | Path, largest_node: Resources, horizon_s: int | None = None) -> Workload:
    """Read and validate a trace. `largest_node` is the allocatable of the
    biggest node of the simulated cluster: a request above it could never
    run. `horizon_s` defaults to the end of the last server had it never
    waited, rounded up to a whole hour."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise TraceError(f"trace file {path}: not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise TraceError(f"trace file {path}: cannot read it ({e})") from None

    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None:
        raise TraceError(f"{path}: empty file, expected a header {','.join(COLUMNS)}")
    header = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise TraceError(f"{path} line 1: missing column(s) {', '.join(missing)} "
                         f"(header must name {','.join(COLUMNS)})")
    index = {c: header.index(c) for c in COLUMNS}

    requests = []
    for line_no, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        values = {}
        for column, i in index.items():
            where = f"{path} line {line_no}, column {column}"
            if i >= len(row) or not row[i].strip():
                raise TraceError(f"{where}: empty value")
            try:
                value = float(row[i])
            except ValueError:
                raise TraceError(f"{where}: not a number: {row[i].strip()!r}") from None
            if math.isnan(value) or math.isinf(value):
                raise TraceError(f"{where}: not a finite number: {row[i].strip()!r}")
            if value < 0:
                raise TraceError(f"{where}: negative value {value:g}")
            values[column] = value
        if values["duration_s"] <= 0:
            raise TraceError(f"{path} line {line_no}, column duration_s: must be > 0, got {values['duration_s']:g}")
        if values["cpu"] == 0 and values["ram_gib"] == 0:
            raise TraceError(f"{path} line {line_no}: cpu and ram_gib are both 0")
        req = Resources(values["cpu"], values["ram_gib"] * GiB)
        if req.cpu > largest_node.cpu:
            raise TraceError(f"{path} line {line_no}, column cpu: {req.cpu:g} cores is more than "
                             f"the largest node has ({largest_node.cpu:g})")
        if req.ram > largest_node.ram:
            raise TraceError(f"{path} line {line_no}, column ram_gib: {values['ram_gib']:g} GiB is more than "
                             f"the largest node has ({largest_node.ram / GiB:g})")
        # The model runs in whole seconds, as the paper's 1 s steps.
        requests.append(Request(round(values["arrival_s"]), max(1, round(values["duration_s"])), req, "trace"))

    if not requests:
        raise TraceError(f"{path}: no rows after the header")
    requests.sort(key=lambda r: r.arrival_s)
    if horizon_s is None:
        end = max(r.arrival_s + r.duration_s for r in requests)
        horizon_s = math.ceil((end + 1) / HOUR_S) * HOUR_S
    return Workload(name=f"trace:{path.name}", requests=tuple(requests), horizon_s=horizon_s,
                    description=f"replay of {path} ({len(requests)} servers)")
