"""`elastichub simulate --tune`: pick the thresholds for an admin's own hub.

Runs a grid of a strategy's thresholds on one workload (typically
`--trace`, the hub's own history), on every core, and picks the setting with
the fewest cloud node-hours whose waits meet the service-level objective
(p95 wait, and optionally max wait, of new requests). It reports that run,
a Pareto plot marking it, and the orchestrator configuration that runs the
same settings live. No setting meeting the objective is an error that names
the closest one.
"""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..policy import PolicyConfig
from .engine import RunResult
from .params import ClusterParams
from .runner import RunSpec, execute, strategy_options, summary
from .workload import Workload, lifetime_estimate

# policy -> {option: values}; theta_out is PolicyConfig's, the rest the strategy's.
THETA_OUT_GRID = (50.0, 55.0, 60.0, 65.0, 70.0, 75.0, 80.0, 85.0, 90.0, 95.0)
GRIDS: dict[str, dict[str, tuple]] = {
    "paper": {},
    "elastic": {"standing_reserve": (0.0, 0.5, 1.0)},
    "calendar": {"standing_reserve": (0.0, 0.5, 1.0)},
}

# The orchestrator's configuration, as the admin writes it in its config file.
ORCHESTRATOR_CLASS = "ElasticOrchestrator"


@dataclass(frozen=True)
class TuneResult:
    chosen: dict[str, Any]  # the summary of the cheapest run that meets the objective (or the closest)
    spec: RunSpec
    summaries: list[dict[str, Any]]  # every run of the grid, in grid order
    specs: list[RunSpec]
    met: bool = True  # False: nothing met the objective, `chosen` is the closest
    tied: int = 1  # settings the history does not tell apart from the chosen one (equal cost and waits)


class NoSettingMeetsSLO(ValueError):
    """Every setting tried waits longer than the objective; names the closest
    (`result`, with met False: what the plot then shows)."""

    def __init__(self, message: str, result: TuneResult):
        super().__init__(message)
        self.result = result


def grid(policy: str, mode: str, thetas: Sequence[float] = THETA_OUT_GRID,
         fixed: dict[str, Any] | None = None) -> list[RunSpec]:
    """Every combination of theta_out and the strategy's own thresholds;
    `fixed`: options the admin set (`--option`), kept in every setting and
    not searched."""
    fixed = dict(fixed or {})
    specs = [RunSpec(policy, mode, theta, options=fixed) for theta in thetas]
    for option, values in GRIDS.get(policy, {}).items():
        if option not in fixed:
            specs = [RunSpec(s.policy, s.mode, s.theta_out, options={**s.options, option: v})
                     for s in specs for v in values]
    return specs


_JOB: tuple[Workload, ClusterParams, int] | None = None  # a worker's workload, set once per process


def _init(workload: Workload, params: ClusterParams, seed: int) -> None:
    global _JOB
    _JOB = (workload, params, seed)


def _run(spec: RunSpec) -> dict[str, Any]:
    workload, params, seed = _JOB
    result: RunResult = execute(spec, workload, params, seed)
    return summary(result)


def run_grid(specs: list[RunSpec], workload: Workload, params: ClusterParams, seed: int,
             processes: int | None = None,
             progress: Callable[[int, int, RunSpec | None], None] | None = None) -> list[dict[str, Any]]:
    """Summaries of every run, in order; one worker process per core (the
    workload is handed to each worker once, not per run). `progress(done,
    total, spec)` after each run, as `runner.run_all` calls it."""
    processes = processes or os.cpu_count() or 1
    lifetime_estimate(workload)  # once, here: the workers inherit it rather than each run sorting the trace
    if processes <= 1 or len(specs) <= 1:
        _init(workload, params, seed)
        runs = map(_run, specs)
        return _tracked(runs, specs, progress)
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    with context.Pool(min(processes, len(specs)), initializer=_init, initargs=(workload, params, seed)) as pool:
        return _tracked(pool.imap(_run, specs, chunksize=1), specs, progress)


def _tracked(runs, specs: list[RunSpec], progress) -> list[dict[str, Any]]:
    summaries = []
    for spec, s in zip(specs, runs):
        summaries.append(s)
        if progress:
            progress(len(summaries), len(specs), spec)
    if progress:
        progress(len(specs), len(specs), None)
    return summaries


