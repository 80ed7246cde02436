"""`elastichub trace`: a trace for `simulate --trace` from JupyterHub's log,
the history a hub has before ElasticHub runs on it.

JupyterHub logs, whatever its spawner (NAME is a server's log name: `user`,
or `user:server` for a named server; USER a user name, ROUTE its route spec,
which ends in `/user/USER/` or `/user/USER/SERVER/`, URL-escaped):

- `User NAME took S seconds to start` once it is ready: its user asked for it
  S seconds before; then `Adding user USER to proxy ROUTE => URL`;
- `Removing user USER from proxy (ROUTE)` when it stops or dies.

(Before JupyterHub 0.9: `User USER server took S seconds to start`, and
`Removing user USER from proxy`, each user having one server.)

Some servers end without that last line (jupyterhub/app.py, handlers/base.py):

- `Cleaning up single-user servers...`: the hub shuts down and stops every
  server (`cleanup_servers`; without it, `Leaving single-user servers
  running`, and the next hub logs `USER still running` for each);
- `NAME appears to have stopped while the Hub was down`, when the hub starts
  again (`Running JupyterHub version ...`): it ended while the hub was down;
- `Stopping spawner for blocked user: NAME`, `Stopping NAME to avoid
  inconsistent state` (the proxy refused its route).

A user name may hold ":" (`github:alice`), so NAME alone does not say whose
server it is: the proxy lines, which name the user and the route, do.

Each line starts `[I 2026-12-01 09:00:13.123 JupyterHub base:1193]`, in the
hub's local time (`--timezone`) and its log_datefmt (`--log-datefmt`, if
it is neither the default nor ISO 8601). JSON records are read by the plain
line they hold, or by a JSON formatter's message and time. Requests are not
logged: every server gets `--cpu` and `--ram-gib` (your spawner's
guarantees). The rows have the columns of the orchestrator's
`history_file` (docs/simulator.md). The files' lines are read by
loglines.py; this module pairs what they say.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import re
import sys
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from urllib.parse import unquote

from ..quantity import QuantityError, cores, gib
from .loglines import MESSAGE_KEYS, TIME_KEYS, LogError, dated, in_order, parse_zone, read_log, unread_json

# JupyterHub before 0.9 (one server a user) wrote `User alice server took 3.2 seconds to start` and
# `Removing user alice from proxy`, without the route; a user named `x server` on a later hub would read as x.
_START = re.compile(r"^User (?P<name>.+?)(?: server)? took (?P<seconds>\d+(?:\.\d+)?) seconds to start$")
_STOP = re.compile(r"^Removing user (?P<user>.+?) from proxy(?: \((?P<route>.*)\))?$")
_START_IN = re.compile(r"\bUser \S.* took \d+(?:\.\d+)? seconds to start\b")  # anywhere in a line of any format
_ADD = re.compile(r"^Adding user (?P<user>.+) to proxy (?P<route>\S+) => \S+$")
_STILL = re.compile(r"^(?P<user>.+) still running$")
_HUB_START = re.compile(r"^Running JupyterHub version ")
_SPAWNERS_CHECKED = re.compile(r"^Initialized \d+ spawners in ")  # every running server found or not
_SHUTDOWN = "Cleaning up single-user servers..."
_ENDED = re.compile(r"^(?:(?P<down>.+) appears to have stopped while the Hub was down"
                    r"|Stopping spawner for blocked user: (?P<blocked>.+)"
                    r"|Stopping (?P<failed>.+) to avoid inconsistent state)$")
# A spawn that failed (user.py; USER's, whichever server) or that its user cancelled while it was pending
# (apihandlers/users.py; the hub then removes the route it never added): no server ran, so no session; one
# that timed out (start_timeout, http_timeout) or was given up may have waited for room, demand a replay
# does not see.
_SPAWN_FAILED = re.compile(r"^(?:.+'s server (?P<timeout>failed to start in \S+ seconds, giving up|never showed up "
                           r"at \S+ after \S+ seconds\. Giving up)"
                           r"|(?:Unhandled error starting|Error starting|Not starting) (?!server ).+'s server"
                           r"|Unhandled error waiting for .+'s server to show up at "
                           r"|Interrupting spawner (?P<cancelled>.+), pending spawn$)")
COLUMNS = ("arrival", "duration_s", "cpu", "ram_gib", "user", "server", "spawn_s", "ended")
MAX_SPAWN_S = 366 * 86400  # a start longer than a year is a corrupt line (and a time before year 1)
# How a session ended (the `ended` column). The ones its user did not end
# (cut by the log's end, a hub shutdown, or not found again) say nothing of how long users
# keep their servers: `simulate` leaves them out of the lifetime model.
STOPPED, SHUTDOWN, FOUND_STOPPED, HUB_STOPPED, STARTED_AGAIN, LOG_END, NOT_FOUND = (
    "stop", "hub-shutdown", "found-stopped", "hub-stop", "started-again", "log-end", "not-found")
CENSORED = (SHUTDOWN, LOG_END, NOT_FOUND)
ENDINGS = (STOPPED, SHUTDOWN, FOUND_STOPPED, HUB_STOPPED, STARTED_AGAIN, LOG_END, NOT_FOUND)
# A hub logs a few lines before `Running JupyterHub version` (config
# warnings; with --debug, more): the old hub's last line is the one before
# the first silence longer than this, counted back from the new start.
_PREAMBLE_GAP_S = 30
_PREAMBLE_S = 300  # no such silence within this: the hub came back at once


@dataclass
class Sessions:
    """What the log held: one row per server session, and what it could not pair."""

    rows: list[dict] = field(default_factory=list)
    stops_without_start: int = 0  # servers started before the log begins
    running_throughout: int = 0  # found running by a hub, started before the log begins, not ended in it
    failed_spawns: int = 0  # no server ran: no row
    timed_out_spawns: int = 0  # of those, the ones that timed out
    cancelled_spawns: int = 0  # and the ones their users cancelled while pending
    levels: set[str] = field(default_factory=set)  # of the lines read: I, W, E (D with --debug)
    repeated: int = 0  # starts and stops written twice: read once
    first: datetime | None = None  # local times of the first and last line
    last: datetime | None = None

    def count(self, ended: str) -> int:
        return sum(1 for row in self.rows if row["ended"] == ended)

    @property
    def cut_at_end(self) -> int:  # still running at its last line: they end there
        return self.count(LOG_END)

    @property
    def started_again(self) -> int:  # started again, no stop logged between: the first ends at the second's request
        return self.count(STARTED_AGAIN)


def _parse_route(user: str, route: str) -> tuple[str, str]:
    """(user, server) of a proxy line: the server name is in the route spec
    (`/jhub/user/alice/gpu/` -> `gpu`)."""
    _, _, rest = route.partition("/user/")
    parts = [unquote(p) for p in rest.strip("/").split("/")]
    return user, parts[1] if len(parts) > 1 else ""


def _log_name(user: str, server: str) -> str:
    """How JupyterHub names a server in its log (Spawner._log_name)."""
    return f"{user}:{server}" if server else user


def read_sessions(logs, zone: tzinfo, datefmt: str | None = None) -> Sessions:
    """Pair each server's start with its end. `logs`: (name, lines) of each
    file, in any order, each `lines` read twice (a list, or a LogFile):
    rotated files are read oldest first (by their first line), and files
    that overlap are refused (LogError). `datefmt`: the hub's log_datefmt,
    if it is not JupyterHub's default or ISO 8601."""
    out = Sessions()
    running: dict[str, tuple[datetime, float]] = {}  # log name -> (ready at, spawn s)
    ended: list[tuple[str, datetime, float, datetime, str]] = []  # log name, ready, spawn, end, how
    whose: dict[str, tuple[str, str]] = {}  # log name -> (user, server), from the proxy lines
    users: set[str] = set()
    down_at = None  # the old hub's last line, once a hub starts again: when it went down
    unconfirmed: set[str] = set()  # running when a hub started again, not yet found by it
    times: deque[datetime] = deque(maxlen=1000)
    # the last starts and stops: one written twice (two handlers on one file: extra_log_file and the
    # redirected output) is one event, at the same millisecond
    recent: deque[tuple[datetime, str]] = deque(maxlen=64)

    # user -> how many servers the last hub start found running whose start is not in the log: left out,
    # as a stop without its start is, but said
    found: dict[str, int] = {}
    cancelled: set[str] = set()  # spawns cancelled while pending, whose stop is no server's

    def end(name: str, at: datetime, how: str) -> bool:
        unconfirmed.discard(name)
        if name in cancelled and name not in running:
            cancelled.discard(name)
            return False
        if name not in running:
            out.stops_without_start += 1
            user = _whose(name, whose, users)[0]
            found[user] = max(found.get(user, 0) - 1, 0)
            return False
        ended.append((name, *running.pop(name), at, how))
        return True

    for log, number, at, message, level in in_order(logs, zone, datefmt, _dated_message):
        out.first = out.first or at
        out.last = at
        out.levels.add(level)
        if _dated_message(message):
            if (at, message) in recent:
                out.repeated += 1
                continue
            recent.append((at, message))
        if m := _START.match(message):
            spawn = float(m["seconds"])
            if spawn > MAX_SPAWN_S:
                raise LogError(f"{log} line {number}: a server that took {m['seconds']} seconds to start, over a "
                               "year: not a time a spawn takes (a corrupt line?)")
            # its end was not logged: it ended by the time the next was asked for
            if m["name"] in running:
                end(m["name"], at.astimezone(timezone.utc) - timedelta(seconds=spawn), STARTED_AGAIN)
            running[m["name"]] = (at, spawn)
        elif m := _STOP.match(message) or _ADD.match(message):
            user, server = _parse_route(m["user"], m["route"] or "")
            whose[_log_name(user, server)] = (user, server)
            users.add(user)
            if m.re is _STOP:
                end(_log_name(user, server), at, STOPPED)
        elif m := _STILL.match(message):  # the user's name, whichever of their servers it found
            users.add(m["user"])
            mine = {n for n in running if n == m["user"] or n.startswith(m["user"] + ":")}
            if not mine:  # started before the log begins
                found[m["user"]] = found.get(m["user"], 0) + 1
            unconfirmed.difference_update(mine)
        elif _HUB_START.match(message):
            down_at, unconfirmed = _went_down(times, at), set(running)
            found.clear()  # the new hub names those still running again
        elif _SPAWNERS_CHECKED.match(message):
            # A new hub logs each server of its database, still running or found stopped: one it did
            # not name is another hub's (two logs run together) or lost lines; it ends with the old hub.
            for name in list(unconfirmed & running.keys()):
                end(name, max(down_at or at, running[name][0]), NOT_FOUND)
        elif message == _SHUTDOWN:
            for name in list(running):
                end(name, at, SHUTDOWN)
            found.clear()
        elif m := _ENDED.match(message):
            if m["down"]:  # it stopped some time while the hub was down: count it from when the hub went down
                end(m["down"], max(down_at or at, running.get(m["down"], (at,))[0]), FOUND_STOPPED)
            else:
                end(m["blocked"] or m["failed"], at, HUB_STOPPED)
        elif m := _SPAWN_FAILED.match(message):
            out.failed_spawns += 1
            out.timed_out_spawns += bool(m["timeout"])
            if m["cancelled"]:
                out.cancelled_spawns += 1
                cancelled.add(m["cancelled"])
        times.append(at)
    ended += [(name, ready, spawn, out.last, LOG_END) for name, (ready, spawn) in running.items()]
    out.running_throughout = sum(found.values())
    out.rows = sorted((_row(_whose(name, whose, users), *rest) for name, *rest in ended),
                      key=lambda r: r["arrival"])
    return out


