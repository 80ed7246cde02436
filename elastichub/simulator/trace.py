"""Replay of a hub's own history: a CSV trace of server requests.

Format (docs/simulator.md): a header row naming at least the columns
`arrival_s,duration_s,cpu,ram_gib` (any order; other columns are ignored),
then one row per server:

- arrival_s: when the user asked for the server, seconds from the start; or
  instead `arrival`, a timestamp with its time zone (ISO 8601, as the
  orchestrator's `history_file` writes it) or in Unix seconds (UTC): the
  replay then starts at midnight of the first arrival's day, in that
  arrival's offset, and each arrival comes at its local time (a calendar's
  "D HH:MM" is the hub's clock across a daylight-saving change)
- duration_s: how long the server ran once started, seconds (> 0)
- cpu: CPU request in cores; ram_gib: RAM request in GiB (>= 0, not both 0);
  either may be a Kubernetes quantity as kubectl shows it (500m, 512Mi, 2Gi)
- ended (optional, as `elastichub trace` writes it): how the session ended;
  `log-end` and `hub-shutdown` mark sessions their users did not end, which
  the lifetime model counts as lower bounds (`workload.lifetime_estimate`)

Rows need not be sorted. A header among the rows (files joined with cat) sets the
columns of the rows after it: `elastichub trace`'s and a `history_file`'s differ.
Columns may be separated by ';' or tabs instead of ',', numbers then
written with a decimal comma (what spreadsheets export in many locales).
Every error names the file, the line and the column.
"""

from __future__ import annotations

import gzip
import math
import sys
import zlib
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path

from ..csvtext import GROUPED, csv_rows, decode, delimiter
from ..policy import GiB, Resources
from ..orchestrator.history import read_watch_mark
from ..quantity import QuantityError, cores, gib
from .hublog import CENSORED, ENDINGS
from .loglines import COMPRESSED, is_hub_log
from .workload import DAY_S, HOUR_S, Request, Workload

COLUMNS = ("arrival_s", "duration_s", "cpu", "ram_gib")
ENDED = "ended"  # optional: how the session ended, as `elastichub trace` writes it
_PARSE = {"cpu": cores, "ram_gib": gib}  # or what kubectl shows: 500m, 512Mi
TIMESTAMP = "arrival"  # the alternative to arrival_s: an ISO 8601 timestamp with its offset, or Unix seconds
# A replay runs every Tmon of its span: a longer one is a unit mistake (a Unix
# time or milliseconds in arrival_s), which would otherwise run for hours.
MAX_SPAN_DAYS = 400
# Nobody on the hub for longer than this, between two sessions, is more
# likely a wrong date than a break: the replay simulates every idle second.
IDLE_WARN_DAYS = 30
# A zone's daylight-saving changes are months apart: offsets that change
# sooner again are rows of different zones, not one hub's clock.
DST_APART_DAYS = 30
# Two sessions of one server (the `user` and `server` columns) overlapping by
# more than the rounding of their times to seconds are the history given twice.
SAME_SERVER_SLACK_S = 5


class TraceError(ValueError):
    """A trace file that cannot be replayed; the message names the line."""


