"""The orchestrator's pods informer, as app.py builds it, on the local cluster's API server through
kubernetes_asyncio: a shared cluster's finished pods (batch jobs', Succeeded or Failed) hold nothing on
their nodes, and watching them cost memory and events for nothing."""

from __future__ import annotations

import asyncio

import pytest
from podtools import cluster_config, server_pod, until

from elastichub.orchestrator.app import ElasticOrchestrator
from elastichub.orchestrator.hub import HubClient

pytestmark = [pytest.mark.timeout(120)]


def batch_pod(i: int, phase: str, node: str) -> dict:
    """A finished batch job's pod in its own namespace, bound to `node`."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"job-{i}", "namespace": "batch", "labels": {"job": "etl"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "etl",
                                                       "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
            "status": {"phase": phase}}


async def test_finished_pods_are_not_watched_and_a_pod_that_finishes_leaves_the_cache(
        cluster_factory, monkeypatch, tmp_path):
    cluster = await cluster_factory(cluster_config(onprem=1, cloud=0))
    store = cluster.store
    store.create("namespaces", {"metadata": {"name": "batch"}})
    for i in range(200):
        store.create("pods", batch_pod(i, ("Succeeded", "Failed")[i % 2], "onprem-1"))
    running = batch_pod(999, "Running", "onprem-1")
    store.create("pods", running)

    async def check(self):  # the hub side is not what this test is about
        return "5.3.0"

    async def no_problem(self):
        return None

    monkeypatch.setattr(HubClient, "check", check)
    monkeypatch.setattr(HubClient, "proxy_problem", no_problem)
    app = ElasticOrchestrator(kubeconfig=str(cluster.kubeconfig), api_token="t",
                              hub_api_url="http://127.0.0.1:1/hub/api", proxy_url="http://127.0.0.1:1",
                              service_url="http://127.0.0.1:1", watch_timeout=5)
    controller, closers = await app.build_controller()
    task = asyncio.create_task(controller.pods.run())
    try:
        await until(controller.pods.synced.is_set, what="the pods' list")
        assert set(controller.pods.records) == {"batch/job-999"}
        # Each usage still counted: a pod not finished, of any namespace, a single-user server's too.
        store.create("pods", server_pod("alice"))
        await until(lambda: "default/jupyter-alice" in controller.pods.records, what="alice's pod")
        store.update("pods", "job-999", lambda p: p["status"].__setitem__("phase", "Succeeded"), namespace="batch")
        await until(lambda: "batch/job-999" not in controller.pods.records, what="the finished pod gone")
        assert set(controller.pods.records) == {"default/jupyter-alice"}
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await controller.close()
        for close in closers:
            await close()
