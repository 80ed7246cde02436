"""Helpers of the controller tests (scheduler, kubelet, cloud, whole cluster)."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any, Callable

from elastichub.localcluster.store import ApiError


async def wait_for(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll `check` (sync) until it returns something truthy; fail the test after `timeout` s
    (generous: it only matters when the test fails, and a loaded 2-core CI machine is slow)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


def python_pod(name: str, code: str, *, node: str | None = None, port: int | None = None,
               env: list | None = None, grace: int | None = None, memory: str = "1Gi",
               namespace: str = "default", **spec_extra) -> dict:
    """A pod whose one container runs `python -c code` with the test's interpreter."""
    container = {"name": "main", "image": "ignored:latest", "command": [sys.executable, "-u", "-c", code],
                 "resources": {"requests": {"cpu": "100m", "memory": memory}}, "env": env or []}
    if port:
        container["ports"] = [{"containerPort": port, "name": "http"}]
    spec = {"containers": [container], **spec_extra}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {"phase": "Pending"}}


def as_client_model(obj: dict, kind: str = "V1Pod"):
    """Deserialize like kubernetes_asyncio does for a real answer: it raises
    ValueError when a field the client requires is missing or None."""
    import json
    from types import SimpleNamespace

    from kubernetes_asyncio.client import ApiClient

    # Deserializing uses no client state: skip __init__ and its HTTP session.
    return ApiClient.__new__(ApiClient).deserialize(SimpleNamespace(data=json.dumps(obj)), kind)


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def phase(store, name: str, namespace: str = "default") -> str | None:
    """The pod's phase; None only when the pod is gone (404). Any other
    error propagates: a "pod removed" wait must not pass on a broken store."""
    try:
        pod = store.get("pods", name, namespace)
    except ApiError as exc:
        if exc.code == 404:
            return None
        raise
    return pod.get("status", {}).get("phase")


def event_reasons(store, name: str) -> list[str]:
    events, _ = store.list("events")
    return [e["reason"] for e in events if e["involvedObject"]["name"] == name]


def pid_file_pids(path) -> list[int]:
    try:
        with open(path) as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):  # not written yet, or half written
        return []