def load_trace(path: str | Path, nodes: list[Resources], horizon_s: int | None = None,
               zone: tzinfo | None = None, too_big: str = "error") -> Workload:
    """Read and validate a trace. `nodes`: the allocatable of each node
    shape of the simulated cluster (`ClusterParams.node_shapes`): a request
    no one of them holds could never run. `horizon_s` defaults to the end of
    the last server had it never waited, rounded up to a whole hour. `zone`:
    the hub's, whose wall clock timestamps are replayed on (else each one's
    own offset's). A long idle stretch is a warning in `meta["warnings"]`.
    `too_big`: "error" stops at a request no node shape holds, "skip" leaves
    such sessions out, counted in `meta["too_big"]` (see `too_big_note`)."""
    path = Path(path)
    text = _text(path)
    reader = csv_rows(text)
    header = next(reader, None)
    if header is None:
        raise TraceError(f"{path}: empty file, expected a header {','.join(COLUMNS)}")
    try:
        columns = _Columns.read(path, 1, header)
    except TraceError:
        if is_hub_log(text.splitlines()):  # `simulate --trace hub.log`
            raise TraceError(f"{path}: a JupyterHub log, not a trace: make one of it with `elastichub trace {path} "
                             "--cpu CORES --ram-gib GIB --out trace.csv`") from None
        raise
    if zone is not None and not columns.stamped:
        raise TraceError(f"{path} line 1: a time zone is given (--timezone), but arrival_s counts seconds from the "
                         "start, with no clock to set: name timestamps in an arrival column")
    grouped_is_ambiguous = delimiter(text.splitlines()[0]) != ","

    rows = []  # (arrival: seconds, or a datetime until the origin is known; duration_s, request, line)
    servers = {}  # line -> (user, server) where the trace names them
    skipped = []  # where and why, of each request no node holds (too_big="skip")
    marks = []  # (history_file's watch mark or None, line)
    warnings = []
    for line_no, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        # a comment (one cell: a "#user" in a row has other values); the orchestrator's say when it did not watch
        if row[0].lstrip().startswith("#") and not any(cell.strip() for cell in row[1:]):
            marks.append((read_watch_mark(",".join(row)), line_no))
            continue
        if _Columns.names_in(row):  # files joined with cat: each has its header, maybe with other columns
            columns = columns.then(_Columns.read(path, line_no, row))
            continue
        if len(row) > len(columns.names):
            raise TraceError(f"{path} line {line_no}: {len(row)} values for {len(columns.names)} columns (a decimal "
                             "comma in a comma-separated file? write 0.5, or separate the columns with ';')")
        values = {}
        if columns.stamped:
            values["arrival_s"] = _timestamp(columns.cell(row, columns.arrival),
                                             f"{path} line {line_no}, column arrival")
        for column, i in columns.index.items():
            where = f"{path} line {line_no}, column {column}"
            if i >= len(row) or not row[i].strip():
                raise TraceError(f"{where}: empty value")
            if grouped_is_ambiguous and GROUPED.fullmatch(row[i]):
                raise TraceError(f"{where}: {row[i].strip()!r} in a file whose decimal separator is ',': a "
                                 f"thousands point or a decimal one? Write it without (3600) or with a comma (3,6)")
            try:
                value = _PARSE.get(column, float)(row[i])
            except QuantityError as e:
                raise TraceError(f"{where}: {e}") from None
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
        ended = columns.cell(row, columns.ended).lower()
        if ended and ended not in ENDINGS:  # a typo would count a cut session as a finished one
            raise TraceError(f"{path} line {line_no}, column ended: {ended!r} is not one of {', '.join(ENDINGS)} "
                             "(or empty)")
        if too_big == "skip" and (why := misfit(req, nodes)):  # one GPU profile's session must not stop a replay
            skipped.append(f"{path} line {line_no}{why}")
            continue
        check_fits(f"{path} line {line_no}", req, nodes)
        censored = ended in CENSORED
        rows.append((values["arrival_s"], values["duration_s"], req, line_no, censored))
        if columns.server is not None and columns.cell(row, columns.user):  # a user's named servers run together
            servers[line_no] = (columns.cell(row, columns.user), columns.cell(row, columns.server))

    if not rows and skipped:
        raise TraceError(f"{path}: every row asks for more than any simulated node holds (the first: {skipped[0]}): "
                         f"nothing to replay; {NODE_SIZES_HINT}")
    if not rows:
        raise TraceError(f"{path}: no rows after the header")
    _check_once_at_a_time(path, rows, servers)
    if columns.stamped and marks:
        warnings.append(_unwatched(path, rows, marks))
    since = ""
    stamped = columns.stamped
    if stamped:
        if zone is not None:  # the same moments, on the hub's clock
            rows = [(arrival.astimezone(zone), *rest) for arrival, *rest in rows]
        first = min(row[0] for row in rows)
        origin = first.replace(hour=0, minute=0, second=0, microsecond=0)
        local, warning = _offset_changes(path, rows)
        if zone is not None:  # the admin named the clock
            local, warning = True, None
        warnings.append(warning)
        if local:
            # Each arrival at its own wall-clock time (its timestamp without
            # its offset), as users and a calendar's "D HH:MM" know it: in
            # elapsed seconds, a daylight-saving change moved every later
            # arrival an hour off the calendar. Durations stay elapsed.
            # (midnight of the earliest wall-clock time: a clock set back at
            # midnight puts a later arrival before the first one's day)
            wall = min(arrival.replace(tzinfo=None) for arrival, *_ in rows).replace(hour=0, minute=0, second=0,
                                                                                   microsecond=0)
            rows = [((arrival.replace(tzinfo=None) - wall).total_seconds(), *rest) for arrival, *rest in rows]
        else:
            rows = [((arrival - origin).total_seconds(), *rest) for arrival, *rest in rows]
        since = f", from {origin.isoformat(' ', 'minutes')}"
    # The model runs in whole seconds, as the paper's 1 s steps.
    rows = [(round(arrival), max(1, round(duration)), *rest) for arrival, duration, *rest in rows]
    _check_span(path, rows, stamped)
    requests = [Request(arrival, duration, req, "trace", censored) for arrival, duration, req, _, censored in rows]
    requests.sort(key=lambda r: r.arrival_s)
    if horizon_s is None:  # the replay runs to the last session's end: an idle stretch is simulated too
        end = max(r.arrival_s + r.duration_s for r in requests)
        horizon_s = math.ceil((end + 1) / HOUR_S) * HOUR_S
        warnings.append(_idle_warning(path, rows, horizon_s))
    else:
        _check_cut(path, rows, horizon_s, since)
        # as a generated workload: what the replay never reaches is in neither its counts nor its lifetime model
        requests = [r for r in requests if r.arrival_s < horizon_s]
    return Workload(name=f"trace:{path.name}", requests=tuple(requests), horizon_s=horizon_s,
                    description=f"replay of {path} ({len(requests)} servers{since})",
                    meta={"warnings": [w for w in warnings if w],
                          "too_big": {"sessions": len(skipped), "first": skipped[0]} if skipped else None})


