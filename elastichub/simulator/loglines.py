"""Reading a hub's log files into dated lines (elastichub trace): plain,
gzip-compressed or UTF-16; JupyterHub's default format or another
log_datefmt; a terminal's colours, a prefix (`kubectl logs --timestamps`),
or JSON records."""

from __future__ import annotations

import codecs
import gzip
import io
import itertools
import json
import re
import sys
import zlib
import zoneinfo
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Callable

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
MESSAGE_KEYS = ("message", "msg")
TIME_KEYS = ("timestamp", "@timestamp", "time", "asctime", "created")
# Compressed files by their first bytes, but gzip's (read): named, as read as text they hold no line.
COMPRESSED = ((b"BZh", "bzip2-compressed"), (b"\xfd7zXZ\x00", "xz-compressed"),
              (b"\x28\xb5\x2f\xfd", "zstd-compressed"), (b"PK\x03\x04", "a zip archive"))


# A fixed UTC offset as admins write it: +01:00, +0100, +01, -5, UTC+1, GMT+05:30 (each hours ahead of UTC,
# whatever the sign of the tz database's Etc/GMT+1, which a name with "/" still is).
_OFFSET = re.compile(r"(?:(?:UTC|GMT)\s*)?(?P<sign>[+\-\u2212])(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?", re.IGNORECASE)
ZONE_FORMS = "a zone name (UTC, Europe/Berlin) or a fixed UTC offset (+01:00, -0500, UTC+1, GMT-05:30)"


def parse_zone(text: str) -> tzinfo:
    """The time zone an admin names (--timezone): a tz database name, or a
    fixed offset, which keeps no daylight-saving time. A ValueError says
    which forms are read."""
    name = text.strip()
    if name.upper() == "Z":
        return timezone.utc
    if m := _OFFSET.fullmatch(name):
        hours, minutes = int(m["h"]), int(m["m"] or 0)
        if hours > 14 or minutes >= 60 or (hours == 14 and minutes):  # zones reach from -12:00 to +14:00
            raise ValueError(f"{text!r} is no UTC offset (they reach from -12:00 to +14:00)")
        offset = timedelta(hours=hours, minutes=minutes) * (1 if m["sign"] == "+" else -1)
        return timezone(offset, "UTC" + _offset_text(offset)) if offset else timezone.utc
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {text!r}: give {ZONE_FORMS}") from None


def _offset_text(offset: timedelta) -> str:
    minutes = round(offset.total_seconds() / 60)
    return f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


class LogError(ValueError):
    """The logs cannot be read as one history (their lines go back in time, or a time cannot be read)."""


# JupyterHub writes its lines in order; a step back of more than this is
# another log, or rotated files given twice.
_JITTER = timedelta(seconds=5)
# A prefix's UTC time (`kubectl logs --timestamps`, `journalctl -o short-iso`) is when the line was read,
# milliseconds after the hub wrote it (a shipper's that fell behind, minutes): the hub's time off it by more
# than this, and within a minute of a whole quarter of an hour (zones are quarters apart), is another zone.
_CLOCK_SLACK = timedelta(minutes=10)
_QUARTER = timedelta(minutes=15)


def _moment(head: str, zone: tzinfo, datefmt: str | None) -> tuple[datetime, bool] | None:
    """(time, whether the line gave its own UTC offset) of a line's head, or
    None if it does not start with a time in `datefmt` (the hub's
    log_datefmt, if given) or JupyterHub's default, or ISO 8601 (rotated
    files from before the hub's log_datefmt changed)."""
    at = None
    if datefmt is not None:
        words = head.split(" ")
        at = next((t for n in range(1, len(words) + 1) if (t := _strptime(" ".join(words[:n]), datefmt))), None)
    try:  # a corrupt line's (month 13, offset +99:99, year 1): no time
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
        if not 1970 < at.year < 9999:  # a hub's, after Unix time 0; and a spawn's length back or a year on fits
            return None
        if at.tzinfo is not None:  # the moment itself: shown on the hub's clock
            return at.astimezone(zone), True
        return at.replace(tzinfo=zone), False
    except (ValueError, OverflowError):
        return None


def _strptime(text: str, datefmt: str) -> datetime | None:
    """`text` in `datefmt`, with JupyterHub's `.%(msecs).03d` after it or not."""
    for at, ms in ((text, None), *(((m["at"], m["ms"]),) if (m := _MSECS.match(text)) else ())):
        try:
            moment = datetime.strptime(at, datefmt)
        except ValueError:
            continue
        return moment + timedelta(milliseconds=int(ms)) if ms else moment
    return None


