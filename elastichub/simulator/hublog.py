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
guarantees). The rows have the
columns of the orchestrator's `history_file` (docs/simulator.md).
"""

from __future__ import annotations

import argparse
import codecs
import csv
import gzip
import io
import itertools
import json
import math
import os
import re
import sys
import zlib
import zoneinfo
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from urllib.parse import unquote

from ..quantity import QuantityError, cores, gib

# Colours of tornado's LogFormatter on a terminal: SGR codes, and terminfo's
# sgr0 after the prefix, which also selects the ASCII charset (ESC ( B on
# xterm) or shifts in (SI on screen/tmux).
_ANSI = re.compile(r"\x1b\[[0-9;]*m|\x1b[()][0-9A-Za-z]|[\x0e\x0f]")
# Searched, not anchored: `kubectl logs --timestamps` (and log shippers) put a prefix before it.
# The head: `%(asctime)s.%(msecs).03d %(name)s %(module)s:%(lineno)d`, asctime in the hub's log_datefmt.
_LINE = re.compile(r"\[(?P<level>[A-Z]) (?P<head>[^\]]*)\] (?P<message>.*)$")
# JupyterHub's default log_datefmt (%Y-%m-%d %H:%M:%S), or one in ISO 8601: a `T`, a fraction, an
# offset (%z: msecs come after it).
_STAMP = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d+))?"
                    r"(?P<offset>Z|[+-]\d{2}(?::?\d{2})?)?(?:\.(?P<ms>\d{3}))?(?= |$)")
_MSECS = re.compile(r"(?P<at>.*)[.,](?P<ms>\d{3})$")  # `,`: logging's own default, a JSON formatter's asctime
# A JSON record's message and time (python-json-logger's names and its `timestamp=True`, Logstash's, the
# epoch of `created`); a record holding the plain line (Docker's `log`, a shipper's) is read as that line.
_MESSAGE_KEYS = ("message", "msg")
_TIME_KEYS = ("timestamp", "@timestamp", "time", "asctime", "created")
# JupyterHub before 0.9 (one server a user) wrote `User alice server took 3.2 seconds to start` and
# `Removing user alice from proxy`, without the route; a user named `x server` on a later hub would read as x.
_START = re.compile(r"^User (?P<name>.+?)(?: server)? took (?P<seconds>\d+(?:\.\d+)?) seconds to start$")
_STOP = re.compile(r"^Removing user (?P<user>.+?) from proxy(?: \((?P<route>.*)\))?$")
_ADD = re.compile(r"^Adding user (?P<user>.+) to proxy (?P<route>\S+) => \S+$")
_STILL = re.compile(r"^(?P<user>.+) still running$")
_HUB_START = re.compile(r"^Running JupyterHub version ")
_SPAWNERS_CHECKED = re.compile(r"^Initialized \d+ spawners in ")  # every running server found or not
_SHUTDOWN = "Cleaning up single-user servers..."
_ENDED = re.compile(r"^(?:(?P<down>.+) appears to have stopped while the Hub was down"
                    r"|Stopping spawner for blocked user: (?P<blocked>.+)"
                    r"|Stopping (?P<failed>.+) to avoid inconsistent state)$")
# A spawn that failed (user.py; USER's, whichever server): no server ran, so no session; one that timed
# out (start_timeout, http_timeout) may have waited for room, demand a replay does not see.
_SPAWN_FAILED = re.compile(r"^(?:.+'s server (?P<timeout>failed to start in \S+ seconds, giving up|never showed up "
                           r"at \S+ after \S+ seconds\. Giving up)"
                           r"|(?:Unhandled error starting|Error starting|Not starting) (?!server ).+'s server"
                           r"|Unhandled error waiting for .+'s server to show up at )")
COLUMNS = ("arrival", "duration_s", "cpu", "ram_gib", "user", "server", "spawn_s", "ended")
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
# Compressed files by their first bytes, but gzip's (read): named, as read as text they hold no line.
COMPRESSED = ((b"BZh", "bzip2-compressed"), (b"\xfd7zXZ\x00", "xz-compressed"),
              (b"\x28\xb5\x2f\xfd", "zstd-compressed"), (b"PK\x03\x04", "a zip archive"))


@dataclass
class Sessions:
    """What the log held: one row per server session, and what it could not pair."""

    rows: list[dict] = field(default_factory=list)
    stops_without_start: int = 0  # servers started before the log begins
    running_throughout: int = 0  # found running by a hub, started before the log begins, not ended in it
    failed_spawns: int = 0  # no server ran: no row
    levels: set[str] = field(default_factory=set)  # of the lines read: I, W, E (D with --debug)
    timed_out_spawns: int = 0  # of those, the ones that timed out
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


class LogError(ValueError):
    """The logs cannot be read as one history (their lines go back in time)."""


# JupyterHub writes its lines in order; a step back of more than this is
# another log, or rotated files given twice.
_JITTER = timedelta(seconds=5)


def _parse_route(user: str, route: str) -> tuple[str, str]:
    """(user, server) of a proxy line: the server name is in the route spec
    (`/jhub/user/alice/gpu/` -> `gpu`)."""
    _, _, rest = route.partition("/user/")
    parts = [unquote(p) for p in rest.strip("/").split("/")]
    return user, parts[1] if len(parts) > 1 else ""


def _log_name(user: str, server: str) -> str:
    """How JupyterHub names a server in its log (Spawner._log_name)."""
    return f"{user}:{server}" if server else user


def _moment(head: str, zone: zoneinfo.ZoneInfo, datefmt: str | None) -> tuple[datetime, bool] | None:
    """(time, whether the line gave its own UTC offset) of a line's head, or
    None if it does not start with a time in `datefmt` (the hub's
    log_datefmt, if given) or JupyterHub's default, or ISO 8601 (rotated
    files from before the hub's log_datefmt changed)."""
    at = None
    if datefmt is not None:
        words = head.split(" ")
        at = next((t for n in range(1, len(words) + 1) if (t := _strptime(" ".join(words[:n]), datefmt))), None)
    if at is None:
        m = _STAMP.match(head)
        if m is None:
            return None
        at = datetime.fromisoformat(f"{m['date']}T{m['time']}")
        fraction = m["frac"] or m["ms"]
        if fraction:
            at += timedelta(microseconds=int(fraction[:6].ljust(6, "0")))
        if m["offset"]:
            offset = m["offset"].replace(":", "")
            minutes = 0 if offset == "Z" else int(offset[1:3]) * 60 + int(offset[3:5] or 0)
            at = at.replace(tzinfo=timezone(timedelta(minutes=-minutes if offset[0] == "-" else minutes)))
    if at.tzinfo is not None:  # the moment itself: shown on the hub's clock
        return at.astimezone(zone), True
    return at.replace(tzinfo=zone), False


