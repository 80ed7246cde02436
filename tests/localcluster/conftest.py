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
# (cluster_factory is in tests/conftest.py: the end-to-end tests use it too)


@pytest.fixture
async def local_cluster(cluster_factory):
    """The default cluster (2 on-prem nodes, 2 powered-off cloud nodes), cloud boot delay 0.2 s."""
    from elastichub.localcluster.config import default_config

    return await cluster_factory(default_config().replace(boot_delay=0.2))
