"""Runs: policies x modes x theta_out values on one workload.

The three evaluation modes are `PolicyConfig` switches of any strategy, so
every registered strategy (`elastichub.policy.STRATEGIES`) can be compared
in each. On-prem only never uses the cloud, so theta_out cannot matter
there: it runs once per policy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..policy import PolicyConfig, ScheduledClass, Strategy, make_strategy
from .engine import simulate
from .model import RunResult, percentile
from .params import ClusterParams
from .workload import DAY_S, Workload, session_lifetime

# mode -> PolicyConfig switches
MODES: dict[str, dict[str, bool]] = {
    "onprem-only": {"scale_out": False},
    "no-migration": {"migration": False},
    "migration": {},
}


def schedule_of(workload: Workload) -> tuple[ScheduledClass, ...]:
    """The workload's classes as the policy's calendar entries."""
    return tuple(
        ScheduledClass(float(c.start_s), c.users, c.requests, float(c.spread_s), c.name)
        for c in workload.classes
    )


def modelled_options(workload: Workload, params: ClusterParams) -> dict[str, Any]:
    """What the elastic strategies must be told about the hub they run on,
    as an admin sets it in `ElasticOrchestrator.policy_options`: the cloud
    boot time (how early nodes must start) and the session lifetime model
    (which sessions end soon)."""
    mean, sd = session_lifetime(workload)
    return {"boot_s": params.cloud_boot_s, "lifetime_mean_s": mean, "lifetime_sd_s": sd}


# Extra keyword arguments a strategy's factory needs from the scenario:
# policy name -> f(workload, params) -> kwargs. The elastic strategies learn
# the modelled hub (`modelled_options`); `calendar` also the workload's
# classes, its timetable.
STRATEGY_OPTIONS: dict[str, Callable[[Workload, ClusterParams], dict[str, Any]]] = {
    "elastic": modelled_options,
    "calendar": lambda workload, params: {"schedule": schedule_of(workload), **modelled_options(workload, params)},
}


@dataclass(frozen=True)
class RunSpec:
    policy: str
    mode: str
    theta_out: float | None  # None: not applicable (on-prem only)
    config_overrides: dict[str, Any] = field(default_factory=dict, compare=False)
    options: dict[str, Any] = field(default_factory=dict, compare=False)  # strategy options (e.g. theta_in)

    @property
    def label(self) -> str:
        theta = "" if self.theta_out is None else f"-theta{self.theta_out:g}"
        extra = "".join(f"-{k}{v:g}" if isinstance(v, float) else f"-{k}-{v}" for k, v in self.options.items())
        return f"{self.policy}-{self.mode}{theta}{extra}"


def plan_runs(policies: Iterable[str], modes: Iterable[str], thetas: Iterable[float],
              config_overrides: dict[str, Any] | None = None,
              options: dict[str, Any] | None = None) -> list[RunSpec]:
    """`options`: the strategies' own (`simulate --option`), in every run."""
    policies, modes, thetas = list(policies), list(modes), list(thetas)
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}: choose from {', '.join(MODES)}")
    overrides = dict(config_overrides or {})
    specs = []
    for policy in policies:
        for mode in modes:
            for theta in ([None] if mode == "onprem-only" else thetas):
                specs.append(RunSpec(policy, mode, theta, overrides, dict(options or {})))
    return specs


def policy_config(spec: RunSpec, params: ClusterParams) -> PolicyConfig:
    values: dict[str, Any] = {"tmon": params.tmon_s, "tcool": params.tcool_s, **MODES[spec.mode]}
    values["theta_out"] = math.inf if spec.theta_out is None else spec.theta_out
    values.update(spec.config_overrides)
    return PolicyConfig(**values)


def strategy_options(spec: RunSpec, workload: Workload, params: ClusterParams) -> dict[str, Any]:
    """The options `spec`'s strategy runs with: what the scenario tells it
    (`STRATEGY_OPTIONS`), then the run's own."""
    options = STRATEGY_OPTIONS.get(spec.policy, lambda w, p: {})(workload, params)
    return {**options, **spec.options}


