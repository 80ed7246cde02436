"""A real JupyterHub (+ configurable-http-proxy) against a local cluster, and a
notebook kernel driven through the hub's proxy over the real kernel websocket."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import socket
import sys
import uuid
from pathlib import Path

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

REPO = Path(__file__).resolve().parents[2]
PROXY = REPO / "node_modules" / ".bin" / "configurable-http-proxy"
SCOPES = ["list:users", "read:users", "servers", "access:servers"]

HUB_CONFIG = """
c.JupyterHub.authenticator_class = "dummy"
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {proxy_port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = "sqlite:///{tmp}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{tmp}/cookie_secret"
c.JupyterHub.pid_file = "{tmp}/jupyterhub.pid"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.services = [{{"name": "orchestrator", "api_token": {token!r}}},
                         {{"name": "tester", "api_token": {admin_token!r}}}]
c.JupyterHub.load_roles = [
    {{"name": "orchestrator", "services": ["orchestrator"], "scopes": {scopes!r}}},
    {{"name": "tester", "services": ["tester"],
      "scopes": ["admin:users", "admin:servers", "access:servers", "read:users"]}},
]
c.KubeSpawner.cmd = ["jupyterhub-singleuser"]
c.KubeSpawner.args = {args!r}
c.KubeSpawner.environment = {environment!r}
c.KubeSpawner.start_timeout = 120
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hub:
    def __init__(self, cluster, tmp: Path, extra_config: str = ""):
        self.cluster, self.tmp, self.extra_config = cluster, tmp, extra_config
        self.token, self.admin_token = secrets.token_hex(16), secrets.token_hex(16)
        self.proxy_port, self.hub_port, self.proxy_api_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.proxy_port}"
        self.api_url = f"{self.url}/hub/api"
        self.checkpoints = tmp / "checkpoints"
        self.log_path = tmp / "hub.log"
        self.http = AsyncHTTPClient()
        self.proc = None

    async def start(self) -> None:
        assert PROXY.exists(), "configurable-http-proxy is missing: run scripts/setup.sh"
        self.checkpoints.mkdir(exist_ok=True)
        environment = {"ELASTICHUB_CHECKPOINT_DIR": str(self.checkpoints), "ELASTICHUB_DISK_SPEED_MBPS": "500"}
        (self.tmp / "jupyterhub_config.py").write_text(HUB_CONFIG.format(
            proxy_port=self.proxy_port, hub_port=self.hub_port, proxy_api_port=self.proxy_api_port,
            proxy=str(PROXY), tmp=self.tmp, token=self.token, admin_token=self.admin_token, scopes=SCOPES,
            args=["--allow-root"] if os.geteuid() == 0 else [], environment=environment) + self.extra_config)
        env = {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        self._log = open(self.log_path, "wb")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "jupyterhub", "-f", str(self.tmp / "jupyterhub_config.py"), cwd=self.tmp,
            env=env, stdout=self._log, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        for _ in range(300):
            if self.proc.returncode is not None:
                break
            try:
                if (await self.api("GET", "/"))[0] == 200:
                    return
            except OSError:
                pass
            await asyncio.sleep(0.1)
        raise AssertionError("the hub did not come up:\n" + self.log()[-3000:])

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def api(self, method: str, path: str, body=None, token: str | None = None):
        url = path if path.startswith("http") else self.api_url + path
        data = json.dumps(body) if body is not None else ("" if method in ("POST", "PATCH") else None)
        resp = await self.http.fetch(HTTPRequest(url, method=method, body=data, allow_nonstandard_methods=True,
                                                 headers={"Authorization": f"token {token or self.admin_token}"},
                                                 request_timeout=60, follow_redirects=False), raise_error=False)
        payload = None
        if resp.body:
            try:
                payload = json.loads(resp.body)
            except ValueError:
                payload = resp.body
        return resp.code, payload

    async def server(self, user: str) -> dict | None:
        code, model = await self.api("GET", f"/users/{user}")
        return (model.get("servers") or {}).get("") if code == 200 else None

    async def start_server(self, user: str, timeout: float = 90) -> dict:
        await self.api("POST", f"/users/{user}")
        code, body = await self.api("POST", f"/users/{user}/server")
        assert code in (201, 202), (code, body, self.log()[-2000:])
        return await self.wait_ready(user, timeout)

    async def wait_ready(self, user: str, timeout: float = 90) -> dict:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            server = await self.server(user)
            if server and server.get("ready"):
                return server
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{user}'s server not ready within {timeout} s:\n{self.log()[-3000:]}")
            await asyncio.sleep(0.2)

    async def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 30)
            except asyncio.TimeoutError:
                os.killpg(self.proc.pid, signal.SIGKILL)
                await self.proc.wait()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the proxy, should the hub have left it
        except ProcessLookupError:
            pass
        self._log.close()


