"""The scaling policy: pure code shared by the live orchestrator and the simulator.

No I/O, no clock reads, no asyncio (enforced by the import-linter contract in
setup.cfg). Callers build a `ClusterSnapshot`, call a strategy's
`decide(snapshot, state, now)` and carry out the returned action.
"""

from .controller import (
    Action,
    ControllerState,
    PolicyConfig,
    PaperStrategy,
    STRATEGIES,
    make_strategy,
    option_names,
    ScaleIn,
    ScaleOut,
    Strategy,
    theta_in_mistake,
    theta_out_mistake,
)
from .model import GiB, ClusterSnapshot, Node, NodeStatus, Resources, Server, Tier
from .calendar import ScheduledClass, parse_schedule
from .elastic import ElasticState, ElasticStrategy  # registers "elastic" and "calendar"
from .placement import (
    Migration,
    MigrationPlan,
    candidate_order,
    migration_order,
    occupancy,
    plan_migration,
    scale_in_candidate,
    scale_out_needed,
)

__all__ = [
    "Action",
    "ClusterSnapshot",
    "ControllerState",
    "ElasticState",
    "ElasticStrategy",
    "GiB",
    "Migration",
    "MigrationPlan",
    "Node",
    "NodeStatus",
    "PolicyConfig",
    "PaperStrategy",
    "STRATEGIES",
    "make_strategy",
    "Resources",
    "ScaleIn",
    "ScaleOut",
    "ScheduledClass",
    "Server",
    "Strategy",
    "Tier",
    "candidate_order",
    "migration_order",
    "occupancy",
    "option_names",
    "parse_schedule",
    "plan_migration",
    "scale_in_candidate",
    "scale_out_needed",
    "theta_in_mistake",
    "theta_out_mistake",
]
