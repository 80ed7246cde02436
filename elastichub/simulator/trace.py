"""Replay of a hub's own history: a CSV trace of server requests.

Format (docs/simulator.md): a header row naming at least the columns
`arrival_s,duration_s,cpu,ram_gib` (any order; other columns are ignored),
then one row per server:

- arrival_s: when the user asked for the server, seconds from the start; or
  instead `arrival`, a timestamp with its time zone (ISO 8601, as the
  orchestrator's `history_file` writes it) or in Unix seconds (UTC): the
  replay then starts at midnight of the first arrival's day, in that
  arrival's offset
- duration_s: how long the server ran once started, seconds (> 0)
- cpu: CPU request in cores; ram_gib: RAM request in GiB (>= 0, not both 0)

Rows need not be sorted. Columns may be separated by ';' or tabs instead of
',', numbers then written with a decimal comma (what spreadsheets export in
many locales). Every error names the file, the line and the column.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

from ..csvtext import csv_rows
from ..policy import GiB, Resources
from .workload import HOUR_S, Request, Workload

COLUMNS = ("arrival_s", "duration_s", "cpu", "ram_gib")
TIMESTAMP = "arrival"  # the alternative to arrival_s: an ISO 8601 timestamp with its offset, or Unix seconds
# A replay runs every Tmon of its span: a longer one is a unit mistake (a Unix
# time or milliseconds in arrival_s), which would otherwise run for hours.
MAX_SPAN_DAYS = 400


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

    reader = csv_rows(text)
    header = next(reader, None)
    if header is None:
        raise TraceError(f"{path}: empty file, expected a header {','.join(COLUMNS)}")
    header = [h.strip() for h in header]
    stamped = TIMESTAMP in header
    if stamped and "arrival_s" in header:
        raise TraceError(f"{path} line 1: columns arrival_s and arrival both present: name one, seconds from "
                         "the start (arrival_s) or a timestamp (arrival)")
    numeric = COLUMNS[1:] if stamped else COLUMNS
    missing = [c for c in numeric if c not in header]
    if missing:
        raise TraceError(f"{path} line 1: missing column(s) {', '.join(missing)} "
                         f"(header must name {','.join(COLUMNS)}, or arrival instead of arrival_s)")
    index = {c: header.index(c) for c in numeric}

    rows = []  # (arrival: seconds, or a datetime until the origin is known; duration_s, request)
    for line_no, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        values = {}
        if stamped:
            values["arrival_s"] = _timestamp(row, header.index(TIMESTAMP), f"{path} line {line_no}, column arrival")
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
        rows.append((values["arrival_s"], values["duration_s"], req))

    if not rows:
        raise TraceError(f"{path}: no rows after the header")
    since = ""
    if stamped:
        first = min(arrival for arrival, _, _ in rows)
        origin = first.replace(hour=0, minute=0, second=0, microsecond=0)
        rows = [((arrival - origin).total_seconds(), duration, req) for arrival, duration, req in rows]
        since = f", from {origin.isoformat(' ', 'minutes')}"
    # The model runs in whole seconds, as the paper's 1 s steps.
    requests = [Request(round(arrival), max(1, round(duration)), req, "trace") for arrival, duration, req in rows]
    requests.sort(key=lambda r: r.arrival_s)
    _check_span(path, requests, stamped)
    if horizon_s is None:
        end = max(r.arrival_s + r.duration_s for r in requests)
        horizon_s = math.ceil((end + 1) / HOUR_S) * HOUR_S
    return Workload(name=f"trace:{path.name}", requests=tuple(requests), horizon_s=horizon_s,
                    description=f"replay of {path} ({len(requests)} servers{since})")


def _check_span(path: Path, requests: list[Request], stamped: bool) -> None:
    limit = MAX_SPAN_DAYS * 24 * HOUR_S
    first = requests[0]
    if first.arrival_s > limit and not stamped:
        raise TraceError(
            f"{path}, column arrival_s: the first server arrives {first.arrival_s} s ({first.arrival_s / 86400:,.0f} "
            f"days) after the start: arrival_s counts seconds from the start of the replay. For Unix times or "
            f"ISO 8601 timestamps, name the column {TIMESTAMP} instead")
    last = max(requests, key=lambda r: r.arrival_s + r.duration_s)
    span = last.arrival_s + last.duration_s
    if span > limit:
        raise TraceError(
            f"{path}: a server that arrives at {last.arrival_s} s and runs {last.duration_s} s ends "
            f"{span / 86400:,.0f} days after the start; a replay spans at most {MAX_SPAN_DAYS} days "
            f"(a value in milliseconds?)")


def _timestamp(row: list[str], i: int, where: str) -> datetime:
    text = row[i].strip() if i < len(row) else ""
    if not text:
        raise TraceError(f"{where}: empty value")
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:  # Unix time
        if not math.isfinite(seconds) or seconds < 0:
            raise TraceError(f"{where}: not a Unix time: {text!r}")
        try:
            return datetime.fromtimestamp(seconds, timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise TraceError(f"{where}: not a Unix time: {text!r} (milliseconds?)") from None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise TraceError(f"{where}: not an ISO 8601 timestamp: {text!r}") from None
    if value.tzinfo is None:
        raise TraceError(f"{where}: {text!r} has no time zone (write it as e.g. 2026-12-01T09:00:00Z "
                         "or 2026-12-01T10:00:00+01:00)")
    return value
