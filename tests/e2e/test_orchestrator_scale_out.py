"""A student who comes with on-prem full is told, on the hub's spawn page,
that a cloud node is starting for them, and their server starts there: the
orchestrator writes an Event on the waiting pod, which ElasticSpawner's
progress shows (and `kubectl describe pod`)."""

from __future__ import annotations

import asyncio

import pytest
from orchestratortools import ORCHESTRATOR_SERVICE, filler, hub_client
from podtools import cluster_config, node_of, until

from elastichub.orchestrator.notices import REASON
from elastichub.policy import PolicyConfig, make_strategy

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


async def test_a_student_waiting_for_a_cloud_node_is_told_so_on_the_spawn_page(cluster_factory, hub_factory,
                                                                                 wire):
    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1, boot_delay=4.0))
    # POST .../server answers at once (202): the test follows the spawn page's progress stream.
    config = ORCHESTRATOR_SERVICE + 'c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 0}\n'
    hub = await hub_factory(cluster, config, spawner_class="elastic")
    cluster.store.create("pods", filler("7Gi"))  # on-prem is full
    await until(lambda: cluster.store.get("pods", "filler", "default")["status"].get("phase") == "Running",
                what="filler running")
    ctl = await wire(cluster, make_strategy("elastic", PolicyConfig(theta_out=80, tmon=0.5, tcool=3)),
                     hub=hub_client(hub), tmon=0.5)
    loop = asyncio.create_task(ctl.run())
    try:
        await hub.api("POST", "/hub/api/users/ann")
        code, body = await hub.api("POST", "/hub/api/users/ann/server")
        assert code == 202, (code, body)
        events = await hub.progress("ann", timeout=120)
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
    messages = [e.get("message", "") for e in events]
    told = [m for m in messages
            if "ElasticHub: the on-premises nodes are full, so cloud node cloud-1 is starting" in m]
    assert len(told) == 1, messages
    assert messages.index(told[0]) < len(messages) - 1 and events[-1].get("ready") is True
    assert node_of(cluster.store, "jupyter-ann") == "cloud-1"
    ours = [e for e in cluster.store.list("events", "default")[0] if e["reason"] == REASON]
    assert len(ours) == 1 and ours[0]["involvedObject"]["name"] == "jupyter-ann"
    assert ours[0]["source"]["component"] == "elastichub-orchestrator"


async def test_a_profile_only_cloud_nodes_take_gets_one_though_on_prem_is_empty_and_keeps_it(cluster_factory,
                                                                                               hub_factory, wire):
    """A "cloud burst" profile (node selector tier=cloud): the policy used to
    count the server on on-prem room, start nothing, and leave it waiting;
    once it ran on a cloud node, that node was drained from under it."""
    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1, boot_delay=2.0))
    config = (ORCHESTRATOR_SERVICE + 'c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 0}\n'
              "c.KubeSpawner.profile_list = [{'display_name': 'Notebook', 'slug': 'notebook', 'default': True},\n"
              "    {'display_name': 'Cloud burst', 'slug': 'burst',\n"
              "     'kubespawner_override': {'node_selector': {'elastichub.io/tier': 'cloud'}}}]\n")
    hub = await hub_factory(cluster, config, spawner_class="elastic")
    ctl = await wire(cluster, make_strategy("elastic", PolicyConfig(theta_out=80, tmon=0.5, tcool=2)),
                     hub=hub_client(hub), tmon=0.5)
    loop = asyncio.create_task(ctl.run())
    try:
        await hub.api("POST", "/hub/api/users/ann")
        code, body = await hub.api("POST", "/hub/api/users/ann/server", {"profile": "burst"})
        assert code == 202, (code, body)
        events = await hub.progress("ann", timeout=120)
        assert events[-1].get("ready") is True, events
        assert node_of(cluster.store, "jupyter-ann") == "cloud-1"
        told = [e.get("message", "") for e in events if "cloud nodes only" in e.get("message", "")]
        assert told and "this server runs on cloud nodes only (its settings)" in told[0], events
        # on-prem has all the room: the node would be drained at once; ann's server keeps it
        await asyncio.sleep(6)  # a dozen cycles, three cooldowns
        assert not cluster.store.get("nodes", "cloud-1")["spec"].get("unschedulable")
        assert node_of(cluster.store, "jupyter-ann") == "cloud-1"
        assert not [m for m in ctl.status()["migrations"]["in_flight"]]
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
