"""Live moves end to end (make-before-break): a real JupyterHub + CHP with
ElasticSpawner, KubeSpawner pods on the local cluster, Elastic Python kernels
behind a real Jupyter Server, and the orchestrator's controller with its real
adapters. A student's tab stays open and keeps running cells while their
server moves; afterwards the same kernel ids answer on the new node with every
variable as it was. Failures before the route switch leave the source serving.
"""

from __future__ import annotations

import asyncio
import glob
import inspect
import json
import os

import pytest
from hubtools import open_notebook
from orchestratortools import DIGEST, OrchestratorProcess, hub_client, run_until_vm_stopped, users_on_cloud
from podtools import until

from elastichub.demo.notebook import NotebookError
from elastichub.localcluster.cloud import STOPPED as VM_STOPPED
from elastichub.orchestrator.drain import DrainTimeouts
from elastichub.orchestrator.hub import HubClient
from elastichub.orchestrator.kube import KubePods
from elastichub.policy import PolicyConfig, make_strategy

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

TIMEOUTS = DrainTimeouts(busy=30, stop=60, start=90, poll=0.2, route=5, freeze_lease=30)
NOT_RUN = "did not run"


def _pods(cluster, user: str) -> list[dict]:
    return [p for p in cluster.store.list("pods", "default")[0]
            if (p["metadata"].get("annotations") or {}).get("elastichub.io/user") == user]


async def _print_pod_logs(cluster) -> None:
    """The single-user servers' output, for a failure's report."""
    for pod in cluster.store.list("pods", "default")[0]:
        text = cluster.store.log_provider("default", pod["metadata"]["name"], "notebook")
        if inspect.isawaitable(text):
            text = await text
        print("=====", pod["metadata"]["name"], "\n", (text or "")[-6000:])


async def _sessions(hub, user: str) -> list[tuple]:
    """(session id, kernel id, path, type, name) of each session: JupyterLab
    finds its documents' sessions by id, and reads the rest from them."""
    client = hub_client(hub)
    server = await client.server(user, "")
    payload = await client.server_call(client.proxy_base(server), "GET", "/api/sessions", owner=(user, ""))
    return sorted((s["id"], s["kernel"]["id"], s["path"], s["type"], s["name"]) for s in payload)


class Probe:
    """A student's open tab that keeps running `n += 1` every 0.1 s; when its
    websocket closes it reconnects to the same kernel id, as JupyterLab does."""

    def __init__(self, nb):
        self.nb, self.ok, self.not_run, self.other = nb, 0, 0, []
        self.task = None
        self.stopping = False

    async def _loop(self) -> None:
        while not self.stopping:
            try:
                out = await self.nb.run("n += 1", timeout=60)
            except (NotebookError, asyncio.TimeoutError):
                await asyncio.sleep(0.05)
                try:
                    await self.nb.connect()
                except NotebookError:
                    pass
                continue
            if out["status"] == "ok":
                self.ok += 1
            elif NOT_RUN in out["stderr"] + str(out["error"]):
                self.not_run += 1
            else:
                self.other.append(out)
            await asyncio.sleep(0.1)

    def start(self) -> None:
        self.task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        """After the cell in flight is answered: a cell cancelled mid-way may have run uncounted."""
        self.stopping = True
        await asyncio.wait_for(self.task, 90)


async def _controller(cluster, hub, wire, hub_adapter=None, tcool: float = 5):
    strategy = make_strategy("elastic", PolicyConfig(theta_out=80, tmon=0.5, tcool=tcool))
    return await wire(cluster, strategy, hub=hub_adapter or hub_client(hub), tmon=0.5, drain=TIMEOUTS,
                      move_method="live")