def _strptime(text: str, datefmt: str) -> datetime | None:
    """`text` in `datefmt`, with JupyterHub's `.%(msecs).03d` after it or not."""
    for at, ms in ((text, None), *(((m["at"], m["ms"]),) if (m := _MSECS.match(text)) else ())):
        try:
            moment = datetime.strptime(at, datefmt)
        except ValueError:
            continue
        return moment + timedelta(milliseconds=int(ms)) if ms else moment
    return None


def _entries(name: str, lines, zone: zoneinfo.ZoneInfo, datefmt: str | None = None):
    """(name, line number, local time, message, level) of each log line; a local
    time the clock shows twice (the hour a daylight-saving time ends) is
    the second one once the log has stepped back into it. A server's start
    or stop whose time cannot be read (a log_datefmt not given) is a LogError."""
    last, folded = None, False
    for number, raw in enumerate(lines, 1):
        line = _line(_ANSI.sub("", raw.rstrip("\r\n")), zone, datefmt)
        if line is None:
            continue
        moment, message, stamp, level = line
        if moment is None:
            if _START.match(message) or _STOP.match(message):
                raise LogError(_unread_time(name, number, stamp, datefmt))
            continue  # another format's line (the idle culler's, tornado's: `[I 261201 09:00:00 ...]`)
        at, exact = moment
        twice = not exact and at.utcoffset() != at.replace(fold=1).utcoffset()
        folded = folded and twice
        if twice and (folded or (last is not None and at.astimezone(timezone.utc) < last - _JITTER)):
            at, folded = at.replace(fold=1), True
        utc = at.astimezone(timezone.utc)
        if last is not None and utc < last - _JITTER:
            raise LogError(f"{name} line {number}: the time goes back, from "
                           f"{last.astimezone(zone):%Y-%m-%d %H:%M:%S} to {at:%Y-%m-%d %H:%M:%S}: is it two logs "
                           "in one file, or a wrong --timezone?")
        last = max(utc, last or utc)
        yield name, number, at, message, level


