"""What every ElasticSpawner test without a cluster needs."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_kubeconfig(monkeypatch):
    """KubeSpawner loads a kubeconfig when it is built (once per process):
    these tests never reach a cluster, so skip that and keep the default
    client configuration, which nothing here calls."""
    monkeypatch.setattr("kubespawner.spawner.load_config", lambda **kw: None)