class Notebook:
    """One notebook of a user: a session through the hub's proxy, code run on
    its kernel over the kernel websocket, as JupyterLab does."""

    def __init__(self, hub: Hub, user: str, path: str = "work.ipynb", kernel: str = "elastic-python"):
        self.hub, self.user, self.path, self.kernel = hub, user, path, kernel
        self.base = f"{hub.url}/user/{user}"
        self.kernel_id = None
        self.ws = None

    async def open(self) -> "Notebook":
        home = self.hub.tmp  # pods run in the cluster's workdir: the notebook file lives there
        nb = Path(home) / self.path
        if not nb.exists():
            nb.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
        code, session = await self.hub.api("POST", f"{self.base}/api/sessions",
                                           {"path": self.path, "type": "notebook", "kernel": {"name": self.kernel}})
        assert code == 201, (code, session)
        self.kernel_id = session["kernel"]["id"]
        url = f"ws://127.0.0.1:{self.hub.proxy_port}/user/{self.user}/api/kernels/{self.kernel_id}/channels"
        self.ws = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {self.hub.admin_token}"}),
                                          max_message_size=64 << 20)
        return self

    def submit(self, code: str) -> str:
        """Send an execute_request; its msg_id (collect the outcome with `collect`)."""
        msg_id = uuid.uuid4().hex
        self.ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": self.user,
                       "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        return msg_id

    async def collect(self, msg_id: str, timeout: float = 120) -> dict:
        """{"status", "stdout", "result", "error"} of the cell `msg_id`, once the kernel is idle after it."""
        out = {"status": None, "stdout": "", "result": None, "error": None}
        idle = False
        while out["status"] is None or not idle:
            raw = await asyncio.wait_for(self.ws.read_message(), timeout)
            if raw is None:
                raise ConnectionError("the kernel websocket closed")
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content.get("name") == "stdout":
                out["stdout"] += content["text"]
            elif kind == "execute_result":
                out["result"] = content["data"].get("text/plain")
            elif kind == "error":
                out["error"] = f"{content['ename']}: {content['evalue']}"
            elif kind == "execute_reply":
                out["status"] = content["status"]
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
        return out

    async def run(self, code: str, timeout: float = 120) -> dict:
        return await self.collect(self.submit(code), timeout)

    async def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
            self.ws = None


# -- a cloud node with users on it -----------------------------------------------------------

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


async def users_on_cloud(cluster, hub, users, state: str = STATE) -> dict:
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
        nb = await Notebook(hub, user, f"{user}.ipynb").open()
        assert (await nb.run(state))["status"] == "ok"
        digests[user] = (await nb.run(DIGEST))["stdout"]
        assert len(digests[user].split()) == 3, digests[user]
        await nb.close()
    return digests


def orchestrator_config(cluster, hub: Hub, managed: bool = False) -> str:
    """The orchestrator's config file for this cluster and hub. `managed`: the
    hub runs it as a service and gives it its URL and token in the environment."""
    text = f"""
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
        text += f"c.ElasticOrchestrator.hub_api_url = {hub.api_url!r}\nc.ElasticOrchestrator.api_token = {hub.token!r}\n"
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

    async def start(self, *args: str) -> None:
        self.runs += 1
        self.log_path = self.tmp / f"orchestrator-{self.runs}.log"
        self._log = open(self.log_path, "wb")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "elastichub", "orchestrator", f"--config={self.config}", *args,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=self._log, stderr=asyncio.subprocess.STDOUT, start_new_session=True)

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
