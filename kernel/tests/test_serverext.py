"""The checkpoint endpoint, end to end: a real `jupyter server` process on
loopback, enabled by the config file our installer writes, with real stock and
Elastic kernels started through the server's own REST API."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from jupyter_client import BlockingKernelClient

from elastichub_kernel.serverext import normalize_checkpoint_reply

pytestmark = pytest.mark.timeout(180)


def _free_port() -> int:
    """A port nobody listens on now, and not one handed out before in this
    process: a hub takes three at once, and the kernel can give the same
    free port to two binds in a row (then the proxy's API port was its
    public one, and the hub never came up)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


_GIVEN: set[int] = set()


class JupyterServer:
    """A `jupyter server` subprocess with isolated Jupyter paths.

    The kernelspec and the server-extension config come from
    ``python -m elastichub_kernel install --prefix``: nothing here enables the
    extension by hand, so these tests also prove the install enables it.
    """

    def __init__(self, base: Path):
        self.base = base
        self.root = base / "notebooks"
        self.runtime = base / "runtime"
        self.checkpoints = base / "checkpoints"
        prefix = base / "prefix"
        for d in (self.root, self.runtime, self.checkpoints):
            d.mkdir(parents=True, exist_ok=True)
        self.token = secrets.token_hex(16)
        self.env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(base / "config"),
            "JUPYTER_DATA_DIR": str(base / "data"),
            "JUPYTER_RUNTIME_DIR": str(self.runtime),
            "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
            "JUPYTER_CONFIG_PATH": str(prefix / "etc" / "jupyter"),
            "JUPYTER_PLATFORM_DIRS": "1",
            "ELASTICHUB_CHECKPOINT_DIR": str(self.checkpoints),
            # A fixed disk speed keeps the kernels off the background probe.
            "ELASTICHUB_DISK_SPEED_MBPS": "500",
        }
        if not (prefix / "share" / "jupyter" / "kernels" / "elastic-python").exists():
            subprocess.run(
                [sys.executable, "-m", "elastichub_kernel", "install", "--prefix", str(prefix)],
                env=self.env, check=True, capture_output=True,
            )
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self, *args: str) -> "JupyterServer":
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(self.base / f"server-{port}.log", "wb")
        cmd = [
            sys.executable, "-m", "jupyter_server",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
            "--ServerApp.open_browser=False", *args,
        ]
        if os.getuid() == 0:
            cmd.append("--allow-root")
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter server exited: {self.read_log()[-3000:]}")
            try:
                self.request("GET", "/api/status")
                return self
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("jupyter server did not answer within 60 s")

    def read_log(self) -> str:
        self.log.flush()
        return (self.base / Path(self.log.name).name).read_text(errors="replace")

    def stop(self) -> None:
        # SIGTERM, as a pod stop does: the server shuts its kernels down.
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()

    def request(self, method: str, path: str, body=None, token: str | None = "default",
                raw: bytes | None = None, timeout: float = 120):
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if token == "default":
            token = self.token
        if token:
            req.add_header("Authorization", f"token {token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")

    def error(self, method: str, path: str, **kw) -> tuple[int, dict]:
        with pytest.raises(urllib.error.HTTPError) as info:
            self.request(method, path, **kw)
        return info.value.code, json.loads(info.value.read() or b"null")

    def start_kernel(self, name: str) -> str:
        status, model = self.request("POST", "/api/kernels", {"name": name})
        assert status == 201, model
        return model["id"]

    def start_session(self, path: str, kernel: str = "elastic-python") -> str:
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_text(json.dumps(_EMPTY_NOTEBOOK))
        status, model = self.request(
            "POST", "/api/sessions", {"path": path, "type": "notebook", "kernel": {"name": kernel}}
        )
        assert status == 201, model
        return model["kernel"]["id"]

    def client(self, kernel_id: str) -> BlockingKernelClient:
        client = BlockingKernelClient(connection_file=str(self.runtime / f"kernel-{kernel_id}.json"))
        client.load_connection_file()
        client.start_channels()
        client.wait_for_ready(timeout=60)
        return client


