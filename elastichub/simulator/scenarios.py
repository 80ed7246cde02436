"""Workloads beyond the paper's, and the calendar seam for schedule-aware strategies.

Registered into the simulator's `WORKLOADS` (`--workload NAME`):

- `teaching-day`: every simulated day is a teaching day: the ordinary
  background at 85 % plus five classes (08:30 60 students, 10:00 140,
  12:15 80, 14:00 150, 16:00 100), each arriving within five minutes of
  its start. Back-to-back bursts test scale-in that comes too early.
- `weekend`: a quiet day, the background at 30 % and no class: what does a
  strategy spend when almost nothing happens?

A workload's `classes` are its calendar (`runner.schedule_of`; the runner's
`STRATEGY_OPTIONS` hands them to the `calendar` strategy), and
`with_calendar` adds the classes of a calendar file (`--calendar FILE`,
CSV with `start,users,cpu,ram_gib[,spread_s,name]`) to any workload: their
students arrive *and* the strategy knows the schedule.
"""

from __future__ import annotations

import csv
import random
from dataclasses import replace
from pathlib import Path

from ..csvtext import csv_dicts, decode
from ..policy import GiB, Resources, ScheduledClass, parse_schedule
from ..policy.calendar import parse_class_row
from .workload import (
    ClassSession,
    LifetimeModel,
    Request,
    Workload,
    background,
    build_workload,
    class_arrivals,
    class_sessions,
    horizon_days,
    register_workload,
)

TEACHING_DAY_CLASSES = (  # (name, start hour, students)
    ("python-basics", 8.5, 60),
    ("stats", 10.0, 140),
    ("lunch-lab", 12.25, 80),
    ("data-science", 14.0, 150),
    ("ml-lab", 16.0, 100),
)


def teaching_day(*, days: float | None, seed: int, lifetime: LifetimeModel) -> Workload:
    horizon, n_days = horizon_days(days, 1.0)
    rng = random.Random(f"teaching-day-{seed}")
    requests: list[Request] = []
    classes: list[ClassSession] = []
    for day in range(n_days):
        requests += background(rng, day, 0.85, lifetime)
        sessions = class_sessions(day, TEACHING_DAY_CLASSES)
        classes += sessions
        for session in sessions:
            requests += class_arrivals(rng, session, lifetime)
    return build_workload("teaching-day", "teaching days: background at 85 % and five class bursts a day",
                          requests, classes, horizon, lifetime)


def weekend(*, days: float | None, seed: int, lifetime: LifetimeModel) -> Workload:
    horizon, n_days = horizon_days(days, 2.0)
    rng = random.Random(f"weekend-{seed}")
    requests: list[Request] = []
    for day in range(n_days):
        requests += background(rng, day, 0.3, lifetime)
    return build_workload("weekend", "a quiet weekend: background at 30 %, no class", requests, [], horizon, lifetime)


register_workload("teaching-day", teaching_day)
register_workload("weekend", weekend)


# --- calendars ---------------------------------------------------------------


def load_calendar(path: str | Path, nodes: list[Resources] | None = None) -> tuple[ScheduledClass, ...]:
    """Read a calendar CSV; errors name the file, the row and the column.
    `nodes` (the allocatable of each node shape of the simulated cluster),
    when given, rejects a class whose students could never run, as
    `trace.load_trace` does for a trace."""
    path = Path(path)
    try:
        rows = list(csv_dicts(decode(path.read_bytes(), f"calendar file {path}")))
    except FileNotFoundError:
        raise ValueError(f"calendar file {path}: not found") from None
    except (OSError, csv.Error) as e:
        raise ValueError(f"calendar file {path}: cannot read ({e})") from None
    if not rows:
        raise ValueError(f"calendar file {path}: no classes (expected a header start,users,cpu,ram_gib and rows)")
    if "start" not in rows[0] and {"day", "time"} <= rows[0].keys():  # the orchestrator's weekly timetable
        raise ValueError(f"calendar file {path} line 1: columns day,time are a weekly timetable (the "
                         "orchestrator's calendar_file); a simulated calendar names each class's start, seconds "
                         "or 'D HH:MM' from the replay's start (start,users,cpu,ram_gib)")
    classes = parse_schedule(rows, source=f"calendar file {path}")
    if nodes is not None:
        from .trace import check_fits

        for i, row in enumerate(rows, start=1):
            where = f"calendar file {path} row {i}"
            _, request, _, _ = parse_class_row(row, where)  # valid: parse_schedule read it
            check_fits(where, request, nodes)
    return classes


def with_calendar(workload: Workload, calendar: tuple[ScheduledClass, ...], seed: int,
                  lifetime: LifetimeModel | None = None, *, students: bool = True,
                  source: str = "calendar") -> Workload:
    """`workload` with the classes in `calendar` as its calendar, plus, with
    `students`, the students of each (who arrive within `spread_s` of the
    start); without, the workload already holds them (a hub's own history)."""
    lifetime = lifetime or LifetimeModel()
    rng = random.Random(f"calendar-{seed}")
    sessions = []
    extra: list[Request] = []
    for i, c in enumerate(calendar):
        if c.start_s >= workload.horizon_s:
            raise ValueError(f"{source}: class {c.name or i + 1!r} starts at {c.start_s:g} s (day "
                             f"{int(c.start_s // 86_400) + 1}), after the simulated {workload.horizon_s} s "
                             f"({workload.horizon_s / 86_400:.3g} days): give --days, or drop the class")
        session = ClassSession(c.name or f"class-{i + 1}", int(c.start_s), c.users, int(c.spread_s), c.request)
        sessions.append(session)
        if students:
            extra += class_arrivals(rng, session, lifetime)
    requests = sorted(list(workload.requests) + [r for r in extra if r.arrival_s < workload.horizon_s],
                      key=lambda r: r.arrival_s)
    added = "calendar class(es)" if students else "scheduled class(es) whose students it holds"
    return replace(workload, requests=tuple(requests), classes=workload.classes + tuple(sessions),
                   description=f"{workload.description}; plus {len(sessions)} {added}")


def write_trace(workload: Workload, path: str | Path) -> Path:
    """Save a workload as a replayable trace (the `--trace` CSV format), so a
    generated day can be edited and replayed like a hub's own history."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["arrival_s", "duration_s", "cpu", "ram_gib"])
        for r in workload.requests:
            w.writerow([r.arrival_s, r.duration_s, f"{r.requests.cpu:g}", f"{r.requests.ram / GiB:g}"])
    return path


def write_calendar(workload: Workload, path: str | Path) -> Path:
    """Save a workload's classes in the `--calendar` CSV format."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["start", "users", "cpu", "ram_gib", "spread_s", "name"])
        for c in workload.classes:
            w.writerow([c.start_s, c.users, f"{c.requests.cpu:g}", f"{c.requests.ram / GiB:g}", c.spread_s, c.name])
    return path


def class_window_waits(result, workload: Workload) -> dict[str, int]:
    """Max wait of the requests made while each class's students arrive
    (start to start + spread): zero means nobody in that window waited."""
    out = {}
    for c in workload.classes:
        end = c.start_s + c.spread_s
        out[c.name] = max((w[1] for w in result.waits if c.start_s <= w[0] <= end), default=0)
    return out
