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

import codecs
import math
import sys
from datetime import datetime, timezone
from pathlib import Path

from ..csvtext import GROUPED, csv_rows, delimiter
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
    text = _text(path)
    reader = csv_rows(text)
    header = next(reader, None)
    if header is None:
        raise TraceError(f"{path}: empty file, expected a header {','.join(COLUMNS)}")
    header = [h.strip().lower() for h in header]  # a spreadsheet's "Duration_S" is the same column
    twice = sorted({c for c in header if c and header.count(c) > 1} & {*COLUMNS, TIMESTAMP})
    if twice:
        raise TraceError(f"{path} line 1: column(s) {', '.join(twice)} named twice: which one holds the values?")
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
    grouped_is_ambiguous = delimiter(text.splitlines()[0]) != ","

    rows = []  # (arrival: seconds, or a datetime until the origin is known; duration_s, request, line)
    for line_no, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            raise TraceError(f"{path} line {line_no}: {len(row)} values for {len(header)} columns (a decimal comma "
                             "in a comma-separated file? write 0.5, or separate the columns with ';')")
        values = {}
        if stamped:
            values["arrival_s"] = _timestamp(row, header.index(TIMESTAMP), f"{path} line {line_no}, column arrival")
        for column, i in index.items():
            where = f"{path} line {line_no}, column {column}"
            if i >= len(row) or not row[i].strip():
                raise TraceError(f"{where}: empty value")
            if grouped_is_ambiguous and GROUPED.fullmatch(row[i]):
                raise TraceError(f"{where}: {row[i].strip()!r} in a file whose decimal separator is ',': a "
                                 f"thousands point or a decimal one? Write it without (3600) or with a comma (3,6)")
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
        rows.append((values["arrival_s"], values["duration_s"], req, line_no))

    if not rows:
        raise TraceError(f"{path}: no rows after the header")
    since = ""
    if stamped:
        first = min(row[0] for row in rows)
        origin = first.replace(hour=0, minute=0, second=0, microsecond=0)
        rows = [((arrival - origin).total_seconds(), *rest) for arrival, *rest in rows]
        since = f", from {origin.isoformat(' ', 'minutes')}"
    # The model runs in whole seconds, as the paper's 1 s steps.
    rows = [(round(arrival), max(1, round(duration)), req, line) for arrival, duration, req, line in rows]
    _check_span(path, rows, stamped)
    requests = [Request(arrival, duration, req, "trace") for arrival, duration, req, _ in rows]
    requests.sort(key=lambda r: r.arrival_s)
    if horizon_s is None:
        end = max(r.arrival_s + r.duration_s for r in requests)
        horizon_s = math.ceil((end + 1) / HOUR_S) * HOUR_S
    return Workload(name=f"trace:{path.name}", requests=tuple(requests), horizon_s=horizon_s,
                    description=f"replay of {path} ({len(requests)} servers{since})")


def _text(path: Path) -> str:
    """The file's text (standard input for "-"): UTF-8 (a byte-order mark is
    skipped), or UTF-16 with its mark (a spreadsheet's "Unicode text")."""
    try:
        raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()  # `elastichub trace ... |`
    except FileNotFoundError:
        raise TraceError(f"trace file {path}: not found") from None
    except OSError as e:
        raise TraceError(f"trace file {path}: cannot read it ({e.strerror})") from None
    encoding = "utf-16" if raw[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else "utf-8-sig"
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise TraceError(f"{path} line {line}: not {'UTF-16' if encoding == 'utf-16' else 'UTF-8'} text "
                         f"(byte {raw[e.start]:#04x}): save the file as CSV UTF-8") from None


def _check_span(path: Path, rows: list[tuple], stamped: bool) -> None:
    """rows: (arrival s, duration s, request, line)."""
    limit = MAX_SPAN_DAYS * 24 * HOUR_S
    arrival, _, _, line = min(rows, key=lambda r: r[0])
    if arrival > limit and not stamped:
        raise TraceError(
            f"{path} line {line}, column arrival_s: the first server arrives {arrival} s ({arrival / 86400:,.0f} "
            f"days) after the start: arrival_s counts seconds from the start of the replay. For Unix times or "
            f"ISO 8601 timestamps, name the column {TIMESTAMP} instead")
    arrival, duration, _, line = max(rows, key=lambda r: r[0] + r[1])
    if arrival + duration <= limit:
        return
    if duration > limit:
        raise TraceError(f"{path} line {line}, column duration_s: {duration} s is {duration / 86400:,.0f} days; "
                         f"a replay spans at most {MAX_SPAN_DAYS} days (a value in milliseconds?)")
    raise TraceError(f"{path} line {line}: this server ends {(arrival + duration) / 86400:,.0f} days after the "
                     f"start; a replay spans at most {MAX_SPAN_DAYS} days "
                     f"({'split the history' if stamped else 'arrival_s in milliseconds?'})")


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
        value = datetime.fromisoformat(text[:-1] + "Z" if text.endswith("z") else text)
    except ValueError:
        raise TraceError(f"{where}: not an ISO 8601 timestamp: {text!r}") from None
    if value.tzinfo is None:
        raise TraceError(f"{where}: {text!r} has no time zone (write it as e.g. 2026-12-01T09:00:00Z "
                         "or 2026-12-01T10:00:00+01:00)")
    return value
