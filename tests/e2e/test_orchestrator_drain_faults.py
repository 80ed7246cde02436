"""Scale-in when a move must not happen now: a kernel running a long cell, a
terminal in use, a kernel that cannot checkpoint. Real hub, real kernels and
terminals, the controller with its real adapters; each case ends with
nothing lost."""

from __future__ import annotations

import asyncio
import json

import pytest
from hubtools import open_notebook
from orchestratortools import DIGEST, hub_client, users_on_cloud
from podtools import node_of, until
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from elastichub.orchestrator.drain import DrainTimeouts
from elastichub.policy import PolicyConfig, make_strategy

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


async def start_loop(cluster, hub, wire, busy: float, **timeouts):
    strategy = make_strategy("elastic", PolicyConfig(theta_out=80, tmon=0.5, tcool=3))
    ctl = await wire(cluster, strategy, hub=hub_client(hub), tmon=0.5,
                     drain=DrainTimeouts(busy=busy, stop=60, start=90, poll=0.2, **timeouts))
    return ctl, asyncio.create_task(ctl.run())


def drain_events(ctl, word: str) -> list[str]:
    return [e["message"] for e in ctl.events if e["kind"] == "drain" and word in e["message"]]


async def test_a_running_cell_is_never_killed_the_node_waits_then_the_server_moves(hub_on_cluster, wire):
    cluster, hub = hub_on_cluster
    digests = await users_on_cloud(cluster, hub, ["alice"])
    nb = await open_notebook(hub, "alice", "alice.ipynb")
    cell = nb.submit("import time\ntime.sleep(6)\nb = 41 + 1\nprint('cell finished')")
    await asyncio.sleep(0.5)
    cluster.store.delete("pods", "filler", "default")
    ctl, loop = await start_loop(cluster, hub, wire, busy=1.5)
    try:
        # The kernel is busy past `busy`: the drain is rolled back, the node uncordoned.
        await until(lambda: drain_events(ctl, "rolled-back"), timeout=30, what="a rolled-back drain")
        assert "still running a cell" in " ".join(m.error for m in ctl.moves)
        out = await nb.collect(cell, timeout=30)
        assert out["status"] == "ok" and out["stdout"] == "cell finished\n", out  # never interrupted
        # Once idle, a later cycle moves it (Tcool later).
        await until(lambda: drain_events(ctl, "stopped"), timeout=120, step=0.5, what="the drain to end")
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        nb.close()
    assert node_of(cluster.store, "jupyter-alice") == "onprem-1"
    nb = await open_notebook(hub, "alice", "alice.ipynb")
    assert (await nb.run(DIGEST))["stdout"] == digests["alice"]
    assert (await nb.run("print(b)"))["stdout"] == "42\n"  # the long cell's result moved too
    nb.close()


async def _terminal(hub, user: str):
    """A JupyterLab terminal of `user`: its name and its websocket."""
    code, model = await hub.api("POST", f"/user/{user}/api/terminals", {})
    assert code == 200, (code, model)
    ws = await websocket_connect(HTTPRequest(f"{hub.url.replace('http', 'ws', 1)}/user/{user}/terminals/websocket/"
                                             f"{model['name']}", headers={"Authorization": f"token {hub.token}"}))
    return model["name"], ws


@pytest.mark.parametrize("command, said", [
    ("while true; do echo training; sleep 0.5; done", ""),  # output: activity
    ("sleep 600", ": running sleep 600"),  # silent: seen only as the shell's child process
], ids=["printing", "silent"])
async def test_a_terminal_in_use_is_waited_for_then_the_server_moves(hub_on_cluster, wire, command, said):
    """A script running in a terminal cannot move with the server: the drain
    waits for it as for a running cell, gives the node up for now, and moves
    the server once the terminal is back at its prompt and has been quiet
    for terminal_quiet."""
    cluster, hub = hub_on_cluster
    digests = await users_on_cloud(cluster, hub, ["alice"])
    name, ws = await _terminal(hub, "alice")
    ws.write_message(json.dumps(["stdin", command + "\r"]))
    cluster.store.delete("pods", "filler", "default")
    ctl, loop = await start_loop(cluster, hub, wire, busy=1.5, terminal_quiet=3)
    try:
        await until(lambda: drain_events(ctl, "rolled-back"), timeout=30, what="a rolled-back drain")
        assert f"has a terminal in use ({name}{said}" in " ".join(m.error for m in ctl.moves)
        code, terminals = await hub.api("GET", "/user/alice/api/terminals")
        assert code == 200 and [t["name"] for t in terminals] == [name]  # never killed
        assert node_of(cluster.store, "jupyter-alice") == "cloud-1"
        ws.write_message(json.dumps(["stdin", "\x03"]))  # the student stops the script
        await until(lambda: drain_events(ctl, "stopped"), timeout=120, step=0.5, what="the drain to end")
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        ws.close()
    assert node_of(cluster.store, "jupyter-alice") == "onprem-1"
    nb = await open_notebook(hub, "alice", "alice.ipynb")
    assert (await nb.run(DIGEST))["stdout"] == digests["alice"]
    nb.close()


async def test_a_kernel_that_cannot_checkpoint_keeps_its_server_where_it_is(hub_on_cluster, wire):
    """Found before the node is cordoned (the server extension's status): each drain of cloud-1 cordoned
    it, checkpointed carol's kernels and rolled back on the stock one, again after every back-off."""
    cluster, hub = hub_on_cluster
    await users_on_cloud(cluster, hub, ["carol"])
    stock = await open_notebook(hub, "carol", "stock.ipynb", kernel="python3")
    assert (await stock.run("secret = 1234"))["status"] == "ok"
    cluster.store.delete("pods", "filler", "default")
    ctl, loop = await start_loop(cluster, hub, wire, busy=30)
    marked, mark_drain = [], ctl.kube.mark_drain

    async def recording_mark(node, record):
        marked.append(node)
        return await mark_drain(node, record)

    ctl.kube.mark_drain = recording_mark
    try:
        await until(lambda: drain_events(ctl, "not started"), timeout=60, what="a drain not started")
        cycles = ctl.cycles
        await until(lambda: ctl.cycles >= cycles + 10, timeout=30, what="ten more cycles")
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
    said = drain_events(ctl, "not started")
    assert len(said) == 1 and "carol: kernel(s) 'python3'" in said[0] and "not Elastic Python" in said[0], said
    assert marked == [] and not ctl.moves, [m.to_json() for m in ctl.moves]  # never cordoned, nobody paused
    assert "not Elastic Python" in ctl.status()["unmovable"]["carol"]
    # Nothing lost: same pod, same kernel, same variable; the node takes servers as before.
    assert node_of(cluster.store, "jupyter-carol") == "cloud-1"
    assert (await stock.run("print(secret)"))["stdout"] == "1234\n"
    stock.close()
    node = cluster.store.get("nodes", "cloud-1")
    assert not node["spec"].get("unschedulable")
    assert not [t for t in node["spec"].get("taints") or [] if t["key"] == "elastichub.io/draining"]
    assert "elastichub.io/drain" not in (node["metadata"].get("annotations") or {})