_EMPTY_NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def ok_cell(run_cell, client, code: str, timeout: float = 120) -> str:
    """Run a cell (conftest's run_cell); fail on an error; return its stdout."""
    out = run_cell(client, code, timeout=timeout)
    assert out["error"] is None and out["reply"]["status"] == "ok", out
    return out["stdout"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = JupyterServer(tmp_path_factory.mktemp("jupyter"))
    srv.start()
    yield srv
    srv.stop()


# -- endpoint contract, independent of the kernel ---------------------------

def test_a_malformed_kernel_reply_is_a_failed_checkpoint_naming_each_field():
    result = normalize_checkpoint_reply(
        "k1", "elastic-python",
        {"ok": "yes", "bytes": "12", "migrated": [1], "not_restorable": [{"reason": "no name"}]},
    )
    assert result["ok"] is False
    for field in ("'ok' is not a boolean", "'bytes' is not an integer", "'migrated' is not a list of names",
                  "'not_restorable' is not a list of {name, reason}"):
        assert field in result["error"]


def test_the_kernels_warning_is_passed_on_and_a_malformed_one_named():
    reply = {"status": "ok", "ok": True, "bytes": 10, "seconds": 0.1, "migrated": ["x"], "recomputed": [],
             "not_restorable": [], "path": "/p", "warning": "another kernel of this notebook saved here too"}
    assert normalize_checkpoint_reply("k1", "elastic-python", reply)["warning"] == reply["warning"]
    result = normalize_checkpoint_reply("k1", "elastic-python", {**reply, "warning": ["not", "text"]})
    assert result["ok"] is False and "'warning' is not a string" in result["error"]


def test_a_restart_moves_hold_is_passed_on():
    reply = {"status": "ok", "ok": True, "bytes": 10, "seconds": 0.1, "migrated": ["x"], "recomputed": [],
             "not_restorable": [], "path": "/p", "held_s": 60.0}
    assert normalize_checkpoint_reply("k1", "elastic-python", reply)["held_s"] == 60.0


def test_a_failed_kernel_checkpoint_keeps_the_kernels_reason():
    reply = {"status": "error", "ok": False, "bytes": 0, "seconds": 0.0, "migrated": [], "recomputed": [],
             "not_restorable": [], "path": "", "error": "a cell is still running after 30 s"}
    result = normalize_checkpoint_reply("k1", "elastic-python", reply)
    assert result["ok"] is False and result["error"] == "a cell is still running after 30 s"
    # "ok" alone is not enough: a reply saying status "error" is a failure.
    result = normalize_checkpoint_reply("k1", "elastic-python", {**reply, "ok": True})
    assert result["ok"] is False



def test_installed_config_enables_the_extension(server):
    status, body = server.request("GET", "/api/elastichub/status")
    assert status == 200
    assert body["version"]
    assert body["checkpoint_timeout"] > 0


@pytest.mark.parametrize("token", [None, "not-the-token"])
def test_endpoints_refuse_requests_without_the_server_token(server, token):
    for method, path in (("GET", "/api/elastichub/status"), ("POST", "/api/elastichub/checkpoint")):
        code, _ = server.error(method, path, token=token, raw=b"{}" if method == "POST" else None)
        assert code == 403


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "must be a JSON object"),
        (b'{"kernel_id": 7}', "'kernel_id' must be a non-empty string"),
        (b'{"kernel": "x"}', "unknown field(s) in the request body: kernel"),
        (b'{"hold_s": -1}', "'hold_s' must be a non-negative number of seconds"),
    ],
)
def test_bad_request_bodies_get_a_400_naming_the_problem(server, raw, message):
    code, body = server.error("POST", "/api/elastichub/checkpoint", raw=raw)
    assert code == 400
    assert message in body["message"]


def test_unknown_kernel_id_is_a_404(server):
    code, body = server.error("POST", "/api/elastichub/checkpoint", body={"kernel_id": "no-such-kernel"})
    assert code == 404
    assert "no-such-kernel" in body["message"]
    code, _ = server.error("GET", "/api/elastichub/status?kernel_id=no-such-kernel")
    assert code == 404


def test_a_stock_kernel_is_refused_with_a_reason(server):
    kernel_id = server.start_kernel("python3")
    try:
        status, results = server.request("POST", "/api/elastichub/checkpoint", {"kernel_id": kernel_id})
        assert status == 200
        [result] = results
        assert result["kernel_id"] == kernel_id
        assert result["ok"] is False
        assert "not an Elastic Python kernel" in result["error"]
        _, status_body = server.request("GET", f"/api/elastichub/status?kernel_id={kernel_id}")
        [entry] = status_body["kernels"]
        assert entry["elastic"] is False and entry["status"] is None
    finally:
        server.request("DELETE", f"/api/kernels/{kernel_id}")


def test_status_can_say_what_each_kernel_is_without_asking_it(server):
    """The orchestrator asks before a drain; asked, a kernel running a cell answered only once it ended,
    so a drain began after the student's cell instead of waiting for it within busy_timeout."""
    stock = server.start_kernel("python3")
    elastic = server.start_session("kinds.ipynb")
    try:
        _, body = server.request("GET", "/api/elastichub/status?ask_kernels=0")
        by_id = {k["kernel_id"]: k for k in body["kernels"]}
        assert by_id[stock]["elastic"] is False and by_id[elastic]["elastic"] is True, by_id
        assert by_id[elastic]["status"] is None, "the kernel must not be asked"
        _, body = server.request("GET", f"/api/elastichub/status?kernel_id={elastic}")
        assert body["kernels"][0]["status"]["status"] == "ok"  # asked by default, as before
    finally:
        server.request("DELETE", f"/api/kernels/{stock}")
        server.request("DELETE", f"/api/kernels/{elastic}")


