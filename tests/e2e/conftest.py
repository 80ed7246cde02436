"""Fixtures of the end-to-end tests: real hubs on the local cluster, each test's
Kubernetes requests checked against the roles a deployment grants the hub."""

from __future__ import annotations

import pytest
from hubtools import Hub
from rbactools import Z2JH_HUB_ROLE, assert_hub_roles_suffice, audit_into

from elastichub.orchestrator.rbac import CLUSTER_RULES, NAMESPACE_RULES


@pytest.fixture
async def hub_factory(tmp_path):
    """`await hub_factory(cluster, extra_config="...", spawner_class=..., base_url=...)` starts
    a JupyterHub (and its proxy) on `cluster`, working in its own directory
    under tmp_path; every hub is stopped after the test."""
    hubs: list[Hub] = []

    async def make(cluster, extra_config: str = "", spawner_class: str = "kubespawner.KubeSpawner",
                   base_url: str = "/") -> Hub:
        workdir = tmp_path / f"hub-{len(hubs)}"
        workdir.mkdir()
        hub = Hub(workdir, cluster.kubeconfig, extra_config, spawner_class, base_url)
        hubs.append(hub)
        await hub.start()
        return hub

    yield make
    for hub in hubs:
        await hub.stop()


@pytest.fixture
def api_requests():
    """Every HTTP request the local clusters' API servers answer: (method, URI, status)."""
    return []


@pytest.fixture
def hub_roles():
    """(cluster rules, rules in the hub's namespace) that a deployment grants
    the hub: zero-to-jupyterhub's hub Role plus `elastichub rbac`'s. A test
    module of another set-up overrides this fixture."""
    return CLUSTER_RULES, Z2JH_HUB_ROLE + NAMESPACE_RULES


@pytest.fixture
async def cluster_factory(cluster_factory, api_requests, hub_roles):
    """The shared factory, with every request of the test recorded in
    api_requests and, when the test ends, checked against `hub_roles`."""
    async def make(config=None, **settings):
        return await cluster_factory(config, log_function=audit_into(api_requests), **settings)

    yield make
    assert_hub_roles_suffice(api_requests, hub_roles)


@pytest.fixture
async def hub_on_cluster(cluster_factory, hub_factory):
    """One on-prem and one cloud node (8 GiB each; a VM takes a second to
    stop, as a cloud's does) and a hub with ElasticSpawner and an
    orchestrator service account; every API request recorded (api_requests)."""
    from orchestratortools import ORCHESTRATOR_SERVICE
    from podtools import cluster_config

    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1, stop_delay=1.0))
    hub = await hub_factory(cluster, ORCHESTRATOR_SERVICE, spawner_class="elastic")
    yield cluster, hub
    assert "Traceback" not in hub.log_text(100_000), hub.log_text()
