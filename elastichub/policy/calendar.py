"""A calendar of known classes, so nodes are Ready when a class starts.

What JupyterHub admins running courses ask for: "my 140 students open their
notebooks at 10:00 on Tuesdays". A `ScheduledClass` says when, how many
users, and what each asks for; `reserved_demand` turns the classes around
`now` into demand the `calendar` strategy (`elastic.py`) adds to the
cluster's own, from `lead_s` before the start (one boot time and a margin)
until the arrival window closes. Users who already came are no longer
reserved: every server created since the class started counts against it
(ordinary arrivals during the class's arrival window are counted too: the
arrivals reserve of `elastic.py`, the ordinary rate times one boot, covers
that error; students who come early are counted twice, the safe side).

Times are in the caller's clock (epoch seconds live, seconds since the start
of a simulation in the simulator). Pure: parsing of already-read rows lives
here so the orchestrator and the simulator share it; reading files does not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from ..quantity import QuantityError, cores, gib
from .model import GiB, ClusterSnapshot, Resources

DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class ScheduledClass:
    start_s: float  # when the class starts (users begin to arrive around here)
    users: int  # how many servers it will ask for
    request: Resources  # per-user request (CPU cores, RAM bytes)
    spread_s: float = 600.0  # arrivals are expected within this long after start_s
    name: str = ""

    def __post_init__(self) -> None:
        label = f"class {self.name!r}" if self.name else "class"
        for option in ("start_s", "spread_s"):
            value = getattr(self, option)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{label}: {option} must be a finite number, got {value!r}")
        if self.spread_s < 0:
            raise ValueError(f"{label}: spread_s must be >= 0, got {self.spread_s!r}")
        if isinstance(self.users, bool) or not isinstance(self.users, int) or self.users < 0:
            raise ValueError(f"{label}: users must be a whole number >= 0, got {self.users!r}")
        if self.request.cpu < 0 or self.request.ram <= 0:
            raise ValueError(f"{label}: per-user request needs cpu >= 0 and ram > 0, got {self.request}")

    @property
    def demand(self) -> Resources:
        return Resources(self.request.cpu * self.users, self.request.ram * self.users)


def reserved_demand(
    schedule: Iterable[ScheduledClass], snapshot: ClusterSnapshot, now: float, lead_s: float
) -> Resources:
    """What the classes whose window is open at `now` are still expected to
    bring. A window runs from `start_s - lead_s` to `start_s + spread_s`.
    Servers created since the earliest open class started (running or
    queued) are the users who already came; they are matched to classes in
    start order."""
    open_classes = sorted(
        (c for c in schedule if c.start_s - lead_s <= now <= c.start_s + c.spread_s),
        key=lambda c: (c.start_s, c.name),
    )
    if not open_classes:
        return Resources()
    since = open_classes[0].start_s
    arrived = sum(1 for s in snapshot.pending if s.created_at is not None and s.created_at >= since)
    for node in snapshot.nodes:
        for s in node.servers:
            if s.created_at is not None and s.created_at >= since:
                arrived += 1
    cpu = ram = 0.0
    for c in open_classes:
        came = min(arrived, c.users)
        arrived -= came
        cpu += c.request.cpu * (c.users - came)
        ram += c.request.ram * (c.users - came)
    return Resources(cpu, ram)


_CLOCK = re.compile(r"^(?:(\d+)\s+)?(\d{1,2}):(\d{2})(?::(\d{2}))?$")  # seconds: a spreadsheet's time cell


def parse_start(text: str) -> float:
    """Seconds in the caller's clock from `SECONDS`, `HH:MM` (day 1) or
    `D HH:MM` (day D, counted from 1, as the simulator's days), each clock
    time with optional `:SS`."""
    text = str(text).strip()
    m = _CLOCK.match(text)
    if m:
        day = int(m.group(1) or 1)
        hours, minutes, seconds = int(m.group(2)), int(m.group(3)), int(m.group(4) or 0)
        if day < 1 or hours > 23 or minutes > 59 or seconds > 59:
            raise ValueError(f"not a time: {text!r} (expected D HH:MM, day from 1)")
        return (day - 1) * DAY_S + hours * 3600.0 + minutes * 60.0 + seconds
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a time: {text!r} (expected seconds, HH:MM or D HH:MM)") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a time: {text!r} (seconds must be >= 0)")
    return value


_PARSE = {"cpu": cores, "ram_gib": gib}  # or what kubectl shows: 500m, 512Mi


def _number(row: Mapping[str, object], column: str, where: str, default: float | None = None) -> float:
    raw = row.get(column)
    if raw is None or str(raw).strip() == "":
        if default is not None:
            return default
        raise ValueError(f"{where}: missing column {column!r}")
    try:
        value = _PARSE.get(column, float)(str(raw).strip())
    except QuantityError as e:
        raise ValueError(f"{where}: column {column!r}: {e}") from None
    except ValueError:
        raise ValueError(f"{where}: column {column!r} is not a number: {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: column {column!r} must be a number >= 0, got {raw!r}")
    return value


CALENDAR_COLUMNS = ("start", "users", "cpu", "ram_gib")  # required; spread_s, name optional
# More students than any hub serves is a typo (1e7): the simulator would generate them all, for hours.
MAX_CLASS_USERS = 100_000


def parse_class_row(row: Mapping[str, object], where: str) -> tuple[int, Resources, float, str]:
    """(users, per-user request, spread_s, name) of a calendar or timetable
    row: columns users, cpu, ram_gib, and optionally spread_s (default 600)
    and name. Errors name `where` (source and row) and the column."""
    users = _number(row, "users", where)
    if users != int(users):
        raise ValueError(f"{where}: column 'users' must be a whole number, got {row['users']!r}")
    if users > MAX_CLASS_USERS:
        raise ValueError(f"{where}: column 'users' must be at most {MAX_CLASS_USERS:,} (one class), "
                         f"got {row['users']!r}")
    ram = _number(row, "ram_gib", where)
    if ram <= 0:
        raise ValueError(f"{where}: column 'ram_gib' must be > 0, got {row['ram_gib']!r}")
    return (int(users), Resources(_number(row, "cpu", where), ram * GiB),
            _number(row, "spread_s", where, default=600.0), str(row.get("name") or "").strip())


def parse_schedule(rows: Iterable[Mapping[str, object]], source: str = "calendar") -> tuple[ScheduledClass, ...]:
    """Classes from rows of strings (a CSV's DictReader, a TOML table list).
    Errors name the source, the row (1 = first data row) and the column."""
    classes = []
    for i, row in enumerate(rows, start=1):
        where = f"{source} row {i}"
        if not isinstance(row, Mapping):
            raise ValueError(f"{where}: expected a table of {', '.join(CALENDAR_COLUMNS)}")
        for column in CALENDAR_COLUMNS:
            if column not in row:
                raise ValueError(f"{where}: missing column {column!r}")
        try:
            start = parse_start(row["start"])
        except ValueError as e:
            raise ValueError(f"{where}: column 'start': {e}") from None
        users, request, spread_s, name = parse_class_row(row, where)
        classes.append(ScheduledClass(start_s=start, users=users, request=request, spread_s=spread_s, name=name))
    return tuple(sorted(classes, key=lambda c: (c.start_s, c.name)))
