"""Pieces of the orchestrator's end-to-end tests, on top of hubtools: the
orchestrator's service account, users with state on a cloud node, and the
orchestrator as a process of its own."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import sys
from pathlib import Path

from hubtools import Hub, open_notebook

from elastichub.orchestrator.hub import HubClient

# The orchestrator's service account: exactly the role jupyterhub_config_example.py gives it.
ORCHESTRATOR_TOKEN = secrets.token_hex(16)
ORCHESTRATOR_SCOPES = ["list:users", "read:users", "servers", "access:servers", "admin:server_state", "tokens"]
ORCHESTRATOR_SERVICE = f"""
c.JupyterHub.services.append({{"name": "orchestrator", "api_token": {ORCHESTRATOR_TOKEN!r}}})
c.JupyterHub.load_roles.append({{"name": "orchestrator", "services": ["orchestrator"],
                                "scopes": {ORCHESTRATOR_SCOPES!r}}})
c.Spawner.poll_interval = 1  # the hub checks every server each second: a move must never look like a stop
c.KubeSpawner.mem_guarantee = "2G"
c.KubeSpawner.cpu_guarantee = 0.1
import os
c.KubeSpawner.environment = {{"ELASTICHUB_CHECKPOINT_DIR": os.path.join(os.getcwd(), "checkpoints", "{{username}}"),
                              "ELASTICHUB_DISK_SPEED_MBPS": "500"}}
"""


def hub_client(hub: Hub) -> HubClient:
    """The orchestrator's adapter for this hub, with the orchestrator's token."""
    return HubClient(f"{hub.url}/hub/api", hub.url, ORCHESTRATOR_TOKEN)


# State a student builds: random arrays, a DataFrame, a function.
STATE = """
import numpy as np, pandas as pd, hashlib
rng = np.random.default_rng()
a = rng.random((300, 200))
df = pd.DataFrame({"x": rng.integers(0, 100, 500), "y": rng.random(500)})
def f(v):
    return v * 3 + len(df)
"""
DIGEST = "print(hashlib.sha256(a.tobytes()).hexdigest(), hashlib.sha256(df.to_json().encode()).hexdigest(), f(7))"


def filler(memory: str, node: str = "onprem-1") -> dict:
    """A pod that only holds `memory` on `node` (load that is not a user's server)."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "filler", "namespace": "default"},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": "local",
                                     "command": [sys.executable, "-c", "import time; time.sleep(3600)"],
                                     "resources": {"requests": {"cpu": "100m", "memory": memory}}}]},
            "status": {"phase": "Pending"}}


async def boot(cluster, name: str) -> None:
    """Start a cloud node's VM through the local cluster's libcloud driver; wait until it is Ready."""
    from podtools import until

    driver = cluster.cloud_driver()
    vm = next(v for v in await asyncio.to_thread(driver.list_nodes) if v.id == name)
    await asyncio.to_thread(driver.start_node, vm)
    await until(lambda: any(c["type"] == "Ready" and c["status"] == "True"
                            for c in cluster.store.get("nodes", name)["status"]["conditions"]), what=f"{name} Ready")


async def users_on_cloud(cluster, hub: Hub, users, state: str = STATE) -> dict:
    """On-prem filled, cloud-1 booted, each user's server on cloud-1 with
    STATE built in `<user>.ipynb`; returns each user's DIGEST output."""
    from podtools import node_of, until

    cluster.store.create("pods", filler("7Gi"))
    await until(lambda: cluster.store.get("pods", "filler", "default")["status"].get("phase") == "Running",
                what="filler running")
    await boot(cluster, "cloud-1")
    digests = {}
    for user in users:
        await hub.start_server(user)
        assert node_of(cluster.store, f"jupyter-{user}") == "cloud-1"
        nb = await open_notebook(hub, user, f"{user}.ipynb")
        assert (await nb.run(state))["status"] == "ok"
        digests[user] = (await nb.run(DIGEST))["stdout"]
        assert len(digests[user].split()) == 3, digests[user]
        nb.close()
    return digests


