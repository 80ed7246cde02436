"""`elastichub trace`: a trace for `simulate --trace` from JupyterHub's log,
the history a hub has before ElasticHub runs on it.

JupyterHub logs two lines for every server, whatever its spawner:

- `User NAME took S seconds to start` once it is ready (NAME is `user`, or
  `user:server` for a named server): its user asked for it S seconds before;
- `Removing user USER from proxy (ROUTESPEC)` when it stops or dies; the
  route spec ends in `/user/USER/` or `/user/USER/SERVER/` (URL-escaped).

Each line starts `[I 2026-12-01 09:00:13.123 JupyterHub base:1193]`, in the
hub's local time (`--timezone`). Requests are not logged: every server gets
`--cpu` and `--ram-gib` (your spawner's guarantees). The rows have the
columns of the orchestrator's `history_file` (docs/simulator.md).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import zoneinfo
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from urllib.parse import unquote

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Searched, not anchored: `kubectl logs --timestamps` (and log shippers) put a prefix before it.
_LINE = re.compile(r"\[(?P<level>[A-Z]) (?P<at>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.(?P<ms>\d+))? \S+ \S+\] "
                   r"(?P<message>.*)$")
_START = re.compile(r"^User (?P<name>.+) took (?P<seconds>\d+(?:\.\d+)?) seconds to start$")
_STOP = re.compile(r"^Removing user (?P<user>.+) from proxy \((?P<route>.*)\)$")
COLUMNS = ("arrival", "duration_s", "cpu", "ram_gib", "user", "server", "spawn_s")


@dataclass
class Sessions:
    """What the log held: one row per server session, and what it could not pair."""

    rows: list[dict] = field(default_factory=list)
    stops_without_start: int = 0  # servers started before the log begins
    cut_at_end: int = 0  # still running at its last line: they end there
    started_again: int = 0  # a second start with no stop logged between: the first ends at the second's request
    first: datetime | None = None  # local times of the first and last line
    last: datetime | None = None


class LogError(ValueError):
    """The logs cannot be read as one history (their lines go back in time)."""


# JupyterHub writes its lines in order; a step back of more than this is
# another log, or rotated files given twice.
_JITTER = timedelta(seconds=5)


def _server_of_route(route: str) -> str:
    """The server name in a route spec (`/jhub/user/alice/gpu/` -> `gpu`)."""
    _, _, rest = route.partition("/user/")
    parts = [unquote(p) for p in rest.strip("/").split("/")]
    return parts[1] if len(parts) > 1 else ""


def _entries(name: str, lines, zone: zoneinfo.ZoneInfo):
    """(name, line number, local time, message) of each log line; a local
    time the clock shows twice (the hour a daylight-saving time ends) is
    the second one once the log has stepped back into it."""
    last, folded = None, False
    for number, raw in enumerate(lines, 1):
        m = _LINE.search(_ANSI.sub("", raw.rstrip("\r\n")))
        if m is None:
            continue
        at = datetime.strptime(m["at"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=zone)
        if m["ms"]:
            at += timedelta(milliseconds=int(m["ms"][:3].ljust(3, "0")))
        twice = at.utcoffset() != at.replace(fold=1).utcoffset()
        folded = folded and twice
        if twice and (folded or (last is not None and at.astimezone(timezone.utc) < last - _JITTER)):
            at, folded = at.replace(fold=1), True
        utc = at.astimezone(timezone.utc)
        if last is not None and utc < last - _JITTER:
            raise LogError(f"{name} line {number}: the time goes back, from "
                           f"{last.astimezone(zone):%Y-%m-%d %H:%M:%S} to {at:%Y-%m-%d %H:%M:%S}: is it two logs "
                           "in one file, or a wrong --timezone?")
        last = max(utc, last or utc)
        yield name, number, at, m["message"]


def read_sessions(logs, zone: zoneinfo.ZoneInfo) -> Sessions:
    """Pair each server's start with its stop. `logs`: (name, lines) of each
    file, in any order: rotated files are read oldest first (by their first
    line), and files that overlap are refused (LogError)."""
    streams = []
    for name, lines in logs:
        entries = list(_entries(name, lines, zone))
        if entries:
            streams.append(entries)
    streams.sort(key=lambda entries: entries[0][2].astimezone(timezone.utc))
    for before, after in zip(streams, streams[1:]):
        if after[0][2].astimezone(timezone.utc) < before[-1][2].astimezone(timezone.utc) - _JITTER:
            raise LogError(f"{after[0][0]} (from {after[0][2]:%Y-%m-%d %H:%M}) overlaps {before[0][0]} (to "
                           f"{before[-1][2]:%Y-%m-%d %H:%M}): give each log once")
    out = Sessions()
    running: dict[tuple[str, str], tuple[datetime, float]] = {}  # (user, server) -> (ready at, spawn s)
    for _, _, at, message in (entry for entries in streams for entry in entries):
        out.first = out.first or at
        out.last = at
        started, stopped = _START.match(message), _STOP.match(message)
        if started:
            user, _, server = started["name"].partition(":")
            spawn = float(started["seconds"])
            if (user, server) in running:  # its stop was not logged: it ended by the time the next was asked for
                asked = at.astimezone(timezone.utc) - timedelta(seconds=spawn)
                out.rows.append(_row((user, server), *running.pop((user, server)), asked))
                out.started_again += 1
            running[(user, server)] = (at, spawn)
        elif stopped:
            key = (stopped["user"], _server_of_route(stopped["route"]))
            if key not in running:
                out.stops_without_start += 1
                continue
            out.rows.append(_row(key, *running.pop(key), at))
    for key, (ready, spawn) in running.items():
        out.rows.append(_row(key, ready, spawn, out.last))
        out.cut_at_end += 1
    out.rows.sort(key=lambda r: r["arrival"])
    return out


def _row(key: tuple[str, str], ready: datetime, spawn: float, end: datetime) -> dict:
    ready_utc = ready.astimezone(timezone.utc)  # a local difference would miss a clock change
    arrival = (ready_utc - timedelta(seconds=spawn)).astimezone(ready.tzinfo)
    return {"arrival": arrival.isoformat(timespec="seconds"),
            "duration_s": max(round((end.astimezone(timezone.utc) - ready_utc).total_seconds()), 1),
            "user": key[0], "server": key[1], "spawn_s": round(spawn, 3)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="JupyterHub's log (kubectl logs deploy/hub > hub.log), and its rotated files in any "
                             "order (read oldest first); - reads standard input")
    parser.add_argument("--cpu", required=True, metavar="CORES", help="CPU each server requests (cpu_guarantee)")
    parser.add_argument("--ram-gib", required=True, metavar="GIB",
                        help="RAM each server requests, GiB (mem_guarantee)")
    parser.add_argument("--timezone", default="UTC", metavar="ZONE",
                        help="the time zone of the log's timestamps (default UTC, a pod's)")
    parser.add_argument("--out", metavar="FILE", help="write the trace here (default: standard output)")


def run(args: argparse.Namespace) -> int:
    from ..cli import UsageError

    try:
        cpu, ram = float(args.cpu.replace(",", ".")), float(args.ram_gib.replace(",", "."))
    except ValueError:
        raise UsageError(f"--cpu and --ram-gib must be numbers, got {args.cpu!r} and {args.ram_gib!r}") from None
    if not all(math.isfinite(v) and v >= 0 for v in (cpu, ram)) or cpu + ram == 0:
        raise UsageError(f"--cpu and --ram-gib must be >= 0, not both 0, and finite: got {cpu:g} and {ram:g}")
    try:
        zone = zoneinfo.ZoneInfo(args.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"--timezone: unknown time zone {args.timezone!r} (e.g. UTC, Europe/Berlin)") from None
    logs = []
    for name in args.logs:
        try:
            if name == "-":
                logs.append(("standard input", sys.stdin.readlines()))
            else:
                with open(name, encoding="utf-8", errors="replace") as f:
                    logs.append((name, f.readlines()))
        except OSError as e:
            raise UsageError(f"cannot read {name} ({e.strerror})") from None
    try:
        sessions = read_sessions(logs, zone)
    except LogError as e:
        raise UsageError(str(e)) from None
    if not sessions.rows:
        raise UsageError(f"no server start found in {', '.join(args.logs)}: is it JupyterHub's log? (lines like "
                         "'[I 2026-12-01 09:00:13.123 JupyterHub base:1193] User alice took 3.2 seconds to start')")
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
    notes = [f"{len(sessions.rows)} server session(s) from {sessions.first:%Y-%m-%d %H:%M} to "
             f"{sessions.last:%Y-%m-%d %H:%M} {args.timezone}"]
    if sessions.stops_without_start:
        notes.append(f"{sessions.stops_without_start} stop(s) of servers started before the log begins: left out")
    if sessions.cut_at_end:
        notes.append(f"{sessions.cut_at_end} still running at the log's end: they end there")
    if sessions.started_again:
        notes.append(f"{sessions.started_again} started again with no stop logged in between: each earlier "
                     "session ends when the next was asked for")
    print("elastichub trace: " + "; ".join(notes), file=sys.stderr)
    return 0
