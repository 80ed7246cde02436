"""One server moved off a cloud node by the real orchestrator, for the browser
test (test_lab_browser.py) and the downtime benchmark
(benchmarks/live_migration_bench.py).

`MoveLab` is a hub (ElasticSpawner, the orchestrator's service account, a
password for the browser's login, JupyterLab as the servers' default page) on
a local cluster with one on-prem and one cloud node. `put_on_cloud` fills
on-prem and starts the user's server on the cloud node; `move` starts
`elastichub orchestrator` as its own process (configured with `move_method`:
"restart" = break-before-make, "live" = make-before-break, issue #11), lets
the load fall and waits until the server runs on-prem again and the cloud VM
is stopped. The orchestrator's status API is routed by the hub at
/services/orchestrator/api/status (its `migrations` carry each move's report).
"""

from __future__ import annotations

import secrets
from pathlib import Path

from hubtools import Hub, free_port
from orchestratortools import ORCHESTRATOR_SERVICE, OrchestratorProcess, boot, filler
from podtools import cluster_config, until

from elastichub import podmeta

SERVICE = "orchestrator"
KERNEL = "elastic-python"  # kernel/elastichub_kernel/install.py KERNEL_NAME
LAB_PASSWORD = secrets.token_urlsafe(8)

# Added to the hub's config: the orchestrator service gets a URL (the process
# is started by the test, not the hub), the tester may read its API, users log
# in with one password, servers open JupyterLab.
LAB_HUB_CONFIG = """
for service in c.JupyterHub.services:
    if service["name"] == {service!r}:
        service["url"] = "http://127.0.0.1:{service_port}"
for role in c.JupyterHub.load_roles:
    if role["name"] == "tester":
        role["scopes"].append("access:services")
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allow_all = True
c.Spawner.default_url = "/lab"
c.KubeSpawner.start_timeout = 120
"""

