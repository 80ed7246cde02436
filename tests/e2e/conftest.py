"""Fixtures of the end-to-end tests: real hubs on the local cluster."""

from __future__ import annotations

import pytest
from hubtools import Hub


@pytest.fixture
async def hub_factory(tmp_path):
    """`await hub_factory(cluster, extra_config="...", spawner_class=...)` starts
    a JupyterHub (and its proxy) on `cluster`, working in its own directory
    under tmp_path; every hub is stopped after the test."""
    hubs: list[Hub] = []

    async def make(cluster, extra_config: str = "", spawner_class: str = "kubespawner.KubeSpawner") -> Hub:
        workdir = tmp_path / f"hub-{len(hubs)}"
        workdir.mkdir()
        hub = Hub(workdir, cluster.kubeconfig, extra_config, spawner_class)
        hubs.append(hub)
        await hub.start()
        return hub

    yield make
    for hub in hubs:
        await hub.stop()