def _name(cell: str) -> str:
    """A header cell as a column name: any case, spaces, and the byte-order mark of a spreadsheet's export
    (the first file's is skipped with the text's; a file joined after it keeps its own)."""
    return cell.strip().lstrip("\ufeff").strip().lower()


class _Columns:
    """Where a header puts each column (its names lower-case and stripped: a
    spreadsheet's "Duration_S" is the same column)."""

    def __init__(self, names: list[str], stamped: bool, index: dict[str, int], where: str):
        self.names, self.stamped, self.index, self.where = names, stamped, index, where
        self.arrival = names.index(TIMESTAMP) if stamped else None
        self.ended = names.index(ENDED) if ENDED in names else None
        self.user = names.index("user") if "user" in names else None
        self.server = names.index("server") if "server" in names else None

    def cell(self, row: list[str], i: int | None) -> str:
        return row[i].strip() if i is not None and i < len(row) else ""

    @staticmethod
    def names_in(row: list[str]) -> bool:
        """Whether a row is a header: it names the columns a trace needs (a value never does)."""
        cells = {_name(cell) for cell in row}
        return set(COLUMNS[1:]) <= cells and bool(cells & {COLUMNS[0], TIMESTAMP})

    @classmethod
    def read(cls, path: Path, line_no: int, row: list[str]) -> "_Columns":
        names = [_name(h) for h in row]
        where = f"{path} line {line_no}"
        twice = sorted({c for c in names if c and names.count(c) > 1} & {*COLUMNS, TIMESTAMP})
        if twice:
            raise TraceError(f"{where}: column(s) {', '.join(twice)} named twice: which one holds the values?")
        stamped = TIMESTAMP in names
        if stamped and "arrival_s" in names:
            raise TraceError(f"{where}: columns arrival_s and arrival both present: name one, seconds from "
                             "the start (arrival_s) or a timestamp (arrival)")
        numeric = COLUMNS[1:] if stamped else COLUMNS
        missing = [c for c in numeric if c not in names]
        if missing:
            raise TraceError(f"{where}: missing column(s) {', '.join(missing)} "
                             f"(header must name {','.join(COLUMNS)}, or arrival instead of arrival_s)")
        return cls(names, stamped, {c: names.index(c) for c in numeric}, where)

    def then(self, later: "_Columns") -> "_Columns":
        """The columns of a header among the rows (a history joined to `elastichub trace`'s, whose
        columns differ): its arrivals must count as this one's do."""
        if later.stamped != self.stamped:
            raise TraceError(f"{later.where}: a header with {'arrival' if later.stamped else 'arrival_s'}, after "
                             f"{self.where}'s with {'arrival' if self.stamped else 'arrival_s'}: files joined whose "
                             "arrivals count differently (timestamps, or seconds from each file's start)")
        return later