def build_strategy(spec: RunSpec, workload: Workload, params: ClusterParams) -> Strategy:
    return make_strategy(spec.policy, policy_config(spec, params), **strategy_options(spec, workload, params))


def execute(spec: RunSpec, workload: Workload, params: ClusterParams, seed: int) -> RunResult:
    strategy = build_strategy(spec, workload, params)
    return simulate(workload, strategy, params, seed=seed, mode=spec.mode, theta_out=spec.theta_out)


def run_all(specs: list[RunSpec], workload: Workload, params: ClusterParams, seed: int,
            progress: Callable[[int, int, RunSpec], None] | None = None) -> list[RunResult]:
    results = []
    for done, spec in enumerate(specs):
        if progress:
            progress(done, len(specs), spec)
        results.append(execute(spec, workload, params, seed))
    if progress:
        progress(len(specs), len(specs), None)
    return results


def summary(result: RunResult) -> dict[str, Any]:
    """The JSON fields of one run (issue 2) plus a few that explain them."""
    waits = sorted(w for _, w, _ in result.waits)
    by_kind: dict[str, list[int]] = {}
    for _, w, kind in result.waits:
        by_kind.setdefault(kind, []).append(w)
    return {
        "policy": result.policy,
        "mode": result.mode,
        "theta_out": result.theta_out,
        "cloud_node_hours": round(result.cloud_node_hours, 3),
        "wait_mean_s": round(sum(waits) / len(waits), 3) if waits else 0.0,
        "wait_p95_s": round(percentile(waits, 95), 3),
        "wait_max_s": max(waits, default=0),
        "servers": result.servers,
        "migrations": result.migrations,
        "scale_outs": result.scale_outs,
        "scale_ins": result.scale_ins,
        "simulated_s": result.simulated_s,
        "wall_s": round(result.wall_s, 4),
        "workload": result.workload,
        "seed": result.seed,
        "waited": sum(1 for w in waits if w > 0),
        "still_queued": result.still_queued,
        "wait_p95_upper_s": _p95_upper(result),
        "migration_wait_max_s": max(result.migration_waits, default=0),
        **_downtime_stats(result),
        "wait_by_kind": {kind: _wait_stats(sorted(ws)) for kind, ws in sorted(by_kind.items())},
        "wait_max_by_day_s": _max_by_day(result),
    }


def _p95_upper(result: RunResult) -> float | None:
    """The p95 wait had the servers still waiting at the end never found
    room: an upper bound (their waits so far, in `wait_p95_s`, give the
    lower one). None: they are too many for p95 to have one."""
    ended = len(result.waits) - result.still_queued  # the engine counts the still-waiting last
    waits = sorted(w for _, w, _ in result.waits[:ended])
    pos = (len(result.waits) - 1) * 0.95
    lo = math.floor(pos)
    if lo + (pos > lo) >= ended:  # p95 rests on someone still waiting
        return None if result.waits else 0.0
    hi = waits[lo + 1] if pos > lo else waits[lo]
    return round(waits[lo] + (hi - waits[lo]) * (pos - lo), 3)


def _downtime_stats(result: RunResult) -> dict[str, float]:
    """Migration downtime (restart + wait for room) per move: what a moved
    user feels, kept apart from the waits of new requests."""
    downs = sorted(d for _, d in result.downtimes)
    return {
        "migration_downtime_mean_s": round(sum(downs) / len(downs), 3) if downs else 0.0,
        "migration_downtime_p95_s": round(percentile(downs, 95), 3),
        "migration_downtime_max_s": max(downs, default=0),
    }


def _max_by_day(result: RunResult) -> list[int]:
    """Longest wait of the requests made on each simulated day."""
    days = [0] * max(1, math.ceil(result.simulated_s / DAY_S))
    for created, w, _ in result.waits:
        day = int(created // DAY_S)
        days[day] = max(days[day], w)
    return days


def _wait_stats(waits: list[int]) -> dict[str, float]:
    return {
        "servers": len(waits),
        "mean_s": round(sum(waits) / len(waits), 3) if waits else 0.0,
        "p95_s": round(percentile(waits, 95), 3),
        "max_s": max(waits, default=0),
    }
