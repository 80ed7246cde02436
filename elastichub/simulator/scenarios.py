"""Workloads beyond the paper's, and the calendar seam for schedule-aware strategies.

Registered into the simulator's `WORKLOADS` (`--workload NAME`):

- `teaching-day`: every simulated day is a teaching day: the ordinary
  background at 85 % plus five classes (08:30 60 students, 10:00 140,
  12:15 80, 14:00 150, 16:00 100), each arriving within five minutes of
  its start. Back-to-back bursts test scale-in that comes too early.
- `weekend`: a quiet day, the background at 30 % and no class: what does a
  strategy spend when almost nothing happens?

A workload's `classes` are its calendar. `calendar_options` hands them to the
`calendar` strategy (registered in the runner's `STRATEGY_OPTIONS`), and
`with_calendar` adds the classes of a calendar file (`--calendar FILE`,
CSV with `start,users,cpu,ram_gib[,spread_s,name]`) to any workload: their
students arrive *and* the strategy knows the schedule.
"""

from __future__ import annotations

import csv
import math
import random
from dataclasses import replace
from pathlib import Path

from ..policy import ScheduledClass, parse_schedule
from .params import ClusterParams, ru
from .runner import STRATEGY_OPTIONS
from .workload import (
    DAY_S,
    HOUR_S,
    ORDINARY_RATE,
    ClassSession,
    LifetimeModel,
    Request,
    Workload,
    ordinary_rate,
    ordinary_size,
    register_workload,
)

TEACHING_DAY_CLASSES = (  # (name, start hour, students)
    ("python-basics", 8.5, 60),
    ("stats", 10.0, 140),
    ("lunch-lab", 12.25, 80),
    ("data-science", 14.0, 150),
    ("ml-lab", 16.0, 100),
)
CLASS_RU = 2.0  # a course profile: 1 vCPU, 2 GiB
CLASS_SPREAD_S = 300


def background(rng: random.Random, day: int, scale: float, lifetime: LifetimeModel) -> list[Request]:
    """One day of ordinary arrivals: an inhomogeneous Poisson process (thinning)."""
    peak = max(ORDINARY_RATE) * scale / HOUR_S
    out, t = [], 0.0
    while peak > 0:
        t += rng.expovariate(peak)
        if t >= DAY_S:
            break
        if rng.random() * peak < ordinary_rate(t, scale):
            out.append(Request(day * DAY_S + int(t), lifetime.sample(rng), ordinary_size(rng), "ordinary"))
    return out


def class_arrivals(rng: random.Random, session: ClassSession, lifetime: LifetimeModel) -> list[Request]:
    """Students of one class: most on time, the triangle peaks a minute in."""
    return [
        Request(session.start_s + int(rng.triangular(0, session.spread_s, min(60, session.spread_s))),
                lifetime.sample(rng), session.requests, "class")
        for _ in range(session.users)
    ]


def _days(days: float | None, default: float) -> tuple[int, int]:
    days = default if days is None else days
    if not days > 0 or math.isinf(days):
        raise ValueError(f"--days must be a positive number, got {days!r}")
    horizon = int(round(days * DAY_S))
    return horizon, math.ceil(horizon / DAY_S)


def _build(name: str, description: str, requests: list[Request], classes: list[ClassSession],
           horizon: int) -> Workload:
    requests = sorted((r for r in requests if r.arrival_s < horizon), key=lambda r: r.arrival_s)
    return Workload(name, tuple(requests), horizon, description,
                    tuple(c for c in classes if c.start_s < horizon))


def teaching_day(*, days: float | None, seed: int, lifetime: LifetimeModel) -> Workload:
    horizon, n_days = _days(days, 1.0)
    rng = random.Random(f"teaching-day-{seed}")
    requests: list[Request] = []
    classes: list[ClassSession] = []
    for day in range(n_days):
        requests += background(rng, day, 0.85, lifetime)
        for name, hour, users in TEACHING_DAY_CLASSES:
            session = ClassSession(f"day{day + 1}-{name}", day * DAY_S + int(hour * HOUR_S), users,
                                   CLASS_SPREAD_S, ru(CLASS_RU))
            classes.append(session)
            requests += class_arrivals(rng, session, lifetime)
    return _build("teaching-day", "teaching days: background at 85 % and five class bursts a day",
                  requests, classes, horizon)