NODE_SIZES_HINT = ("give the simulator your nodes' sizes (--onprem-node-cpu, --onprem-node-ram-gib, --cloud-node-cpu, "
                   "--cloud-node-ram-gib)")


def misfit(req: Resources, nodes: list[Resources]) -> str | None:
    """Why no node shape holds `req`, CPU and RAM together (one that only
    fits CPU on one shape and RAM on another would wait for ever); None if
    one does."""
    if any(req.fits_in(node) for node in nodes):
        return None
    cpu, ram = max(n.cpu for n in nodes), max(n.ram for n in nodes)
    if req.cpu > cpu:
        return f", column cpu: {req.cpu:g} cores is more than the largest node has ({cpu:g} cores)"
    if req.ram > ram:
        return f", column ram_gib: {req.ram / GiB:g} GiB is more than the largest node has ({ram / GiB:g} GiB)"
    shapes = " or ".join(f"{n.cpu:g} cores and {n.ram / GiB:g} GiB" for n in nodes)
    return f": {req.cpu:g} cores and {req.ram / GiB:g} GiB together fit no node ({shapes}): it could never run"


def check_fits(where: str, req: Resources, nodes: list[Resources]) -> None:
    """A TraceError naming `where` for a request no node shape holds, and how to describe the hub's nodes (a
    history from a hub with bigger nodes, a GPU profile's, than the simulated ones)."""
    if why := misfit(req, nodes):
        raise TraceError(f"{where}{why}; {NODE_SIZES_HINT}")


def too_big_fields(workload: Workload) -> dict:
    """The JSON documents' count of sessions left out as bigger than every node, and its note."""
    return {"too_big": (workload.meta.get("too_big") or {}).get("sessions", 0), "too_big_note": too_big_note(workload)}


def too_big_note(workload: Workload) -> str | None:
    """What a replay left out as bigger than every node (load_trace's too_big="skip"), for every report."""
    skipped = workload.meta.get("too_big")
    if not skipped:
        return None
    return (f"{skipped['sessions']} session(s) of the trace asked for more than any simulated node holds and are "
            f"left out of the replay (the first: {skipped['first']}); {NODE_SIZES_HINT}, or --too-big error to stop "
            "at them")


def _check_cut(path: Path, rows: list[tuple], horizon_s: int, since: str) -> None:
    """A replay (`--days`) that ends before any server arrives is an error: a
    run of nothing, and --tune choosing on nothing (rows: arrival s, ...,
    line, ...). One that leaves some out is the admin's choice."""
    arrival, _, _, line, *_ = min(rows, key=lambda r: r[0])
    if arrival >= horizon_s:
        raise TraceError(f"{path} line {line}: the first server arrives {arrival:,} s ({arrival / HOUR_S:.3g} h) "
                         f"after the replay's start{since.replace(', from', ' at')}, after its end at {horizon_s:,} s "
                         "(--days): nothing to replay")


def _check_once_at_a_time(path: Path, rows: list[tuple], servers: dict[int, tuple[str, str]]) -> None:
    """A TraceError for two sessions of one user's server at once (rows:
    arrival, duration s, request, line, ...): a server runs once at a time,
    so they are the same sessions given twice (a history joined with
    itself, a week's file in two joined ones, or `elastichub trace`'s rows
    of the days the history_file has too), each replayed twice."""
    sessions: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    for arrival, duration, _, line, *_ in rows:
        if line in servers:
            start = arrival.timestamp() if isinstance(arrival, datetime) else arrival
            sessions.setdefault(servers[line], []).append((start, start + duration, line))
    for (user, server), runs in sessions.items():
        runs.sort()
        for (start, end, line), (later, _, again) in zip(runs, runs[1:]):
            # one row's end and the next's arrival are rounded to seconds (and a row lasts at least one)
            if later == start or later < end - SAME_SERVER_SLACK_S:
                what = f"server {server!r} of user {user!r}" if server else f"the server of user {user!r}"
                raise TraceError(f"{path} line {again}: {what} is asked for while line {line}'s session of it runs, "
                                 f"for {end - later:,.0f} s more: a server runs once at a time (the same sessions "
                                 "given twice: a history joined with itself, or the log's trace and a history_file "
                                 "of the same days?)")


