"""The Tmon/Tcool controller: one decision per monitoring period.

`decide(snapshot, state, now)` is a pure state machine: the caller (the live
orchestrator, or the simulator) observes the cluster every `tmon` seconds,
passes the snapshot and its own clock reading, carries the returned state to
the next call, and carries out the returned action.
"""

from __future__ import annotations


import math
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Callable, Protocol, Union

from .model import ClusterSnapshot, NodeStatus, Tier
from .placement import MigrationPlan, Migration, plan_migration, scale_in_candidate, scale_out_needed


@dataclass(frozen=True, slots=True)
class ScaleOut:
    """Start these stopped cloud nodes (VM start, wait Ready, uncordon)."""

    nodes: tuple[str, ...]
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ScaleIn:
    """Cordon `node`, restart its servers in `moves` order onto their
    destinations (checkpoint, stop, start, restore), then stop the VM."""

    node: str
    moves: tuple[Migration, ...]
    reason: str = ""

    @classmethod
    def from_plan(cls, plan: MigrationPlan, reason: str = "") -> ScaleIn:
        return cls(plan.node, plan.moves, reason)


Action = Union[ScaleOut, ScaleIn]


@dataclass(frozen=True)
class ControllerState:
    """What the controller remembers between cycles."""

    last_action_at: float | None = None

    def cooled(self, now: float, tcool: float) -> bool:
        return self.last_action_at is None or now - self.last_action_at >= tcool


def _check_number(name: str, value: float, *, minimum: float = 0.0, allow_inf: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if math.isinf(value) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum:g}, got {value!r}")


@dataclass(frozen=True)
class PolicyConfig:
    """Knobs every strategy shares (plain values, so traitlets and CLI
    options map onto them one to one). `scale_out` and `migration` give the
    three evaluation modes: on-prem only, no migration, migration."""

    theta_out: float = 80.0  # percent RAM occupancy of active nodes (eq. 2)
    tmon: float = 15.0  # seconds between observations
    tcool: float = 580.0  # seconds after a scaling action before the next one
    scale_out: bool = True  # False: on-prem only, the cloud is never used
    migration: bool = True  # False: only empty cloud nodes are removed

    def __post_init__(self) -> None:
        # theta_out may exceed 100 (or be inf) to mean "never scale out".
        _check_number("theta_out", self.theta_out, allow_inf=True)
        _check_number("tmon", self.tmon, minimum=1e-9)
        _check_number("tcool", self.tcool)


