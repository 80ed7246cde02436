"""Workloads: who asks for a notebook server, when, how big, for how long.

A workload is a list of `Request`s sorted by arrival. Workloads are built by
factories registered in `WORKLOADS` (`--workload NAME`); a module of its own
can add more with `register_workload` (list it in `WORKLOAD_MODULES` so the
CLI loads it). Trace replay lives in `trace.py`.

The `paper` scenario (docs/simulator.md has the numbers and the reasoning):
day 1 is an ordinary weekday, a diurnal load peaking near on-prem capacity;
day 2 is a teaching day, the same background plus classes whose students
all open a notebook within about five minutes. Further days alternate.
"""

from __future__ import annotations

import importlib
import math
import random
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from ..policy import Resources
from .params import ru

DAY_S = 86_400
HOUR_S = 3_600


@dataclass(frozen=True, slots=True)
class Request:
    """One user asking for a server. `duration_s` is how long it runs once
    started (the session lifetime); waiting comes on top of it."""

    arrival_s: int
    duration_s: int
    requests: Resources
    kind: str = "user"  # "ordinary", "class", "trace": lets reports split waits by source
    # a replayed session its user did not end (cut by the log's end or a hub
    # shutdown): replayed as it ran, a lower bound in the lifetime model
    censored: bool = False


@dataclass(frozen=True, slots=True)
class ClassSession:
    """A known burst: `users` students open a server within `spread_s` of
    `start_s`. Workloads expose these as a calendar that schedule-aware
    strategies may read (a real hub knows its course timetable)."""

    name: str
    start_s: int
    users: int
    spread_s: int
    requests: Resources


@dataclass(frozen=True)
class Workload:
    name: str
    requests: tuple[Request, ...]  # sorted by arrival_s
    horizon_s: int  # simulate [0, horizon_s)
    description: str = ""
    classes: tuple[ClassSession, ...] = ()  # calendar of known bursts, if any
    meta: dict = field(default_factory=dict, compare=False)  # free-form facts for reports
    # (mean, sd) seconds of the lifetime model the sessions were drawn from;
    # None for a replayed trace (see session_lifetime)
    lifetime: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        arrivals = [r.arrival_s for r in self.requests]
        if arrivals != sorted(arrivals):
            raise ValueError(f"workload {self.name!r}: requests must be sorted by arrival")

    @cached_property
    def _lifetime_estimate(self) -> LifetimeEstimate:
        # once per workload: every run of a --tune grid asks for it, and on a
        # term of sessions it costs a tenth of a run (a sort of every duration)
        return _estimate_lifetime(self)


@dataclass(frozen=True)
class LifetimeModel:
    """Session lifetime: normal(mean, sd), truncated below at `min_s`
    (re-drawn, so the shape above the cut is kept), rounded to seconds."""

    mean_s: float = 60 * 60.0
    sd_s: float = 15 * 60.0
    min_s: float = 5 * 60.0

    def __post_init__(self) -> None:
        for name, option in (("mean_s", "--lifetime-mean-min"), ("sd_s", "--lifetime-sd-min"),
                             ("min_s", "--lifetime-min-min")):
            value = getattr(self, name)
            if not isinstance(value, (int, float)):
                raise ValueError(f"{option} must be a number, got {value!r}")
            if math.isnan(value) or math.isinf(value) or value < 0:  # said in the option's unit, minutes
                raise ValueError(f"{option} must be a finite number >= 0, got {value / 60:g}")
        if self.mean_s <= 0:
            raise ValueError(f"--lifetime-mean-min must be > 0, got {self.mean_s / 60:g}")
        if self.min_s > self.mean_s + 3 * self.sd_s:
            raise ValueError("--lifetime-min-min is above the lifetime mean + 3 SD: almost no lifetime qualifies")

    def sample(self, rng: random.Random) -> int:
        while True:
            value = rng.gauss(self.mean_s, self.sd_s)
            if value >= self.min_s:
                return max(1, round(value))


class WorkloadFactory(Protocol):
    def __call__(self, *, days: float | None, seed: int, lifetime: LifetimeModel) -> Workload: ...


WORKLOADS: dict[str, WorkloadFactory] = {}

# Modules that register workloads of their own, imported on first lookup.
WORKLOAD_MODULES: list[str] = ["elastichub.simulator.scenarios"]  # teaching-day, weekend (issue 5)


def register_workload(name: str, factory: WorkloadFactory) -> None:
    if name in WORKLOADS:
        raise ValueError(f"workload {name!r} is already registered")
    WORKLOADS[name] = factory