def _unwatched(path: Path, rows: list[tuple], marks: list[tuple]) -> str | None:
    """A warning for the times the orchestrator that wrote a history_file
    did not watch (rows: arrival datetime, duration s, request, line, ...;
    marks: (watch mark or None, line)): the sessions that ended then have no
    row, and a replay of those hours sees fewer servers than the hub had."""
    gaps, stopped = [], None  # (from or None, to, line, what it says of the sessions running at the stop)
    for mark, line in marks:
        if mark is None:
            continue
        what, at, running = mark
        if what == "stopped":
            stopped = (at, running)
        elif stopped is not None:  # which of those running at the stop are rows written after the start
            went_on = sum(1 for arrival, _, _, row_line, _ in rows if row_line > line and arrival < stopped[0])
            lost = max((stopped[1] or 0) - went_on, 0)  # a session still running has no row yet either: not told
            gaps.append((stopped[0], at, line, f"; of the {stopped[1]} session(s) running when it stopped, {went_on} "
                                               f"ran on (rows after line {line}), the other {lost} ended while it was "
                                               "down (no row) or still run at the file's end" if lost else ""))
            stopped = None
        else:  # no line says when it stopped (killed, or it crashed): after the end of its last row
            ends = [arrival + timedelta(seconds=duration) for arrival, duration, _, row_line, _ in rows
                    if row_line < line]
            gaps.append((max(ends) if ends else None, at, line, " (no line says when it stopped: killed, or a "
                                                                "crash?)"))
    if not gaps:
        return None
    since, until, line, lost = gaps[0]
    span = f"from {since.isoformat(' ', 'minutes')} " if since else ""
    hours = [(b - a).total_seconds() / HOUR_S for a, b, _, _ in gaps if a is not None]
    more = (f"; {len(gaps) - 1} more such gap(s), {sum(hours):,.1f} h in all" if len(gaps) > 1 else "")
    return (f"{path} line {line}: the orchestrator that wrote this history did not watch {span}until "
            f"{until.isoformat(' ', 'minutes')}{lost}: sessions that ended then have no row, nor have those started "
            f"and ended in between, so the replay sees fewer servers than the hub had in those hours{more}")


def _offset_changes(path: Path, rows: list[tuple]) -> tuple[bool, str | None]:
    """(replay on the wall clock, a warning) for the arrivals' UTC offsets
    (rows: arrival datetime, ..., line, ...). Changes months apart are a
    zone's daylight-saving changes: each arrival is replayed at its local
    time. Changes closer together are rows written in different zones (a
    history in UTC joined with a local one), whose local times differ for
    the same moment: replayed by elapsed time, as one offset."""
    ordered = sorted(rows, key=lambda r: r[0])
    changes = [(a, b) for a, b in zip(ordered, ordered[1:]) if a[0].utcoffset() != b[0].utcoffset()]
    if not changes:
        return False, None
    times = [at[0] for _, at in changes]
    local = all((t2 - t1).total_seconds() >= DST_APART_DAYS * DAY_S for t1, t2 in zip(times, times[1:]))
    before, at = changes[0][0], changes[0][1]
    found = (f"{path}: the arrivals' UTC offset changes from {_offset(before[0])} to {_offset(at[0])} at line "
             f"{at[3]}" + (f" and {len(changes) - 1} more time(s)" if len(changes) > 1 else ""))
    if local:
        return True, (f"{found}, a daylight-saving change: each arrival is replayed at its local time, so calendar "
                      "times ('D HH:MM') and days are the hub's, and the replay's clock skips (or repeats) the hour "
                      "the clocks did")
    return False, (f"{found}, within {DST_APART_DAYS} days (rows written in different time zones?): replayed in "
                   f"elapsed time from midnight at {_offset(ordered[0][0])}, so calendar times ('D HH:MM') are "
                   "that offset's; write every row in the hub's zone (or every one in UTC)")


