"""Fixtures shared by every test directory: the whole local cluster."""

from __future__ import annotations

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
