"""Cloud VMs of the local cluster, driven through a real libcloud driver from libcloud's registry."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

import pytest
from libcloud.compute.providers import get_driver
from libcloud.compute.types import NodeState
from lc_clustertools import alive, phase, python_pod, wait_for

from elastichub.localcluster.cloud import LocalClusterNodeDriver, VMError
from elastichub.localcluster.config import default_config

pytestmark = pytest.mark.timeout(60)

BOOT_DELAY = 1.0
CLOUD_ONLY = {"elastichub.io/tier": "cloud"}


def node_ready(cluster, name: str) -> str:
    return cluster.store.get("nodes", name)["status"]["conditions"][0]["status"]


@pytest.fixture
async def cloud(cluster_factory):
    cluster = await cluster_factory(default_config().replace(boot_delay=BOOT_DELAY))
    driver_cls = get_driver("localcluster")
    driver = driver_cls("unused-key", "unused-secret", secure=False, host="127.0.0.1", port=cluster.port)
    return cluster, driver


def states(driver) -> dict:
    return {n.name: n.state for n in driver.list_nodes()}


async def test_the_driver_is_registered_and_lists_the_powered_off_pool(local_cluster):
    cluster = local_cluster
    assert get_driver("localcluster") is LocalClusterNodeDriver
    driver = get_driver("localcluster")("key-without-secret", host="127.0.0.1", port=cluster.port)
    nodes = await asyncio.to_thread(driver.list_nodes)
    assert {n.name: n.state for n in nodes} == {"cloud-1": NodeState.STOPPED, "cloud-2": NodeState.STOPPED}
    assert all(n.private_ips and n.extra["memory"] == "8Gi" for n in nodes)
    for name in ("cloud-1", "cloud-2"):
        assert node_ready(cluster, name) == "Unknown"
        taints = cluster.store.get("nodes", name)["spec"]["taints"]
        assert [t["key"] for t in taints] == ["node.kubernetes.io/unreachable"]


async def test_start_boots_after_the_delay_and_stop_is_a_power_off(cloud):
    cluster, driver = cloud
    store = cluster.store
    node = next(n for n in await asyncio.to_thread(driver.list_nodes) if n.name == "cloud-1")
    started = time.monotonic()
    assert await asyncio.to_thread(driver.start_node, node) is True
    assert (await asyncio.to_thread(states, driver))["cloud-1"] == NodeState.PENDING
    assert node_ready(cluster, "cloud-1") == "Unknown"
    await wait_for(lambda: node_ready(cluster, "cloud-1") == "True", timeout=10, what="node Ready")
    assert time.monotonic() - started >= BOOT_DELAY
    assert (await asyncio.to_thread(states, driver)) == {"cloud-1": NodeState.RUNNING, "cloud-2": NodeState.STOPPED}
    assert not store.get("nodes", "cloud-1")["spec"]["taints"]

    # Ready and schedulable: a cloud-only pod now lands and runs there.
    store.create("pods", python_pod("burst", "import time; time.sleep(300)", nodeSelector=CLOUD_ONLY))
    await wait_for(lambda: phase(store, "burst") == "Running", what="pod Running on the cloud node")
    pod = store.get("pods", "burst", "default")
    assert pod["spec"]["nodeName"] == "cloud-1"
    pid = int(pod["status"]["containerStatuses"][0]["containerID"].split("//")[1])

    # The orchestrator cordons, then stops the VM: a power-off.
    store.update("nodes", "cloud-1", lambda n: n["spec"].update(unschedulable=True))
    assert await asyncio.to_thread(driver.stop_node, node) is True
    assert (await asyncio.to_thread(states, driver))["cloud-1"] == NodeState.STOPPED
    assert node_ready(cluster, "cloud-1") == "Unknown"
    status = store.get("pods", "burst", "default")["status"]
    assert status["phase"] == "Failed" and status["reason"] == "NodeShutdown"
    assert not alive(pid)

    # Started again, the node comes back Ready but stays cordoned: uncordoning is the orchestrator's call.
    await asyncio.to_thread(driver.start_node, node)
    await wait_for(lambda: node_ready(cluster, "cloud-1") == "True", timeout=10, what="node Ready again")
    assert store.get("nodes", "cloud-1")["spec"]["unschedulable"] is True


async def test_stop_during_boot_cancels_it(cloud):
    cluster, driver = cloud
    node = next(n for n in await asyncio.to_thread(driver.list_nodes) if n.name == "cloud-2")
    await asyncio.to_thread(driver.start_node, node)
    await asyncio.to_thread(driver.stop_node, node)
    await asyncio.sleep(BOOT_DELAY + 0.3)
    assert node_ready(cluster, "cloud-2") == "Unknown"
    assert (await asyncio.to_thread(states, driver))["cloud-2"] == NodeState.STOPPED


async def test_create_and_destroy_grow_and_shrink_the_pool(cloud):
    cluster, driver = cloud
    size = next(s for s in await asyncio.to_thread(driver.list_sizes) if s.id == "lc.small")
    image = (await asyncio.to_thread(driver.list_images))[0]
    created = await asyncio.to_thread(driver.create_node, "burst-1", size, image, ex_labels={"zone": "z1"})
    assert created.name == "burst-1" and created.state == NodeState.PENDING
    await wait_for(lambda: node_ready(cluster, "burst-1") == "True", timeout=10, what="new node Ready")
    node = cluster.store.get("nodes", "burst-1")
    assert node["status"]["allocatable"]["cpu"] == "2" and node["status"]["allocatable"]["memory"] == "4096Mi"
    assert node["metadata"]["labels"]["zone"] == "z1"
    assert node["metadata"]["labels"]["elastichub.io/tier"] == "cloud"
    assert await asyncio.to_thread(driver.destroy_node, created) is True
    assert "burst-1" not in await asyncio.to_thread(states, driver)
    assert "burst-1" not in {n["metadata"]["name"] for n in cluster.store.list("nodes")[0]}


async def test_concurrent_destroys_of_one_vm_end_in_one_destroy_and_a_clear_error(local_cluster):
    cluster = local_cluster
    pool, store = cluster.cloud, cluster.store
    pool.start("cloud-1")
    await wait_for(lambda: node_ready(cluster, "cloud-1") == "True", what="node Ready")
    store.create("pods", python_pod("on-cloud", "import time; time.sleep(300)", nodeSelector=CLOUD_ONLY))
    await wait_for(lambda: phase(store, "on-cloud") == "Running", what="pod Running")
    # The power-off of a node with a pod takes a while: the second destroy arrives during it.
    results = await asyncio.gather(pool.destroy("cloud-1"), pool.destroy("cloud-1"), return_exceptions=True)
    assert results[0]["state"] == "terminated"
    assert isinstance(results[1], VMError) and results[1].code == 409, results[1]
    assert "cloud-1" not in cluster.kubelets and "cloud-1" not in pool.vms


async def test_errors_are_clear(cloud):
    cluster, driver = cloud
    from libcloud.compute.base import Node

    ghost = Node("ghost", "ghost", NodeState.STOPPED, [], [], driver)
    with pytest.raises(Exception, match="VM 'ghost' not found"):
        await asyncio.to_thread(driver.start_node, ghost)
    size = (await asyncio.to_thread(driver.list_sizes))[0]
    with pytest.raises(Exception, match="already exists"):
        await asyncio.to_thread(driver.create_node, "onprem-1", size)

    def post(body: bytes):
        req = urllib.request.Request(f"{cluster.url}/localcluster/v1/vms", data=body, method="POST")
        try:
            urllib.request.urlopen(req, timeout=5)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())
        raise AssertionError("accepted")

    code, answer = await asyncio.to_thread(post, b"{not json")
    assert code == 400 and "not valid JSON" in answer["error"]
    code, answer = await asyncio.to_thread(post, b'{"name": "x", "cpu": "1", "memory": "lots"}')
    assert code == 422 and "'lots' is not a quantity" in answer["error"]
    # A created VM is a cloud node: it may not claim another tier, nor carry labels Kubernetes rejects.
    for labels, problem in (({"elastichub.io/tier": "on-prem"}, "is set from tier"),
                            ({"bad key": "x"}, "not a valid label key")):
        body = json.dumps({"name": "x", "cpu": "1", "memory": "1Gi", "labels": labels}).encode()
        code, answer = await asyncio.to_thread(post, body)
        assert code == 422 and problem in answer["error"], answer
    assert "x" not in cluster.kubelets


async def test_a_pending_pod_runs_once_a_cloud_node_boots(cluster_factory):
    """The bursting story end to end: on-prem is full, a pod waits, a cloud VM
    is started through libcloud, the pod runs there."""
    from elastichub.localcluster.config import ClusterConfig, NodeConfig

    config = ClusterConfig(nodes=(NodeConfig("onprem-1", "on-prem", "2", "1Gi"),
                                  NodeConfig("cloud-1", "cloud", "2", "1Gi")), boot_delay=0.2)
    cluster = await cluster_factory(config)
    store = cluster.store
    driver = cluster.cloud_driver()
    assert isinstance(driver, LocalClusterNodeDriver)
    sleeper = "import time; time.sleep(300)"
    store.create("pods", python_pod("first", sleeper, memory="1Gi"))
    await wait_for(lambda: phase(store, "first") == "Running", what="first Running")
    store.create("pods", python_pod("second", sleeper, memory="1Gi"))
    await wait_for(lambda: any(e["reason"] == "FailedScheduling" for e in store.list(
        "events", field_selector="involvedObject.name=second")[0]), what="FailedScheduling")
    assert phase(store, "second") == "Pending"
    vm = (await asyncio.to_thread(driver.list_nodes))[0]
    await asyncio.to_thread(driver.start_node, vm)
    await wait_for(lambda: phase(store, "second") == "Running", what="second Running on the cloud node")
    assert store.get("pods", "first", "default")["spec"]["nodeName"] == "onprem-1"
    assert store.get("pods", "second", "default")["spec"]["nodeName"] == "cloud-1"