def weekend(*, days: float | None, seed: int, lifetime: LifetimeModel) -> Workload:
    horizon, n_days = _days(days, 2.0)
    rng = random.Random(f"weekend-{seed}")
    requests: list[Request] = []
    for day in range(n_days):
        requests += background(rng, day, 0.3, lifetime)
    return _build("weekend", "a quiet weekend: background at 30 %, no class", requests, [], horizon)


register_workload("teaching-day", teaching_day)
register_workload("weekend", weekend)


# --- calendars ---------------------------------------------------------------


def schedule_of(workload: Workload) -> tuple[ScheduledClass, ...]:
    """The workload's classes as the policy's calendar entries."""
    return tuple(
        ScheduledClass(float(c.start_s), c.users, c.requests, float(c.spread_s), c.name)
        for c in workload.classes
    )


def calendar_options(workload: Workload, params: ClusterParams) -> dict:
    """Options of the `calendar` strategy in a simulation: the workload's
    classes, and the modelled boot time (how early nodes must start)."""
    return {"schedule": schedule_of(workload), "boot_s": params.cloud_boot_s}


def elastic_options(workload: Workload, params: ClusterParams) -> dict:
    return {"boot_s": params.cloud_boot_s}


STRATEGY_OPTIONS.setdefault("calendar", calendar_options)
STRATEGY_OPTIONS.setdefault("elastic", elastic_options)


def load_calendar(path: str | Path) -> tuple[ScheduledClass, ...]:
    """Read a calendar CSV; errors name the file, the row and the column."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except FileNotFoundError:
        raise ValueError(f"calendar file {path}: not found") from None
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise ValueError(f"calendar file {path}: cannot read ({e})") from None
    if not rows:
        raise ValueError(f"calendar file {path}: no classes (expected a header start,users,cpu,ram_gib and rows)")
    return parse_schedule(rows, source=f"calendar file {path}")


def with_calendar(workload: Workload, calendar: tuple[ScheduledClass, ...], seed: int,
                  lifetime: LifetimeModel | None = None) -> Workload:
    """`workload` plus the students of every class in `calendar` (who
    arrive within `spread_s` of the start), and the classes as its calendar."""
    lifetime = lifetime or LifetimeModel()
    rng = random.Random(f"calendar-{seed}")
    sessions = []
    extra: list[Request] = []
    for i, c in enumerate(calendar):
        if c.start_s >= workload.horizon_s:
            raise ValueError(f"calendar class {c.name or i + 1!r} starts at {c.start_s:g} s, "
                             f"after the simulated {workload.horizon_s} s")
        session = ClassSession(c.name or f"class-{i + 1}", int(c.start_s), c.users, int(c.spread_s), c.request)
        sessions.append(session)
        extra += class_arrivals(rng, session, lifetime)
    requests = sorted(list(workload.requests) + [r for r in extra if r.arrival_s < workload.horizon_s],
                      key=lambda r: r.arrival_s)
    return replace(workload, requests=tuple(requests), classes=workload.classes + tuple(sessions),
                   description=f"{workload.description}; plus {len(sessions)} calendar class(es)")


def write_trace(workload: Workload, path: str | Path) -> Path:
    """Save a workload as a replayable trace (the `--trace` CSV format), so a
    generated day can be edited and replayed like a hub's own history."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["arrival_s", "duration_s", "cpu", "ram_gib"])
        for r in workload.requests:
            w.writerow([r.arrival_s, r.duration_s, f"{r.requests.cpu:g}", f"{r.requests.ram / 2**30:g}"])
    return path


def write_calendar(workload: Workload, path: str | Path) -> Path:
    """Save a workload's classes in the `--calendar` CSV format."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["start", "users", "cpu", "ram_gib", "spread_s", "name"])
        for c in workload.classes:
            w.writerow([c.start_s, c.users, f"{c.requests.cpu:g}", f"{c.requests.ram / 2**30:g}", c.spread_s, c.name])
    return path


def class_window_waits(result, workload: Workload) -> dict[str, int]:
    """Max wait of the requests made while each class's students arrive
    (start to start + spread): zero means nobody in that window waited."""
    out = {}
    for c in workload.classes:
        end = c.start_s + c.spread_s
        out[c.name] = max((w[1] for w in result.waits if c.start_s <= w[0] <= end), default=0)
    return out
