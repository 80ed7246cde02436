"""Fixtures for the local cluster tests (API server: L1; controllers: L2 below)."""

from __future__ import annotations

import pytest

from lc_apitools import start_api_server


@pytest.fixture
async def api_server(tmp_path):
    srv = start_api_server(tmp_path)
    yield srv
    await srv.aclose()


# ----------------------------------------------------------------------------- L2: the whole cluster


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
async def local_cluster(cluster_factory):
    """The default cluster (2 on-prem nodes, 2 powered-off cloud nodes), cloud boot delay 0.2 s."""
    from elastichub.localcluster.config import default_config

    return await cluster_factory(default_config().replace(boot_delay=0.2))