async def test_live_move_keeps_the_open_tab_its_kernel_ids_and_every_variable(hub_on_cluster, wire):
    cluster, hub = hub_on_cluster
    digests = await users_on_cloud(cluster, hub, ["alice", "bob"])
    # bob renamed his notebook, kernel running: the destination adopts it under its new path
    paths = {"alice": "alice.ipynb", "bob": "homework.ipynb"}
    nb = await open_notebook(hub, "bob", "bob.ipynb")
    await nb.rename(paths["bob"])
    nb.close()
    before = {u: await _sessions(hub, u) for u in ("alice", "bob")}
    started = {u: (await hub.server(u))["started"] for u in ("alice", "bob")}
    tab = await open_notebook(hub, "alice", "alice.ipynb")
    assert (await tab.run("n = 0"))["status"] == "ok"
    probe = Probe(tab)
    probe.start()
    seen_by_hub = set()

    async def watch_hub():  # the hub's own view, polled each second (poll_interval 1): always running
        while True:
            for user in ("alice", "bob"):
                server = await hub.server(user)
                seen_by_hub.add((user, bool(server and server["ready"] and not server["pending"])))
            await asyncio.sleep(0.1)
    watcher = asyncio.create_task(watch_hub())

    cluster.store.delete("pods", "filler", "default")
    ctl = await _controller(cluster, hub, wire)
    loop = asyncio.create_task(ctl.run())
    try:
        async def vm_stopped():
            return any(v.id == "cloud-1" and v.state == VM_STOPPED for v in await ctl.cloud.list())
        try:
            await until(vm_stopped, timeout=150, step=0.5, what="cloud-1's VM stopped")
        except AssertionError:
            await _print_pod_logs(cluster)
            raise
    finally:
        loop.cancel()
        watcher.cancel()
        await asyncio.gather(loop, watcher, return_exceptions=True)
        await probe.stop()
    assert seen_by_hub == {("alice", True), ("bob", True)}, seen_by_hub
    assert "server stopped, with exit code" not in hub.log_text(1_000_000)

    moves = [m for m in ctl.moves if m.outcome == "moved"]
    assert sorted(m.server for m in moves) == ["alice", "bob"], [m.to_json() for m in ctl.moves]
    for m in moves:
        assert m.method == "live" and m.destination == "onprem-1", m.to_json()
        assert {"precopy_s", "freeze_s", "apply_s", "switch_s", "pause_s"} <= set(m.phases), m.phases
    # The tab never stopped: every cell it sent either ran once or was told it did not run.
    assert probe.other == [], probe.other
    await tab.connect()  # the probe may have stopped between the source's close and its reconnect
    out = await tab.run("print(n)")
    assert out["stdout"].strip() == str(probe.ok), (out, probe.ok, probe.not_run)
    assert probe.ok > 0
    tab.close()
    for user in ("alice", "bob"):
        server = await hub.server(user)
        assert server["ready"] and server["started"] == started[user], "the hub restarted the server"
        assert await _sessions(hub, user) == before[user], "sessions or kernel ids changed"
        pods = _pods(cluster, user)
        assert len(pods) == 1 and pods[0]["spec"]["nodeName"] == "onprem-1", [p["metadata"]["name"] for p in pods]
        assert pods[0]["metadata"]["name"].startswith(f"jupyter-{user}-m")
        nb = await open_notebook(hub, user, paths[user])
        assert (await nb.run(DIGEST))["stdout"] == digests[user], f"{user}'s state differs after the move"
        nb.close()
    # The hub follows the new pod: its own poll says running, and a stop deletes it.
    await hub.stop_server("bob")
    await until(lambda: not _pods(cluster, "bob"), timeout=60, what="bob's moved pod deleted by the hub's stop")


class DestinationCrashes(KubePods):
    """The destination pod's server exits at once (an image that cannot start)."""

    async def create(self, namespace: str, manifest: dict) -> None:
        manifest["spec"]["containers"][0]["command"] = ["false"]
        manifest["spec"]["containers"][0].pop("args", None)
        await super().create(namespace, manifest)


class HubNeverAnswers(KubePods):
    """The route request never reaches a hub (e.g. its spawner is not ElasticSpawner)."""

    async def annotate(self, namespace: str, name: str, annotations: dict) -> None:
        return None


class EvictedAfterSwitch(KubePods):
    """The destination pod is evicted the moment the hub has switched to it,
    before the orchestrator reads the hub's answer."""

    evicted = None

    async def get(self, namespace: str, name: str) -> dict | None:
        pod = await super().get(namespace, name)
        annotations = ((pod or {}).get("metadata") or {}).get("annotations") or {}
        if self.evicted is None and annotations.get("elastichub.io/route") == "switched":
            self.evicted = name
            await self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
            while await super().get(namespace, name) is not None:
                await asyncio.sleep(0.05)
            return None
        return pod


