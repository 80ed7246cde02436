"""Crash safety: `elastichub orchestrator` (its own process, as the hub runs
it) is SIGKILLed after each step of a scale-in and started again. It must
converge from what the cluster records: no node cordoned without a reason,
no server left stopped, no VM left running and empty, no state lost, no
finished step repeated."""

from __future__ import annotations

import json

import pytest
from hubtools import open_notebook
from orchestratortools import DIGEST, OrchestratorProcess, users_on_cloud
from podtools import node_of, until

from elastichub import podmeta

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]


def record(cluster) -> dict | None:
    text = (cluster.store.get("nodes", "cloud-1")["metadata"].get("annotations") or {}).get(podmeta.DRAIN_ANNOTATION)
    return json.loads(text) if text else None


def step(cluster, user: str) -> str | None:
    rec = record(cluster)
    return ((rec or {}).get("servers", {}).get(user) or {}).get("step")


def running_on(cluster, user: str, node: str) -> bool:
    try:
        pod = cluster.store.get("pods", f"jupyter-{user}", "default")
    except Exception:
        return False
    return pod["spec"].get("nodeName") == node and pod["status"].get("phase") == "Running"


def scheduled_count(cluster, user: str) -> int:
    events, _ = cluster.store.list("events")
    return sum(1 for e in events if e["reason"] == "Scheduled" and e["involvedObject"]["name"] == f"jupyter-{user}")


async def test_killed_after_each_step_of_a_scale_in_it_converges_and_nothing_is_lost(hub_on_cluster, tmp_path):
    cluster, hub = hub_on_cluster
    digests = await users_on_cloud(cluster, hub, ["alice", "bob"])
    cluster.store.delete("pods", "filler", "default")
    orch = OrchestratorProcess(cluster, hub, tmp_path)

    async def alice_stopped():
        server = await hub.server("alice")
        return step(cluster, "alice") == "restart" and not (server and server.get("ready"))

    kill_points = [
        ("cordoned", lambda: cluster.store.get("nodes", "cloud-1")["spec"].get("unschedulable")),
        ("alice checkpointed", lambda: step(cluster, "alice") == "restart"),
        ("alice stopped", alice_stopped),
        ("alice started on-prem", lambda: running_on(cluster, "alice", "onprem-1")),
        ("before the VM stop", lambda: (record(cluster) or {}).get("state") == "stopping-vm"),
    ]
    try:
        for what, reached in kill_points:
            await orch.start()
            await until(reached, timeout=90, step=0.02, what=f"{what}\n{orch.log()[-3000:]}")
            await orch.kill()
        await orch.start()  # the last run converges

        async def converged():
            vm = cluster.cloud.describe("cloud-1")
            servers = [await hub.server(u) for u in ("alice", "bob")]
            return (vm["state"] == "stopped" and record(cluster) is None
                    and all(s and s.get("ready") for s in servers))
        await until(converged, timeout=120, step=0.5, what=f"convergence\n{orch.log()[-3000:]}")
        assert await orch.stop() == 0
    finally:
        await orch.kill()

    node = cluster.store.get("nodes", "cloud-1")
    taints = [t["key"] for t in node["spec"].get("taints") or []]
    assert node["spec"].get("unschedulable") and podmeta.DRAIN_TAINT in taints  # cordoned, with its reason
    onprem = cluster.store.get("nodes", "onprem-1")
    assert not onprem["spec"].get("unschedulable")
    for user in ("alice", "bob"):
        assert node_of(cluster.store, f"jupyter-{user}") == "onprem-1"
        assert scheduled_count(cluster, user) == 2, f"{user} was moved more than once"
        nb = await open_notebook(hub, user, f"{user}.ipynb")
        assert (await nb.run(DIGEST))["stdout"] == digests[user], f"{user}'s state differs"
        nb.close()
    assert "Traceback" not in orch.log(), orch.log()[-4000:]