def theta_out_mistake(value: float) -> str | None:
    """Why a theta_out an admin typed is surely not what they meant, or None.
    It is a percentage: at 0 or below cloud nodes would start as soon as
    anyone is on the hub, at 0.8 (a fraction) every cloud node at once;
    above 100 (800 for 80) no cloud node would ever start. The policy itself
    takes any number (tests sweep 0..110)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if not value > 0:  # NaN too
        return f"theta_out must be above 0 (a percentage of RAM occupancy, 80 means 80 %), got {value:g}"
    if value <= 1:
        return (f"theta_out is a percentage of RAM occupancy (80 means 80 %); {value:g} looks like a fraction "
                f"and would start cloud nodes at {value:g} % occupancy: use {value * 100:g}")
    if value > 100:
        return (f"theta_out is a percentage of RAM occupancy, at most 100; at {value:g} no cloud node would "
                "ever start")
    return None


def theta_in_mistake(theta_in: object, theta_out: float) -> str | None:
    """Why a strategy's theta_in (the gap below theta_out kept after a
    scale-in) is surely not meant with this theta_out, or None: above it,
    no node would ever be scaled in; between 0 and 1, a fraction (0.05 for
    5 %) that keeps next to no gap, and a node drained would be booted again
    by the next arrival. The strategy itself takes it (0 too)."""
    if not isinstance(theta_in, (int, float)) or isinstance(theta_in, bool):
        return None
    if 0 < theta_in < 1:
        return (f"theta_in is a percentage (5 means a gap of 5 % of on-prem below theta_out); {theta_in:g} looks "
                f"like a fraction and would keep a gap of {theta_in:g} %: use {theta_in * 100:g}")
    if not theta_in > theta_out:
        return None
    return (f"theta_in {theta_in:g} is the gap below theta_out kept after a scale-in: above theta_out "
            f"{theta_out:g} no node would ever be scaled in (default 5)")


class Strategy(Protocol):
    """A scaling policy: pure, deterministic, clock passed in."""

    name: str

    def decide(
        self, snapshot: ClusterSnapshot, state: ControllerState, now: float
    ) -> tuple[Action | None, ControllerState]: ...


@dataclass(frozen=True)
class PaperStrategy:
    """Exactly the published policy (shared/PAPER.md, "EHO").

    Once `tcool` has passed since the last action: scale out by one stopped
    cloud node when eq. (2) holds; otherwise scale in the best candidate if
    its servers all fit elsewhere (eq. 3). When eq. (2) holds but the pool is
    empty nothing happens: scaling in a full cluster would only make it wait.
    """

    config: PolicyConfig = PolicyConfig()
    name: str = "paper"

    def decide(
        self, snapshot: ClusterSnapshot, state: ControllerState, now: float
    ) -> tuple[Action | None, ControllerState]:
        cfg = self.config
        if not state.cooled(now, cfg.tcool):
            return None, state
        if cfg.scale_out and scale_out_needed(snapshot, cfg.theta_out):
            stopped = snapshot.with_status(NodeStatus.STOPPED, Tier.CLOUD)
            if not stopped:
                return None, state
            first = min(stopped, key=lambda n: n.name)
            action = ScaleOut((first.name,), reason=f"RAM occupancy above {cfg.theta_out:g} %")
            return action, replace(state, last_action_at=now)
        plan = self._scale_in_plan(snapshot)
        if plan is None:
            return None, state
        return ScaleIn.from_plan(plan, reason="servers fit elsewhere"), replace(
            state, last_action_at=now
        )

    def _scale_in_plan(self, snapshot: ClusterSnapshot) -> MigrationPlan | None:
        candidate = scale_in_candidate(snapshot)  # the paper tries one candidate per cycle
        if candidate is None:
            return None
        if candidate.servers and not self.config.migration:
            return None
        return plan_migration(snapshot, candidate)


def _paper(config: PolicyConfig, **options) -> PaperStrategy:
    return PaperStrategy(config, **options)


_paper.strategy_class = PaperStrategy

# name -> factory(config, **options); other modules register their strategies
# here. A factory's `strategy_class` (a dataclass) names the options it takes.
STRATEGIES: dict[str, Callable[..., Strategy]] = {"paper": _paper}


def make_strategy(name: str, config: PolicyConfig | None = None, **options) -> Strategy:
    """Build the strategy registered under `name`; a clear error names the
    unknown one and lists the known ones."""
    try:
        factory = STRATEGIES[name]
    except KeyError:
        known = ", ".join(sorted(STRATEGIES))
        raise ValueError(f"unknown policy {name!r}: choose one of {known}") from None
    accepted = option_names(name)
    unknown = sorted(set(options) - accepted) if accepted is not None else []
    if unknown:
        raise ValueError(f"policy {name!r} has no option {', '.join(map(repr, unknown))}: "
                         + (f"its options are {', '.join(sorted(accepted))}" if accepted else "it takes none"))
    return factory(config or PolicyConfig(), **options)


def option_names(name: str) -> set[str] | None:
    """The options the strategy registered as `name` takes (None: its
    factory does not say)."""
    kind = getattr(STRATEGIES.get(name), "strategy_class", None)
    if not is_dataclass(kind):
        return None
    return {f.name for f in fields(kind) if f.init} - {"config", "name"}
