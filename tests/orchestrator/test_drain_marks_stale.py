"""A drain's mark on a pod (podmeta.MOVING_ANNOTATION, written just before its stop) that no drain will
clear: the drain ended without that stop and its record is gone (removed by hand after the orchestrator
died between the mark and the stop). Kept, its user's own stop was later told as a move. Against the
local cluster, through the controller's cycle."""

from __future__ import annotations

import asyncio
import json

import pytest
from podtools import cluster_config, server_pod, until
from test_scale_out import paper

from elastichub import podmeta

pytestmark = [pytest.mark.timeout(60)]


def marked_pod(user: str, node: str) -> dict:
    pod = server_pod(user)
    pod["spec"]["nodeName"] = node
    pod["metadata"]["annotations"][podmeta.MOVING_ANNOTATION] = node
    return pod


async def test_a_mark_no_drain_will_clear_is_taken_off_and_a_drains_own_is_left(cluster_factory, wire):
    cluster = await cluster_factory(cluster_config(onprem=2, cloud=0))
    store = cluster.store
    # onprem-2 carries a drain record this version cannot read (another ElasticHub's): its drain's own.
    store.update("nodes", "onprem-2", lambda n: n["metadata"].setdefault("annotations", {}).__setitem__(
        podmeta.DRAIN_ANNOTATION, json.dumps({"v": 99, "servers": {"bob": {}}})))
    ctl = await wire(cluster, paper(tcool=0.0), cloud=None)
    store.create("pods", marked_pod("alice", "onprem-1"))
    store.create("pods", marked_pod("bob", "onprem-2"))
    await until(lambda: len(ctl.pods.records) == 2 and ctl.nodes.records["onprem-2"].drain, what="the caches")

    def mark(name: str):
        return store.get("pods", name, "default")["metadata"].get("annotations", {}).get(podmeta.MOVING_ANNOTATION)

    async def cycled():
        await ctl.cycle()
        await asyncio.sleep(0.05)
        return mark("jupyter-alice") is None

    await until(cycled, what="alice's mark taken off")
    for _ in range(3):
        await ctl.cycle()
    assert mark("jupyter-bob") == "onprem-2"
    await until(lambda: not ctl.pods.records["default/jupyter-alice"].moving, what="the cache without the mark")
