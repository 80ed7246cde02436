"""A drain's restart moves, a few at a time (drainpool.py), against a scripted hub: the bound, the record,
a failure among several moves, a crash mid-way and the shutdown."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest
from podtools import until
from test_drain_moves import Recorder, carol_pod

from elastichub.checkpoint_client import FAILED, CheckpointOutcome
from elastichub.orchestrator.drain import Drain, DrainTimeouts, Paused
from elastichub.orchestrator.drainpool import fits_elsewhere
from elastichub.orchestrator.hub import HubServer
from elastichub.orchestrator.records import node_record

pytestmark = [pytest.mark.timeout(30)]


def pod_of(user: str, node: str = "cloud-1", ram: float = 0.0):
    return replace(carol_pod(node), key=f"jh/jupyter-{user}", user=user, server=user, ram=ram)


class Fleet:
    """A hub running `users` on cloud-1. `gates[event]` holds that step (e.g. "stop bob") until set; a stop
    takes the server's pod off the cache, a start puts it on onprem-1. `most`: the most servers at once
    between their checkpoint and their start."""

    def __init__(self, users, latency: float = 0.0):
        self.pods = {f"jh/jupyter-{u}": pod_of(u) for u in users}
        self.running, self.events, self.gates, self.latency = set(users), [], {}, latency
        self.between, self.most, self.failing = set(), 0, set()

    async def _step(self, what: str) -> None:
        self.events.append(what)
        if what in self.gates:
            await self.gates[what].wait()
        await asyncio.sleep(self.latency)

    async def server(self, user, name):
        await asyncio.sleep(self.latency)
        return HubServer(user, "", True, None, f"/user/{user}/", {}, None, None) if user in self.running else None

    async def kernels(self, server):
        await self._step(f"kernels {server.user}")
        return [{"id": "k", "execution_state": "busy" if self.busy(server.user) else "idle"}]

    def busy(self, user: str) -> bool:  # a test's: is a cell of `user` running now?
        return False

    async def terminals(self, server):
        return []

    def proxy_base(self, server):
        return f"http://proxy{server.url}"

    async def server_call(self, base, method, path, body=None, *, owner=None, timeout=None):
        return {"kernels": [{"kernel_id": "k", "kernel_name": "elastic-python", "elastic": True}]}  # movable.py

    async def checkpoint(self, server, timeout, hold_s=None):
        await self._step(f"checkpoint {server.user}")
        if server.user in self.failing:
            return CheckpointOutcome(FAILED, reason="disk full")
        self.between.add(server.user)
        self.most = max(self.most, len(self.between))
        return CheckpointOutcome("saved", kernels=1)

    async def end_hold(self, server):
        self.events.append(f"end hold {server.user}")
        self.between.discard(server.user)

    async def stop(self, user, name):
        await self._step(f"stop {user}")
        self.running.discard(user)
        del self.pods[f"jh/jupyter-{user}"]

    async def start(self, user, name, options):
        await self._step(f"start {user}")
        self.running.add(user)
        self.between.discard(user)
        self.pods[f"jh/jupyter-{user}"] = pod_of(user, "onprem-1")


class Landing(Recorder):
    """Record writes that land after a while, the first of every two slower (a conflict retried, a slow
    API server): what the Node holds is `landed`."""

    def __init__(self):
        super().__init__()
        self.landed, self.writes = None, 0

    async def mark_drain(self, node, record):
        self.landed = json.dumps(record)
        return {}

    async def record_drain(self, node, record):
        text, self.writes = json.dumps(record), self.writes + 1
        await asyncio.sleep(0.03 if self.writes % 2 else 0.0)
        self.landed = text
        self.saved.append(json.loads(text))
        return {}

    async def uncordon(self, node):
        self.ended.append("uncordon")


def drain_of(fleet, kube=None, concurrency=3, **kw):
    reports = []
    drain = Drain("cloud-1", None, kube=kube or Landing(), hub=fleet, cloud=None,
                  pods=lambda: list(fleet.pods.values()),
                  timeouts=DrainTimeouts(start=5, stop=5, poll=0.02, concurrency=concurrency),
                  on_move=reports.append, **kw)
    return drain, reports


USERS = ["ann", "bob", "cy", "dee", "eve", "fay"]


async def test_restart_moves_overlap_up_to_the_bound_and_every_server_moves():
    fleet = Fleet(USERS, latency=0.01)
    drain, reports = drain_of(fleet, concurrency=3)
    assert await drain.start() == "stopped"
    assert fleet.most == 3  # three at once, never four
    assert fleet.running == set(USERS) and all(p.node == "onprem-1" for p in fleet.pods.values())
    assert sorted({r.server for r in reports if r.outcome == "moved"}) == USERS
    for user in USERS:  # each: checkpointed, then stopped, then started, once
        steps = [e for e in fleet.events if e.endswith(f" {user}") and e.split()[0] in ("checkpoint", "stop", "start")]
        assert steps == [f"checkpoint {user}", f"stop {user}", f"start {user}"], fleet.events


async def test_one_at_a_time_with_a_bound_of_one_or_no_room_for_two():
    fleet = Fleet(USERS[:3], latency=0.01)
    drain, _ = drain_of(fleet, concurrency=1)
    assert await drain.start() == "stopped" and fleet.most == 1
    fleet = Fleet(USERS[:3], latency=0.01)
    asked = []
    drain, _ = drain_of(fleet, concurrency=3, room=lambda moving: asked.append(len(moving)) or False)
    assert await drain.start() == "stopped" and fleet.most == 1
    assert asked and set(asked) == {2}  # asked for the second, never started it


async def test_the_record_on_the_node_is_the_newest_whatever_order_its_writes_take():
    """Concurrent moves write the record at once: a slow write of an older record landed after a newer,
    and the Node said a server that had been started again was still stopped."""
    fleet, kube = Fleet(USERS[:4], latency=0.005), Landing()
    drain, _ = drain_of(fleet, kube=kube, concurrency=4)
    fleet.gates["start dee"] = asyncio.Event()
    task = asyncio.create_task(drain.start())
    await until(lambda: "start dee" in fleet.events and len(drain.record["servers"]) == 4
                and sum(e["step"] == "done" for e in drain.record["servers"].values()) == 3, what="three moved")
    await asyncio.sleep(0.1)  # every write landed
    assert json.loads(kube.landed) == drain.record  # what the Node holds is what the drain knows
    steps = [{k: v["step"] for k, v in r["servers"].items()} for r in kube.saved]
    for earlier, later in zip(steps, steps[1:]):  # no step ever goes back
        assert all(later.get(k) != "restart" or v != "done" for k, v in earlier.items()), steps
    fleet.gates["start dee"].set()
    assert await task == "stopped"


async def test_a_failed_checkpoint_among_several_moves_rolls_back_with_every_server_running():
    """bob's checkpoint fails while ann's server is stopped for her move and cy waits for a cell: ann is
    started again (elsewhere), cy is never stopped, nothing else starts, the node is opened again."""
    fleet = Fleet(USERS[:4])
    fleet.failing.add("bob")
    fleet.gates["stop ann"], fleet.gates["checkpoint bob"] = asyncio.Event(), asyncio.Event()
    fleet.busy = lambda user: user == "cy" and "checkpoint ann" in fleet.events  # a cell, once the moves began
    drain, reports = drain_of(fleet, concurrency=3)
    task = asyncio.create_task(drain.start())
    await until(lambda: "stop ann" in fleet.events and "checkpoint bob" in fleet.events
                and fleet.events.count("kernels cy") >= 3, what="three moves under way")
    fleet.gates["checkpoint bob"].set()  # fails
    await until(lambda: any(r.server == "bob" and r.outcome == "aborted" for r in reports), what="bob aborted")
    await asyncio.sleep(0.1)
    assert not task.done()  # ann's move, past its way out, is not cut
    fleet.gates["stop ann"].set()
    assert await task == "rolled-back"
    assert fleet.running == set(USERS[:4])
    assert not any(e in fleet.events for e in ("stop bob", "stop cy", "stop dee", "checkpoint dee")), fleet.events
    outcome = {r.server: (r.outcome, r.error) for r in reports}
    assert outcome["ann"][0] == "moved" and outcome["bob"][0] == "aborted"
    assert outcome["cy"] == ("aborted", "not moved: checkpoint of bob: failed: disk full"), outcome
    assert "dee" not in outcome  # never begun
    assert drain.kube.ended[-2:] == ["uncordon", True]  # opened, and the record dropped with the cordon


async def test_a_crash_with_several_servers_stopped_resumes_every_one_and_moves_the_rest():
    fleet, kube = Fleet(USERS), Landing()
    for user in ("ann", "bob"):
        fleet.gates[f"start {user}"] = asyncio.Event()  # stopped, not started again when the crash comes
    drain, _ = drain_of(fleet, kube=kube, concurrency=3)
    task = asyncio.create_task(drain.start())
    await until(lambda: {"start ann", "start bob"} <= set(fleet.events), what="two servers stopped")
    task.cancel()  # the orchestrator killed
    await asyncio.gather(task, return_exceptions=True)
    await asyncio.sleep(0.1)
    left = json.loads(kube.landed)
    assert {k: (v["step"], v["stop_sent"]) for k, v in left["servers"].items()}.items() >= {
        "ann": ("restart", True), "bob": ("restart", True)}.items(), left
    # The hub dropped the starts that were in flight (the orchestrator's requests died with it).
    fleet.gates.clear()
    fleet.running -= {"ann", "bob"}
    for user in ("ann", "bob"):
        fleet.pods.pop(f"jh/jupyter-{user}", None)
    resumed, _ = drain_of(fleet, kube=kube, concurrency=3)
    fleet.gates["start ann"] = asyncio.Event()
    task = asyncio.create_task(resumed.resume(kube.landed))
    # Started again together: bob's start is not held behind ann's.
    await until(lambda: fleet.events.count("start bob") == 2, what="bob started while ann's start is under way")
    fleet.gates["start ann"].set()
    assert await task == "stopped"
    assert fleet.running == set(USERS) and all(p.node == "onprem-1" for p in fleet.pods.values())
    for user in USERS:  # never stopped twice, never stopped without a checkpoint before
        assert fleet.events.count(f"stop {user}") == 1, fleet.events
        assert fleet.events.index(f"checkpoint {user}") < fleet.events.index(f"stop {user}")


async def test_a_shutdown_lets_the_stopped_servers_start_again_and_begins_no_other_move():
    fleet = Fleet(USERS)
    fleet.gates["stop ann"] = fleet.gates["stop bob"] = asyncio.Event()
    fleet.busy = lambda user: user == "cy" and "checkpoint ann" in fleet.events
    drain, reports = drain_of(fleet, concurrency=3)
    task = asyncio.create_task(drain.start())
    await until(lambda: "stop ann" in fleet.events and "stop bob" in fleet.events
                and fleet.events.count("kernels cy") >= 3, what="three moves under way")
    drain.closing = True
    await asyncio.sleep(0.1)
    fleet.gates["stop ann"].set()
    with pytest.raises(Paused, match="4 server"):
        await task
    assert {"ann", "bob"} <= fleet.running and not any(f"stop {u}" in fleet.events for u in ("cy", "dee", "eve"))
    assert {r.server: r.outcome for r in reports} == {"ann": "moved", "bob": "moved", "cy": "aborted"}
    assert drain.record["servers"]["ann"]["step"] == "done"


def test_room_for_moves_in_flight_together_is_checked_as_the_scheduler_would_place_them():
    GiB = 2**30

    def node(name, ram_gib, tier="on-prem", **spec):
        return node_record({"metadata": {"name": name, "labels": {"elastichub.io/tier": tier}}, "spec": spec,
                            "status": {"allocatable": {"cpu": "8", "memory": f"{ram_gib}Gi"},
                                       "conditions": [{"type": "Ready", "status": "True"}]}})
    nodes = [node("onprem-1", 8), node("onprem-2", 4), node("onprem-3", 64, unschedulable=True)]
    on = [replace(pod_of("x", "onprem-1", 4 * GiB), cpu=0.0)]  # onprem-1: 4 GiB left; onprem-2: 4 GiB
    moving = [pod_of(u, ram=3 * GiB) for u in ("a", "b", "c")]
    assert fits_elsewhere("cloud-1", nodes, on, moving[:2])
    assert not fits_elsewhere("cloud-1", nodes, on, moving)  # 3 GiB each: one per node, the cordoned one left out
    # One of them has landed (its new pod placed): counted where it runs, not twice.
    assert not fits_elsewhere("cloud-1", nodes, [*on, pod_of("a", "onprem-2", 3 * GiB)], moving)
    assert fits_elsewhere("cloud-1", nodes, [*on, pod_of("a", "onprem-2", 1 * GiB)], moving)


def test_the_apps_drain_concurrency_reaches_the_drains():
    from elastichub.orchestrator.app import ElasticOrchestrator

    assert ElasticOrchestrator().settings().drain.concurrency == 4
    assert ElasticOrchestrator(drain_concurrency=1).settings().drain.concurrency == 1


async def test_the_controller_begins_a_second_move_only_when_on_prem_has_room_for_both():
    """Its drains ask the node cache: onprem-1 with room for one 3 GiB server, not two, moves them one by one."""
    from podtools import cache

    from elastichub.orchestrator.controller import Controller, Settings
    from elastichub.orchestrator.observe import Observation
    from elastichub.policy import ClusterSnapshot

    GiB = 2**30

    class Kube(Landing):
        async def end_drain(self, node, uncordon):
            self.ended.append(uncordon)

    for room, most in ((4, 1), (8, 2)):
        onprem = node_record({"metadata": {"name": "onprem-1", "labels": {"elastichub.io/tier": "on-prem"}},
                              "status": {"allocatable": {"cpu": "8", "memory": f"{room}Gi"},
                                         "conditions": [{"type": "Ready", "status": "True"}]}})
        fleet = Fleet(["ann", "bob"], latency=0.01)
        fleet.pods = {k: replace(p, ram=3 * GiB) for k, p in fleet.pods.items()}
        ctl = Controller(None, cache({"onprem-1": onprem}), cache(fleet.pods), Kube(), fleet, None,
                         Settings(drain=DrainTimeouts(start=5, stop=5, poll=0.02, concurrency=2)))
        ctl._start_drain("cloud-1", Observation(ClusterSnapshot(())), reason="servers fit elsewhere")
        await until(lambda: ctl.tasks["drain:cloud-1"].done(), what="the drain")
        assert fleet.running == {"ann", "bob"} and fleet.most == most, (room, fleet.events)
