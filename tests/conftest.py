"""Fixtures shared by every test directory: the whole local cluster, and the
orchestrator's real adapters (kubernetes_asyncio informers, libcloud driver) wired to it."""

from __future__ import annotations

import asyncio

import pytest


@pytest.fixture
async def cluster_factory(tmp_path):
    """Start LocalClusters (any port, kubeconfig in tmp_path); all are stopped after the test."""
    from elastichub.localcluster.cluster import LocalCluster
    from elastichub.localcluster.config import default_config

    started = []

    async def make(config=None, **settings):
        config = (config or default_config()).replace(
            port=0, kubeconfig=str(tmp_path / f"kubeconfig-{len(started)}"), workdir=str(tmp_path))
        cluster = LocalCluster(config, **settings)
        await cluster.start()
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        await cluster.stop()


@pytest.fixture
async def core(cluster_factory):
    """(a local cluster of one on-prem and one cloud node, a kubernetes_asyncio CoreV1Api on it)."""
    from kubernetes_asyncio import client, config
    from podtools import cluster_config

    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1))
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=cfg)
    api = client.ApiClient(configuration=cfg)
    yield cluster, client.CoreV1Api(api)
    await api.close()


@pytest.fixture
async def wire(tmp_path):
    """wire(cluster, strategy, hub=None, cloud=..., **settings) -> a Controller whose
    informers follow the cluster; everything is closed after the test."""
    from kubernetes_asyncio import client, config

    from elastichub.orchestrator.cloud import CloudPool
    from elastichub.orchestrator.controller import Controller, Settings
    from elastichub.orchestrator.drain import DrainTimeouts
    from elastichub.orchestrator.kube import UNFINISHED_PODS, Informer, KubeNodes, KubePods, object_key, object_name
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
        pods = Informer("pods", core.list_pod_for_all_namespaces, pod_record, object_key, watch_timeout=5,
                        field_selector=UNFINISHED_PODS)  # as the orchestrator's (app.py)
        for informer in (nodes, pods):
            tasks.append(asyncio.create_task(informer.run()))
        await asyncio.wait_for(asyncio.gather(nodes.synced.wait(), pods.synced.wait()), 10)
        if cloud == "local":
            cloud = CloudPool(cluster.cloud_driver())
        settings.setdefault("poll", 0.1)
        controller = Controller(strategy, nodes, pods, KubeNodes(core), hub, cloud,
                                Settings(drain=drain or DrainTimeouts(poll=0.1), **settings),
                                kube_pods=KubePods(core))
        opened.append(controller)
        return controller

    yield make
    for obj in reversed(opened):
        await obj.close()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
