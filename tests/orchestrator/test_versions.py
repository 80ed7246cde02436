"""Upgrading or downgrading ElasticHub while it runs: what one version left
on the nodes is read by another, or left alone with a reason."""

from __future__ import annotations

import asyncio

import pytest
from podtools import cluster_config, until
from test_scale_out import paper

from elastichub import podmeta

pytestmark = [pytest.mark.timeout(60)]


@pytest.mark.parametrize("record, said", [
    ('{"v": 2, "state": "handing-over", "servers": {}}', "is a drain record of version 2, written by another "
                                                         "version of ElasticHub; this one reads version 1"),
    ("not json", "is not JSON"),
])
async def test_a_drain_record_of_another_version_is_left_as_it_is_and_named(cluster_factory, wire, record, said):
    """After a downgrade, a newer ElasticHub's drain record on a cloud node: it was resumed as if it were
    this version's (its VM stopped, whatever its states and steps meant), or, not JSON, retried each Tmon
    with an error that said a retry would help."""
    cluster = await cluster_factory(cluster_config())
    ctl = await wire(cluster, paper(tcool=0.0))
    await ctl.cloud.start("cloud-1")
    await until(lambda: "cloud-1" in ctl.nodes.records and ctl.nodes.records["cloud-1"].ready, what="cloud-1 up")

    def mark(node):  # as the other version left it: cordoned, tainted, its record
        node["metadata"].setdefault("annotations", {})[podmeta.DRAIN_ANNOTATION] = record
        node["spec"]["unschedulable"] = True
        node["spec"]["taints"] = [{"key": podmeta.DRAIN_TAINT, "value": "true", "effect": "NoSchedule"}]
    cluster.store.update("nodes", "cloud-1", mark)
    await until(lambda: ctl.nodes.records["cloud-1"].drain, what="the record seen")
    for _ in range(3):
        await ctl.cycle()
        await asyncio.sleep(0.1)
    assert {vm.id: vm.state for vm in await ctl.cloud.list()}["cloud-1"] == "running"
    assert [e for e in ctl.events if e["kind"] in ("drain", "error")] == [], ctl.events
    node = cluster.store.get("nodes", "cloud-1")
    assert node["spec"]["unschedulable"] and node["metadata"]["annotations"][podmeta.DRAIN_ANNOTATION] == record
    assert any(p.startswith(f"node cloud-1: {podmeta.DRAIN_ANNOTATION} {said}") and "left as it is" in p
               for p in ctl.last.problems), ctl.last.problems
