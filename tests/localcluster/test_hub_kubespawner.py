"""End to end: unmodified KubeSpawner under a real JupyterHub and configurable-http-proxy,
against the local cluster. A user's server starts as a pod, answers through the proxy, stops."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import socket
import sys
from pathlib import Path

import pytest
from lc_clustertools import alive, event_reasons, wait_for
from tornado.httpclient import AsyncHTTPClient

pytestmark = [pytest.mark.timeout(150), pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PROXY = REPO / "node_modules" / ".bin" / "configurable-http-proxy"

HUB_CONFIG = """
c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"
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
c.JupyterHub.services = [{{"name": "tester", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "tester", "services": ["tester"],
    "scopes": ["admin:users", "admin:servers", "access:servers", "read:users"]}}]
# The only KubeSpawner settings: the command (the local environment is the
# image, and it has no default CMD) and --allow-root (these machines run as root).
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
async def hub(cluster_factory, tmp_path):
    assert PROXY.exists(), "configurable-http-proxy is missing: run scripts/setup.sh"
    cluster = await cluster_factory()
    token = secrets.token_hex(16)
    proxy_port, hub_port, api_port = free_port(), free_port(), free_port()
    (tmp_path / "jupyterhub_config.py").write_text(HUB_CONFIG.format(
        proxy_port=proxy_port, hub_port=hub_port, proxy_api_port=api_port, proxy=str(PROXY), tmp=tmp_path,
        token=token, args=["--allow-root"] if os.geteuid() == 0 else []) + (
        PORT_FALLBACK.format(port=free_port()) if port_8888_taken() else ""))
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    log = open(tmp_path / "hub.log", "wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jupyterhub", "-f", str(tmp_path / "jupyterhub_config.py"), cwd=tmp_path, env=env,
        stdout=log, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{proxy_port}"
    http = AsyncHTTPClient()

    async def api(method: str, path: str, body=None):
        kw = {"body": json.dumps(body) if body is not None else ("" if method in ("POST",) else None)}
        resp = await http.fetch(f"{base}{path}", method=method, headers={"Authorization": f"token {token}"},
                                raise_error=False, allow_nonstandard_methods=True, request_timeout=30, **kw)
        return resp.code, (json.loads(resp.body) if resp.body and resp.headers.get(
            "Content-Type", "").startswith("application/json") else resp.body)

    up = False
    for _ in range(300):
        if proc.returncode is not None:
            break
        try:
            if (await api("GET", "/hub/api/"))[0] == 200:
                up = True
                break
        except OSError:
            pass
        await asyncio.sleep(0.1)
    try:
        assert up, "the hub did not come up:\n" + (tmp_path / "hub.log").read_text()[-3000:]
        yield cluster, api, tmp_path / "hub.log"
    finally:
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
        log.close()


async def test_a_users_server_starts_as_a_pod_answers_through_the_proxy_and_stops(hub):
    cluster, api, hub_log = hub
    store = cluster.store
    code, _ = await api("POST", "/hub/api/users/alice")
    assert code == 201
    code, _ = await api("POST", "/hub/api/users/alice/server")
    assert code in (201, 202), hub_log.read_text()[-3000:]

    async def ready() -> bool:
        code, user = await api("GET", "/hub/api/users/alice")
        server = (user.get("servers") or {}).get("")
        return bool(server and server.get("ready"))

    for _ in range(600):
        if await ready():
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the server never became ready:\n" + hub_log.read_text()[-4000:])

    pod = store.get("pods", "jupyter-alice", "default")
    ip = pod["status"]["podIP"]
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"].startswith("onprem-")
    assert ip.startswith("127.0.") and ip.split(".")[2] not in ("0", "1")
    assert {"Scheduled", "Created", "Started"} <= set(event_reasons(store, "jupyter-alice"))

    # Through the proxy, authenticated with the tester's token (access:servers).
    code, status = await api("GET", "/user/alice/api/status")
    assert code == 200, status
    assert "started" in status and "kernels" in status
    log = cluster._read_log("default", "jupyter-alice", "notebook")
    port = pod["spec"]["containers"][0]["ports"][0]["containerPort"]
    assert f"http://{ip}:{port}/user/alice/" in log  # jupyter-server says where it listens: the pod IP
    pid = int(pod["status"]["containerStatuses"][0]["containerID"].split("//")[1])
    assert alive(pid)

    code, _ = await api("DELETE", "/hub/api/users/alice/server")
    assert code in (202, 204)
    await wait_for(lambda: not store.list("pods", field_selector="metadata.name=jupyter-alice")[0],
                   timeout=40, what="the pod to be deleted")
    for _ in range(300):
        code, user = await api("GET", "/hub/api/users/alice")
        if not user.get("servers"):
            break
        await asyncio.sleep(0.1)
    assert not user.get("servers")
    assert not alive(pid)
    assert "Killing" in event_reasons(store, "jupyter-alice")
    assert "Traceback" not in hub_log.read_text(), hub_log.read_text()[-4000:]
