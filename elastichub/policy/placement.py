"""Occupancy (eq. 1), the scale-out test (eq. 2) and scale-in planning (eq. 3).

Pure functions over `model` values: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from .bestfit import BestFit
from .model import ClusterSnapshot, Node, NodeStatus, Resources, Server, Tier


def occupancy(nodes: Iterable[Node], resource: str = "ram") -> float:
    """Equation (1): R^k(S) = sum O_i^k / sum C_i^k * 100, in percent.

    A set with no capacity holds nothing: 0 %. Whether a cluster with no
    active node must grow is the scale-out test's question.
    """
    used = capacity = 0.0
    if resource == "ram":
        for n in nodes:
            used += n.used.ram
            capacity += n.allocatable.ram
    elif resource == "cpu":
        for n in nodes:
            used += n.used.cpu
            capacity += n.allocatable.cpu
    else:
        raise ValueError(f"unknown resource {resource!r}: expected 'cpu' or 'ram'")
    if capacity <= 0:
        return 0.0
    return used / capacity * 100.0


def scale_out_needed(snapshot: ClusterSnapshot, theta_out: float) -> bool:
    """Equation (2): RAM occupancy over N_total(t) above theta_out. With no
    active node at all (a hub of cloud nodes only, or every on-prem node
    down), eq. (1) is 0/0: scale out once someone waits, never before (as
    full, an idle hub started a node and stopped it again every cooldown).
    A theta_out above 100 never scales out, as ever."""
    active = snapshot.active_nodes
    if not any(n.allocatable.ram > 0 for n in active):
        return bool(snapshot.pending) and theta_out <= 100.0
    return occupancy(active, "ram") > theta_out


def _ram_share(node: Node) -> float:
    return node.used.ram / node.allocatable.ram if node.allocatable.ram > 0 else 1.0


def candidate_order(nodes: Iterable[Node]) -> list[Node]:
    """Active cloud nodes, best scale-in candidate first: fewest single-user
    servers (fewest users disturbed), then lowest RAM occupancy, then name
    (so equal snapshots give equal answers)."""
    ready, cloud_tier = NodeStatus.READY, Tier.CLOUD  # `Node.active`, inlined: every cycle, every node
    cloud = [n for n in nodes if n.status is ready and n.tier is cloud_tier]
    cloud.sort(key=lambda n: (len(n.servers), _ram_share(n), n.name))
    return cloud


def scale_in_candidate(snapshot: ClusterSnapshot) -> Node | None:
    order = candidate_order(snapshot.nodes)
    return order[0] if order else None


@dataclass(frozen=True, slots=True)
class Migration:
    server: Server
    source: str
    destination: str


@dataclass(frozen=True, slots=True)
class MigrationPlan:
    """Drain `node` by moving `moves` in order (RAM request descending)."""

    node: str
    moves: tuple[Migration, ...]


def migration_order(servers: Iterable[Server]) -> list[Server]:
    """Servers by RAM request descending (ties: CPU descending, then name)."""
    return sorted(servers, key=lambda s: (-s.requests.ram, -s.requests.cpu, s.name))


def plan_migration(
    snapshot: ClusterSnapshot,
    candidate: Node,
    destinations: Sequence[Node] | None = None,
) -> MigrationPlan | None:
    """Feasibility of removing `candidate` (eq. 3), as a placement plan.

    Simulates the scheduler: each server (RAM descending) goes to the fitting
    destination with the highest tier priority (on-prem first), then the
    *most* used by RAM (packing), then name. Placements accumulate. Returns
    None when any server has no destination or may not be moved (`movable`
    False). Destinations default to every active node but the candidate;
    cordoned, booting or not-ready nodes are never targets.
    """
    if destinations is None:
        destinations = snapshot.nodes
    servers = migration_order(candidate.servers)
    if not servers:
        return MigrationPlan(candidate.name, ())
    if not all(s.movable for s in servers):
        return None  # a pinned server keeps its node until it ends
    ready = NodeStatus.READY
    targets = [n for n in destinations if n.status is ready and n.name != candidate.name]

    # A necessary condition first: most infeasible cycles end here, cheaply.
    demand = Resources.total(s.requests for s in servers)
    free_cpu = free_ram = 0.0
    for n in targets:
        free_cpu += n.allocatable.cpu - n.used.cpu
        free_ram += n.allocatable.ram - n.used.ram
    if not (demand.cpu <= free_cpu and demand.ram <= free_ram):
        return None

    # The scheduler's choice for each server in turn (names break ties);
    # placements accumulate in `used`.
    used = {n.name: [n.used.cpu, n.used.ram] for n in targets}
    fit = BestFit((n.name, n.priority, n.allocatable.cpu, n.allocatable.ram, n.used.cpu, n.used.ram)
                  for n in targets)
    moves = []
    for server in servers:
        need_cpu, need_ram = server.requests.cpu, server.requests.ram
        name = fit.best(need_cpu, need_ram)
        if name is None:
            return None
        slot = used[name]
        slot[0] += need_cpu
        slot[1] += need_ram
        fit.update(name, slot[0], slot[1])
        moves.append(Migration(server, candidate.name, name))
    return MigrationPlan(candidate.name, tuple(moves))
