"""Scale-in end to end: a real JupyterHub + CHP, KubeSpawner pods on the local
cluster, the Elastic Python kernel driven over the kernel websocket, and the
orchestrator's controller with its real adapters. Load falls: the cloud node
is cordoned, its servers move to on-prem with every variable identical, the
VM stops."""

from __future__ import annotations

import asyncio
import time

import pytest
from hubtools import open_notebook
from orchestratortools import DIGEST, hub_client, users_on_cloud
from podtools import node_of, until

from elastichub.localcluster.cloud import STOPPED as VM_STOPPED
from elastichub.orchestrator.drain import DrainTimeouts
from elastichub.policy import PolicyConfig, make_strategy

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


async def test_load_falls_servers_move_to_onprem_with_their_state_and_the_vm_stops(hub_on_cluster, wire):
    cluster, hub = hub_on_cluster
    digests = await users_on_cloud(cluster, hub, ["alice", "bob"])
    # bob renames his notebook, kernel running: his state must follow it
    paths = {"alice": "alice.ipynb", "bob": "week1/homework.ipynb"}
    nb = await open_notebook(hub, "bob", "bob.ipynb")
    await nb._request("PUT", "/api/contents/week1", {"type": "directory"})
    await nb.rename(paths["bob"])
    nb.close()

    # Load falls: the filler ends; the controller (policy "elastic", short Tmon/Tcool) takes it from here.
    cluster.store.delete("pods", "filler", "default")
    strategy = make_strategy("elastic", PolicyConfig(theta_out=80, tmon=0.5, tcool=5))
    ctl = await wire(cluster, strategy, hub=hub_client(hub), tmon=0.5,
                     drain=DrainTimeouts(busy=30, stop=60, start=90, poll=0.2, concurrency=2))  # both at once
    loop = asyncio.create_task(ctl.run())
    try:
        vms = ctl.cloud
        await until(lambda: any(d["action"] == "scale-in" for d in ctl.decisions), timeout=30, what="a scale-in")
        scale_in_at = next(d["time"] for d in ctl.decisions if d["action"] == "scale-in")

        async def vm_stopped():
            return any(v.id == "cloud-1" and v.state == VM_STOPPED for v in await vms.list())
        await until(vm_stopped, timeout=150, step=0.5, what="cloud-1's VM stopped")
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)

    for user in ("alice", "bob"):
        assert (await hub.server(user))["ready"]
        assert node_of(cluster.store, f"jupyter-{user}") == "onprem-1"
        nb = await open_notebook(hub, user, paths[user])
        assert (await nb.run(DIGEST))["stdout"] == digests[user], f"{user}'s state differs after the move"
        nb.close()
    moves = [m for m in ctl.moves if m.outcome == "moved"]
    assert sorted(m.server for m in moves) == ["alice", "bob"]
    assert all(m.destination == "onprem-1" and m.checkpoint["status"] == "saved" for m in moves)
    node = cluster.store.get("nodes", "cloud-1")
    assert node["spec"].get("unschedulable") is True  # stopped nodes stay cordoned
    assert "elastichub.io/drain" not in (node["metadata"].get("annotations") or {})
    # Tcool: no second scaling action within tcool of the first.
    actions = [d["time"] for d in ctl.decisions if d["action"] != "none"]
    assert all(t2 - t1 >= 5 for t1, t2 in zip(actions, actions[1:])), actions
    assert scale_in_at >= time.time() - 300
