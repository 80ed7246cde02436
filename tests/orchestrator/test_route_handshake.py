"""The live move's route handshake on a real API server: the orchestrator
withdraws a request the hub has not claimed, and the hub switches only a
request it claimed. Both used to write the annotation blindly: a hub still
switching when the orchestrator's route timeout ran out pointed the user at
the destination pod the orchestrator was deleting."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest
from podtools import server_pod

from elastichub import podmeta
from elastichub.orchestrator.drain import DrainTimeouts
from elastichub.orchestrator.kube import KubePods
from elastichub.orchestrator.live import LiveMove
from elastichub.spawner import ElasticSpawner

pytestmark = [pytest.mark.timeout(60)]

DEST = "jupyter-alice-m000001"


def _destination(cluster, route: str) -> None:
    pod = server_pod("alice")
    pod["metadata"]["name"] = DEST
    pod["metadata"]["annotations"].update({podmeta.MOVE_OF_ANNOTATION: "jupyter-alice",
                                           podmeta.ROUTE_ANNOTATION: route})
    cluster.store.create("pods", pod)


def _route(cluster) -> str:
    return cluster.store.get("pods", DEST, namespace="default")["metadata"]["annotations"][podmeta.ROUTE_ANNOTATION]


class Proxy:
    def __init__(self):
        self.routes = []

    async def add_route(self, spec, target, data):
        self.routes.append(target)


def _hub_spawner(monkeypatch, api, switch_s: float, switched: list) -> ElasticSpawner:
    """An ElasticSpawner of alice's server whose switch (proxy, database) takes `switch_s`."""
    monkeypatch.setattr("kubespawner.spawner.load_config", lambda **kw: None)
    spawner = ElasticSpawner(_mock=True)
    spawner.user = SimpleNamespace(name="alice", settings={"proxy": Proxy()})
    spawner.namespace, spawner.pod_name = "default", "jupyter-alice"
    spawner.api = api
    monkeypatch.setattr(ElasticSpawner, "server", property(lambda self: SimpleNamespace(host="http://10.0.0.1:8888")))
    monkeypatch.setattr(ElasticSpawner, "pending", None)
    monkeypatch.setattr(spawner, "is_pod_running", lambda pod: True)

    async def switch_to(pod):
        await asyncio.sleep(switch_s)
        switched.append(pod["metadata"]["name"])
        spawner.pod_name = pod["metadata"]["name"]
        return None
    monkeypatch.setattr(spawner, "_switch_to", switch_to)
    return spawner


def _move(api) -> LiveMove:
    async def save(needed=True):
        pass
    entry = {"user": "alice", "name": "", "ns": "default", "source": "jupyter-alice", "dest": DEST}
    return LiveMove(hub=None, pods=KubePods(api), timeouts=DrainTimeouts(route=0.3), entry=entry, save=save,
                    poll=0.02)


async def _answer_after(spawner: ElasticSpawner, api, delay: float) -> None:
    """What the hub's route watcher does once it sees the request."""
    await asyncio.sleep(delay)
    pod = await KubePods(api).get("default", DEST)
    if pod["metadata"]["annotations"].get(podmeta.ROUTE_ANNOTATION) in (podmeta.ROUTE_REQUESTED,
                                                                          podmeta.ROUTE_SWITCHING):
        await spawner._answer_route_request(pod)


async def test_a_hub_that_claims_the_request_in_time_has_the_last_word_however_slow_its_switch(core, monkeypatch):
    cluster, api = core
    _destination(cluster, podmeta.ROUTE_REQUESTED)
    switched = []
    spawner = _hub_spawner(monkeypatch, api, switch_s=0.8, switched=switched)  # past the 0.3 s route timeout
    hub = asyncio.ensure_future(_answer_after(spawner, api, 0.05))
    answer = await _move(api)._route_answer()
    await hub
    assert (answer, switched, _route(cluster)) == (podmeta.ROUTE_SWITCHED, [DEST], podmeta.ROUTE_SWITCHED)


async def test_a_hub_too_late_for_the_request_never_switches_to_the_withdrawn_pod(core, monkeypatch):
    cluster, api = core
    _destination(cluster, podmeta.ROUTE_REQUESTED)
    switched = []
    spawner = _hub_spawner(monkeypatch, api, switch_s=0.0, switched=switched)
    answer = await _move(api)._route_answer()  # nobody answers: withdrawn at 0.3 s
    assert answer.startswith("no answer from the hub within 0.3 s") and _route(cluster) == podmeta.ROUTE_WITHDRAWN
    # The hub saw "requested" before the withdrawal and acts on it only now.
    pod = await KubePods(api).get("default", DEST)
    pod["metadata"]["annotations"][podmeta.ROUTE_ANNOTATION] = podmeta.ROUTE_REQUESTED
    await spawner._answer_route_request(pod)
    assert switched == [] and spawner.pod_name == "jupyter-alice" and _route(cluster) == podmeta.ROUTE_WITHDRAWN


@pytest.mark.parametrize("recorded", [True, False])
async def test_a_switch_the_hub_never_answered_is_decided_by_the_hubs_record(core, monkeypatch, recorded, caplog):
    """The hub claimed the request and stopped before its answer: after its
    restart the pod it has on record answers, and the orchestrator, which
    waits for a claimed request however long, finishes or undoes on that."""
    cluster, api = core
    _destination(cluster, podmeta.ROUTE_SWITCHING)
    spawner = _hub_spawner(monkeypatch, api, switch_s=0.0, switched=[])
    if recorded:  # the database write was done before the hub stopped
        spawner.pod_name = DEST
    hub = asyncio.ensure_future(_answer_after(spawner, api, 0.6))  # after the 0.3 s route timeout
    with caplog.at_level(logging.WARNING, logger="elastichub.orchestrator.live"):
        answer = await _move(api)._route_answer()
    await hub
    assert "still switching the route" in caplog.text
    if recorded:
        assert answer == podmeta.ROUTE_SWITCHED and spawner.user.settings["proxy"].routes == []
    else:
        assert answer == f"{podmeta.ROUTE_REFUSED}: the hub stopped before it recorded the switch"
        assert spawner.user.settings["proxy"].routes == ["http://10.0.0.1:8888"]  # back to the pod on record