def _offset(moment: datetime) -> str:
    minutes = round(moment.utcoffset().total_seconds() / 60)
    return f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _idle_warning(path: Path, rows: list[tuple], horizon_s: int) -> str | None:
    """A warning when nobody is on the hub for more than IDLE_WARN_DAYS
    between two sessions, or from the replay's start to the first arrival
    (rows: arrival s, duration s, request, line, ...)."""
    longest, busy_until, after, before = 0, (0, None), None, None  # (time, line): the start counts as busy
    for arrival, duration, _, line, *_ in sorted(rows, key=lambda r: r[0]):
        if arrival - busy_until[0] > longest:
            longest, after, before = arrival - busy_until[0], busy_until[1], line
        if arrival + duration > busy_until[0]:
            busy_until = (arrival + duration, line)
    if longest <= IDLE_WARN_DAYS * DAY_S:
        return None
    since = "the replay's start (arrival_s 0)" if after is None else f"the end of line {after}'s session"
    return (f"{path}: nobody is on the hub for {longest / DAY_S:,.0f} days, from {since} to line {before}'s "
            f"arrival ({longest / horizon_s:.0%} of the {horizon_s / DAY_S:,.0f} days replayed, each simulated): "
            "a wrong date?")


def _text(path: Path) -> str:
    """The file's text (standard input for "-"), gzip-compressed or not:
    UTF-8 (a byte-order mark is skipped), or UTF-16 with its mark (a
    spreadsheet's "Unicode text")."""
    try:
        raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()  # `elastichub trace ... |`
    except FileNotFoundError:
        raise TraceError(f"trace file {path}: not found") from None
    except OSError as e:
        raise TraceError(f"trace file {path}: cannot read it ({e.strerror})") from None
    if raw[:2] == b"\x1f\x8b":  # history.csv.gz, kept compressed as rotated logs are
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise TraceError(f"trace file {path}: a gzip file that cannot be read ({e})") from None
    kind = next((what for magic, what in COMPRESSED if raw.startswith(magic)), None)
    if kind:
        raise TraceError(f"trace file {path}: {kind}, not CSV text: give the CSV (plain, or gzip-compressed)")
    try:
        return decode(raw, path)
    except ValueError as e:
        raise TraceError(str(e)) from None


def _check_span(path: Path, rows: list[tuple], stamped: bool) -> None:
    """rows: (arrival s, duration s, request, line, censored)."""
    limit = MAX_SPAN_DAYS * 24 * HOUR_S
    arrival, _, _, line, _ = min(rows, key=lambda r: r[0])
    if arrival > limit and not stamped:
        raise TraceError(
            f"{path} line {line}, column arrival_s: the first server arrives {_n(arrival, 'd')} s "
            f"({_n(arrival / 86400)} days) after the start: arrival_s counts seconds from the start of the replay. "
            f"For Unix times or ISO 8601 timestamps, name the column {TIMESTAMP} instead")
    arrival, duration, _, line, _ = max(rows, key=lambda r: r[0] + r[1])
    if arrival + duration <= limit:
        return
    if duration > limit:
        raise TraceError(f"{path} line {line}, column duration_s: {_n(duration, 'd')} s is {_n(duration / 86400)} "
                         f"days; a replay spans at most {MAX_SPAN_DAYS} days (a value in milliseconds?)")
    raise TraceError(f"{path} line {line}: this server ends {_n((arrival + duration) / 86400)} days after the "
                     f"start; a replay spans at most {MAX_SPAN_DAYS} days "
                     f"({'split the history' if stamped else 'arrival_s in milliseconds?'})")


def _n(value: float, spec: str = ",.0f") -> str:
    """A number for a message, in powers of ten past a trillion (1e+300, not 300 digits)."""
    return format(value, spec) if abs(value) < 1e12 else f"{value:.3g}"


def _timestamp(text: str, where: str) -> datetime:
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
            value = datetime.fromtimestamp(seconds, timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise TraceError(f"{where}: not a Unix time: {text!r} (milliseconds?)") from None
        return _of_a_hub(value, text, where)
    try:
        value = datetime.fromisoformat(text[:-1] + "Z" if text.endswith("z") else text)
    except ValueError:
        raise TraceError(f"{where}: not an ISO 8601 timestamp: {text!r}") from None
    if value.tzinfo is None:
        raise TraceError(f"{where}: {text!r} has no time zone (write it as e.g. 2026-12-01T09:00:00Z "
                         "or 2026-12-01T10:00:00+01:00)")
    return _of_a_hub(value, text, where)


def _of_a_hub(value: datetime, text: str, where: str) -> datetime:
    """`value`, if its year can be a hub's: after Unix time 0 (a database's empty time), and one a replay can
    set on any zone's clock (year 1 or 9999 is outside the dates Python holds there)."""
    if not 1970 < value.year < 9999:
        raise TraceError(f"{where}: {text!r} is in the year {value.year}: not a time of a hub's history")
    return value
