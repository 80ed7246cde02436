"""KubeSpawner's own reflectors (its list+watch of pods and events), unmodified, against the API server.

The whole spawner under a real JupyterHub is L2's end-to-end test; this one
pins the wire protocol KubeSpawner depends on, watch restarts included.
"""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio.client import Configuration
from kubespawner.spawner import EventReflector, PodReflector
from lc_apitools import make_node, make_pod

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def kube_default_config(api_server):
    """KubeSpawner's clients use the default client configuration; point it here for one test."""
    previous = Configuration.get_default_copy()
    conf = Configuration(host=api_server.url)
    Configuration.set_default(conf)
    yield conf
    Configuration.set_default(previous)


async def eventually(predicate, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def test_pod_and_event_reflectors_follow_changes_across_watch_restarts(api_server, kube_default_config):
    store = api_server.store
    store.create("nodes", make_node("n1"))
    store.create("pods", make_pod("jupyter-early", {"component": "singleuser-server"}))
    pods = PodReflector(namespace="default", labels={"component": "singleuser-server"}, timeout_seconds=1)
    events = EventReflector(namespace="default", fields={"involvedObject.kind": "Pod"}, timeout_seconds=1)
    await pods.start()
    await events.start()
    try:
        assert set(pods.pods) == {"default/jupyter-early"}
        for i in range(4):  # spread over several 1 s watches: each restart resumes from its version
            store.create("pods", make_pod(f"jupyter-u{i}", {"component": "singleuser-server"}, node="n1"))
            store.create("pods", make_pod(f"other-{i}", {"component": "hub"}))
            await asyncio.sleep(0.6)
        await eventually(lambda: len(pods.pods) == 5)
        assert not any("other" in key for key in pods.pods)
        store.update("pods", "jupyter-u0", lambda p: p.setdefault("status", {}).update(phase="Running", podIP="127.0.5.6"))
        await eventually(lambda: pods.pods["default/jupyter-u0"].get("status", {}).get("podIP") == "127.0.5.6")
        store.create("events", {
            "metadata": {"name": "jupyter-u0.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "jupyter-u0", "namespace": "default"},
            "reason": "Scheduled", "message": "assigned to n1", "type": "Normal",
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z", "eventTime": None})
        store.create("events", {"metadata": {"name": "n1.1", "namespace": "default"},
                                "involvedObject": {"kind": "Node", "name": "n1"}, "reason": "NodeReady",
                                "lastTimestamp": None, "eventTime": None})
        await eventually(lambda: len(events.events) == 1)
        assert events.events[0]["reason"] == "Scheduled"
        store.delete("pods", "jupyter-u1")
        await eventually(lambda: "default/jupyter-u1" not in pods.pods)
        await asyncio.sleep(1.2)  # across one more restart: the deleted pod stays gone
        assert len(pods.pods) == 4
    finally:
        await asyncio.wait_for(asyncio.gather(pods.stop(), events.stop()), 10)
