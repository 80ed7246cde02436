"""Shared helpers of the simulator tests: tiny traces and an invariant-checking engine."""

from __future__ import annotations

from pathlib import Path

from elastichub.policy import GiB, Migration, NodeStatus, Resources, ScaleIn, ScaleOut
from elastichub.simulator.engine import Simulation
from elastichub.simulator.params import ClusterParams
from elastichub.simulator.runner import RunSpec, build_strategy
from elastichub.simulator.workload import Request, Workload

RUNNING = (NodeStatus.READY, NodeStatus.CORDONED)


def request(arrival: int, duration: int, ram_gib: float, cpu: float | None = None) -> Request:
    cpu = ram_gib / 2 if cpu is None else cpu  # 1 RU = 0.5 vCPU + 1 GiB
    return Request(arrival, duration, Resources(cpu, ram_gib * GiB), "trace")


def workload(requests: list[Request], horizon: int) -> Workload:
    return Workload("tiny", tuple(sorted(requests, key=lambda r: r.arrival_s)), horizon)


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


class DrainCloudAt600:
    """Starts cloud-1 at 0 and from 600 moves its servers onto onprem-1,
    room or not; keeps every snapshot it was shown."""

    name = "drain-cloud-at-600"

    def __init__(self):
        self.seen = []

    def decide(self, snapshot, state, now):
        self.seen.append((now, snapshot))
        cloud = snapshot.node("cloud-1")
        if now >= 600 and cloud.active and cloud.servers:
            return ScaleIn("cloud-1", tuple(Migration(s, "cloud-1", "onprem-1") for s in cloud.servers)), state
        if now == 0:
            return ScaleOut(("cloud-1",)), state
        return None, state


class CheckedSimulation(Simulation):
    """Checks conservation after every step of the clock:
    - a node's `used` is the sum of its servers' requests and never exceeds
      its allocatable; stopped or booting nodes host nothing;
    - a cordoned node never receives a server;
    - a drain never has more restarts in flight than `drain_concurrency`;
    - every server that arrived is in exactly one place: on one node, in the
      queue, or gone (its lifetime ended)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cordoned_hosts: dict[str, set[str]] = {}
        self.steps = 0

    def _record(self, t):
        self.steps += 1
        on_nodes: dict[str, str] = {}
        for n in self.nodes:
            cpu = sum(s.cpu for s in n.servers.values())
            ram = sum(s.ram for s in n.servers.values())
            assert abs(cpu - n.used_cpu) < 1e-6 and abs(ram - n.used_ram) < 1e-3, (t, n.name)
            assert n.used_cpu <= n.alloc_cpu + 1e-9 and n.used_ram <= n.alloc_ram + 1e-3, (t, n.name, "overcommitted")
            if n.status not in RUNNING:
                assert not n.servers, (t, n.name, n.status)
            assert len(n.moving) <= self.p.drain_concurrency, (t, n.name, "more restarts at once than allowed")
            if n.status is NodeStatus.CORDONED:
                before = self.cordoned_hosts.setdefault(n.name, set(n.servers))
                assert set(n.servers) <= before, (t, n.name, "server placed on a cordoned node")
                self.cordoned_hosts[n.name] = set(n.servers)
            else:
                self.cordoned_hosts.pop(n.name, None)
            for name, s in n.servers.items():
                assert name not in on_nodes, (t, name, "on two nodes")
                assert s.node is n
                on_nodes[name] = n.name
        for name, s in self.servers.items():
            places = (name in on_nodes) + (name in self.queue) + s.gone
            assert places == 1, (t, name, places)
        super()._record(t)


def run_checked(wl: Workload, params: ClusterParams, mode: str = "migration", theta: float = 80.0,
                policy: str = "paper", seed: int = 1):
    """One run as the runner makes it (`runner.build_strategy`), checked every step."""
    spec = RunSpec(policy, mode, None if mode == "onprem-only" else theta)
    sim = CheckedSimulation(wl, build_strategy(spec, wl, params), params, seed=seed, mode=mode,
                            theta_out=spec.theta_out)
    result = sim.run()
    return sim, result
