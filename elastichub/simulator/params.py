"""Model parameters of the simulated cluster (the paper's numbers are the defaults).

Every field maps to one `elastichub simulate` option (`OPTION_NAMES`), so a
validation error can name the option the user typed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from ..policy import GiB, Resources

MOVE_METHODS = ("restart", "live")
# ElasticOrchestrator.drain_concurrency: its default (what an admin's hub runs) and its range.
ORCHESTRATOR_DRAIN_CONCURRENCY = 4
MAX_DRAIN_CONCURRENCY = 16
# Per tier. The engine holds every node, running or not: a million cloud
# nodes took 640 MB and 20 s for three servers. 50x the paper's hub is 400.
MAX_NODES = 10_000

# A resource unit (paper): 0.5 vCPU and 1 GiB of RAM.
RU_CPU = 0.5
RU_RAM = 1 * GiB


def ru(units: float) -> Resources:
    """`units` resource units as a CPU/RAM request."""
    return Resources(units * RU_CPU, units * RU_RAM)


@dataclass(frozen=True)
class ClusterParams:
    """The simulated hybrid cluster and its delays (seconds)."""

    onprem_nodes: int = 8
    onprem_node_ru: float = 50.0
    cloud_nodes: int = 8  # the pool: as large as on-prem, so bursts never exhaust it
    cloud_node_ru: float = 50.0
    cloud_boot_s: float = 290.0  # VM start -> node Ready and uncordoned
    server_start_s: float = 6.0  # bound to a node -> running
    migration_min_s: float = 11.0  # downtime of one moved server, uniform in [min, max]
    migration_max_s: float = 22.2
    tmon_s: float = 15.0
    tcool_s: float = 580.0
    # "restart": break-before-make, the paper's (stop, start elsewhere, restore:
    # migration_min_s..max_s of downtime, plus any wait for room). "live": the
    # orchestrator's default, make-before-break: the source runs on while the
    # destination starts and takes a pre-copy (live_prepare_s, the node holds
    # both pods), then the user sees a pause of live_pause_s.
    move_method: str = "restart"
    live_prepare_s: float = 10.0
    live_pause_s: float = 0.5
    # Restart moves of one drain at once, as the orchestrator's drain_concurrency (a move begins only when it
    # and those in flight fit together on the Ready nodes); live moves go one at a time. 1: the paper's.
    drain_concurrency: int = 1
    # A node's size in your own units (cores, GiB), where CPU and RAM are not
    # in the RU's 1:2: set both of a tier and they replace its *_node_ru.
    onprem_node_cpu: float | None = None
    onprem_node_ram_gib: float | None = None
    cloud_node_cpu: float | None = None
    cloud_node_ram_gib: float | None = None

    def __post_init__(self) -> None:
        if self.move_method not in MOVE_METHODS:
            raise ValueError(f"--move-method must be one of {', '.join(MOVE_METHODS)}, got {self.move_method!r}")
        for f in fields(self):
            if f.name == "move_method":
                continue
            value = getattr(self, f.name)
            if value is None and f.name in _SIZES:
                continue
            option = OPTION_NAMES[f.name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
                raise ValueError(f"{option} must be a number, got {value!r}")
            if math.isinf(value):
                raise ValueError(f"{option} must be finite, got {value!r}")
            if value < 0:
                raise ValueError(f"{option} must not be negative, got {value:g}")
        for name in ("onprem_nodes", "cloud_nodes"):
            count = getattr(self, name)
            if int(count) != count:
                raise ValueError(f"{OPTION_NAMES[name]} must be a whole number, got {count!r}")
            object.__setattr__(self, name, int(count))  # 8.0 means 8 nodes: the engine counts with it
            if count > MAX_NODES:
                raise ValueError(f"{OPTION_NAMES[name]} must be at most {MAX_NODES:,} (got {count:,.0f}): the "
                                 "simulator holds every node of the pool, started or not")
        concurrency = self.drain_concurrency
        if int(concurrency) != concurrency or not 1 <= concurrency <= MAX_DRAIN_CONCURRENCY:
            raise ValueError(f"--drain-concurrency must be a whole number from 1 to {MAX_DRAIN_CONCURRENCY} (the range "
                             f"of ElasticOrchestrator.drain_concurrency), got {concurrency!r}")
        object.__setattr__(self, "drain_concurrency", int(concurrency))
        if self.onprem_nodes + self.cloud_nodes < 1:
            raise ValueError("--onprem-nodes and --cloud-nodes are both 0: no node to run servers on")
        for name in ("onprem_node_ru", "cloud_node_ru", "tmon_s", *_SIZES):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"{OPTION_NAMES[name]} must be > 0, got {getattr(self, name):g}")
        for tier in ("onprem", "cloud"):
            cpu, ram = getattr(self, f"{tier}_node_cpu"), getattr(self, f"{tier}_node_ram_gib")
            if (cpu is None) != (ram is None):
                raise ValueError(f"--{tier}-node-cpu and --{tier}-node-ram-gib go together: give both or neither")
        if self.migration_min_s > self.migration_max_s:
            raise ValueError(
                f"--migration-min-s ({self.migration_min_s:g}) is larger than "
                f"--migration-max-s ({self.migration_max_s:g})"
            )

    def node_size(self, tier: str) -> Resources:
        """The allocatable of one `tier` ("onprem" or "cloud") node."""
        cpu, ram = getattr(self, f"{tier}_node_cpu"), getattr(self, f"{tier}_node_ram_gib")
        if cpu is not None:
            return Resources(cpu, ram * GiB)
        return ru(getattr(self, f"{tier}_node_ru"))

    @property
    def node_shapes(self) -> list[Resources]:
        """The allocatable of each tier's node, for the tiers that have nodes:
        a request must fit one of them, CPU and RAM together."""
        return [self.node_size(tier) for tier, count in (("onprem", self.onprem_nodes), ("cloud", self.cloud_nodes))
                if count]


_SIZES = ("onprem_node_cpu", "onprem_node_ram_gib", "cloud_node_cpu", "cloud_node_ram_gib")

OPTION_NAMES = {
    "onprem_nodes": "--onprem-nodes",
    "onprem_node_ru": "--onprem-node-ru",
    "cloud_nodes": "--cloud-nodes",
    "cloud_node_ru": "--cloud-node-ru",
    "cloud_boot_s": "--cloud-boot-s",
    "server_start_s": "--server-start-s",
    "migration_min_s": "--migration-min-s",
    "migration_max_s": "--migration-max-s",
    "tmon_s": "--tmon-s",
    "tcool_s": "--tcool-s",
    "move_method": "--move-method",
    "live_prepare_s": "--live-prepare-s",
    "live_pause_s": "--live-pause-s",
    "drain_concurrency": "--drain-concurrency",
    "onprem_node_cpu": "--onprem-node-cpu",
    "onprem_node_ram_gib": "--onprem-node-ram-gib",
    "cloud_node_cpu": "--cloud-node-cpu",
    "cloud_node_ram_gib": "--cloud-node-ram-gib",
}
