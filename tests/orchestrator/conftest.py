"""Fixtures of the orchestrator tests: a local cluster, and the orchestrator's
real adapters (kubernetes_asyncio informers, libcloud driver) wired to it."""

from __future__ import annotations

import asyncio

import pytest


@pytest.fixture
async def make_cluster(tmp_path):
    from elastichub.localcluster.cluster import LocalCluster
    from elastichub.localcluster.config import ClusterConfig, NodeConfig

    started = []

    async def make(onprem: int = 2, cloud: int = 2, memory: str = "8Gi", boot_delay: float = 0.3,
                   stop_delay: float = 0.0, **app_settings):
        nodes = [NodeConfig(f"onprem-{i}", "on-prem", "4", memory) for i in range(1, onprem + 1)]
        nodes += [NodeConfig(f"cloud-{i}", "cloud", "4", memory) for i in range(1, cloud + 1)]
        config = ClusterConfig(nodes=tuple(nodes), port=0, kubeconfig=str(tmp_path / f"kubeconfig-{len(started)}"),
                               boot_delay=boot_delay, stop_delay=stop_delay, workdir=str(tmp_path))
        cluster = LocalCluster(config, **app_settings)
        await cluster.start()
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        await cluster.stop()


@pytest.fixture
async def wire(tmp_path):
    """wire(cluster, strategy, hub=None, cloud=..., **settings) -> a Controller whose
    informers follow the cluster; everything is closed after the test."""
    from kubernetes_asyncio import client, config

    from elastichub.orchestrator.cloud import CloudPool
    from elastichub.orchestrator.controller import Controller, Settings
    from elastichub.orchestrator.drain import DrainTimeouts
    from elastichub.orchestrator.kube import Informer, KubeNodes, object_key, object_name
    from elastichub.orchestrator.records import node_record, pod_record

    opened, tasks = [], []

    async def make(cluster, strategy, hub=None, cloud="local", drain: DrainTimeouts | None = None, **settings):
        cfg = client.Configuration()
        await config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=cfg)
        api = client.ApiClient(configuration=cfg)
        opened.append(api)
        core = client.CoreV1Api(api)
        nodes = Informer("nodes", core.list_node, node_record, object_name, watch_timeout=5,
                         label_selector="elastichub.io/tier")
        pods = Informer("pods", core.list_pod_for_all_namespaces, pod_record, object_key, watch_timeout=5)
        for informer in (nodes, pods):
            tasks.append(asyncio.create_task(informer.run()))
        await asyncio.wait_for(asyncio.gather(nodes.synced.wait(), pods.synced.wait()), 10)
        if cloud == "local":
            cloud = CloudPool(cluster.cloud_driver())
        settings.setdefault("poll", 0.1)
        controller = Controller(strategy, nodes, pods, KubeNodes(core), hub, cloud,
                                Settings(drain=drain or DrainTimeouts(poll=0.1), **settings))
        opened.append(controller)
        return controller

    yield make
    for obj in reversed(opened):
        await obj.close()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


SPAWNER = """
c.JupyterHub.spawner_class = "elastic"
c.KubeSpawner.mem_guarantee = "2G"
c.KubeSpawner.cpu_guarantee = 0.1
"""


@pytest.fixture
def api_requests():
    """Every HTTP request the local cluster's API server answers: (method, path, status)."""
    return []


@pytest.fixture
async def hub_on_cluster(make_cluster, tmp_path, api_requests):
    """One on-prem and one cloud node (8 GiB each) and a real hub spawning onto them."""
    from hubtools import Hub

    def audit(handler):
        api_requests.append((handler.request.method, handler.request.path, handler.get_status()))

    # A VM takes a second to stop, as a cloud's does: steps around the stop are observable.
    cluster = await make_cluster(onprem=1, cloud=1, stop_delay=1.0, log_function=audit)
    hub = Hub(cluster, tmp_path, SPAWNER)
    await hub.start()
    yield cluster, hub
    await hub.stop()
    assert "Traceback" not in hub.log(), hub.log()[-4000:]