def meets(s: dict[str, Any], slo_p95: float, slo_max: float | None) -> bool:
    """Does the run meet the objective, whatever became of the servers
    still waiting when it ended (`verdict` is True)?"""
    return verdict(s, slo_p95, slo_max) is True


def verdict(s: dict[str, Any], slo_p95: float, slo_max: float | None) -> bool | None:
    """True: the run meets the objective; False: it misses it; None: the
    replay cannot tell. A server still waiting at the end has waited at
    least its wait so far (counted so in the waits: a miss on them is a
    miss) but may wait on for ever: a burst just before the end, whose
    users waited a minute so far, must not pass for a burst served within
    a minute."""
    if s["wait_p95_s"] > slo_p95 or (slo_max is not None and s["wait_max_s"] > slo_max):
        return False
    if not s["still_queued"]:
        return True
    upper = s["wait_p95_upper_s"]  # their waits unbounded: max wait has no bound, p95 may
    if slo_max is not None or upper is None or upper > slo_p95:
        return None
    return True


def _shortfall(s: dict[str, Any], slo_p95: float, slo_max: float | None) -> float:
    """How far a run misses the objective, relative to it (0 when it meets it)."""
    over = max(0.0, s["wait_p95_s"] - slo_p95) / max(slo_p95, 1.0)
    if slo_max is not None:
        over += max(0.0, s["wait_max_s"] - slo_max) / max(slo_max, 1.0)
    return over


def tune(workload: Workload, params: ClusterParams, seed: int, policy: str, mode: str,
         slo_p95: float, slo_max: float | None = None, processes: int | None = None,
         specs: list[RunSpec] | None = None, progress=None) -> TuneResult:
    specs = specs or grid(policy, mode)
    summaries = run_grid(specs, workload, params, seed, processes, progress)
    ok = [i for i, s in enumerate(summaries) if meets(s, slo_p95, slo_max)]
    if not ok:
        closest = min(range(len(specs)), key=lambda i: (_shortfall(summaries[i], slo_p95, slo_max),
                                                        summaries[i]["cloud_node_hours"]))
        s = summaries[closest]
        slo = f"p95 wait <= {slo_p95:g} s" + ("" if slo_max is None else f" and max wait <= {slo_max:g} s")
        unknown = sum(1 for s in summaries if verdict(s, slo_p95, slo_max) is None)
        if unknown:
            message = (f"no setting of {len(specs)} tried is known to meet {slo}: in {unknown} that may, servers "
                       f"are still waiting when the replay ends ({s['still_queued']} in the closest, "
                       f"{describe(specs[closest])}) and may yet wait longer than that; replay further "
                       "(a later --days, or a trace that goes on past them)")
        else:
            message = (f"no setting of {len(specs)} tried meets {slo}; the closest is {describe(specs[closest])}: "
                       f"p95 {s['wait_p95_s']:g} s, max {s['wait_max_s']} s, "
                       f"{s['cloud_node_hours']:.2f} cloud node-hours")
        raise NoSettingMeetsSLO(message, TuneResult(s, specs[closest], summaries, specs, met=False))
    best = min(_key(summaries[i]) for i in ok)
    tied = [i for i in ok if _key(summaries[i]) == best]
    if len(tied) == 1:
        return TuneResult(summaries[tied[0]], specs[tied[0]], summaries, specs)
    return _untie(tied, specs, summaries, workload, params, seed)


def _key(s: dict[str, Any]) -> tuple:
    """What the search minimises: cost, then p95 and max wait."""
    return s["cloud_node_hours"], s["wait_p95_s"], s["wait_max_s"]


