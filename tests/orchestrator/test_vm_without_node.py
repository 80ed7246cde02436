"""Cloud VMs that run with no Node of theirs (deleted by hand or by the cloud controller, or never
registered under the name the pool maps them to): stopped once they have run the boot timeout with
none, never left running and billing for ever; against the local cluster and its libcloud driver."""

from __future__ import annotations

import asyncio

import pytest
from podtools import cluster_config, until
from test_scale_out import fill, paper

from elastichub.orchestrator.cloud import CloudPool

pytestmark = [pytest.mark.timeout(60)]


async def vm_state(ctl, vm_id: str) -> str:
    return {vm.id: vm.state for vm in await ctl.cloud.list()}[vm_id]


async def cycles_until_stopped(ctl, vm_id: str) -> None:
    for _ in range(40):
        await ctl.cycle()
        if await vm_state(ctl, vm_id) == "stopped":
            return
        await asyncio.sleep(0.2)


async def test_a_vm_whose_node_was_deleted_is_stopped_after_the_boot_timeout_and_named(cluster_factory, wire):
    """kubectl delete node on a running cloud node: its VM ran on with no Node (and the local cluster's
    stop of it failed, leaving it "stopping", and billed, for ever)."""
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(7)])  # 87.5 % on-prem
    ctl = await wire(cluster, paper(tcool=1e9), boot_timeout=1.0)
    await until(lambda: len(ctl.pods.records) >= 7, what="cache")
    assert (await ctl.cycle())["nodes"] == ["cloud-1"]
    await until(lambda: not ctl._busy("boot:cloud-1") and ctl.nodes.records["cloud-1"].ready, what="cloud-1 up")
    cluster.store.delete("nodes", "cloud-1")
    await until(lambda: "cloud-1" not in ctl.nodes.records, what="the Node gone from the cache")
    await cycles_until_stopped(ctl, "cloud-1")
    assert await vm_state(ctl, "cloud-1") == "stopped"
    said = [e["message"] for e in ctl.events if e["kind"] == "boot-failed"]
    assert said == ["VM cloud-1 has run 1 s with no Node cloud-1 (its boot failed, its Node was deleted, or it "
                    "registered under a name the pool does not map): stopping VM cloud-1, kept out of the pool "
                    "for 60 s (failure 1)"], ctl.events
    # Started again, the VM registers its node anew, as a kubelet does at its start.
    await ctl.cloud.start("cloud-1")
    await until(lambda: "cloud-1" in ctl.nodes.records and ctl.nodes.records["cloud-1"].ready, what="re-registered")


async def test_a_running_vm_the_mapping_ties_to_no_node_is_stopped_after_the_boot_timeout(cluster_factory, wire):
    """A VM without the mapping's tag, started by hand, whose node is not there (deleted, or registered
    with no providerID to find it by): said as a problem every cycle, it ran and billed for ever."""
    cluster = await cluster_factory(cluster_config())
    pool = CloudPool(cluster.cloud_driver(), mapping="tag:k8s-node")  # the local VMs carry no such tag
    ctl = await wire(cluster, paper(), cloud=pool, boot_timeout=1.0)
    await pool.list()
    await pool.start("cloud-2")
    await until(lambda: ctl.nodes.records["cloud-2"].ready, what="cloud-2 up")
    cluster.store.delete("nodes", "cloud-2")
    await until(lambda: "cloud-2" not in ctl.nodes.records, what="the Node gone from the cache")
    await cycles_until_stopped(ctl, "cloud-2")
    assert await vm_state(ctl, "cloud-2") == "stopped"
    said = [e["message"] for e in ctl.events if e["kind"] == "boot-failed"]
    assert len(said) == 1 and said[0].startswith("VM cloud-2 has run 1 s with no Node that the pool maps it to"), \
        ctl.events


async def test_a_vm_with_no_node_is_left_running_while_a_node_no_vm_backs_hosts_servers(cluster_factory, wire):
    """A cloud node without a providerID may be any VM's whose Node is missing (registered under another
    name than the mapping gives): stopping that VM would end the servers on it unsaved."""
    from elastichub.localcluster.config import ClusterConfig, NodeConfig

    pool = {"pool": "elastic"}
    cluster = await cluster_factory(ClusterConfig(nodes=(
        NodeConfig("onprem-1", "on-prem", "4", "8Gi"), NodeConfig("cloud-1", "cloud", "4", "8Gi", labels=pool),
        NodeConfig("other-1", "cloud", "4", "8Gi")), boot_delay=0.3))
    ctl = await wire(cluster, paper(tcool=1e9), cloud=CloudPool(cluster.cloud_driver(), tags=pool),
                     boot_timeout=1.0)
    driver = cluster.cloud_driver()
    for vm in await asyncio.to_thread(driver.list_nodes):  # other-1: outside the pool, started by someone else
        await asyncio.to_thread(driver.start_node, vm)
    await until(lambda: all(ctl.nodes.records[n].ready for n in ("cloud-1", "other-1")), what="both up")

    def anonymous(node):  # as a kubelet without a cloud provider registers it
        node["spec"].pop("providerID")
    cluster.store.update("nodes", "other-1", anonymous)
    cluster.store.delete("nodes", "cloud-1")
    await fill(cluster, [f"u{i}" for i in range(5)])  # 10 GiB: onprem-1 (8) full, one on other-1
    await until(lambda: "cloud-1" not in ctl.nodes.records and len(ctl.pods.records) == 5, what="the cache")
    for _ in range(40):
        await ctl.cycle()
        if any(e["kind"] in ("problem", "boot-failed") and "VM cloud-1 has run" in e["message"] for e in ctl.events):
            break
        await asyncio.sleep(0.2)
    assert any(e["kind"] == "problem" and e["message"].startswith(
        "VM cloud-1 has run 1 s with no Node cloud-1, but cloud node(s) other-1 host servers") for e in ctl.events), \
        ctl.events
    assert await vm_state(ctl, "cloud-1") == "running"
