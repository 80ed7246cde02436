"""One look at a snapshot's nodes: the sums and node lists every rule of an
`elastic` cycle reads (elastic.py's `_Tally` adds what depends on the time).
Pure: a function of the snapshot alone, so a strategy may keep it for the
next cycle while the snapshot is the same."""

from __future__ import annotations

from dataclasses import dataclass
from math import fsum
from operator import attrgetter

from .model import ClusterSnapshot, Node, NodeStatus, Resources, Tier

_USED, _ALLOC, _REQUESTS = attrgetter("used"), attrgetter("allocatable"), attrgetter("requests")
_CPU, _RAM, _NAME = attrgetter("cpu"), attrgetter("ram"), attrgetter("name")
_STATUSES = tuple(NodeStatus)


@dataclass(frozen=True, slots=True)
class Census:
    """d_*: the requests on active nodes; r_*: those of servers drained off
    cloud nodes and of the queue (they need room elsewhere). The lists are
    shared by every cycle that sees the snapshot: read them, never change
    them."""

    d_cpu: float
    d_ram: float
    r_cpu: float
    r_ram: float
    active_capacity: Resources
    booting_capacity: Resources
    base_capacity: Resources  # every on-prem node (the cluster theta_out was tuned for)
    active: list[Node]
    booting: list[Node]
    stopped: list[Node]  # cloud pool, by name
    active_cloud: int  # how many of `active` are cloud nodes


def take_census(snapshot: ClusterSnapshot) -> Census:
    # Runs every Tmon over every node, so the per-node work is one
    # dictionary append and the sums run in C (fsum: exact, so they do not
    # depend on the order of the nodes either).
    nodes = snapshot.nodes
    by_status: dict[NodeStatus, list[Node]] = {status: [] for status in _STATUSES}
    for n in nodes:
        by_status[n.status].append(n)
    cloud, onprem_tier = Tier.CLOUD, Tier.ONPREM
    active = by_status[NodeStatus.READY]
    booting = by_status[NodeStatus.BOOTING]
    stopped = [n for n in by_status[NodeStatus.STOPPED] if n.tier is cloud]
    active_cloud = sum(1 for n in active if n.tier is cloud)
    moving = [srv.requests for n in by_status[NodeStatus.CORDONED] if n.tier is cloud for srv in n.servers]
    moving += map(_REQUESTS, snapshot.pending)
    onprem = [n.allocatable for n in nodes if n.tier is onprem_tier]
    used = list(map(_USED, active))
    alloc = list(map(_ALLOC, active))
    boot_alloc = list(map(_ALLOC, booting))
    c_cpu, c_ram = fsum(map(_CPU, alloc)), fsum(map(_RAM, alloc))
    b_cpu, b_ram = fsum(map(_CPU, boot_alloc)), fsum(map(_RAM, boot_alloc))
    o_cpu, o_ram = fsum(map(_CPU, onprem)), fsum(map(_RAM, onprem))
    stopped.sort(key=_NAME)
    if o_ram <= 0:  # no on-prem cluster: one cloud node is the base
        o_cpu, o_ram = max(((n.allocatable.cpu, n.allocatable.ram) for n in nodes if n.tier is cloud),
                           default=(0.0, 0.0), key=lambda r: r[1])
    return Census(fsum(map(_CPU, used)), fsum(map(_RAM, used)), fsum(map(_CPU, moving)), fsum(map(_RAM, moving)),
                  Resources(c_cpu, c_ram), Resources(b_cpu, b_ram), Resources(o_cpu, o_ram), active, booting,
                  stopped, active_cloud)
