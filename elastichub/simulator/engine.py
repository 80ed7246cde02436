"""Discrete-event model of a hybrid JupyterHub cluster driven by a policy strategy.

Virtual clock in whole seconds (the paper's 1 s steps) but no stepping: the
clock jumps from event to event. Within one second things happen in this
order, so a second behaves like one of the paper's steps:

1. departures, cloud nodes becoming Ready, migration steps (room appears);
2. arrivals (requests join the FIFO queue);
3. the scheduler scans the queue in order and binds every request that fits
   (no head-of-line blocking) to the best node: on-prem first, then the most
   allocated by RAM (the policy's preference, Kubernetes' MostAllocated);
4. every `tmon_s` the controller observes a `ClusterSnapshot`, the strategy
   decides, the engine carries out the action, and the scheduler scans again.

Waiting time of a request = seconds from the request to being bound to a
node (0 when room exists). A bound server starts after `server_start_s` and
then runs for its lifetime; its departure time never moves (a migration
costs the user downtime, not session time).

Scale-in: the node is cordoned, then its servers restart in plan order,
`drain_concurrency` at a time at most, as the orchestrator's drain: one more
begins only when it and the restarts in flight still waiting for room fit
together on the Ready nodes' free room (`fits_together`), and always when
none is in flight (1: one after another, the paper's). Each restart puts the
server back through the scheduler (the plan's destinations are a prediction;
arrivals may have taken the room), its downtime is uniform in
[migration_min_s, migration_max_s], drawn as it begins; a restart is in
flight until its downtime ends, and the VM stops after the last one. Live
moves go one after another. A moved server that finds no room waits in the queue like anyone,
but it stays the same server: the policy sees its original `created_at`
(it is no arrival), and its delay (restart downtime + any wait for room) is
reported as migration downtime, apart from the waits of new requests.

The servers and nodes it moves, and what a run measured, are in model.py.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from operator import attrgetter
import random
import time

from ..policy import (
    ClusterSnapshot,
    ControllerState,
    Node,
    NodeStatus,
    Resources,
    ScaleIn,
    ScaleOut,
    Server,
    Strategy,
    Tier,
)
from ..policy.bestfit import BestFit
from .model import READY, RunResult, SimulationError, _Node, _Server, fits_together, make_nodes
from .params import ClusterParams
from .workload import Workload

# Event kinds, in the order they are handled within one second.
_DEPART, _READY, _MIGRATE, _SWITCH = 0, 1, 2, 3

_VIEW = attrgetter("view")


class Simulation:
    def __init__(self, workload: Workload, strategy: Strategy, params: ClusterParams, *,
                 seed: int = 1, mode: str = "", theta_out: float | None = None):
        self.workload = workload
        self.strategy = strategy
        self.p = params
        self.mode = mode
        self.theta_out = theta_out
        self.seed = seed
        self.rng = random.Random(f"migration-{seed}")
        # Whole seconds, as the paper's 1 s steps.
        self.boot_s = round(params.cloud_boot_s)
        self.start_s = round(params.server_start_s)
        self.live = params.move_method == "live"
        self.live_prepare_s = round(params.live_prepare_s)
        self.tmon_s = max(1, round(params.tmon_s))
        self.nodes = make_nodes(params)
        for rank, n in enumerate(self.nodes):
            n.rank = rank
        self.views: list[Node | None] = [None] * len(self.nodes)  # the last snapshot's, by rank
        self.dirty_nodes = list(self.nodes)  # every node starts dirty
        self.by_name = {n.name: n for n in self.nodes}
        self.servers: dict[str, _Server] = {}
        self.queue: dict[str, _Server] = {}  # FIFO: insertion order is request order
        self.new_waiting: dict[str, _Server] = {}  # the queue's new requests (never bound), FIFO
        # The same FIFO split by request size, for the scheduler: (qseq, server)
        # entries, stale once the server left the queue (its qseq changed).
        self.by_size: dict[tuple[float, float], deque] = {}
        self.qseq = 0
        self.heap: list[tuple] = []
        self.seq = 0
        self.need_scan = False
        self.version = 0  # bumped on any change a snapshot would show
        self.snapshot: ClusterSnapshot | None = None
        self.snapshot_version = -1
        self.state = ControllerState()
        # Aggregates kept incrementally (the series and snapshots read them).
        ready = [n for n in self.nodes if n.status is READY]
        self.fit = BestFit((n.rank, n.priority, n.alloc_cpu, n.alloc_ram, n.used_cpu, n.used_ram) for n in ready)
        self.cpu_used = self.ram_used = 0.0
        self.onprem_ram_used = 0.0
        self.cpu_running = sum(n.alloc_cpu for n in ready)
        self.ram_running = sum(n.alloc_ram for n in ready)
        self.cloud_active = self.cloud_booting = 0
        self.node_seconds = 0.0
        self.waits: list[tuple[int, int, str]] = []
        self.migration_waits: list[int] = []
        self.downtimes: list[tuple[int, float]] = []
        self.migrations = self.scale_outs = self.scale_ins = self.decisions = 0
        self.series: list[tuple] = []
        self._last_row: tuple | None = None
        self._recorded = -1  # the version of the last row

    # --- events ------------------------------------------------------------

    def _push(self, t: float, kind: int, obj) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, obj))

    def run(self) -> RunResult:
        wall0 = time.perf_counter()
        horizon = self.workload.horizon_s
        requests = self.workload.requests
        n_req = len(requests)
        i = 0
        tmon = self.tmon_s
        next_tick = 0.0
        heap = self.heap
        inf = math.inf
        while True:
            t_event = heap[0][0] if heap else inf
            t_arrival = requests[i].arrival_s if i < n_req else inf
            t = min(t_event, t_arrival, next_tick)
            if t >= horizon:
                break
            while heap and heap[0][0] == t:
                _, kind, _, obj = heapq.heappop(heap)
                if kind == _DEPART:
                    self._depart(obj, t)
                elif kind == _READY:
                    self._node_ready(obj, t)
                elif kind == _SWITCH:
                    self._switch(obj, t)
                else:
                    self._move_ended(obj, t)
            while i < n_req and requests[i].arrival_s == t:
                r = requests[i]
                i += 1
                s = _Server(f"s{i}", r.requests, r.arrival_s, r.duration_s, r.kind)
                self.servers[s.name] = s
                self._enqueue(s)
            if self.need_scan:
                self._scan(t)
            if t == next_tick:
                self._monitor(t)
                next_tick += tmon
                if self.need_scan:
                    self._scan(t)
            self._record(t)

        self._finish(horizon)
        return self._result(horizon, i, time.perf_counter() - wall0)

    def _depart(self, s: _Server, t: float) -> None:
        s.gone = True
        if s.node is not None:
            self._unbind(s)
            self.need_scan = True
        elif s.name in self.queue:  # a moved server still waiting for room
            self._dequeue(s)
        mover = s.mover
        if mover is not None and mover.name in self.queue:
            # its live move had not found room yet: call it off, drain on
            # (a bound destination is let go at its switch instead)
            s.mover = None
            self._dequeue(mover)
            self._drain_step(mover.source, t)

    def _dequeue(self, s: _Server) -> None:
        del self.queue[s.name]
        s.qseq = None
        self.version += 1

    def _node_ready(self, node: _Node, t: float) -> None:
        self.cloud_booting -= 1
        self._set_status(node, READY, t)
        self.need_scan = True

    # --- scheduler ---------------------------------------------------------

    def _enqueue(self, s: _Server) -> None:
        self.qseq += 1
        s.qseq = self.qseq
        self.queue[s.name] = s
        if not s.bound_once:
            self.new_waiting[s.name] = s
        size = (s.cpu, s.ram)
        bucket = self.by_size.get(size)
        if bucket is None:
            bucket = self.by_size[size] = deque()
        bucket.append((self.qseq, s))
        self.version += 1
        self.need_scan = True

    @staticmethod
    def _head(bucket: deque) -> int | None:
        """FIFO position of the first request of a size still queued."""
        while bucket and bucket[0][1].qseq != bucket[0][0]:
            bucket.popleft()
        return bucket[0][0] if bucket else None

    def _scan(self, t: float) -> None:
        """Bind every queued request that fits, in FIFO order, each to the
        best Ready node (`BestFit`: on-prem first, most allocated by RAM,
        then name order).

        Equal requests fit or fail alike, and binds only take room, so once
        a size fits nowhere, it and every size at least as large on both
        resources is done for this scan. The queue is walked by size (a merge
        of the per-size FIFOs, in FIFO order): a scan costs the requests it
        binds and the sizes waiting, not the length of the queue."""
        self.need_scan = False
        if not self.queue:
            return
        best = self.fit.best
        nodes = self.nodes
        queue = self.queue
        heads = []
        for size, bucket in list(self.by_size.items()):
            seq = self._head(bucket)
            if seq is None:
                del self.by_size[size]
            else:
                heads.append((seq, size))
        heapq.heapify(heads)
        failed: list[tuple[float, float]] = []
        while heads:
            _, size = heapq.heappop(heads)
            cpu, ram = size
            if failed and any(cpu >= f_cpu and ram >= f_ram for f_cpu, f_ram in failed):
                continue
            rank = best(cpu, ram)
            if rank is None:
                failed.append(size)
                continue
            bucket = self.by_size[size]
            s = bucket.popleft()[1]
            s.qseq = None
            del queue[s.name]
            if not s.bound_once:
                del self.new_waiting[s.name]
            self._bind(s, nodes[rank], t)
            seq = self._head(bucket)
            if seq is not None:
                heapq.heappush(heads, (seq, size))

    def _bind(self, s: _Server, node: _Node, t: float, record: bool = True) -> None:
        """Put `s` on `node`; `record`: count its wait (or its move's)."""
        wait = int(t - s.queued_since)
        if not record:
            pass  # a live move's switch: its wait was the destination's
        elif not s.bound_once:
            s.bound_once = True
            self.waits.append((s.created_at, wait, s.kind))
            s.started_at = int(t + self.start_s)
            end = s.started_at + s.duration
            if end < self.workload.horizon_s:
                self._push(end, _DEPART, s)
        elif s.move_of is not None:  # a live move's destination: the source runs on while it starts
            self.migration_waits.append(wait)
            self._push(t + self.live_prepare_s, _SWITCH, s)
        else:
            self.migration_waits.append(wait)
            self.downtimes.append((int(s.queued_since), wait + s.move_downtime))
        s.node = node
        s.view = Server(s.name, s.requests, node.name, s.started_at, s.created_at)
        node.servers[s.name] = s
        node.used_cpu += s.cpu
        node.used_ram += s.ram
        self._touch(node)
        if node.status is READY:
            self.fit.update(node.rank, node.used_cpu, node.used_ram)
        self.cpu_used += s.cpu
        self.ram_used += s.ram
        if node.tier is Tier.ONPREM:
            self.onprem_ram_used += s.ram
        self.version += 1

    def _unbind(self, s: _Server) -> None:
        node = s.node
        del node.servers[s.name]
        if node.servers:
            node.used_cpu -= s.cpu
            node.used_ram -= s.ram
        else:  # reset exactly: no float drift on empty nodes
            node.used_cpu = node.used_ram = 0.0
        self._touch(node)
        if node.status is READY:
            self.fit.update(node.rank, node.used_cpu, node.used_ram)
        s.node = None
        self.cpu_used -= s.cpu
        self.ram_used -= s.ram
        if node.tier is Tier.ONPREM:
            self.onprem_ram_used -= s.ram
        self.version += 1

    # --- nodes -------------------------------------------------------------

    def _set_status(self, node: _Node, status: NodeStatus, t: float) -> None:
        was_running = node.status in (READY, NodeStatus.CORDONED)
        if node.status is READY and status is not READY:
            self.fit.remove(node.rank)
        elif status is READY and node.status is not READY:
            self.fit.add(node.rank, node.priority, node.alloc_cpu, node.alloc_ram, node.used_cpu, node.used_ram)
        node.status = status
        node.status_since = t
        self._touch(node)
        now_running = status in (READY, NodeStatus.CORDONED)
        if was_running != now_running:
            sign = 1 if now_running else -1
            self.cpu_running += sign * node.alloc_cpu
            self.ram_running += sign * node.alloc_ram
            if node.tier is Tier.CLOUD:
                self.cloud_active += sign
        self.version += 1

    def _move_ended(self, obj: _Node | _Server, t: float) -> None:
        """A restart's downtime is over (`obj` the server), or a live drain looks again (`obj` its node)."""
        if obj.__class__ is _Server:
            node, obj.source = obj.source, None
            node.moving.remove(obj)
            obj = node
        self._drain_step(obj, t)

    def _drain_step(self, node: _Node, t: float) -> None:
        """Begin the next moves of a cordoned node, or stop its VM."""
        while node.drain_index < len(node.drain):
            s = self.servers.get(node.drain[node.drain_index])
            if s is None or s.node is not node:
                node.drain_index += 1
                continue  # ended before its turn (or a live move's destination: it moves on by itself)
            if node.moving and (len(node.moving) >= self.p.drain_concurrency or not fits_together(
                    self.nodes, [m for m in node.moving if m.node is None and not m.gone] + [s])):
                return  # it begins when one in flight ends
            node.drain_index += 1
            self.migrations += 1
            if self.live:
                self._start_live_move(s, node, t)
                return
            self._unbind(s)
            s.queued_since = t
            # The same server, not a new arrival: it keeps its name, its
            # session start and the time its user asked for it.
            s.view = Server(s.name, s.requests, None, s.started_at, s.created_at)
            downtime = max(1, round(self.rng.uniform(self.p.migration_min_s, self.p.migration_max_s)))
            s.move_downtime = downtime
            s.source = node
            node.moving.append(s)
            self._enqueue(s)
            self._push(t + downtime, _MIGRATE, s)
        if node.moving:
            return  # the VM stops after the last one
        if node.servers:
            if not self.live:
                raise SimulationError(f"node {node.name} still hosts servers after its drain")
            # a live move switched onto this node after its drain was planned:
            # move what is here now, or wait for a destination still starting
            late = tuple(name for name in node.servers if name in self.servers)
            if late:
                node.drain, node.drain_index = late, 0
                self._drain_step(node, t)
            else:
                self._push(t + 1, _MIGRATE, node)
            return
        self._stop(node, t)

    def _start_live_move(self, s: _Server, node: _Node, t: float) -> None:
        """Make before break: the destination pod asks for room while `s`
        runs on; the drain goes on once it has switched (`_switch`)."""
        mover = _Server(f"{s.name}~move", s.requests, s.created_at, 0, s.kind)
        mover.bound_once = True  # the same server, not a new request
        mover.started_at = s.started_at
        mover.queued_since = t
        mover.view = Server(mover.name, s.requests, None, s.started_at, s.created_at)
        mover.move_of, mover.source, s.mover = s, node, mover
        self._enqueue(mover)

    def _switch(self, mover: _Server, t: float) -> None:
        """The destination has started and taken the pre-copy: the user's
        server is now the one on it, after a pause of live_pause_s."""
        s, dest = mover.move_of, mover.node
        self._unbind(mover)
        if not s.gone:
            s.mover = None
            self._unbind(s)
            self._bind(s, dest, t, record=False)
            self.downtimes.append((int(mover.queued_since), self.p.live_pause_s))
        self.need_scan = True
        self._drain_step(mover.source, t)

    def _stop(self, node: _Node, t: float) -> None:
        self.node_seconds += t - node.vm_started_at
        node.vm_started_at = None
        node.drain = ()
        self._set_status(node, NodeStatus.STOPPED, t)
        self.scale_ins += 1

    # --- controller --------------------------------------------------------

    def _touch(self, node: _Node) -> None:
        """The node changed: its view is rebuilt for the next snapshot (only
        changed nodes are, so a snapshot of a big hub costs what changed)."""
        if not node.dirty:
            node.dirty = True
            self.dirty_nodes.append(node)

    def _build_snapshot(self) -> ClusterSnapshot:
        if self.snapshot_version == self.version:
            return self.snapshot
        views = self.views
        for n in self.dirty_nodes:
            n.view = Node(
                n.name, n.tier, n.allocatable, Resources(n.used_cpu, n.used_ram),
                tuple(map(_VIEW, n.servers.values())), n.status, n.status_since,
            )
            n.dirty = False
            views[n.rank] = n.view
        self.dirty_nodes = []
        self.snapshot = ClusterSnapshot(tuple(views), tuple(map(_VIEW, self.queue.values())))
        self.snapshot_version = self.version
        return self.snapshot

    def _monitor(self, t: float) -> None:
        snapshot = self._build_snapshot()
        action, self.state = self.strategy.decide(snapshot, self.state, t)
        self.decisions += 1
        if action is None:
            return
        if isinstance(action, ScaleOut):
            for name in action.nodes:
                node = self._node(name, "start")
                if node.tier is not Tier.CLOUD or node.status is not NodeStatus.STOPPED:
                    raise SimulationError(f"policy {self.strategy.name!r} asked to start node {name}, "
                                          f"a {node.tier.value} node that is {node.status.value}")
                node.vm_started_at = t
                self.cloud_booting += 1
                self._set_status(node, NodeStatus.BOOTING, t)
                self._push(t + self.boot_s, _READY, node)
                self.scale_outs += 1
        elif isinstance(action, ScaleIn):
            node = self._node(action.node, "remove")
            if node.tier is not Tier.CLOUD or node.status is not READY:
                raise SimulationError(f"policy {self.strategy.name!r} asked to remove node {node.name}, "
                                      f"a {node.tier.value} node that is {node.status.value}")
            planned = [m.server.name for m in action.moves]
            if sorted(planned) != sorted(node.servers) or any(m.source != node.name for m in action.moves):
                raise SimulationError(f"policy {self.strategy.name!r}: scale-in plan for {node.name} "
                                      f"does not move exactly the servers on it")
            self._set_status(node, NodeStatus.CORDONED, t)
            node.drain = tuple(planned)
            node.drain_index = 0
            self._drain_step(node, t)
        else:
            raise SimulationError(f"policy {self.strategy.name!r} returned an unknown action {action!r}")

    def _node(self, name: str, verb: str) -> _Node:
        try:
            return self.by_name[name]
        except KeyError:
            raise SimulationError(f"policy {self.strategy.name!r} asked to {verb} unknown node {name!r}") from None

    # --- measurements ------------------------------------------------------

    def _record(self, t: float) -> None:
        if self.version == self._recorded:  # every value of a row changes with the version
            return
        self._recorded = self.version
        waiting = self.new_waiting
        oldest = next(iter(waiting.values())).queued_since if waiting else -1
        row = (len(waiting), oldest, self.cloud_active, self.cloud_booting, self.cpu_used,
               self.ram_used, self.cpu_running, self.ram_running, self.onprem_ram_used,
               len(self.queue) - len(waiting))
        if row != self._last_row:
            self._last_row = row
            self.series.append((int(t),) + row)

    def _finish(self, horizon: int) -> None:
        for n in self.nodes:
            if n.vm_started_at is not None:
                self.node_seconds += horizon - n.vm_started_at
        for s in self.queue.values():  # censored: still waiting when the simulation ends
            if not s.bound_once:
                self.waits.append((s.created_at, int(horizon - s.created_at), s.kind))
            elif s.move_of is None:  # (a live move's user is still running on the source)
                self.downtimes.append((int(s.queued_since), int(horizon - s.queued_since) + s.move_downtime))

    def _result(self, horizon: int, servers: int, wall: float) -> RunResult:
        return RunResult(
            policy=self.strategy.name, mode=self.mode, theta_out=self.theta_out,
            workload=self.workload.name, seed=self.seed,
            cloud_node_hours=self.node_seconds / 3600.0,
            waits=self.waits, migration_waits=self.migration_waits,
            servers=servers, still_queued=sum(1 for s in self.queue.values() if not s.bound_once),
            migrations=self.migrations, scale_outs=self.scale_outs, scale_ins=self.scale_ins,
            decisions=self.decisions, simulated_s=horizon, wall_s=wall, series=self.series,
            onprem_ram=sum(n.alloc_ram for n in self.nodes if n.tier is Tier.ONPREM),
            downtimes=self.downtimes,
        )


def simulate(workload: Workload, strategy: Strategy, params: ClusterParams | None = None, *,
             seed: int = 1, mode: str = "", theta_out: float | None = None) -> RunResult:
    return Simulation(workload, strategy, params or ClusterParams(), seed=seed, mode=mode,
                      theta_out=theta_out).run()