class DeltaCorrupted(HubClient):
    """The delta file is damaged between the source writing it and the destination reading it."""

    def __init__(self, *args, root: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.root = root

    async def server_call(self, base, method, path, body=None, **kw):
        if isinstance(body, dict) and body.get("phase") == "apply":
            for path_ in glob.glob(os.path.join(self.root, "**", "live-delta.ehk"), recursive=True):
                with open(path_, "r+b") as f:
                    f.seek(os.path.getsize(path_) // 2)
                    f.write(b"\xff" * 64)
        return await super().server_call(base, method, path, body, **kw)


@pytest.mark.parametrize("fault", ["destination-crashes", "hub-never-answers", "delta-corrupted"])
async def test_a_failed_live_move_leaves_the_source_serving_and_nothing_lost(hub_on_cluster, wire, fault):
    cluster, hub = hub_on_cluster
    digests = await users_on_cloud(cluster, hub, ["alice"])
    before = await _sessions(hub, "alice")
    source = _pods(cluster, "alice")[0]["metadata"]["name"]
    adapter = None
    if fault == "delta-corrupted":
        adapter = DeltaCorrupted(f"{hub.url}/hub/api", hub.url, hub_client(hub).token, root=os.path.expanduser(cluster.config.workdir))
    cluster.store.delete("pods", "filler", "default")
    # A long Tcool: no second drain (by a restart, after a failed live move) while the test looks.
    ctl = await _controller(cluster, hub, wire, adapter, tcool=600)
    if fault == "destination-crashes":
        ctl.kube_pods = DestinationCrashes(ctl.kube_pods.core)
    elif fault == "hub-never-answers":
        ctl.kube_pods = HubNeverAnswers(ctl.kube_pods.core)
    loop = asyncio.create_task(ctl.run())
    try:
        await until(lambda: any(m.outcome == "failed" for m in ctl.moves), timeout=120, what="a failed live move")
    finally:
        loop.cancel()  # the failed attempt finishes rolling back
        await asyncio.gather(loop, return_exceptions=True)
    await until(lambda: not ctl.draining(), timeout=60, what="the drain rolled back")

    failed = next(m for m in ctl.moves if m.outcome == "failed")
    assert failed.method == "live" and failed.error, failed.to_json()
    # The source serves on, unfrozen, with the same kernels and every variable; no destination is left.
    await until(lambda: len(_pods(cluster, "alice")) == 1, timeout=30, what="the destination pod deleted")
    pods = _pods(cluster, "alice")
    assert [p["metadata"]["name"] for p in pods] == [source], [p["metadata"]["name"] for p in pods]
    assert (await hub.server("alice"))["ready"]
    assert await _sessions(hub, "alice") == before
    nb = await open_notebook(hub, "alice", "alice.ipynb")
    out = await nb.run(DIGEST, timeout=20)  # well inside the freeze lease: the source was thawed
    assert out["stdout"] == digests["alice"], out
    nb.close()
    node = cluster.store.get("nodes", "cloud-1")
    assert not node["spec"].get("unschedulable"), "the drain was not rolled back"
    assert "elastichub.io/drain" not in (node["metadata"].get("annotations") or {})


async def test_after_a_failed_live_move_the_server_moves_by_a_restart_and_the_vm_stops(hub_on_cluster, wire):
    """A cause that stays (here the route request is never answered, as with
    a spawner that cannot switch routes): the failed live move is undone,
    and the next drain moves that server by a restart instead of pausing it
    again and again while the cloud node runs on."""
    cluster, hub = hub_on_cluster
    digests = await users_on_cloud(cluster, hub, ["alice"])
    cluster.store.delete("pods", "filler", "default")
    ctl = await _controller(cluster, hub, wire)
    ctl.kube_pods = HubNeverAnswers(ctl.kube_pods.core)
    await run_until_vm_stopped(ctl)
    assert [(m.method, m.outcome) for m in ctl.moves] == [("live", "failed"), ("restart", "moved")], [
        m.to_json() for m in ctl.moves]
    assert any(e["kind"] == "drain-failed" and "its next move will be by a restart" in e["message"]
               for e in ctl.events)
    assert ctl.restart_next == {}  # moved: the next move of alice is live again
    assert _pods(cluster, "alice")[0]["spec"]["nodeName"] == "onprem-1"
    nb = await open_notebook(hub, "alice", "alice.ipynb")
    assert (await nb.run(DIGEST))["stdout"] == digests["alice"]
    nb.close()


def _record(cluster) -> dict:
    text = (cluster.store.get("nodes", "cloud-1")["metadata"].get("annotations") or {}).get("elastichub.io/drain")
    return json.loads(text) if text else {}


def _destination(cluster, user: str) -> dict | None:
    return next((p for p in _pods(cluster, user) if "elastichub.io/move-of" in p["metadata"]["annotations"]
                 and not p["metadata"].get("deletionTimestamp")), None)


async def test_killed_during_live_moves_it_finishes_or_undoes_each_and_nothing_is_lost(hub_on_cluster, tmp_path):
    cluster, hub = hub_on_cluster
    digests = await users_on_cloud(cluster, hub, ["alice", "bob"])
    before = {u: await _sessions(hub, u) for u in ("alice", "bob")}
    cluster.store.delete("pods", "filler", "default")
    orch = OrchestratorProcess(cluster, hub, tmp_path, extra='c.ElasticOrchestrator.move_method = "live"\n')

    def step(user):
        return (_record(cluster).get("servers", {}).get(user) or {}).get("step")

    def route(user):
        dest = _destination(cluster, user)
        return (dest or {"metadata": {"annotations": {}}})["metadata"]["annotations"].get("elastichub.io/route")

    kill_points = [  # alice first (both request the same RAM: by name), then bob
        ("alice's destination created", lambda: step("alice") == "live" and _destination(cluster, "alice")),
        ("alice's route asked for", lambda: step("alice") == "route"),
        ("bob's route switched", lambda: route("bob") == "switched"),
    ]
    try:
        for what, reached in kill_points:
            await orch.start()
            await until(reached, timeout=90, step=0.01, what=f"{what}\n{orch.log()[-3000:]}")
            await orch.kill()
        await orch.start()

        async def converged():
            vm = cluster.cloud.describe("cloud-1")
            return vm["state"] == "stopped" and not _record(cluster) and all(
                len(_pods(cluster, u)) == 1 and _pods(cluster, u)[0]["spec"].get("nodeName") == "onprem-1"
                for u in ("alice", "bob"))
        await until(converged, timeout=150, step=0.5, what=f"convergence\n{orch.log()[-3000:]}")
        assert await orch.stop() == 0
    finally:
        await orch.kill()

    for user in ("alice", "bob"):
        assert (await hub.server(user))["ready"]
        assert await _sessions(hub, user) == before[user], f"{user}'s sessions or kernel ids changed"
        nb = await open_notebook(hub, user, f"{user}.ipynb")
        assert (await nb.run(DIGEST, timeout=30))["stdout"] == digests[user], f"{user}'s state differs"
        nb.close()


async def test_a_destination_lost_after_the_switch_takes_the_retired_source_along(hub_on_cluster, tmp_path):
    """The orchestrator was killed just after the hub switched alice to her
    destination pod, and that pod was then evicted (the hub stopped her
    server with it). The restarted orchestrator found no destination, took
    the move for never switched and undid it: the retired source ran on in
    cloud-1 with no owner, and the node never drained. The hub's record
    decides now: neither pod serves, both go, nothing is thawed, the VM stops."""
    cluster, hub = hub_on_cluster
    await users_on_cloud(cluster, hub, ["alice"])
    cluster.store.delete("pods", "filler", "default")
    orch = OrchestratorProcess(cluster, hub, tmp_path, extra='c.ElasticOrchestrator.move_method = "live"\n')

    def switched():
        dest = _destination(cluster, "alice")
        return dest and dest["metadata"]["annotations"].get("elastichub.io/route") == "switched" and dest

    try:
        await orch.start()
        dest = await until(switched, timeout=90, step=0.01, what=f"alice's route switched\n{orch.log()[-3000:]}")
        await orch.kill()
        cluster.store.delete("pods", dest["metadata"]["name"], "default")  # evicted

        async def stopped():
            return await hub.server("alice") is None
        await until(stopped, timeout=60, what="the hub stopping alice's server with its pod")
        await orch.start()

        async def converged():
            return (cluster.cloud.describe("cloud-1")["state"] == VM_STOPPED and not _record(cluster)
                    and not _pods(cluster, "alice"))
        await until(converged, timeout=150, step=0.5, what=f"convergence\n{orch.log()[-3000:]}")
        assert await orch.stop() == 0
    finally:
        await orch.kill()
    log = orch.log()
    assert "neither the source nor the destination; deleting both" in log, log[-3000:]
    assert "thawed" not in log, log[-3000:]


async def test_a_destination_evicted_once_switched_is_no_reason_to_bring_the_source_back(hub_on_cluster, wire):
    """The hub switched alice to her destination, which was evicted before
    the orchestrator read the answer: the move was undone, the thaw went
    through the proxy to the lost pod and failed, and once the hub had
    stopped the server the retired source ran on in cloud-1 with no owner:
    the drain rolled back again and again. The hub's record decides now."""
    cluster, hub = hub_on_cluster
    await users_on_cloud(cluster, hub, ["alice"])
    source = _pods(cluster, "alice")[0]["metadata"]["name"]
    cluster.store.delete("pods", "filler", "default")
    ctl = await _controller(cluster, hub, wire)
    ctl.kube_pods = EvictedAfterSwitch(ctl.kube_pods.core)
    await run_until_vm_stopped(ctl, timeout=120)
    assert ctl.kube_pods.evicted
    assert [(m.method, m.outcome) for m in ctl.moves] in ([("live", "moved")], [("live", "skipped")]), [
        m.to_json() for m in ctl.moves]
    assert not [p for p in _pods(cluster, "alice") if p["metadata"]["name"] == source], "the source runs on"


async def test_a_console_open_on_a_notebooks_kernel_moves_live_with_it(hub_on_cluster, wire):
    """JupyterLab's "New Console for Notebook": two sessions, one kernel. The
    destination started that kernel once per session (two processes under
    one id, one reported dead): the move was undone, and moved by a restart."""
    cluster, hub = hub_on_cluster
    digests = await users_on_cloud(cluster, hub, ["alice"])
    nb = await open_notebook(hub, "alice", "alice.ipynb")
    client = hub_client(hub)
    base = client.proxy_base(await client.server("alice", ""))

    def open_console() -> dict:  # as JupyterLab does (201 Created)
        import urllib.request

        request = urllib.request.Request(base + "api/sessions", method="POST", data=json.dumps({
            "path": "console-1", "name": "Console 1", "type": "console", "kernel": {"id": nb.kernel_id}}).encode(),
            headers={"Authorization": f"token {hub.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())
    console = await asyncio.to_thread(open_console)
    assert console["kernel"]["id"] == nb.kernel_id, console
    nb.close()
    before = await _sessions(hub, "alice")
    assert len(before) == 2 and len({s[1] for s in before}) == 1, before
    cluster.store.delete("pods", "filler", "default")
    ctl = await _controller(cluster, hub, wire)
    try:
        await run_until_vm_stopped(ctl)
    except AssertionError:
        await _print_pod_logs(cluster)
        raise
    assert [(m.method, m.outcome) for m in ctl.moves] == [("live", "moved")], [m.to_json() for m in ctl.moves]
    assert await _sessions(hub, "alice") == before, "sessions or kernel ids changed"
    kernels = await client.server_call(base, "GET", "/api/kernels", owner=("alice", ""))
    assert [k["id"] for k in kernels] == [nb.kernel_id]
    nb = await open_notebook(hub, "alice", "alice.ipynb")
    assert nb.kernel_id == before[0][1]
    assert (await nb.run(DIGEST))["stdout"] == digests["alice"]
    nb.close()
