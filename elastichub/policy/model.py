"""Data types the scaling policy reasons about.

Plain frozen values, built by whoever observes the cluster (the live
orchestrator from Kubernetes, the simulator from its model), so the policy
never touches I/O. Units: CPU in cores, RAM in bytes, time in seconds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable

GiB = 2**30

ONPREM_PRIORITY = 10
CLOUD_PRIORITY = 1


class Tier(str, enum.Enum):
    ONPREM = "on-prem"
    CLOUD = "cloud"

    @property
    def priority(self) -> int:
        """Scheduling priority of the tier (paper: on-prem 10, cloud 1)."""
        return ONPREM_PRIORITY if self is Tier.ONPREM else CLOUD_PRIORITY


class NodeStatus(str, enum.Enum):
    """Lifecycle of a worker node as the orchestrator sees it."""

    STOPPED = "stopped"  # cloud VM powered off or not created: in the pool
    BOOTING = "booting"  # VM started, node not yet Ready and uncordoned
    READY = "ready"  # Ready and schedulable: a member of N_total(t)
    CORDONED = "cordoned"  # Ready but unschedulable (draining, or an admin's cordon)
    NOT_READY = "not-ready"  # registered but not Ready


@dataclass(frozen=True, slots=True)
class Resources:
    cpu: float = 0.0
    ram: float = 0.0

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.cpu + other.cpu, self.ram + other.ram)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.cpu - other.cpu, self.ram - other.ram)

    def fits_in(self, free: Resources) -> bool:
        """Equation (3) for every resource: free >= demand."""
        return self.cpu <= free.cpu and self.ram <= free.ram

    def get(self, resource: str) -> float:
        if resource == "cpu":
            return self.cpu
        if resource == "ram":
            return self.ram
        raise ValueError(f"unknown resource {resource!r}: expected 'cpu' or 'ram'")

    @staticmethod
    def total(items: Iterable[Resources]) -> Resources:
        cpu = ram = 0.0
        for r in items:
            cpu += r.cpu
            ram += r.ram
        return Resources(cpu, ram)


RESOURCES = ("cpu", "ram")


@dataclass(frozen=True, slots=True)
class Server:
    """A single-user notebook server (a pod), running or waiting."""

    name: str  # unique key, e.g. "alice" or "alice/gpu"
    requests: Resources
    node: str | None = None  # None while it waits for room (Pending)
    started_at: float | None = None  # when it started running (for lifetime-aware policies)
    created_at: float | None = None  # when the user asked for it (waiting starts here)
    movable: bool = True  # False: never migrated (an admin pinned it); its node stays until it ends
    cloud_only: bool = False  # only a cloud node can run it (its profile's node selector): it waits for cloud room


@dataclass(frozen=True, slots=True)
class Node:
    """A worker node. `used` is O_i: the requests of *every* pod on it (system
    pods included); `servers` are the single-user servers, the movable part."""

    name: str
    tier: Tier
    allocatable: Resources
    used: Resources = Resources()
    servers: tuple[Server, ...] = ()
    status: NodeStatus = NodeStatus.READY
    status_since: float | None = None  # when it entered `status` (boot progress, drain age)

    @property
    def active(self) -> bool:
        """Member of N_total(t): Ready and schedulable."""
        return self.status is NodeStatus.READY

    @property
    def free(self) -> Resources:
        return self.allocatable - self.used

    @property
    def priority(self) -> int:
        return self.tier.priority


@dataclass(frozen=True)
class ClusterSnapshot:
    """What the orchestrator observed at one instant.

    `nodes` holds every worker node, cloud pool members included (status
    STOPPED or BOOTING for the ones not running). `pending` are servers that
    asked for room and have none yet, oldest first.
    """

    nodes: tuple[Node, ...]
    pending: tuple[Server, ...] = ()
    _by_name: dict[str, Node] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name = {node.name: node for node in self.nodes}
        if len(by_name) != len(self.nodes):
            seen: set[str] = set()
            for node in self.nodes:
                if node.name in seen:
                    raise ValueError(f"duplicate node name {node.name!r} in snapshot")
                seen.add(node.name)
        object.__setattr__(self, "_by_name", by_name)

    def node(self, name: str) -> Node:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no node named {name!r} in snapshot") from None

    @property
    def active_nodes(self) -> tuple[Node, ...]:
        ready = NodeStatus.READY  # `Node.active`, inlined: this runs every cycle over every node
        return tuple([n for n in self.nodes if n.status is ready])

    def with_status(self, status: NodeStatus, tier: Tier | None = None) -> tuple[Node, ...]:
        return tuple(
            n for n in self.nodes if n.status is status and (tier is None or n.tier is tier)
        )