def _untie(tied: list[int], specs: list[RunSpec], summaries: list[dict[str, Any]], workload: Workload,
           params: ClusterParams, seed: int) -> TuneResult:
    """Of settings the history does not tell apart (a quiet history: none
    starts a node), the strategy's defaults (theta_out 80, its own
    thresholds: those measured on bursts, docs/strategies.md) when they do
    as well, run once more if the grid has their theta_out without their
    other options; else the theta_out nearest the default, the higher on a tie. Whatever the grid's order, a
    history that says nothing should not move the settings from their
    defaults."""
    fixed = {k: v for k, v in specs[0].options.items() if all(s.options.get(k) == v for s in specs)}  # --option
    default = RunSpec(specs[0].policy, specs[0].mode, PolicyConfig().theta_out, options=fixed)
    at = next((i for i, s in enumerate(specs) if s == default and s.options == default.options), None)
    if at is None and default.theta_out in {s.theta_out for s in specs}:  # never a threshold the admin left out
        extra = run_grid([default], workload, params, seed, processes=1)[0]
        if _key(extra) == _key(summaries[tied[0]]):
            specs, summaries, at = [*specs, default], [*summaries, extra], len(specs)
            tied = [*tied, at]
    if at not in tied:
        at = min(tied, key=lambda i: (abs(specs[i].theta_out - default.theta_out), -specs[i].theta_out, i))
    return TuneResult(summaries[at], specs[at], summaries, specs, tied=len(tied))


def describe(spec: RunSpec) -> str:
    parts = [f"{spec.policy}", f"mode {spec.mode}", f"theta_out {spec.theta_out:g}"]
    parts += [f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in spec.options.items()]
    return ", ".join(parts)


def config_lines(spec: RunSpec, params: ClusterParams, workload: Workload) -> list[str]:
    """The orchestrator configuration that runs `spec` live (same names as
    `PolicyConfig` and the strategy's options), with what the simulated
    strategy was told about the hub (boot time, session lifetimes): run
    live without them, it would not be the setting that was simulated."""
    c = f"c.{ORCHESTRATOR_CLASS}"
    lines = [
        f"{c}.policy = {spec.policy!r}",
        f"{c}.theta_out = {spec.theta_out!r}",
        f"{c}.tmon = {params.tmon_s!r}",
        f"{c}.tcool = {params.tcool_s!r}",
        f"{c}.migration = {spec.mode == 'migration'!r}",
    ]
    if spec.mode == "migration":  # the waits and costs were simulated with this kind of move
        lines.append(f"{c}.move_method = {params.move_method!r}")
        if params.move_method == "restart":  # the node-hours were simulated with this many restarts at once
            lines.append(f"{c}.drain_concurrency = {params.drain_concurrency!r}")
    options = strategy_options(spec, workload, params)
    options.pop("schedule", None)  # a timetable is no config value
    if options:
        lines.append(f"{c}.policy_options = {options!r}")
    return lines


def plot(result: TuneResult, out: Path, slo_p95: float, slo_max: float | None, caption: str | None = None) -> Path:
    """Every setting tried, cost against p95 and max wait, the Pareto front
    ringed, the objective dashed and the chosen setting (or, when none met
    the objective, the closest) starred."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .pareto import ring_front, save

    out.mkdir(parents=True, exist_ok=True)
    closest = "closest (misses it)" if verdict(result.chosen, slo_p95, slo_max) is False else "closest (cannot tell)"
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    for ax, metric, title, slo in ((axes[0], "wait_p95_s", "p95 wait", slo_p95),
                                   (axes[1], "wait_max_s", "max wait", slo_max)):
        points = [(s["cloud_node_hours"], s[metric]) for s in result.summaries]
        verdicts = [verdict(s, slo_p95, slo_max) for s in result.summaries]
        for v, color, label in ((True, "tab:green", "meets the objective"), (False, "tab:grey", "misses it"),
                                (None, "tab:orange", "cannot tell: servers still waiting at the end")):
            if v in verdicts or v is not None:
                ax.scatter([p[0] for p, w in zip(points, verdicts) if w is v],
                           [p[1] for p, w in zip(points, verdicts) if w is v], s=18, color=color, label=label)
        ring_front(ax, points)
        ax.scatter([result.chosen["cloud_node_hours"]], [result.chosen[metric]], s=260, marker="*",
                   color="tab:red", zorder=4,
                   label=f"{'chosen' if result.met else closest}: {describe(result.spec)}")
        if slo is not None:
            ax.axhline(slo, color="tab:red", ls="--", lw=0.8, label=f"objective {slo:g} s")
        ax.set_ylabel(f"{title} of new requests (s)")
        ax.set_title(f"cost vs {title}: {len(points)} settings")
    title = ("--tune: the cheapest setting that meets the objective" if result.met
             else f"--tune: no setting is known to meet the objective; the {closest} starred")
    return save(fig, axes, title, out / "tune-pareto.png", caption)