class MoveLab:
    """A hub on a 1 on-prem + 1 cloud local cluster, ready for moves."""

    def __init__(self, cluster_factory, hub_factory, tmp_path: Path, method: str = "restart"):
        self.cluster_factory, self.hub_factory, self.tmp = cluster_factory, hub_factory, tmp_path
        self.method = method
        self.password = LAB_PASSWORD
        self.service_port = free_port()
        self.cluster = None
        self.hub: Hub | None = None
        self.orch: OrchestratorProcess | None = None
        self.runs = 0

    async def start(self) -> "MoveLab":
        self.cluster = await self.cluster_factory(cluster_config(onprem=1, cloud=1, stop_delay=1.0))
        extra = ORCHESTRATOR_SERVICE + LAB_HUB_CONFIG.format(service=SERVICE, service_port=self.service_port,
                                                              password=self.password)
        self.hub = await self.hub_factory(self.cluster, extra, spawner_class="elastic")
        return self

    # -- placing the server --------------------------------------------------------------

    async def put_on_cloud(self, user: str) -> None:
        """On-prem full (a filler pod), cloud-1 booted, `user`'s server started on cloud-1."""
        store = self.cluster.store
        try:
            store.get("pods", "filler", "default")
        except Exception:
            store.create("pods", filler("7Gi"))
        await until(lambda: store.get("pods", "filler", "default")["status"].get("phase") == "Running",
                    what="filler running")
        if self.cluster.cloud.describe("cloud-1")["state"] != "running":
            await boot(self.cluster, "cloud-1")
        if store.get("nodes", "cloud-1")["spec"].get("unschedulable"):  # a previous drain's cordon
            store.update("nodes", "cloud-1", _uncordon)
        await self.hub.api("POST", f"/hub/api/users/{user}")  # the user (409 once they exist)
        if not ((await self.hub.server(user)) or {}).get("ready"):
            await self.hub.start_server(user, timeout=120)
        where = self.pod_node(user)
        assert where == "cloud-1", f"{user}'s server is on {where}, not cloud-1"

    def server_pods(self, user: str) -> list[dict]:
        """`user`'s single-user pods, found by the spawner's annotation (a live
        move's destination pod has another name than jupyter-<user>)."""
        pods, _ = self.cluster.store.list("pods", "default")
        return [p for p in pods if (p["metadata"].get("annotations") or {}).get(podmeta.USER_ANNOTATION) == user
                and (p["metadata"].get("labels") or {}).get(podmeta.MANAGED_LABEL) == "true"]

    def current_pod(self, user: str) -> dict | None:
        """The one running, not terminating pod of `user`'s server (None while there are none or two)."""
        live = [p for p in self.server_pods(user) if p["status"].get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]
        return live[0] if len(live) == 1 else None

    def pod_log(self, user: str, tail: int = 4000) -> str:
        """The single-user server's output (its current pod)."""
        pod = self.current_pod(user)
        name = pod["metadata"]["name"] if pod else f"jupyter-{user}"
        return (self.cluster._read_log("default", name, "notebook") or "")[-tail:]

    def pod_node(self, user: str) -> str | None:
        pod = self.current_pod(user)
        return pod["spec"].get("nodeName") if pod else None

    # -- the move ------------------------------------------------------------------------

    def orchestrator_extra(self) -> str:
        return (f'c.ElasticOrchestrator.service_url = "http://127.0.0.1:{self.service_port}"\n'
                f'c.ElasticOrchestrator.service_prefix = "/services/{SERVICE}/"\n'
                f"c.ElasticOrchestrator.move_method = {self.method!r}\n")

    async def start_orchestrator(self) -> None:
        self.runs += 1
        workdir = self.tmp / f"orchestrator-run-{self.runs}"
        workdir.mkdir(exist_ok=True)
        self.orch = OrchestratorProcess(self.cluster, self.hub, workdir, self.orchestrator_extra())
        await self.orch.start()

    async def stop_orchestrator(self) -> None:
        if self.orch is not None:
            await self.orch.stop()

    def let_load_fall(self) -> None:
        """The filler goes: on-prem has room, the policy scales the cloud node in."""
        self.cluster.store.delete("pods", "filler", "default")

    async def wait_moved(self, user: str, timeout: float = 240) -> None:
        """Until `user`'s server is ready on onprem-1 and cloud-1's VM stopped."""
        log = self.orch.log if self.orch else (lambda: "")

        async def moved():
            server = await self.hub.server(user)
            return (bool(server and server.get("ready")) and self.pod_node(user) == "onprem-1"
                    and self.cluster.cloud.describe("cloud-1")["state"] == "stopped")
        await until(moved, timeout=timeout, step=0.25,
                    what=f"{user}'s move to onprem-1 and cloud-1 stopped\n{log()[-3000:]}")

    async def status(self) -> dict | None:
        """The orchestrator's status API through the hub's proxy (None if it does not answer)."""
        try:
            code, body = await self.hub.api("GET", f"/services/{SERVICE}/api/status", timeout=10)
        except OSError:
            return None
        return body if code == 200 and isinstance(body, dict) else None

    async def move_reports(self, user: str) -> list[dict]:
        status = await self.status() or {}
        migrations = status.get("migrations") or {}
        return [m for m in (migrations.get("in_flight") or []) + (migrations.get("recent") or [])
                if m.get("server") == user]


def _uncordon(node: dict) -> None:
    node["spec"]["unschedulable"] = False
    node["spec"]["taints"] = [t for t in node["spec"].get("taints") or [] if t.get("key") != podmeta.DRAIN_TAINT]
    (node["metadata"].get("annotations") or {}).pop(podmeta.DRAIN_ANNOTATION, None)


def notebook_json(kernel: str = KERNEL, display_name: str = "Elastic Python") -> dict:
    """An empty notebook whose metadata names `kernel` (JupyterLab opens it on that kernel, no dialog)."""
    return {"type": "notebook", "content": {
        "cells": [], "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": kernel, "display_name": display_name, "language": "python"},
                     "language_info": {"name": "python"}}}}


async def create_notebook(hub: Hub, user: str, path: str) -> None:
    code, body = await hub.api("PUT", f"/user/{user}/api/contents/{path}", notebook_json())
    assert code in (200, 201), (code, body)

