"""Single-user-like pods for the orchestrator tests (labelled as ElasticSpawner labels them)."""

from __future__ import annotations

import asyncio
import sys
import time

from elastichub import podmeta


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