def _line(text: str, zone: zoneinfo.ZoneInfo, datefmt: str | None):
    """(time, or None if it cannot be read; message; the time's text; level
    letter) of a log line, plain or a JSON record; None if it is no hub line."""
    record = _json_record(text)
    if isinstance(record, str):
        text = record
    elif record is not None:
        stamp, message, level = record
        if not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
            return _moment(str(stamp), zone, datefmt), message, str(stamp), level
        try:
            return (datetime.fromtimestamp(stamp, timezone.utc).astimezone(zone), True), message, str(stamp), level
        except (OverflowError, OSError, ValueError):  # not a Unix time
            return None, message, str(stamp), level
    m = _LINE.search(text)
    if m is None:
        return None
    stamp = " ".join(m["head"].split(" ")[:-2])  # less the logger's name and module:line
    return _moment(m["head"], zone, datefmt), m["message"], stamp, m["level"]


def _json_record(text: str):
    """The plain hub line a JSON record holds (a string), or the (time,
    message) of a JSON formatter's record; None if it has neither, or is
    no JSON record (one may follow a prefix: `kubectl logs --timestamps`)."""
    brace = text.find("{")
    if brace < 0 or not text.endswith("}"):
        return None
    try:
        record = json.loads(text[brace:])
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    values = [record]
    while values:  # the line may be nested (an export's `_source.log`)
        value = values.pop()
        if isinstance(value, dict):
            values.extend(value.values())
        elif isinstance(value, str) and (m := _LINE.search(value.rstrip("\r\n"))):
            return m.string
    message = next((record[k].rstrip("\r\n") for k in _MESSAGE_KEYS if isinstance(record.get(k), str)), None)
    stamp = next((record[k] for k in _TIME_KEYS if isinstance(record.get(k), (str, int, float))), None)
    level = str(record.get("levelname") or record.get("level") or "I")[:1].upper()
    return None if message is None or stamp is None else (stamp, message, level)


def _unread_time(name: str, number: int, stamp: str, datefmt: str | None) -> str:
    if datefmt is not None:
        return (f"{name} line {number}: its time {stamp!r} is neither in --log-datefmt {datefmt!r} nor in "
                "JupyterHub's default (2026-12-01 09:00:13)")
    return (f"{name} line {number}: its time {stamp!r} is not a date and time as JupyterHub writes them by default "
            "(2026-12-01 09:00:13): give the hub's c.JupyterHub.log_datefmt with --log-datefmt (e.g. "
            "'%d/%m/%Y %H:%M:%S'); each line must show its date")


def _in_order(logs, zone: zoneinfo.ZoneInfo, datefmt: str | None):
    """The entries of every log, oldest file first (by its first line), one
    line at a time: a hub's log of a term is gigabytes, read twice (its first
    line, then the whole) rather than held. LogError for files that overlap."""
    firsts = []
    for name, lines in logs:
        first = next(_entries(name, lines, zone, datefmt), None)
        if first is not None:
            firsts.append((first[2].astimezone(timezone.utc), len(firsts), name, lines))
    before = None  # (name, first local time, last local time) of the file read before
    for _, _, name, lines in sorted(firsts):
        first = last = None
        for entry in _entries(name, lines, zone, datefmt):
            if first is None:
                first = entry[2]
                if before and first.astimezone(timezone.utc) < before[2].astimezone(timezone.utc) - _JITTER:
                    raise LogError(f"{name} (from {first:%Y-%m-%d %H:%M}) overlaps {before[0]} (to "
                                   f"{before[2]:%Y-%m-%d %H:%M}): give each log once")
            last = entry[2]
            yield entry
        before = (name, first, last)