def _dated_message(message: str) -> bool:
    """Whether a line's time must be read: a server's start or stop."""
    return bool(_START.match(message) or _STOP.match(message))


def _went_down(times: deque[datetime], started: datetime) -> datetime | None:
    """The old hub's last line before a hub's start at `started`: the line
    before the last silence of over _PREAMBLE_GAP_S among the lines just
    before it (a hub's own first lines come before `Running JupyterHub
    version`); None when the log begins with this hub."""
    start = later = started.astimezone(timezone.utc)
    for at in reversed(times):
        utc = at.astimezone(timezone.utc)
        if (later - utc).total_seconds() > _PREAMBLE_GAP_S:
            return at
        if (start - utc).total_seconds() > _PREAMBLE_S:
            return started
        later = utc
    return None


def _whose(name: str, whose: dict[str, tuple[str, str]], users: set[str]) -> tuple[str, str]:
    """(user, server) of a log name: as a proxy line told it, else split
    after a user name the log shows (`github:alice:gpu`), else at the first
    colon."""
    if name in whose:
        return whose[name]
    if name in users:
        return name, ""
    for i, c in enumerate(name):
        if c == ":" and name[:i] in users:
            return name[:i], name[i + 1:]
    user, _, server = name.partition(":")
    return user, server


def _row(key: tuple[str, str], ready: datetime, spawn: float, end: datetime, how: str) -> dict:
    ready_utc = ready.astimezone(timezone.utc)  # a local difference would miss a clock change
    arrival = (ready_utc - timedelta(seconds=spawn)).astimezone(ready.tzinfo)
    return {"arrival": arrival.isoformat(timespec="seconds"),
            "duration_s": max(round((end.astimezone(timezone.utc) - ready_utc).total_seconds()), 1),
            "user": key[0], "server": key[1], "spawn_s": round(spawn, 3), "ended": how}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="JupyterHub's log (kubectl logs deploy/hub > hub.log), and its rotated files in any "
                             "order (read oldest first; gzip-compressed ones too); - reads standard input")
    parser.add_argument("--cpu", required=True, metavar="CORES",
                        help="CPU each server requests (cpu_guarantee), cores or e.g. 500m")
    parser.add_argument("--ram-gib", required=True, metavar="GIB",
                        help="RAM each server requests (mem_guarantee), GiB or e.g. 512Mi")
    parser.add_argument("--timezone", default="UTC", metavar="ZONE",
                        help="the time zone of the log's timestamps (default UTC, a pod's; a name such as "
                             "Europe/Berlin, or a fixed offset such as +01:00); a line's own UTC "
                             "offset (%%z in its log_datefmt) is read as such")
    parser.add_argument("--log-datefmt", metavar="FORMAT",
                        help="the hub's c.JupyterHub.log_datefmt, if it is changed (e.g. '%%d/%%m/%%Y %%H:%%M:%%S'); "
                             "its default and ISO 8601 (2026-12-01T09:00:13+01:00) are read without it")
    parser.add_argument("--out", metavar="FILE", help="write the trace here (default: standard output)")


