"""The checkpoint endpoint behind a real JupyterHub: the hub's API token (a
service with access:servers, as the orchestrator holds) works through the
proxy and the single-user server, and other tokens are refused."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_serverext import _free_port

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PROXY = REPO / "node_modules" / ".bin" / "configurable-http-proxy"

HUB_CONFIG = """
c.JupyterHub.authenticator_class = "dummy"
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {home!r}
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.args = {args!r}
c.Spawner.environment = {environment!r}
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
c.JupyterHub.services = [
    {{"name": "orchestrator", "api_token": {token!r}}},
    {{"name": "bystander", "api_token": {other_token!r}}},
]
c.JupyterHub.load_roles = [
    {{"name": "orchestrator", "services": ["orchestrator"],
      "scopes": ["admin:users", "admin:servers", "access:servers", "read:users"]}},
    {{"name": "bystander", "services": ["bystander"], "scopes": ["read:users"]}},
]
"""


def _call(url: str, token: str | None, method: str = "GET", body=None, timeout: float = 120):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", f"token {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        raw = resp.read()
        return resp.status, json.loads(raw) if raw else None


def _wait(what: str, check, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.3)
    raise AssertionError(f"{what}: not within {timeout} s")


@pytest.fixture
def hub(tmp_path):
    assert PROXY.exists(), "configurable-http-proxy is missing: run scripts/setup.sh"
    prefix = tmp_path / "prefix"
    subprocess.run([sys.executable, "-m", "elastichub_kernel", "install", "--prefix", str(prefix)],
                   check=True, capture_output=True)
    token, other = secrets.token_hex(16), secrets.token_hex(16)
    ports = {"proxy_port": _free_port(), "hub_port": _free_port(), "proxy_api_port": _free_port()}
    environment = {
        "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
        "JUPYTER_CONFIG_PATH": str(prefix / "etc" / "jupyter"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "ELASTICHUB_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
        "ELASTICHUB_DISK_SPEED_MBPS": "500",
    }
    (tmp_path / "jupyterhub_config.py").write_text(HUB_CONFIG.format(
        home=str(tmp_path / "home" / "{username}"),
        singleuser=str(Path(sys.executable).parent / "jupyterhub-singleuser"),
        args=["--allow-root"] if os.geteuid() == 0 else [], environment=environment, proxy=str(PROXY),
        tmp=tmp_path, token=token, other_token=other, **ports))
    (tmp_path / "home" / "alice").mkdir(parents=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    log = open(tmp_path / "hub.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(tmp_path / "jupyterhub_config.py")],
                            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{ports['proxy_port']}"
    try:
        _wait("hub API", lambda: _call(f"{url}/hub/api/", token)[0] == 200)
        yield url, token, other, tmp_path
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def test_the_hub_token_checkpoints_through_the_single_user_server(hub):
    url, token, other, tmp = hub
    assert _call(f"{url}/hub/api/users/alice", token, "POST")[0] == 201
    assert _call(f"{url}/hub/api/users/alice/server", token, "POST")[0] in (201, 202)
    _wait("alice's server", lambda: _call(f"{url}/hub/api/users/alice", token)[1]["servers"][""]["ready"])

    server = f"{url}/user/alice"
    notebook = tmp / "home" / "alice" / "work.ipynb"
    notebook.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    status, session = _call(f"{server}/api/sessions", token, "POST",
                            {"path": "work.ipynb", "type": "notebook", "kernel": {"name": "elastic-python"}})
    assert status == 201
    kernel_id = session["kernel"]["id"]

    status, [result] = _call(f"{server}/api/elastichub/checkpoint", token, "POST", {"kernel_id": kernel_id})
    assert status == 200
    assert result["ok"] is True, result
    assert result["kernel_id"] == kernel_id
    # The kernel answered through the hub's token. It ran no cell, so it has
    # nothing to save and writes no file (a file would only make the next
    # start take the restore path).
    assert result["unchanged"] is True and result["path"] == "" and result["bytes"] == 0
    assert not list((tmp / "checkpoints").rglob("checkpoint.ehk"))
    status, body = _call(f"{server}/api/elastichub/status", token)
    assert [k["kernel_id"] for k in body["kernels"]] == [kernel_id]

    # A token without access to alice's server, and no token at all, are refused.
    for bad in (other, None):
        with pytest.raises(urllib.error.HTTPError) as refused:
            _call(f"{server}/api/elastichub/checkpoint", bad, "POST", {})
        assert refused.value.code == 403
    assert _call(f"{url}/hub/api/users/alice/server", token, "DELETE")[0] in (202, 204)
