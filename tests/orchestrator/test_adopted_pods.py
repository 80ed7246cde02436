"""Servers a hub started with plain KubeSpawner before it switched to
ElasticSpawner: their pods carry KubeSpawner's labels and annotations, none of
ElasticHub's. They are users' sessions all the same: counted, never moved,
and their cloud node stays up. Against the local cluster and its libcloud driver."""

from __future__ import annotations

import asyncio
import copy

import pytest
from podtools import cluster_config, node_of, server_pod, until
from test_scale_out import paper

from elastichub.orchestrator.drain import Drain, DrainTimeouts
from elastichub.orchestrator.kube import KubePods
from elastichub.orchestrator.records import pod_record

pytestmark = [pytest.mark.timeout(60)]


def kubespawner_pod(user: str, memory: str = "2Gi", node: str | None = None, server_name: str = "") -> dict:
    """A server's pod as KubeSpawner makes it: no elastichub.io label or annotation."""
    pod = copy.deepcopy(server_pod(user, memory))
    pod["metadata"]["labels"] = {"component": "singleuser-server", "app": "jupyterhub",
                                 "hub.jupyter.org/username": user, "hub.jupyter.org/servername": server_name}
    pod["metadata"]["annotations"] = {"hub.jupyter.org/username": user}
    if server_name:
        pod["metadata"]["annotations"]["hub.jupyter.org/servername"] = server_name
    if node:
        pod["spec"]["nodeName"] = node
    return pod


def test_a_kubespawner_pod_on_a_node_is_a_server_that_is_never_moved():
    rec = pod_record(kubespawner_pod("Dave Smith", node="cloud-1", server_name="gpu"))
    assert (rec.managed, rec.migratable, rec.unlabelled, rec.server) == (True, False, True, "Dave Smith/gpu")
    assert rec.as_server is not None and not rec.as_server.movable
    assert not pod_record(kubespawner_pod("dave")).managed  # not bound yet: no session to keep
    system = {"metadata": {"name": "kube-proxy-x", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
              "spec": {"nodeName": "cloud-1", "containers": [{"name": "p"}]}}
    assert not pod_record(system).managed


async def test_a_cloud_node_that_runs_a_kubespawner_server_stays_up_and_says_why(cluster_factory, wire):
    """The hub switched to ElasticSpawner while dave's server ran on cloud-1: the node looked empty,
    was drained at once and its VM stopped, ending dave's session without a checkpoint."""
    cluster = await cluster_factory(cluster_config())
    ctl = await wire(cluster, paper(tcool=0.0))
    await ctl.cloud.start("cloud-1")
    await until(lambda: "cloud-1" in ctl.nodes.records and ctl.nodes.records["cloud-1"].ready, what="cloud-1 up")
    cluster.store.create("pods", kubespawner_pod("dave", node="cloud-1"))
    await until(lambda: node_of(cluster.store, "jupyter-dave") == "cloud-1", what="dave on cloud-1")
    await until(lambda: len(ctl.pods.records) == 1, what="cache")
    for _ in range(5):
        await ctl.cycle()
        await asyncio.sleep(0.1)
    assert {vm.id: vm.state for vm in await ctl.cloud.list()}["cloud-1"] == "running", ctl.events
    assert not any(e["kind"] == "drain" for e in ctl.events), ctl.events
    assert any("servers without the elastichub.io/managed label keep their cloud nodes up: 1 (dave)" in p
               for p in ctl.last.problems), ctl.last.problems
    # Read from the API server before a VM stops: dave's pod is one of the servers there.
    found = await KubePods(ctl.kube_pods.core).servers_on("cloud-1")
    assert [p["metadata"]["name"] for p in found] == ["jupyter-dave"]


async def test_a_drain_that_finds_a_kubespawner_server_gives_up_and_says_why():
    """A drain begun before the pod was seen (or resumed after a restart): it rolls back, one line why."""
    class Kube:
        saved, ended = [], []

        async def mark_drain(self, node, record):
            return {}

        async def record_drain(self, node, record):
            self.saved.append(dict(record))
            return {}

        async def end_drain(self, node, uncordon):
            self.ended.append(uncordon)

        async def uncordon(self, node):
            return None

    class Cloud:
        stopped = []

        async def stop(self, vm_id):
            self.stopped.append(vm_id)

    kube, cloud = Kube(), Cloud()
    pods = [pod_record(kubespawner_pod("dave", node="cloud-1"))]
    drain = Drain("cloud-1", "i-1", kube=kube, hub=None, cloud=cloud, pods=lambda: pods, on_move=lambda r: None,
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02))
    assert await drain.start() == "rolled-back"
    assert cloud.stopped == [] and kube.ended == [True]
    assert drain.record["why"] == ("server(s) dave have no elastichub.io/managed label (started by KubeSpawner "
                                   "before the hub ran ElasticSpawner, or another hub's): never moved")