def run(args: argparse.Namespace) -> int:
    from ..cli import UsageError

    try:
        cpu = cores(args.cpu.replace(",", "."))
        ram = gib(args.ram_gib.replace(",", "."))
    except QuantityError as e:
        raise UsageError(f"--cpu and --ram-gib must be numbers (or 500m, 512Mi): {e}") from None
    if not all(math.isfinite(v) and v >= 0 for v in (cpu, ram)) or cpu + ram == 0:
        raise UsageError(f"--cpu and --ram-gib must be >= 0, not both 0, and finite: got {cpu:g} and {ram:g}")
    try:
        zone = parse_zone(args.timezone)
    except ValueError as e:
        raise UsageError(f"--timezone: {e}") from None
    if args.log_datefmt is not None and not dated(args.log_datefmt):
        raise UsageError(f"--log-datefmt {args.log_datefmt!r} has no date (%Y and %m or %b, and %d): a history "
                         "needs each line's day; set the hub's log_datefmt to one with it (its default has)")
    if args.out and os.path.exists(args.out) and any(
            name != "-" and os.path.exists(name) and os.path.samefile(name, args.out) for name in args.logs):
        raise UsageError(f"--out {args.out} is a log given to read: writing the trace there would replace it")
    if args.out and (held := _other_data(args.out)):
        raise UsageError(f"--out {args.out} holds other data than a trace of elastichub trace ({held!r}): writing "
                         "the trace there would replace it (an orchestrator's history_file, weeks of it); give "
                         "another file")
    logs = []
    for name in args.logs:
        try:
            logs.append(("standard input" if name == "-" else name, read_log(name)))
        except OSError as e:
            raise UsageError(f"cannot read {name} ({e.strerror})") from None
        except ValueError as e:
            raise UsageError(str(e)) from None
    try:
        sessions = read_sessions(logs, zone, args.log_datefmt)
    except LogError as e:
        raise UsageError(str(e)) from None
    if not sessions.rows:
        json_logs = [name for name, lines in logs if unread_json(lines)]
        if json_logs:
            raise UsageError(f"{', '.join(json_logs)}: JSON log records with neither a hub log line in them nor a "
                             f"message and its time ({' or '.join(MESSAGE_KEYS)}; {', '.join(TIME_KEYS[:-1])} or "
                             f"{TIME_KEYS[-1]}): give the hub's plain log (JupyterHub's default format)")
        empty = [name for name, lines in logs if not any(line.strip() for line in lines)]
        if len(empty) == len(logs):  # `kubectl logs` of the wrong pod or container, or a log rotated away
            raise UsageError(f"{', '.join(empty)}: empty, not a line in it")
        if sessions.levels and not sessions.levels & {"I", "D"}:  # starts and stops are logged at INFO
            raise UsageError(f"{', '.join(args.logs)}: only {'/'.join(sorted(sessions.levels))} lines, no INFO one: "
                             "the hub logs each server's start and stop at INFO; set c.JupyterHub.log_level = "
                             "'INFO' (its default) to have a history")
        raise UsageError(f"no server start found in {', '.join(args.logs)}: "
                         f"{_why_no_start(logs, sessions, args.timezone)}")
    for row in sessions.rows:
        row.update(cpu=f"{cpu:g}", ram_gib=f"{ram:g}")
    try:
        out = open(args.out, "w", newline="", encoding="utf-8") if args.out else sys.stdout
    except OSError as e:
        raise UsageError(f"--out: cannot write {args.out} ({e.strerror})") from None
    try:
        writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(sessions.rows)
    finally:
        if args.out:
            out.close()
    print("elastichub trace: " + "; ".join(_notes(sessions, args.timezone)), file=sys.stderr)
    return 0


