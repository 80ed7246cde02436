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
from datetime import datetime, timedelta
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
    first: datetime | None = None
    last: datetime | None = None


def _server_of_route(route: str) -> str:
    """The server name in a route spec (`/jhub/user/alice/gpu/` -> `gpu`)."""
    _, _, rest = route.partition("/user/")
    parts = [unquote(p) for p in rest.strip("/").split("/")]
    return parts[1] if len(parts) > 1 else ""


def read_sessions(lines, zone: zoneinfo.ZoneInfo) -> Sessions:
    """Pair each server's start with its stop, in the order of the lines
    (concatenate rotated logs oldest first)."""
    out = Sessions()
    running: dict[tuple[str, str], tuple[datetime, float]] = {}  # (user, server) -> (ready at, spawn s)
    for raw in lines:
        m = _LINE.search(_ANSI.sub("", raw.rstrip("\r\n")))
        if m is None:
            continue
        at = datetime.strptime(m["at"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=zone)
        if m["ms"]:
            at += timedelta(milliseconds=int(m["ms"][:3].ljust(3, "0")))
        out.first = out.first or at
        out.last = at
        started, stopped = _START.match(m["message"]), _STOP.match(m["message"])
        if started:
            user, _, server = started["name"].partition(":")
            running[(user, server)] = (at, float(started["seconds"]))
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
    return {"arrival": (ready - timedelta(seconds=spawn)).isoformat(timespec="seconds"),
            "duration_s": max(round((end - ready).total_seconds()), 1), "user": key[0], "server": key[1],
            "spawn_s": round(spawn, 3)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="JupyterHub's log (kubectl logs deploy/hub > hub.log), rotated files oldest first; "
                             "- reads standard input")
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
    lines = []
    for name in args.logs:
        try:
            if name == "-":
                lines += sys.stdin.readlines()
            else:
                with open(name, encoding="utf-8", errors="replace") as f:
                    lines += f.readlines()
        except OSError as e:
            raise UsageError(f"cannot read {name} ({e.strerror})") from None
    sessions = read_sessions(lines, zone)
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
    print("elastichub trace: " + "; ".join(notes), file=sys.stderr)
    return 0