def test_a_stock_kernel_is_answered_in_a_list_with_every_other_kernel(server):
    stock = server.start_kernel("python3")
    elastic = server.start_session("mixed.ipynb")
    try:
        status, results = server.request("POST", "/api/elastichub/checkpoint")
        assert status == 200
        by_id = {r["kernel_id"]: r for r in results}
        assert set(by_id) >= {stock, elastic}
        assert by_id[stock]["ok"] is False and "not an Elastic Python kernel" in by_id[stock]["error"]
        assert by_id[elastic]["ok"] is True, by_id[elastic]
        assert "error" not in by_id[elastic]
    finally:
        server.request("DELETE", f"/api/kernels/{stock}")
        server.request("DELETE", f"/api/kernels/{elastic}")


# -- with real Elastic kernels -----------------------------------------------

def test_checkpoint_of_an_elastic_kernel_reports_what_it_wrote(server, run_cell):
    kernel_id = server.start_session("work/analysis.ipynb")
    client = server.client(kernel_id)
    try:
        ok_cell(run_cell, client, "import threading\nsquares = [i * i for i in range(1000)]\n"
                                  "config = {'alpha': 0.5}\nlock = threading.Lock(); lock.acquire()")
        status, [result] = server.request("POST", "/api/elastichub/checkpoint", {"kernel_id": kernel_id})
        assert status == 200
        assert result["ok"] is True, result
        assert result["kernel_id"] == kernel_id and result["kernel_name"] == "elastic-python"
        assert result["bytes"] > 0 and result["seconds"] >= 0
        assert {"squares", "config"} <= set(result["migrated"]) | set(result["recomputed"])
        # The unpicklable lock is named, with a reason, and the rest is kept.
        [lock] = [v for v in result["not_restorable"] if v["name"] == "lock"]
        assert lock["reason"]
        assert Path(result["path"]).is_file()
        assert Path(result["path"]).resolve().is_relative_to(server.checkpoints.resolve())
        # Nothing ran since: the same checkpoint is confirmed, not rewritten.
        _, [again] = server.request("POST", "/api/elastichub/checkpoint", {"kernel_id": kernel_id})
        assert again["ok"] is True and again["unchanged"] is True

        _, body = server.request("GET", f"/api/elastichub/status?kernel_id={kernel_id}")
        [entry] = body["kernels"]
        assert entry["elastic"] is True and entry["checkpointing"] is False
        assert entry["status"]["status"] == "ok"
        assert entry["status"]["last_checkpoint"]["path"] == result["path"]
    finally:
        client.stop_channels()
        server.request("DELETE", f"/api/kernels/{kernel_id}")


def test_a_kernel_restarted_by_the_user_is_still_reachable(server, run_cell):
    # "Restart kernel" replaces the process behind the same kernel id: the
    # endpoint must talk to the new one (a fresh client per request).
    kernel_id = server.start_session("restarted.ipynb")
    try:
        status, _ = server.request("POST", f"/api/kernels/{kernel_id}/restart")
        assert status == 200
        client = server.client(kernel_id)
        ok_cell(run_cell, client, "after_restart = 42")
        client.stop_channels()
        _, [result] = server.request("POST", "/api/elastichub/checkpoint", {"kernel_id": kernel_id})
        assert result["ok"] is True, result
        assert "after_restart" in result["migrated"]
    finally:
        server.request("DELETE", f"/api/kernels/{kernel_id}")


def test_concurrent_requests_for_one_kernel_write_its_state_once(server, run_cell):
    kernel_id = server.start_session("concurrent.ipynb")
    client = server.client(kernel_id)
    try:
        ok_cell(run_cell, client, "blob = bytes(64 * 2**20)")
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(
                lambda _: server.request("POST", "/api/elastichub/checkpoint", {"kernel_id": kernel_id}), range(2)))
        results = [result for _, [result] in answers]
        assert all(r["ok"] for r in results), results
        # One wrote; the other, served after it, found nothing new to write.
        assert sorted(r["unchanged"] for r in results) == [False, True]
        assert len({r["path"] for r in results}) == 1
    finally:
        client.stop_channels()
        server.request("DELETE", f"/api/kernels/{kernel_id}")


