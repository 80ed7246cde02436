"""A weekly class timetable for the live hub.

The simulator's calendar (`calendar.py`) places classes on the days of a
run; a hub's courses recur: "stats, Tuesdays 10:00, 140 students, 1 CPU and
2 GiB each". A timetable row names a weekday (or a date, for a one-off
workshop) and a local time; `classes_around` turns the rows into the
`ScheduledClass`es near a moment of the hub's clock (epoch seconds), in the
timetable's time zone, so a class keeps its local time across daylight
saving. `TimetabledStrategy` hands them to a schedule-aware strategy each
day; calendar arithmetic, which the policy layer keeps out of its pure
modules: hence here, beside the orchestrator. `TimetableFile` is the one
piece with I/O: it reads the CSV, and reads it again when it changes, so a
term's new timetable needs no restart.
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any, Iterable, Mapping

from ..csvtext import csv_dicts, decode
from ..policy import Resources
from ..policy.calendar import ScheduledClass, parse_class_row

TIMETABLE_COLUMNS = ("day", "time", "users", "cpu", "ram_gib")  # required; spread_s, name optional
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")  # the seconds a spreadsheet adds to a time cell


@dataclass(frozen=True, slots=True)
class TimetableEntry:
    """One row: every `weekday` (0 = Monday), or once on `on`, at `at` local time."""

    weekday: int | None
    on: date | None
    at: time
    users: int
    request: Resources
    spread_s: float = 600.0
    name: str = ""


def _day(text: str, where: str) -> tuple[int | None, date | None]:
    word = text.strip().lower()
    for i, name in enumerate(WEEKDAYS):
        if word in (name, name[:3]):
            return i, None
    try:
        return None, date.fromisoformat(word)
    except ValueError:
        raise ValueError(f"{where}: column 'day' must be a weekday (Mon..Sun) or a date YYYY-MM-DD, "
                         f"got {text!r}") from None


def parse_timetable(rows: Iterable[Mapping[str, object]], source: str = "timetable") -> tuple[TimetableEntry, ...]:
    """Entries from rows of strings (a CSV's DictReader). Errors name the
    source, the row (1 = first data row) and the column."""
    entries = []
    for i, row in enumerate(rows, start=1):
        where = f"{source} row {i}"
        for column in TIMETABLE_COLUMNS:
            if column not in row or row[column] is None or str(row[column]).strip() == "":
                raise ValueError(f"{where}: missing column {column!r}")
        weekday, on = _day(str(row["day"]), where)
        m = _TIME.match(str(row["time"]).strip())
        if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59 or int(m.group(3) or 0) > 59:
            raise ValueError(f"{where}: column 'time' must be HH:MM (24 h), got {row['time']!r}")
        users, request, spread_s, name = parse_class_row(row, where)
        at = time(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
        entries.append(TimetableEntry(weekday, on, at, users, request, spread_s, name))
    if not entries:
        raise ValueError(f"{source}: no classes (expected a header {','.join(TIMETABLE_COLUMNS)} and rows)")
    return tuple(entries)


def classes_around(entries: Iterable[TimetableEntry], now: float, zone: tzinfo, days_ahead: int = 1,
                   days_back: int | None = None) -> tuple[ScheduledClass, ...]:
    """The classes of the local days from `days_back` before the day of `now`
    to `days_ahead` after it, starting at their local time in `zone`.
    `days_back` defaults to enough for the longest arrival window still
    to be open."""
    entries = tuple(entries)
    if days_back is None:
        days_back = 1 + math.ceil(max((e.spread_s for e in entries), default=0.0) / 86_400)
    today = datetime.fromtimestamp(now, zone).date()
    classes = []
    for offset in range(-days_back, days_ahead + 1):
        day = today + timedelta(days=offset)
        for e in entries:
            if e.on == day or (e.weekday is not None and day.weekday() == e.weekday):
                start = datetime.combine(day, e.at, tzinfo=zone).timestamp()
                label = f"{e.name or 'class'} {day.isoformat()} {e.at:%H:%M}"
                classes.append(ScheduledClass(start, e.users, e.request, e.spread_s, label))
    return tuple(sorted(classes, key=lambda c: (c.start_s, c.name)))


class TimetabledStrategy:
    """A schedule-aware strategy (`schedule` option: `elastic`, `calendar`)
    whose schedule is a timetable: on the first cycle of each local day it
    decides with the classes around that day. Reads like the strategy it
    wraps (`name`, `config`, and its other figures: `boot_s`, which the
    users' notices quote, was missing)."""

    def __init__(self, strategy: Any, entries: tuple[TimetableEntry, ...], zone: tzinfo):
        self._base, self.entries, self.zone = strategy, tuple(entries), zone
        self._day: date | None = None
        self._current = strategy

    @property
    def name(self) -> str:
        return self._base.name

    @property
    def config(self):
        return self._base.config

    def __getattr__(self, name: str):
        # Only what this class does not define itself: the wrapped strategy's own settings.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._base, name)

    def use_entries(self, entries: tuple[TimetableEntry, ...]) -> None:
        """Decide with these rows from the next cycle on (a reloaded timetable)."""
        self.entries, self._day = tuple(entries), None

    def next_class(self, now: float) -> ScheduledClass | None:
        """The first class starting at `now` or later (within about a year), if any."""
        ahead = classes_around(self.entries, now, self.zone, days_ahead=400, days_back=0)
        return next((c for c in ahead if c.start_s >= now), None)

    def schedule_at(self, now: float) -> tuple[ScheduledClass, ...]:
        """The classes the strategy decides with at `now`."""
        day = datetime.fromtimestamp(now, self.zone).date()
        if day != self._day:
            self._current = replace(self._base, schedule=classes_around(self.entries, now, self.zone))
            self._day = day
        return self._current.schedule

    def decide(self, snapshot, state, now: float):
        self.schedule_at(now)
        return self._current.decide(snapshot, state, now)


class TimetableFile:
    """A timetable CSV on disk (utf-8, a spreadsheet's byte-order mark
    allowed). `load` reads it; `changed` reads it again only when it was
    written or replaced (a ConfigMap volume swaps in a new file), and reports
    a bad edit once, not every cycle: the caller keeps the timetable in
    force until an edit parses."""

    def __init__(self, path: str):
        self.path = path
        self._stamp: tuple | str | None = None  # of the last version read, good or bad; "gone"

    @staticmethod
    def _stamp_of(st: os.stat_result) -> tuple:
        # ctime too: a permission fixed by chmod, or a copy that kept its mtime, is a change
        return st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino

    def load(self) -> tuple[TimetableEntry, ...]:
        """The entries; OSError or ValueError (naming file, row and column)."""
        self._stamp = self._stamp_of(os.stat(self.path))
        with open(self.path, "rb") as f:
            raw = f.read()
        try:
            return parse_timetable(csv_dicts(decode(raw, f"calendar file {self.path}")),
                                   source=f"calendar file {self.path}")
        except csv.Error as e:
            raise ValueError(f"calendar file {self.path}: not CSV ({e})") from None

    def changed(self) -> tuple[TimetableEntry, ...] | None:
        """The new entries if the file changed since the last `load` or
        `changed`, else None; OSError or ValueError once per bad version."""
        try:
            st = os.stat(self.path)
        except OSError:
            if self._stamp == "gone":
                return None
            self._stamp = "gone"  # said once; read again when it is back
            raise
        if self._stamp_of(st) == self._stamp:
            return None
        return self.load()


def classes_ahead(strategy, now: float) -> list[dict]:
    """A timetabled strategy's classes still arriving or starting within a day (none for another strategy)."""
    schedule_at = getattr(strategy, "schedule_at", None)
    if schedule_at is None:
        return []
    zone = getattr(strategy, "zone", None)  # the timetable's: a class is shown at its own local time
    return [{"name": c.name, "start": c.start_s, "users": c.users,
             "local": datetime.fromtimestamp(c.start_s, zone).strftime("%a %H:%M")}
            for c in schedule_at(now) if c.start_s + c.spread_s >= now and c.start_s <= now + 86_400]