def read_sessions(logs, zone: zoneinfo.ZoneInfo, datefmt: str | None = None) -> Sessions:
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

    # user -> how many servers the last hub start found running whose start is not in the log: left out,
    # as a stop without its start is, but said
    found: dict[str, int] = {}

    def end(name: str, at: datetime, how: str) -> bool:
        unconfirmed.discard(name)
        if name not in running:
            out.stops_without_start += 1
            user = _whose(name, whose, users)[0]
            found[user] = max(found.get(user, 0) - 1, 0)
            return False
        ended.append((name, *running.pop(name), at, how))
        return True

    for _, _, at, message, level in _in_order(logs, zone, datefmt):
        out.first = out.first or at
        out.last = at
        out.levels.add(level)
        if m := _START.match(message):
            spawn = float(m["seconds"])
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
        times.append(at)
    ended += [(name, ready, spawn, out.last, LOG_END) for name, (ready, spawn) in running.items()]
    out.running_throughout = sum(found.values())
    out.rows = sorted((_row(_whose(name, whose, users), *rest) for name, *rest in ended),
                      key=lambda r: r["arrival"])
    return out


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


class LogFile:
    """A log file's lines, read from the disk each time they are iterated
    (gzip-compressed, as logrotate's `compress`, or not; UTF-8, or UTF-16
    with its byte-order mark); standard input
    ("-") is held, as it cannot be read again. Other binary files are
    refused by name (ValueError): read as text they would hold no line,
    silently. A file that cannot be read to its end is a LogError there."""

    def __init__(self, name: str):
        self.name = name
        self._held = sys.stdin.buffer.read() if name == "-" else None
        with self._open() as f:
            head = self._guarded(lambda: f.read(65536), ValueError)
        # Windows PowerShell's `kubectl logs ... > hub.log` writes UTF-16 (with its byte-order mark)
        self._utf16 = head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
        kind = next((what for magic, what in COMPRESSED if head.startswith(magic)), None)
        if kind or (b"\x00" in head and not self._utf16):
            raise ValueError(f"{name}: {kind or 'binary'} data, not a text log: give the log itself "
                             "(plain, or gzip-compressed)")

    def _open(self):
        if self._held is not None:
            held = io.BytesIO(self._held)
            return gzip.GzipFile(fileobj=held) if self._held[:2] == b"\x1f\x8b" else held
        with open(self.name, "rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
        return gzip.open(self.name, "rb") if gzipped else open(self.name, "rb")  # each closes its file

    def _guarded(self, read, error):
        """read(), its failures named (`error`: the exception class to raise)."""
        try:
            return read()
        except (OSError, EOFError, zlib.error) as e:
            if isinstance(e, OSError) and not isinstance(e, gzip.BadGzipFile) and e.errno is not None:
                raise error(f"{self.name}: cannot read it ({e.strerror})") from None  # the disk's, not the file's
            raise error(f"{self.name}: a gzip file that cannot be read ({e})") from None

    def __iter__(self):
        with self._open() as f:
            text = io.TextIOWrapper(f, encoding="utf-16", errors="replace", newline="") if self._utf16 else None
            lines = iter(text or f)
            while line := self._guarded(lambda: next(lines, None), LogError):
                yield line if text else line.decode("utf-8", errors="replace")


def read_log(name: str) -> LogFile:
    """The lines of a log file (`-`: standard input); see LogFile."""
    return LogFile(name)


def _dated(datefmt: str) -> bool:
    """Whether a strftime format shows the date: the year, month and day, or a locale's whole date."""
    if "%c" in datefmt or "%x" in datefmt:
        return True
    return any(y in datefmt for y in ("%Y", "%y")) and (
        "%j" in datefmt or (any(m in datefmt for m in ("%m", "%b", "%B")) and "%d" in datefmt))


def is_hub_log(lines) -> bool:
    """Whether any of the first lines is a hub's dated log line (a log given where a trace was asked for)."""
    utc = zoneinfo.ZoneInfo("UTC")
    return any((line := _line(_ANSI.sub("", raw.rstrip("\r\n")), utc, None)) is not None and line[0] is not None
               for raw in itertools.islice(lines, 20))


def _unread_json(lines) -> bool:
    """Whether the log's first lines are JSON records that say no hub line (see _json_record)."""
    for line in (line.strip() for line in itertools.islice(lines, 20)):
        if "{" in line and line.endswith("}"):
            try:
                return isinstance(json.loads(line[line.index("{"):]), dict) and _json_record(line) is None
            except ValueError:
                return False
    return False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="JupyterHub's log (kubectl logs deploy/hub > hub.log), and its rotated files in any "
                             "order (read oldest first; gzip-compressed ones too); - reads standard input")
    parser.add_argument("--cpu", required=True, metavar="CORES",
                        help="CPU each server requests (cpu_guarantee), cores or e.g. 500m")
    parser.add_argument("--ram-gib", required=True, metavar="GIB",
                        help="RAM each server requests (mem_guarantee), GiB or e.g. 512Mi")
    parser.add_argument("--timezone", default="UTC", metavar="ZONE",
                        help="the time zone of the log's timestamps (default UTC, a pod's); a line's own UTC "
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
        zone = zoneinfo.ZoneInfo(args.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"--timezone: unknown time zone {args.timezone!r} (e.g. UTC, Europe/Berlin)") from None
    if args.log_datefmt is not None and not _dated(args.log_datefmt):
        raise UsageError(f"--log-datefmt {args.log_datefmt!r} has no date (%Y and %m or %b, and %d): a history "
                         "needs each line's day; set the hub's log_datefmt to one with it (its default has)")
    if args.out and os.path.exists(args.out) and any(
            name != "-" and os.path.exists(name) and os.path.samefile(name, args.out) for name in args.logs):
        raise UsageError(f"--out {args.out} is a log given to read: writing the trace there would replace it")
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
        json_logs = [name for name, lines in logs if _unread_json(lines)]
        if json_logs:
            raise UsageError(f"{', '.join(json_logs)}: JSON log records with neither a hub log line in them nor a "
                             f"message and its time ({' or '.join(_MESSAGE_KEYS)}; {', '.join(_TIME_KEYS[:-1])} or "
                             f"{_TIME_KEYS[-1]}): give the hub's plain log (JupyterHub's default format)")
        empty = [name for name, lines in logs if not any(line.strip() for line in lines)]
        if len(empty) == len(logs):  # `kubectl logs` of the wrong pod or container, or a log rotated away
            raise UsageError(f"{', '.join(empty)}: empty, not a line in it")
        hint = ("is it JupyterHub's log? (lines like '[I 2026-12-01 09:00:13.123 JupyterHub base:1193] User alice "
                "took 3.2 seconds to start')")
        if sessions.levels and not sessions.levels & {"I", "D"}:  # starts and stops are logged at INFO
            raise UsageError(f"{', '.join(args.logs)}: only {'/'.join(sorted(sessions.levels))} lines, no INFO one: "
                             "the hub logs each server's start and stop at INFO; set c.JupyterHub.log_level = "
                             "'INFO' (its default) to have a history")
        if sessions.first is not None:  # a hub's lines, none a start (a quiet week; only failed spawns)
            held = {"stop(s) of servers started before it": sessions.stops_without_start,
                    "server(s) running through it": sessions.running_throughout,
                    "failed spawn(s)": sessions.failed_spawns}
            hint = (f"its lines from {sessions.first:%Y-%m-%d %H:%M} to {sessions.last:%Y-%m-%d %H:%M} "
                    f"{args.timezone} hold {', '.join(f'{n} {what}' for what, n in held.items() if n) or 'none'}: "
                    "nothing to replay")
        raise UsageError(f"no server start found in {', '.join(args.logs)}: {hint}")
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


def _notes(sessions: Sessions, zone: str) -> list[str]:
    notes = [f"{len(sessions.rows)} server session(s) from {sessions.first:%Y-%m-%d %H:%M} to "
             f"{sessions.last:%Y-%m-%d %H:%M} {zone}"]
    if sessions.stops_without_start:
        notes.append(f"{sessions.stops_without_start} stop(s) of servers started before the log begins: left out")
    if sessions.failed_spawns:
        notes.append(f"{sessions.failed_spawns} spawn(s) failed ({sessions.timed_out_spawns} timed out): no server "
                     "ran, so none is in the trace (one that timed out waiting for room asked for one the replay "
                     "does not see)")
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
