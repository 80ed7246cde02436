"""The scheduler as a controller on a store: binds, waits, retries when nodes or pods change."""

from __future__ import annotations

import pytest
from lc_apitools import make_node
from lc_clustertools import event_reasons, wait_for

from elastichub.localcluster.scheduler import Scheduler
from elastichub.localcluster.store import Store

pytestmark = pytest.mark.timeout(30)

ON_PREM_FIRST = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 10, "preference": {"matchExpressions": [
        {"key": "elastichub.io/tier", "operator": "In", "values": ["on-prem"]}]}},
    {"weight": 1, "preference": {"matchExpressions": [
        {"key": "elastichub.io/tier", "operator": "In", "values": ["cloud"]}]}},
]}}


def pod(name: str, memory: str = "1Gi", **spec) -> dict:
    return {"metadata": {"name": name}, "status": {"phase": "Pending"},
            "spec": {"containers": [{"name": "c", "image": "x", "command": ["true"],
                                     "resources": {"requests": {"memory": memory, "cpu": "100m"}}}],
                     "affinity": ON_PREM_FIRST, **spec}}


def node_of(store: Store, name: str) -> str | None:
    return store.get("pods", name, "default")["spec"].get("nodeName")


@pytest.fixture
async def scheduled():
    store = Store()
    scheduler = Scheduler(store)
    await scheduler.start()
    yield store
    await scheduler.stop()


async def test_binds_pending_pods_on_prem_first_with_an_event(scheduled):
    store = scheduled
    store.create("nodes", make_node("cloud-1", "cloud"))
    store.create("nodes", make_node("onprem-1", "on-prem"))
    store.create("pods", pod("a"))
    assert await wait_for(lambda: node_of(store, "a"), what="binding") == "onprem-1"
    conditions = store.get("pods", "a", "default")["status"]["conditions"]
    assert {"type": "PodScheduled", "status": "True"}.items() <= conditions[0].items()
    events, _ = store.list("events", field_selector="involvedObject.kind=Pod,involvedObject.name=a")
    assert [e["reason"] for e in events] == ["Scheduled"]
    assert events[0]["message"] == "Successfully assigned default/a to onprem-1"
    assert events[0]["source"]["component"] == "default-scheduler"
    assert "eventTime" in events[0] and events[0]["lastTimestamp"]


async def test_resources_are_respected_across_one_burst(scheduled):
    store = scheduled
    store.create("nodes", make_node("onprem-1", "on-prem", memory="4Gi"))
    store.create("nodes", make_node("cloud-1", "cloud", memory="4Gi"))
    for i in range(7):  # 7 x 1 GiB on 2 x 4 GiB: all fit, on-prem filled first
        store.create("pods", pod(f"p{i}"))
    await wait_for(lambda: all(node_of(store, f"p{i}") for i in range(7)), what="all bound")
    placed = [node_of(store, f"p{i}") for i in range(7)]
    assert placed.count("onprem-1") == 4 and placed.count("cloud-1") == 3
    store.create("pods", pod("p7", memory="2Gi"))
    await wait_for(lambda: "FailedScheduling" in event_reasons(store, "p7"), what="FailedScheduling")
    assert node_of(store, "p7") is None


async def test_unschedulable_pod_stays_pending_and_runs_once_room_appears(scheduled):
    store = scheduled
    store.create("nodes", make_node("onprem-1", "on-prem", memory="2Gi"))
    store.create("pods", pod("big", memory="2Gi"))
    await wait_for(lambda: node_of(store, "big"), what="big bound")
    store.create("pods", pod("waiting", memory="1Gi"))
    await wait_for(lambda: "FailedScheduling" in event_reasons(store, "waiting"), what="FailedScheduling")
    waiting = store.get("pods", "waiting", "default")
    assert waiting["status"]["phase"] == "Pending" and not waiting["spec"].get("nodeName")
    cond = next(c for c in waiting["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert cond["message"] == "0/1 nodes are available: 1 Insufficient memory."
    # The big pod finishes: its requests no longer count, the waiting pod is bound.
    store.update("pods", "big", lambda p: p["status"].update(phase="Succeeded"), "default")
    assert await wait_for(lambda: node_of(store, "waiting"), what="retry after room appeared") == "onprem-1"


async def test_cordoned_and_not_ready_nodes_are_skipped_until_they_change(scheduled):
    store = scheduled
    store.create("nodes", make_node("onprem-1", "on-prem"))
    store.update("nodes", "onprem-1", lambda n: n["spec"].update(unschedulable=True))
    store.create("nodes", make_node("cloud-1", "cloud", ready=False))
    store.create("pods", pod("a"))
    await wait_for(lambda: "FailedScheduling" in event_reasons(store, "a"), what="FailedScheduling")
    message = store.get("pods", "a", "default")["status"]["conditions"][0]["message"]
    assert "1 node(s) were unschedulable" in message and "1 node(s) were not ready" in message

    def ready(n):
        n["status"]["conditions"][0]["status"] = "True"

    store.update("nodes", "cloud-1", ready)  # the cloud node comes up: used, though it is cloud
    assert await wait_for(lambda: node_of(store, "a"), what="bound after node Ready") == "cloud-1"
    store.create("pods", pod("b"))
    store.update("nodes", "onprem-1", lambda n: n["spec"].update(unschedulable=False))  # uncordon
    assert await wait_for(lambda: node_of(store, "b"), what="b bound") == "onprem-1"


async def test_repeated_failures_make_one_event_per_reason(scheduled):
    store = scheduled
    store.create("nodes", make_node("onprem-1", "on-prem", memory="1Gi"))
    store.create("pods", pod("a", memory="2Gi"))
    await wait_for(lambda: "FailedScheduling" in event_reasons(store, "a"), what="FailedScheduling")
    for i in range(5):  # unrelated changes re-run the scheduler
        store.create("pods", pod(f"small{i}", memory="1Mi"))
    await wait_for(lambda: all(node_of(store, f"small{i}") for i in range(5)), what="small pods bound")
    assert event_reasons(store, "a").count("FailedScheduling") == 1


async def test_other_schedulers_pods_and_deleting_pods_are_left_alone(scheduled):
    store = scheduled
    store.create("nodes", make_node("onprem-1", "on-prem"))
    store.create("pods", pod("mine"))
    store.create("pods", pod("theirs", schedulerName="someone-else"))
    await wait_for(lambda: node_of(store, "mine"), what="binding")
    assert node_of(store, "theirs") is None


async def test_a_pod_waits_for_the_claim_it_mounts(scheduled):
    """KubeSpawner's storage_pvc_ensure: the pod mounts the user's claim; without it, it waits, as on Kubernetes."""
    store = scheduled
    store.create("nodes", make_node("onprem-1", "on-prem"))
    store.create("pods", pod("p", volumes=[{"name": "home", "persistentVolumeClaim": {"claimName": "claim-bob"}}]))
    await wait_for(lambda: "FailedScheduling" in event_reasons(store, "p"), what="FailedScheduling")
    cond = next(c for c in store.get("pods", "p", "default")["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["message"] == '0/1 nodes are available: persistentvolumeclaim "claim-bob" not found.'
    store.create("persistentvolumeclaims", {"metadata": {"name": "claim-bob", "namespace": "default"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    assert await wait_for(lambda: node_of(store, "p"), what="bound once the claim exists") == "onprem-1"