def entries(name: str, lines, zone: tzinfo, datefmt: str | None, dated: Callable[[str], bool]):
    """(name, line number, local time, message, level) of each log line; a local
    time the clock shows twice (the hour a daylight-saving time ends) is
    the second one once the log has stepped back into it. A message that
    must be `dated` (a server's start or stop) whose time cannot be read (a
    log_datefmt not given) is a LogError."""
    last, folded, checked = None, False, False
    for number, raw in enumerate(lines, 1):
        line = _line(_ANSI.sub("", raw.rstrip("\r\n")), zone, datefmt)
        if line is None:
            continue
        moment, message, stamp, level, clock = line
        if moment is None:
            if dated(message):
                raise LogError(_unread_time(name, number, stamp, datefmt))
            continue  # another format's line (the idle culler's, tornado's: `[I 261201 09:00:00 ...]`)
        at, exact = moment
        twice = not exact and at.utcoffset() != at.replace(fold=1).utcoffset()
        folded = folded and twice
        if twice and clock is not None:  # the prefix says which pass of the hour it is
            at = min(at.replace(fold=0), at.replace(fold=1), key=lambda t: abs(t.astimezone(timezone.utc) - clock))
            folded = bool(at.fold)
        elif twice and (folded or (last is not None and at.astimezone(timezone.utc) < last - _JITTER)):
            at, folded = at.replace(fold=1), True
        utc = at.astimezone(timezone.utc)
        if clock is not None and not exact and not checked:  # a file's first such line: one clock
            checked, off = True, utc - clock
            if abs(off) > _CLOCK_SLACK and abs(off - round(off / _QUARTER) * _QUARTER) < timedelta(minutes=1):
                raise LogError(_other_zone(name, number, at, clock, zone))
        if last is not None and utc < last - _JITTER:
            raise LogError(f"{name} line {number}: the time goes back, from "
                           f"{last.astimezone(zone):%Y-%m-%d %H:%M:%S} to {at:%Y-%m-%d %H:%M:%S}: is it two logs "
                           "in one file, or a wrong --timezone?")
        last = max(utc, last or utc)
        yield name, number, at, message, level


def _line(text: str, zone: tzinfo, datefmt: str | None):
    """(time, or None if it cannot be read; message; the time's text; level
    letter; the UTC time of a prefix before it, if any) of a log line, plain
    or a JSON record; None if it is no hub line."""
    record = _json_record(text)
    if isinstance(record, str):
        text = record
    elif record is not None:
        stamp, message, level = record
        if not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
            return _moment(str(stamp), zone, datefmt), message, str(stamp), level, None
        try:
            moment = datetime.fromtimestamp(stamp, timezone.utc).astimezone(zone), True
        except (OverflowError, OSError, ValueError):  # not a Unix time
            moment = None
        return moment, message, str(stamp), level, None
    m = _LINE.search(text)
    if m is None:
        return None
    stamp = " ".join(m["head"].split(" ")[:-2])  # less the logger's name and module:line
    return _moment(m["head"], zone, datefmt), m["message"], stamp, m["level"], _clock(text[:m.start()])


def _clock(prefix: str) -> datetime | None:
    """The UTC time a prefix before the hub's line gives, if a word of it is
    one with its offset (`kubectl logs --timestamps`: 2026-12-01T08:00:13.123456789Z;
    after the pod's name with --prefix)."""
    for word in prefix.split():
        m = _STAMP.match(word)
        if m is not None and m["offset"]:
            moment = _moment(word, timezone.utc, None)
            return moment[0] if moment else None
    return None


def _other_zone(name: str, number: int, at: datetime, clock: datetime, zone: tzinfo) -> str:
    minutes = round((at.replace(tzinfo=None) - clock.replace(tzinfo=None)).total_seconds() / 900) * 15
    offset = _offset_text(timedelta(minutes=minutes))
    return (f"{name} line {number}: the hub's time {at:%Y-%m-%d %H:%M:%S} is not in --timezone {zone}: the "
            f"timestamp before it says {clock:%Y-%m-%d %H:%M:%S} UTC, so the hub's clock was at UTC{offset}: give "
            "the hub's time zone with --timezone")


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
    message = next((record[k].rstrip("\r\n") for k in MESSAGE_KEYS if isinstance(record.get(k), str)), None)
    stamp = next((record[k] for k in TIME_KEYS if isinstance(record.get(k), (str, int, float))), None)
    level = str(record.get("levelname") or record.get("level") or "I")[:1].upper()
    return None if message is None or stamp is None else (stamp, message, level)


def _unread_time(name: str, number: int, stamp: str, datefmt: str | None) -> str:
    if datefmt is not None:
        return (f"{name} line {number}: its time {stamp!r} is neither in --log-datefmt {datefmt!r} nor in "
                "JupyterHub's default (2026-12-01 09:00:13)")
    return (f"{name} line {number}: its time {stamp!r} is not a date and time as JupyterHub writes them by default "
            "(2026-12-01 09:00:13): give the hub's c.JupyterHub.log_datefmt with --log-datefmt (e.g. "
            "'%d/%m/%Y %H:%M:%S'); each line must show its date")


def in_order(logs, zone: tzinfo, datefmt: str | None, dated: Callable[[str], bool]):
    """The entries of every log, oldest file first (by its first line), one
    line at a time: a hub's log of a term is gigabytes, read twice (its first
    line, then the whole) rather than held. LogError for files that overlap."""
    firsts = []
    for name, lines in logs:
        first = next(entries(name, lines, zone, datefmt, dated), None)
        if first is not None:
            firsts.append((first[2].astimezone(timezone.utc), len(firsts), name, lines))
    before = None  # (name, first local time, last local time) of the file read before
    for _, _, name, lines in sorted(firsts):
        first = last = None
        for entry in entries(name, lines, zone, datefmt, dated):
            if first is None:
                first = entry[2]
                if before and first.astimezone(timezone.utc) < before[2].astimezone(timezone.utc) - _JITTER:
                    raise LogError(f"{name} (from {first:%Y-%m-%d %H:%M}) overlaps {before[0]} (to "
                                   f"{before[2]:%Y-%m-%d %H:%M}): give each log once")
            last = entry[2]
            yield entry
        before = (name, first, last)


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


def dated(datefmt: str) -> bool:
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


def unread_json(lines) -> bool:
    """Whether the log's first lines are JSON records that say no hub line (see _json_record)."""
    for line in (line.strip() for line in itertools.islice(lines, 20)):
        if "{" in line and line.endswith("}"):
            try:
                return isinstance(json.loads(line[line.index("{"):]), dict) and _json_record(line) is None
            except ValueError:
                return False
    return False