def _other_data(path: str) -> str | None:
    """The first line of a file that is neither absent, empty, nor a trace this command wrote (which a
    new run replaces): an orchestrator's history_file, a log, anything else."""
    try:
        with open(path, "rb") as f:
            first = f.readline(4096).decode("utf-8", errors="replace").lstrip("\ufeff").strip()
    except OSError:  # absent, or not a file: writing it says why
        return None
    return first[:120] if first and first != ",".join(COLUMNS) else None


def _why_no_start(logs, sessions: Sessions, zone: str) -> str:
    """What the logs held, none of it a server start read."""
    for name, lines in logs:  # a start in a format not read (c.JupyterHub.log_format changed): say where
        number = next((n for n, line in enumerate(lines, 1) if _START_IN.search(line)), None)
        if number is not None:
            return (f"{name} line {number} is a server's start in a format not read: JupyterHub's default log_format "
                    "('[I 2026-12-01 09:00:13.123 JupyterHub base:1193] User alice took 3.2 seconds to start', "
                    "its log_datefmt as --log-datefmt) and JSON records are")
    if sessions.first is not None:  # a hub's lines, none a start (a quiet week; only failed spawns)
        held = {"stop(s) of servers started before it": sessions.stops_without_start,
                "server(s) running through it": sessions.running_throughout,
                "failed spawn(s)": sessions.failed_spawns}
        return (f"its lines from {sessions.first:%Y-%m-%d %H:%M} to {sessions.last:%Y-%m-%d %H:%M} {zone} hold "
                f"{', '.join(f'{n} {what}' for what, n in held.items() if n) or 'none'}: nothing to replay")
    return ("is it JupyterHub's log? (lines like '[I 2026-12-01 09:00:13.123 JupyterHub base:1193] User alice took "
            "3.2 seconds to start')")