async def run_until_vm_stopped(ctl, vm: str = "cloud-1", timeout: float = 180):
    """Run the controller's loop until `vm`'s VM has stopped (then stop the loop)."""
    from podtools import until

    from elastichub.localcluster.cloud import STOPPED

    loop = asyncio.create_task(ctl.run())
    try:
        async def vm_stopped():
            return any(v.id == vm and v.state == STOPPED for v in await ctl.cloud.list())
        await until(vm_stopped, timeout=timeout, step=0.5, what=f"{vm}'s VM stopped")
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)


async def drain_cloud_1(cluster, hub: Hub, wire, move_method: str):
    """The controller (policy "elastic", short Tmon/Tcool, the hub's own
    adapter) run until cloud-1's VM has stopped; returns it for its moves."""
    from elastichub.orchestrator.drain import DrainTimeouts
    from elastichub.policy import PolicyConfig, make_strategy

    strategy = make_strategy("elastic", PolicyConfig(theta_out=80, tmon=0.5, tcool=5))
    ctl = await wire(cluster, strategy, hub=hub_client(hub), tmon=0.5, move_method=move_method,
                     drain=DrainTimeouts(busy=30, stop=60, start=90, poll=0.2, route=5, freeze_lease=30))
    await run_until_vm_stopped(ctl)
    return ctl


def orchestrator_config(cluster, hub: Hub, managed: bool = False, move_method: str = "restart") -> str:
    """The orchestrator's config file for this cluster and hub. `managed`: the
    hub runs it as a service and gives it its URL and token in the environment.
    `move_method`: these tests pin the method they test (the default is live)."""
    text = f"""
c.ElasticOrchestrator.move_method = {move_method!r}
c.ElasticOrchestrator.policy = "elastic"
c.ElasticOrchestrator.theta_out = 80
c.ElasticOrchestrator.tmon = 0.5
c.ElasticOrchestrator.tcool = 1
c.ElasticOrchestrator.kubeconfig = {str(cluster.kubeconfig)!r}
c.ElasticOrchestrator.cloud_driver = "elastichub.localcluster.cloud:LocalClusterNodeDriver"
c.ElasticOrchestrator.cloud_driver_kwargs = {{"host": "127.0.0.1", "port": {cluster.port}}}
c.ElasticOrchestrator.proxy_url = {hub.url!r}
c.ElasticOrchestrator.busy_timeout = 30
"""
    if not managed:
        text += (f"c.ElasticOrchestrator.hub_api_url = {hub.url + '/hub/api'!r}\n"
                 f"c.ElasticOrchestrator.api_token = {ORCHESTRATOR_TOKEN!r}\n")
    return text


class OrchestratorProcess:
    """`elastichub orchestrator` as its own process (as a hub would run it),
    configured by a config file; SIGKILL-able."""

    def __init__(self, cluster, hub: Hub, tmp: Path, extra: str = ""):
        self.config = tmp / "elastichub_orchestrator_config.py"
        self.config.write_text(orchestrator_config(cluster, hub) + extra)
        self.tmp = tmp
        self.runs = 0
        self.proc = None
        self.env: dict[str, str] = {}  # added to the process's environment

    async def start(self, *args: str) -> None:
        self.runs += 1
        self.log_path = self.tmp / f"orchestrator-{self.runs}.log"
        self._log = open(self.log_path, "wb")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "elastichub", "orchestrator", f"--config={self.config}", *args,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env}, stdout=self._log,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True)

    def log(self) -> str:
        return "".join((self.tmp / f"orchestrator-{i}.log").read_text(errors="replace")
                       for i in range(1, self.runs + 1))

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()
        self._log.close()

    async def stop(self) -> int:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 20)
            except asyncio.TimeoutError:
                await self.kill()
        self._log.close()
        return self.proc.returncode
