"""The simulated cluster's objects and what a run measured: the servers and
nodes the engine (engine.py) moves events through, with the plain fields
its hot loop reads, the cluster they start as, and `RunResult`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..policy import Node, NodeStatus, Resources, Server, Tier
from ..policy.bestfit import BestFit
from .params import ClusterParams

READY = NodeStatus.READY


class SimulationError(RuntimeError):
    """The strategy asked for something impossible (a policy bug)."""


class _Server:
    __slots__ = ("name", "requests", "cpu", "ram", "created_at", "queued_since", "started_at",
                 "duration", "node", "view", "kind", "bound_once", "gone", "qseq", "move_downtime",
                 "move_of", "mover", "source")

    def __init__(self, name: str, requests: Resources, created_at: int, duration: int, kind: str):
        self.name = name
        self.requests = requests
        self.cpu = requests.cpu
        self.ram = requests.ram
        self.created_at = created_at
        self.queued_since = created_at  # when it (last) asked the scheduler for room
        self.started_at: int | None = None
        self.duration = duration
        self.node: _Node | None = None
        self.view = Server(name, requests, None, None, created_at)
        self.kind = kind
        self.bound_once = False
        self.gone = False
        self.qseq: int | None = None  # position in the FIFO while queued (see Simulation._enqueue)
        self.move_downtime = 0  # restart time of the move in progress (a moved server's own delay)
        # a live move: the destination pod (`mover`) of a server that runs on
        # at its `source` node until the switch; `move_of` links back. A
        # restarting server's `source` is the node it left, until its downtime ends
        self.move_of: _Server | None = None
        self.mover: _Server | None = None
        self.source: _Node | None = None


class _Node:
    __slots__ = ("name", "tier", "priority", "allocatable", "alloc_cpu", "alloc_ram", "used_cpu",
                 "used_ram", "servers", "status", "status_since", "vm_started_at", "view",
                 "dirty", "drain", "drain_index", "rank", "moving")

    def __init__(self, name: str, tier: Tier, allocatable: Resources, status: NodeStatus):
        self.name = name
        self.rank = 0  # position in the engine's node list (name order): the scheduler's tie-break
        self.tier = tier
        self.priority = tier.priority
        self.allocatable = allocatable
        self.alloc_cpu = allocatable.cpu
        self.alloc_ram = allocatable.ram
        self.used_cpu = 0.0
        self.used_ram = 0.0
        self.servers: dict[str, _Server] = {}
        self.status = status
        self.status_since: float | None = 0.0 if status is READY else None
        self.vm_started_at: int | None = None
        self.view: Node | None = None
        self.dirty = True
        self.drain: tuple[str, ...] = ()
        self.drain_index = 0
        self.moving: list[_Server] = []  # its drain's restarts whose downtime is not over


def fits_together(nodes: list[_Node], servers: list[_Server]) -> bool:
    """Could `servers` all be placed at once on the Ready nodes' free room? Each where the scheduler would put
    it (`BestFit`), RAM descending, as the drain decision places a plan; the orchestrator's drain checks this
    before one more restart (drainpool.py)."""
    fit = BestFit((n.rank, n.priority, n.alloc_cpu, n.alloc_ram, n.used_cpu, n.used_ram)
                  for n in nodes if n.status is READY)
    used = {n.rank: [n.used_cpu, n.used_ram] for n in nodes if n.status is READY}
    for s in sorted(servers, key=lambda s: (-s.ram, -s.cpu, s.name)):
        rank = fit.best(s.cpu, s.ram)
        if rank is None:
            return False
        slot = used[rank]
        slot[0] += s.cpu
        slot[1] += s.ram
        fit.update(rank, slot[0], slot[1])
    return True


@dataclass
class RunResult:
    """Everything one run measured. `series` is a step function: one row
    (t, queue, oldest_queued_at, cloud_active, cloud_booting, cpu_used,
    ram_used, cpu_running, ram_running, onprem_ram_used, moved_waiting) each time
    a value changes; `report.per_second` expands it. `queue` and
    `oldest_queued_at` are about new requests only; moved servers waiting for
    room are `moved_waiting`, and their delay is a downtime, not a wait."""

    policy: str
    mode: str
    theta_out: float | None
    workload: str
    seed: int
    cloud_node_hours: float
    waits: list[tuple[int, int, str]]  # (request time, wait, kind); the still_queued last, censored
    migration_waits: list[int]  # per move: seconds the moved server waited for room
    servers: int
    still_queued: int
    migrations: int
    scale_outs: int
    scale_ins: int
    decisions: int
    simulated_s: int
    wall_s: float
    series: list[tuple] = field(repr=False, default_factory=list)
    onprem_ram: float = 0.0  # capacity, for occupancy plots
    # per move: (time the move began, downtime s = restart time + wait for
    # room); a server still waiting at the end counts with its downtime so far
    downtimes: list[tuple[int, int]] = field(repr=False, default_factory=list)


def make_nodes(params: ClusterParams) -> list[_Node]:
    """On-prem nodes (Ready) then the cloud pool (stopped VMs). Names are
    zero-padded so name order, the policy's tie-break, is list order."""
    nodes = []
    for tier, count, status in ((Tier.ONPREM, params.onprem_nodes, READY),
                                (Tier.CLOUD, params.cloud_nodes, NodeStatus.STOPPED)):
        width = len(str(count))
        prefix = "onprem" if tier is Tier.ONPREM else "cloud"
        size = params.node_size(prefix)
        for i in range(count):
            nodes.append(_Node(f"{prefix}-{i + 1:0{width}d}", tier, size, status))
    return nodes


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)
