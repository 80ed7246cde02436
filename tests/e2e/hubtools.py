"""A real JupyterHub + configurable-http-proxy against the local cluster, for
end-to-end tests (the spawner's and the orchestrator's), and a notebook
client that talks to a kernel through the hub's proxy, websocket included.

Use the `hub_factory` fixture (tests/e2e/conftest.py) rather than `Hub`
directly: it stops every hub it started.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tornado.httpclient import AsyncHTTPClient, HTTPRequest

from elastichub.demo.notebook import Notebook
from elastichub.demo.stage import free_port

REPO = Path(__file__).resolve().parents[2]
PROXY = REPO / "node_modules" / ".bin" / "configurable-http-proxy"

BASE_CONFIG = """
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
c.JupyterHub.services = [{{"name": "tester", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "tester", "services": ["tester"],
    "scopes": ["admin:users", "admin:servers", "admin:server_state", "access:servers", "read:users"]}}]
# The command (the local environment is the image, and it has no default
# CMD) and --allow-root (these machines run as root).
c.KubeSpawner.cmd = ["jupyterhub-singleuser"]
c.KubeSpawner.args = {args!r}
"""
# Pods share the host's network: should another process on this machine hold
# 0.0.0.0:8888 (KubeSpawner's default port), no pod could bind its IP on it.
PORT_FALLBACK = "c.KubeSpawner.port = {port}\n"




def port_8888_taken() -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.99.99", 8888))
            return False
        except OSError:
            return True


class Hub:
    """One JupyterHub process (and the proxy it starts), configured with
    BASE_CONFIG plus `extra_config`; a service token with admin scopes.
    `restart()` stops and starts the same hub (same database, same ports)."""

    def __init__(self, workdir: Path, kubeconfig: Path, extra_config: str = "",
                 spawner_class: str = "kubespawner.KubeSpawner", base_url: str = "/"):
        assert PROXY.exists(), "configurable-http-proxy is missing: run scripts/setup.sh"
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.token = secrets.token_hex(16)
        self.proxy_port = free_port()
        self.config_path = workdir / "jupyterhub_config.py"
        self.config_path.write_text(
            f"c.JupyterHub.spawner_class = {spawner_class!r}\n"
            + BASE_CONFIG.format(proxy_port=self.proxy_port, hub_port=free_port(), proxy_api_port=free_port(),
                                 proxy=str(PROXY), tmp=workdir, token=self.token,
                                 args=["--allow-root"] if os.geteuid() == 0 else [])
            + (PORT_FALLBACK.format(port=free_port()) if port_8888_taken() else "")
            + f"c.JupyterHub.base_url = {base_url!r}\n"
            + extra_config)
        # The hub's public URL, base_url included: /hub/api and /user/... hang off it.
        self.url = f"http://127.0.0.1:{self.proxy_port}" + base_url.rstrip("/")
        self.log_path = workdir / "hub.log"
        self.http = AsyncHTTPClient()
        self.proc: asyncio.subprocess.Process | None = None

    def log_text(self, tail: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    async def start(self, timeout: float = 60) -> None:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        with open(self.log_path, "ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "jupyterhub", "-f", str(self.config_path), cwd=self.workdir, env=env,
                stdout=log, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.returncode is None:
            try:
                if (await self.api("GET", "/hub/api/"))[0] == 200:
                    return
            except OSError:
                pass
            await asyncio.sleep(0.1)
        raise AssertionError("the hub did not come up:\n" + self.log_text())

    async def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except asyncio.TimeoutError:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the proxy, should the hub have left it
        except ProcessLookupError:
            pass

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    async def api(self, method: str, path: str, body: Any = None, timeout: float = 30,
                  token: str | None = None) -> tuple[int, Any]:
        """Call the hub (or, under /user/ and /services/, a server) through the
        proxy with the service token (or `token`); returns (status, JSON body or
        raw bytes). Redirects are answers too (a login redirect says "not allowed")."""
        data = json.dumps(body) if body is not None else ("" if method == "POST" else None)
        resp = await self.http.fetch(f"{self.url}{path}", method=method, body=data, raise_error=False,
                                     headers={"Authorization": f"token {token or self.token}"},
                                     allow_nonstandard_methods=True, request_timeout=timeout,
                                     follow_redirects=False)
        is_json = resp.headers.get("Content-Type", "").startswith("application/json")
        return resp.code, (json.loads(resp.body) if resp.body and is_json else resp.body)

    async def server(self, user: str, name: str = "") -> dict | None:
        code, model = await self.api("GET", f"/hub/api/users/{quote(user, safe='')}")
        assert code == 200, model
        return (model.get("servers") or {}).get(name)

    async def start_server(self, user: str, options: dict | None = None, timeout: float = 60,
                           name: str = "") -> dict:
        """Create the user if needed, start their default server (or the
        named server `name`), wait until it is ready."""
        await self.api("POST", f"/hub/api/users/{quote(user, safe='')}")
        path = f"/hub/api/users/{quote(user, safe='')}/servers/{quote(name, safe='')}" if name else f"/hub/api/users/{quote(user, safe='')}/server"
        code, body = await self.api("POST", path, options)
        assert code in (201, 202), (code, body, self.log_text())
        return await self.wait_server(user, ready=True, timeout=timeout, name=name)

    async def stop_server(self, user: str, timeout: float = 60) -> None:
        code, body = await self.api("DELETE", f"/hub/api/users/{quote(user, safe='')}/server")
        assert code in (202, 204), (code, body, self.log_text())
        await self.wait_server(user, ready=False, timeout=timeout)

    async def wait_server(self, user: str, ready: bool, timeout: float = 60, name: str = "") -> dict | None:
        """Wait until the server is ready (ready=True) or gone (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            server = await self.server(user, name)
            if ready and server and server.get("ready"):
                return server
            if not ready and not server:
                return None
            await asyncio.sleep(0.1)
        raise AssertionError(f"{user}'s server is not {'ready' if ready else 'stopped'} after {timeout} s:\n"
                             + self.log_text())

    async def spawner_state(self, user: str) -> dict:
        """The spawner's state as the hub stored it (admin:server_state): also
        readable once the server is stopped, from the hub's database."""
        code, model = await self.api("GET", f"/hub/api/users/{quote(user, safe='')}?include_stopped_servers=1")
        assert code == 200, model
        return ((model.get("servers") or {}).get("") or {}).get("state") or {}

    async def progress(self, user: str, timeout: float = 60) -> list[dict]:
        """Every event of GET /hub/api/users/NAME/server/progress (an event
        stream), until the ready or failed event."""
        events: list[dict] = []
        buffer = b""

        def on_chunk(chunk: bytes) -> None:
            nonlocal buffer
            buffer += chunk
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                for line in block.decode().splitlines():
                    if line.startswith("data:"):
                        events.append(json.loads(line[5:]))

        await self.http.fetch(HTTPRequest(
            f"{self.url}/hub/api/users/{quote(user, safe='')}/server/progress", headers={"Authorization": f"token {self.token}"},
            streaming_callback=on_chunk, request_timeout=timeout))
        return events


# ------------------------------------------------------------------------------------------- notebook


async def open_notebook(hub: Hub, user: str, path: str, kernel: str = "elastic-python",
                        server_name: str = "") -> Notebook:
    """The notebook at `path` on `user`'s server (or named server), opened as
    a JupyterLab tab does (the product's client), with the hub's service
    token. The same path finds the same checkpoint after a move."""
    return await Notebook(hub.url, user, hub.token, path, kernel, server_name=server_name).open()
