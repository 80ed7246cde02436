"""Helpers of the orchestrator tests: cluster shapes, single-user-like pods
(labelled as ElasticSpawner labels them), waiting."""

from __future__ import annotations

import asyncio
import sys
import time

from elastichub import podmeta


def cluster_config(onprem: int = 2, cloud: int = 2, memory: str = "8Gi", boot_delay: float = 0.3,
                   stop_delay: float = 0.0):
    """`onprem` + `cloud` nodes of 4 CPU / `memory` (for `cluster_factory`)."""
    from elastichub.localcluster.config import ClusterConfig, NodeConfig

    nodes = [NodeConfig(f"onprem-{i}", "on-prem", "4", memory) for i in range(1, onprem + 1)]
    nodes += [NodeConfig(f"cloud-{i}", "cloud", "4", memory) for i in range(1, cloud + 1)]
    return ClusterConfig(nodes=tuple(nodes), boot_delay=boot_delay, stop_delay=stop_delay)


def server_pod(user: str, memory: str = "2Gi", *, migratable: bool = True, namespace: str = "default") -> dict:
    """A pod that sleeps, requests `memory`, and carries the spawner's labels."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"jupyter-{user}", "namespace": namespace,
                     "labels": {"component": "singleuser-server", podmeta.MANAGED_LABEL: "true",
                                podmeta.MIGRATABLE_LABEL: "true" if migratable else "false"},
                     "annotations": {podmeta.USER_ANNOTATION: user, podmeta.SERVER_NAME_ANNOTATION: ""}},
        "spec": {"containers": [{"name": "notebook", "image": "local",
                                 "command": [sys.executable, "-c", "import time; time.sleep(3600)"],
                                 "resources": {"requests": {"cpu": "100m", "memory": memory}}}],
                 "terminationGracePeriodSeconds": 1},
        "status": {"phase": "Pending"},
    }


async def until(check, timeout: float = 20.0, what: str = "condition", step: float = 0.05):
    """Await `check()` (sync or async) until truthy; AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(step)


def node_of(store, name: str, namespace: str = "default") -> str | None:
    try:
        return store.get("pods", name, namespace)["spec"].get("nodeName")
    except Exception as e:  # only "not found" means no node; anything else is a failure to see
        if getattr(e, "code", None) == 404:
            return None
        raise


def cache(records: dict, name: str = "cache"):
    """An informer's cache as the controller reads it: its records, synced, following the cluster."""
    from types import SimpleNamespace

    synced = asyncio.Event()
    synced.set()
    return SimpleNamespace(name=name, records=records, last_error="", synced=synced)