def _load_modules() -> None:
    for module in WORKLOAD_MODULES:
        importlib.import_module(module)


def workload_names() -> list[str]:
    _load_modules()
    return sorted(WORKLOADS)


def make_workload(name: str, *, days: float | None = None, seed: int = 1,
                  lifetime: LifetimeModel | None = None) -> Workload:
    _load_modules()
    try:
        factory = WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}: choose one of {', '.join(sorted(WORKLOADS))}") from None
    return factory(days=days, seed=seed, lifetime=lifetime or LifetimeModel())


# --- the paper scenario -------------------------------------------------------

# Server sizes of the ordinary background (share, resource units): most users
# take the default profile, some a larger one, a few the largest.
ORDINARY_SIZES = ((0.6, 2.0), (0.3, 4.0), (0.1, 8.0))  # mean 3.2 RU
CLASS_SIZE_RU = 2.0  # a course profile: 1 vCPU, 2 GiB

# Arrivals per hour of an ordinary weekday, hour 0..23 (linearly interpolated
# between hour midpoints). With 60-minute sessions the number of running
# servers follows the rate (Little's law): ~110 at the 14:00 peak, i.e.
# ~350 of the 400 on-prem RU, so on-prem alone just copes.
ORDINARY_RATE = (
    4, 3, 2, 2, 2, 3, 6, 15, 35, 65, 90, 100,
    95, 105, 110, 105, 90, 70, 55, 45, 38, 30, 18, 8,
)
# A teaching day is an ordinary weekday plus the classes: students of other
# courses keep working as usual.
TEACHING_BACKGROUND = 1.0

# Classes on a teaching day: (name, start hour, students). 5-minute spread.
TEACHING_CLASSES = (
    ("intro-python", 9.0, 100),
    ("data-science", 13.0, 120),
    ("ml-lab", 15.5, 100),
)
CLASS_SPREAD_S = 300


def ordinary_rate(t_in_day: float, scale: float) -> float:
    """Arrivals per second at second `t_in_day` of an ordinary day."""
    h = t_in_day / HOUR_S - 0.5
    i = math.floor(h)
    frac = h - i
    a, b = ORDINARY_RATE[i % 24], ORDINARY_RATE[(i + 1) % 24]
    return scale * (a + (b - a) * frac) / HOUR_S


def ordinary_size(rng: random.Random) -> Resources:
    x = rng.random()
    for share, units in ORDINARY_SIZES:
        if x < share:
            return ru(units)
        x -= share
    return ru(ORDINARY_SIZES[-1][1])


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


def class_sessions(day: int, timetable) -> list[ClassSession]:
    """The classes of `timetable` ((name, start hour, students)) on `day`."""
    return [ClassSession(f"day{day + 1}-{name}", day * DAY_S + int(hour * HOUR_S), users, CLASS_SPREAD_S,
                         ru(CLASS_SIZE_RU))
            for name, hour, users in timetable]


def horizon_days(days: float | None, default: float) -> tuple[int, int]:
    """(horizon in seconds, days to generate) for `--days`."""
    days = default if days is None else days
    if not days > 0 or math.isinf(days):
        raise ValueError(f"--days must be a positive number, got {days!r}")
    horizon = int(round(days * DAY_S))
    return horizon, math.ceil(horizon / DAY_S)


def build_workload(name: str, description: str, requests: list[Request], classes: list[ClassSession],
                   horizon: int, lifetime: LifetimeModel | None = None) -> Workload:
    """Requests before the horizon, by arrival (stable: equal arrivals keep
    generation order), and the classes that start before it; `lifetime`:
    the model the durations were drawn from (None: `session_lifetime`
    estimates it from them)."""
    requests = sorted((r for r in requests if r.arrival_s < horizon), key=lambda r: r.arrival_s)
    return Workload(name, tuple(requests), horizon, description,
                    tuple(c for c in classes if c.start_s < horizon),
                    lifetime=None if lifetime is None else (lifetime.mean_s, lifetime.sd_s))


@dataclass(frozen=True)
class LifetimeEstimate:
    """The lifetime model of a workload's sessions and what it rests on."""

    mean_s: float
    sd_s: float
    sessions: int = 0  # sessions it was estimated from (0: the model they were drawn from)
    censored: int = 0  # sessions their users did not end: lower bounds
    far: int = 0  # beyond 3 IQRs above the upper quartile (always-on servers): counted, barely weighing