def _notes(sessions: Sessions, zone: str) -> list[str]:
    notes = [f"{len(sessions.rows)} server session(s) from {sessions.first:%Y-%m-%d %H:%M} to "
             f"{sessions.last:%Y-%m-%d %H:%M} {zone}"]
    if sessions.stops_without_start:
        notes.append(f"{sessions.stops_without_start} stop(s) of servers started before the log begins: left out")
    if sessions.failed_spawns:
        notes.append(f"{sessions.failed_spawns} spawn(s) failed ({sessions.timed_out_spawns} timed out, "
                     f"{sessions.cancelled_spawns} cancelled while pending): no server ran, so none is in the trace "
                     "(one that timed out or was cancelled waiting for room asked for one the replay does not see)")
    if sessions.repeated:
        notes.append(f"{sessions.repeated} start or stop line(s) written twice, at the same millisecond (two log "
                     "handlers on one file?): each read once")
    if sessions.running_throughout:
        notes.append(f"{sessions.running_throughout} server(s) a hub found running, started before the log begins "
                     "and not stopped in it: left out")
    for ended, note in ((SHUTDOWN, "ended at a hub shutdown that stopped every server"),
                        (FOUND_STOPPED, "found stopped when the hub started again: each ends when the hub went down"),
                        (HUB_STOPPED, "stopped by the hub (a blocked user, or a route the proxy refused)"),
                        (NOT_FOUND, "not found by a hub that started again (another hub's log, or lines lost?): "
                                    "each ends when the old hub's log ends"),
                        (LOG_END, "still running at the log's end: they end there"),
                        (STARTED_AGAIN, "started again with no stop logged in between: each earlier session ends "
                                        "when the next was asked for")):
        if sessions.count(ended):
            notes.append(f"{sessions.count(ended)} {note}")
    return notes
