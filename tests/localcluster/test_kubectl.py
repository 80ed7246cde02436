"""The Debian kubectl, unmodified, against the local API server."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest
from lc_apitools import make_node, make_pod

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
pytestmark = [pytest.mark.timeout(90),
              pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl (Debian kubernetes-client) not installed")]


async def kubectl(srv, tmp_path, *args: str) -> tuple[int, str]:
    """Run kubectl without blocking the event loop the server runs in."""
    env = dict(os.environ, HOME=str(tmp_path))  # its discovery cache goes to the test's directory
    proc = await asyncio.create_subprocess_exec(KUBECTL, "--kubeconfig", srv.kubeconfig, "--request-timeout=20s",
                                                *args, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT, env=env)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    return proc.returncode, out.decode()


async def fake_kubelet(store) -> None:
    """Completes graceful pod deletions the way the kubelet does (at once here)."""
    async for _, pod in store.subscribe("pods"):
        if pod["metadata"].get("deletionTimestamp"):
            try:
                store.delete("pods", pod["metadata"]["name"], pod["metadata"]["namespace"])
            except Exception:
                pass  # already gone


def rows(output: str) -> dict[str, list[str]]:
    lines = [line.split() for line in output.strip().splitlines()]
    return {cells[0]: cells for cells in lines[1:]}


@pytest.fixture
def cluster(api_server):
    store = api_server.store
    store.create("nodes", make_node("onprem-1"))
    store.create("nodes", make_node("cloud-1", "cloud", ready=False))
    store.create("pods", make_pod("jupyter-ada", {"component": "singleuser-server"}, node="onprem-1"))
    store.update("pods", "jupyter-ada", lambda p: p.setdefault("status", {}).update(
        phase="Running", podIP="127.0.4.5",
        containerStatuses=[{"name": "main", "ready": True, "restartCount": 0, "image": "local", "imageID": "",
                            "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]))
    return api_server


async def test_get_nodes_and_pods_wide(cluster, tmp_path):
    rc, out = await kubectl(cluster, tmp_path, "get", "nodes", "-o", "wide")
    assert rc == 0, out
    assert out.split()[:6] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP"]
    table = rows(out)
    assert table["onprem-1"][1] == "Ready" and table["cloud-1"][1] == "NotReady"
    assert table["onprem-1"][5] == "127.0.0.1"
    rc, out = await kubectl(cluster, tmp_path, "get", "pods", "-o", "wide")
    assert rc == 0, out
    ada = rows(out)["jupyter-ada"]
    assert ada[1:3] == ["1/1", "Running"] and ada[5:7] == ["127.0.4.5", "onprem-1"]
    rc, out = await kubectl(cluster, tmp_path, "get", "pods", "-A", "-l", "component=singleuser-server")
    assert rc == 0 and "default" in out and "jupyter-ada" in out, out
    rc, out = await kubectl(cluster, tmp_path, "get", "pod", "jupyter-ada", "-o", "jsonpath={.status.podIP}")
    assert (rc, out) == (0, "127.0.4.5")
    rc, out = await kubectl(cluster, tmp_path, "get", "namespaces")
    assert rc == 0 and "kube-system" in rows(out), out


async def test_cordon_uncordon_and_label(cluster, tmp_path):
    store = cluster.store
    rc, out = await kubectl(cluster, tmp_path, "cordon", "onprem-1")
    assert rc == 0 and "cordoned" in out, out
    assert store.get("nodes", "onprem-1")["spec"]["unschedulable"] is True
    rc, out = await kubectl(cluster, tmp_path, "get", "nodes")
    assert rows(out)["onprem-1"][1] == "Ready,SchedulingDisabled"
    rc, out = await kubectl(cluster, tmp_path, "uncordon", "onprem-1")
    assert rc == 0 and "uncordoned" in out, out
    assert not store.get("nodes", "onprem-1")["spec"].get("unschedulable")
    rc, out = await kubectl(cluster, tmp_path, "label", "node", "cloud-1", "elastichub.io/draining=true")
    assert rc == 0, out
    assert store.get("nodes", "cloud-1")["metadata"]["labels"]["elastichub.io/draining"] == "true"
    rc, out = await kubectl(cluster, tmp_path, "get", "nodes", "-l", "elastichub.io/draining=true", "-o", "name")
    assert (rc, out.split()) == (0, ["node/cloud-1"])
    rc, out = await kubectl(cluster, tmp_path, "label", "node", "cloud-1", "elastichub.io/draining-")
    assert rc == 0, out
    assert "elastichub.io/draining" not in store.get("nodes", "cloud-1")["metadata"]["labels"]
    rc, out = await kubectl(cluster, tmp_path, "label", "node", "cloud-1", "bad key=x")
    assert rc != 0


async def test_delete_pod_waits_for_the_kubelet(cluster, tmp_path):
    kubelet = asyncio.create_task(fake_kubelet(cluster.store))
    try:
        rc, out = await kubectl(cluster, tmp_path, "delete", "pod", "jupyter-ada", "--grace-period=5")
        assert rc == 0 and 'pod "jupyter-ada" deleted' in out, out
        assert cluster.store.list("pods")[0] == []
    finally:
        kubelet.cancel()
    rc, out = await kubectl(cluster, tmp_path, "get", "pod", "jupyter-ada")
    assert rc != 0 and 'pods "jupyter-ada" not found' in out, out


async def test_logs_and_events(cluster, tmp_path):
    cluster.store.log_provider = lambda ns, name, container: "hello from the notebook\n"
    rc, out = await kubectl(cluster, tmp_path, "logs", "jupyter-ada")
    assert (rc, out) == (0, "hello from the notebook\n")
    cluster.store.create("events", {
        "metadata": {"name": "jupyter-ada.1"}, "involvedObject": {"kind": "Pod", "name": "jupyter-ada"},
        "reason": "Started", "message": "Started container main", "type": "Normal",
        "lastTimestamp": None, "eventTime": None, "count": 1})
    rc, out = await kubectl(cluster, tmp_path, "get", "events")
    assert rc == 0 and "pod/jupyter-ada" in out and "Started container main" in out, out