def lifetime_estimate(workload: Workload) -> LifetimeEstimate:
    """The session lifetime model a lifetime-aware strategy is configured
    with: the model a generated workload was drawn from, or for a replayed
    trace an estimate from its durations, to the second. The estimate is
    robust: the mean and SD are those of a normal with the durations' median
    and interquartile range (SD = IQR / 1.349), so a few always-on servers do
    not take the model over, as they would a plain mean and SD. Sessions
    their users did not end (censored) ran at least as long as they did:
    the quartiles are the Kaplan-Meier estimate's, since leaving them out
    keeps the sessions short enough to end before a cut, not a sample (a
    restart every 3 h made 3 h sessions look like 1.9 h)."""
    return workload._lifetime_estimate


def _estimate_lifetime(workload: Workload) -> LifetimeEstimate:
    if workload.lifetime is not None:
        return LifetimeEstimate(*workload.lifetime)
    ended = sorted(r.duration_s for r in workload.requests if not r.censored)
    censored = sum(1 for r in workload.requests if r.censored)
    if not ended:
        return LifetimeEstimate(LifetimeModel().mean_s, LifetimeModel().sd_s, 0, censored)
    # to the microsecond: the masses' float sums must not tip a median of n.5 s the other way
    points = _product_limit(workload.requests)
    q1, median, q3 = (round(_quantile(points, p), 6) for p in (0.25, 0.5, 0.75))
    far = sum(1 for d in ended if d > q3 + 3 * (q3 - q1))
    return LifetimeEstimate(float(round(median)), float(round((q3 - q1) / IQR_PER_SD)), len(ended), censored, far)


def _product_limit(requests) -> list[tuple[float, float]]:
    """(duration, probability mass) of the Kaplan-Meier estimate of the
    lifetimes; what it cannot place (censored after the last ended session)
    sits on the longest duration, a floor. Without censoring: 1/n each."""
    # At a tie an ended session counts before a censored one (it was still at risk then).
    ordered = sorted(((r.duration_s, r.censored) for r in requests))
    points, survival = [], 1.0
    for i, (duration, cut) in enumerate(ordered):
        if not cut:
            mass = survival / (len(ordered) - i)
            survival -= mass
            points.append((duration, mass))
    if survival > 1e-12 and ordered[-1][1]:
        points.append((ordered[-1][0], survival))
    return points


def _quantile(points: list[tuple[float, float]], p: float) -> float:
    """Quantile `p` of weighted points, interpolated as
    `statistics.quantiles(method="inclusive")` does for equal weights: the
    point after mass C stands at C / (1 - the last point's mass)."""
    if len(points) == 1:
        return points[0][0]
    span = 1.0 - points[-1][1]
    before, at = 0.0, []
    for x, w in points:
        at.append((before / span, x))
        before += w
    for (p0, x0), (p1, x1) in zip(at, at[1:]):
        if p <= p1:
            return x0 if p1 <= p0 else x0 + (x1 - x0) * (p - p0) / (p1 - p0)
    return at[-1][1]


IQR_PER_SD = 1.349  # a normal's interquartile range, in standard deviations


def session_lifetime(workload: Workload) -> tuple[float, float]:
    """(mean, sd) seconds of `lifetime_estimate`."""
    estimate = lifetime_estimate(workload)
    return estimate.mean_s, estimate.sd_s


def paper_workload(*, days: float | None, seed: int, lifetime: LifetimeModel, scale: float = 1.0) -> Workload:
    """The paper scenario; `scale` multiplies the users (background rate and
    class sizes), for a hub `scale` times as large (`scaled_params`)."""
    horizon, n_days = horizon_days(days, 2.0)
    rng = random.Random(seed)
    requests: list[Request] = []
    classes: list[ClassSession] = []
    timetable = tuple((name, hour, round(users * scale)) for name, hour, users in TEACHING_CLASSES)
    for day in range(n_days):
        teaching = day % 2 == 1
        requests += background(rng, day, (TEACHING_BACKGROUND if teaching else 1.0) * scale, lifetime)
        sessions = class_sessions(day, timetable) if teaching else []
        classes += sessions
        for session in sessions:
            requests += class_arrivals(rng, session, lifetime)
    name = "paper" if scale == 1.0 else f"paper-x{scale:g}"
    return build_workload(
        name, "day 1 ordinary weekday, day 2 teaching day with three class bursts (days alternate)"
        + ("" if scale == 1.0 else f", {scale:g}x the users"),
        requests, classes, horizon, lifetime)


register_workload("paper", paper_workload)