def test_a_kernel_dying_during_its_checkpoint_is_reported_not_waited_for(server, run_cell):
    kernel_id = server.start_session("crash.ipynb")
    client = server.client(kernel_id)
    try:
        ok_cell(run_cell, client, "data = list(range(100))")
        # The checkpoint waits for this cell, and the kernel dies under it;
        # the server's restarter then starts a new kernel, which never saw
        # the request: it must not be waited on for checkpoint_timeout.
        client.execute("import os, time\nprint('started', flush=True)\ntime.sleep(2)\nos._exit(1)")
        while True:  # the cell must hold the kernel before the request comes
            msg = client.get_iopub_msg(timeout=60)
            if msg["msg_type"] == "stream" and "started" in msg["content"]["text"]:
                break
        _, [result] = server.request("POST", "/api/elastichub/checkpoint", {"kernel_id": kernel_id})
        assert result["ok"] is False
        assert result["error"] == "the kernel died before answering elastichub_checkpoint_request"
    finally:
        client.stop_channels()
        server.request("DELETE", f"/api/kernels/{kernel_id}")


def test_a_kernel_that_never_answers_times_out_with_a_clear_error(tmp_path, server):
    # A spec that claims to be elastic but runs stock ipykernel, which drops
    # unknown control messages: the request must end at the configured
    # timeout, naming it, instead of hanging.
    liar = tmp_path / "prefix" / "share" / "jupyter" / "kernels" / "liar"
    liar.mkdir(parents=True)
    (liar / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "liar", "language": "python",
        "metadata": {"elastichub": {"checkpoint": True}},
    }))
    srv = JupyterServer(tmp_path)
    srv.start("--ElasticHubExtension.checkpoint_timeout=1", "--ElasticHubExtension.status_timeout=0.5")
    try:
        kernel_id = srv.start_kernel("liar")
        _, [result] = srv.request("POST", "/api/elastichub/checkpoint", {"kernel_id": kernel_id})
        assert result["ok"] is False
        assert result["error"] == "no elastichub_checkpoint_request reply within 1 s"
        _, body = srv.request("GET", "/api/elastichub/status")
        assert body["checkpoint_timeout"] == 1
        [entry] = body["kernels"]
        assert entry["error"] == "no elastichub_status_request reply within 0.5 s"
    finally:
        srv.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_2gb_state_survives_stop_and_start_through_the_endpoint(tmp_path, run_cell):
    srv = JupyterServer(tmp_path)
    # CRC-32 of all 2 GiB: catches any changed byte, at a fraction of a hash's cost.
    digest_cell = "print(zlib.crc32(memoryview(x).cast('B')))"
    try:
        srv.start()
        kernel_id = srv.start_session("big/state.ipynb")
        client = srv.client(kernel_id)
        # Seeded randomness: a kernel must migrate it, never re-run it.
        before = ok_cell(run_cell, client, "import zlib, numpy as np\n"
                         "x = np.random.default_rng(2024).random(2**28)  # 2 GiB\n" + digest_cell).strip()
        client.stop_channels()
        status, [result] = srv.request("POST", "/api/elastichub/checkpoint", {"kernel_id": kernel_id}, timeout=600)
        assert status == 200 and result["ok"] is True, result
        assert "x" in result["migrated"]
        assert result["bytes"] >= 2 * 2**30
        # Stop the whole server, as the orchestrator stops the pod.
        srv.stop()
        assert Path(result["path"]).is_file()

        srv.start()
        kernel_id = srv.start_session("big/state.ipynb")
        client = srv.client(kernel_id)
        after = ok_cell(run_cell, client, "print(x.dtype, x.shape)\n" + digest_cell, timeout=300)
        client.stop_channels()
        assert after.splitlines() == ["float64 (268435456,)", before]
    finally:
        srv.stop()


def test_terminals_report_the_processes_their_shell_started(server):
    """A silent command in a terminal shows no activity: the endpoint names
    it, so a move can wait for it (and the token is required, as for
    Jupyter's own terminal API)."""
    import asyncio

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    status, model = server.request("POST", "/api/terminals", {})
    assert status == 200
    name = model["name"]

    async def type_in(text):
        ws = await websocket_connect(HTTPRequest(f"{server.url.replace('http', 'ws', 1)}/terminals/websocket/{name}",
                                                 headers={"Authorization": f"token {server.token}"}))
        ws.write_message(json.dumps(["stdin", text]))
        await asyncio.sleep(0.2)
        ws.close()

    def running():
        _, body = server.request("GET", "/api/elastichub/terminals")
        return [p["command"] for t in body if t["name"] == name for p in t["processes"]]

    def until(predicate):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            found = running()
            if predicate(found):
                return found
            time.sleep(0.1)
        raise AssertionError(f"terminal {name} runs {running()}")

    try:
        asyncio.run(type_in("sleep 321\r"))
        assert until(lambda found: "sleep 321" in found) == ["sleep 321"]
        asyncio.run(type_in("\x03"))  # Ctrl-C: back at the prompt
        until(lambda found: found == [])
        code, _ = server.error("GET", "/api/elastichub/terminals", token=None)
        assert code == 403
    finally:
        server.request("DELETE", f"/api/terminals/{name}")
