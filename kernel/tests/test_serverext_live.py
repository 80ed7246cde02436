"""Live migration through the server extension: two real `jupyter server`
processes sharing the notebooks and checkpoints (as two pods share the
home volume); the second adopts the first's session under the same ids."""

from __future__ import annotations

import json
import time

import pytest
from test_serverext import JupyterServer, ok_cell

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def _destination(base, source: JupyterServer, sessions: list) -> JupyterServer:
    dst = JupyterServer(base)
    dst.root, dst.checkpoints = source.root, source.checkpoints  # the shared home
    dst.env["ELASTICHUB_CHECKPOINT_DIR"] = str(source.checkpoints)
    dst.env["ELASTICHUB_ADOPT_SESSIONS"] = json.dumps(sessions)
    return dst


def _wait_adopted(server: JupyterServer, timeout: float = 90) -> list:
    deadline = time.monotonic() + timeout
    while True:
        _, body = server.request("GET", "/api/elastichub/status")
        adopted = body["adopted"]
        if adopted and all(a["state"] != "starting" for a in adopted):
            return adopted
        assert time.monotonic() < deadline, (adopted, server.read_log()[-4000:])
        time.sleep(0.3)


def test_live_move_between_two_servers(tmp_path, run_cell):
    src = JupyterServer(tmp_path / "a").start()
    dst = None
    try:
        kernel_id = src.start_session("work/moving.ipynb")
        client = src.client(kernel_id)
        ok_cell(run_cell, client, "import numpy as np\narr = np.arange(10_000)\nnote = 'before'\ngone = 1")
        _, [pre] = src.request("POST", "/api/elastichub/live", {"phase": "precopy", "kernel_id": kernel_id})
        assert pre["ok"] is True and pre["kernel_id"] == kernel_id and pre["base_id"], pre

        _, sessions = src.request("GET", "/api/sessions")
        dst = _destination(tmp_path / "b", src, sessions).start()
        [adopted] = _wait_adopted(dst)
        assert adopted["state"] == "ready" and adopted["error"] is None, adopted
        assert (adopted["session_id"], adopted["kernel_id"]) == (sessions[0]["id"], kernel_id)
        assert adopted["restored_base_id"] == pre["base_id"]
        _, moved = dst.request("GET", "/api/sessions")
        assert [(s["id"], s["path"], s["kernel"]["id"]) for s in moved] == \
            [(s["id"], s["path"], s["kernel"]["id"]) for s in sessions]
        _, kernels = dst.request("GET", "/api/kernels")
        assert [k["id"] for k in kernels] == [kernel_id]

        ok_cell(run_cell, client, "arr[0] = -1\nnote = 'after'\ndel gone\nnew = [1, 2]")
        client.stop_channels()
        _, [frozen] = src.request("POST", "/api/elastichub/live",
                                  {"phase": "freeze", "kernel_id": kernel_id, "wait_s": 5, "lease_s": 60})
        assert frozen["ok"] is True and frozen["phase"] == "freeze" and frozen["delta_id"], frozen
        _, [applied] = dst.request("POST", "/api/elastichub/live",
                                   {"phase": "apply", "kernel_id": kernel_id, "delta_id": frozen["delta_id"]})
        assert applied["ok"] is True, applied
        _, [retired] = src.request("POST", "/api/elastichub/live", {"phase": "retire"})  # every kernel
        assert retired["ok"] is True and retired["kernel_id"] == kernel_id

        client = dst.client(kernel_id)
        out = ok_cell(run_cell, client, "print(arr[:2].tolist(), note, new, 'gone' in globals())")
        assert out.strip() == "[-1, 1] after [1, 2] False"
        client.stop_channels()
    finally:
        if dst is not None:
            dst.stop()
        src.stop()


def test_live_endpoint_refuses_malformed_requests_and_stock_kernels(tmp_path):
    srv = JupyterServer(tmp_path).start()
    try:
        code, body = srv.error("POST", "/api/elastichub/live", body={"phase": "melt"})
        assert code == 400 and "'phase' must be one of precopy, freeze, retire, thaw, apply" in body["message"]
        code, body = srv.error("POST", "/api/elastichub/live", body={"phase": "freeze", "lease": 3})
        assert code == 400 and "unknown field(s) in the request body: lease" in body["message"]
        code, body = srv.error("POST", "/api/elastichub/live", body={"phase": "freeze", "wait_s": "x"})
        assert code == 400 and "'wait_s'" in body["message"]
        code, body = srv.error("POST", "/api/elastichub/live", body={"phase": "thaw", "abandon": "yes"})
        assert code == 400 and "'abandon' must be true or false" in body["message"]
        _, results = srv.request("POST", "/api/elastichub/live", {"phase": "thaw", "abandon": True})
        assert results == []  # no kernel yet: nothing to thaw, the field understood
        stock = srv.start_kernel("python3")
        _, [result] = srv.request("POST", "/api/elastichub/live", {"phase": "precopy", "kernel_id": stock})
        assert result["ok"] is False and result["elastic"] is False
        assert "not an Elastic Python kernel" in result["error"]
    finally:
        srv.stop()


def test_a_malformed_adoption_list_is_reported_not_fatal(tmp_path):
    srv = JupyterServer(tmp_path)
    srv.env["ELASTICHUB_ADOPT_SESSIONS"] = json.dumps([{"id": "s1", "path": "x.ipynb", "kernel": {"id": ""}}])
    srv.start()
    try:
        [entry] = _wait_adopted(srv)
        assert entry["state"] == "failed" and "'kernel.id' must be a non-empty string" in entry["error"]
        _, sessions = srv.request("GET", "/api/sessions")
        assert sessions == []
    finally:
        srv.stop()


def test_release_closes_the_clients_kernel_websockets(tmp_path):
    """After the route switched, the source closes its clients' sockets so
    they reconnect (to the destination) at once."""
    import asyncio

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    srv = JupyterServer(tmp_path).start()
    try:
        kernel_id = srv.start_session("released.ipynb")

        async def scenario():
            ws_url = srv.url.replace("http://", "ws://") + f"/api/kernels/{kernel_id}/channels?session_id=tab1"
            ws = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {srv.token}"}))
            _, [result] = await asyncio.to_thread(
                srv.request, "POST", "/api/elastichub/live", {"phase": "release", "kernel_id": kernel_id})
            assert result["ok"] is True and result["closed"] == 1, result
            while True:  # nudge/status messages may come first; then the close
                message = await asyncio.wait_for(ws.read_message(), 10)
                if message is None:
                    return
        asyncio.run(scenario())
        _, kernels = srv.request("GET", "/api/kernels")
        assert [k["id"] for k in kernels] == [kernel_id]  # the kernel itself is left alone
    finally:
        srv.stop()


def _kernel_processes(server: JupyterServer, kernel_id: str) -> list[int]:
    """The pids of the kernel processes a server started for one kernel id
    (each is given the connection file kernel-ID.json of its runtime dir)."""
    import pathlib

    wanted = str(server.runtime / f"kernel-{kernel_id}.json").encode()
    pids = []
    for proc in pathlib.Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and wanted in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:  # ended meanwhile
            pass
    return pids


def test_a_kernel_shared_by_two_sessions_is_adopted_once(tmp_path, run_cell):
    """A notebook with a console on its kernel (JupyterLab's "New Console for
    Notebook"): two sessions, one kernel. The destination starts that kernel
    once, under the notebook's path (its checkpoints), and re-creates both sessions."""
    src = JupyterServer(tmp_path / "a").start()
    dst = None
    try:
        kernel_id = src.start_session("work/shared.ipynb")
        status, console = src.request("POST", "/api/sessions", {
            "path": "work/console-1", "name": "Console 1", "type": "console", "kernel": {"id": kernel_id}})
        assert status == 201 and console["kernel"]["id"] == kernel_id, console
        client = src.client(kernel_id)
        ok_cell(run_cell, client, "shared = 'state'")
        _, [pre] = src.request("POST", "/api/elastichub/live", {"phase": "precopy"})
        assert pre["ok"] is True and pre["base_id"], pre

        _, sessions = src.request("GET", "/api/sessions")
        sessions.sort(key=lambda s: s["type"] != "console")  # the console's first: its path must not win
        dst = _destination(tmp_path / "b", src, sessions).start()
        adopted = _wait_adopted(dst)
        assert sorted(a["session_id"] for a in adopted) == sorted(s["id"] for s in sessions), adopted
        assert all(a["state"] == "ready" and a["kernel_id"] == kernel_id for a in adopted), adopted
        assert all(a["restored_base_id"] == pre["base_id"] for a in adopted), adopted
        _, moved = dst.request("GET", "/api/sessions")
        assert sorted((s["id"], s["path"], s["kernel"]["id"]) for s in moved) == \
            sorted((s["id"], s["path"], s["kernel"]["id"]) for s in sessions)
        assert len(_kernel_processes(dst, kernel_id)) == 1, dst.read_log()[-3000:]

        ok_cell(run_cell, client, "shared = 'changed'")
        client.stop_channels()
        _, [frozen] = src.request("POST", "/api/elastichub/live", {"phase": "freeze", "wait_s": 5, "lease_s": 60})
        assert frozen["ok"] is True, frozen
        _, [applied] = dst.request("POST", "/api/elastichub/live",
                                   {"phase": "apply", "kernel_id": kernel_id, "delta_id": frozen["delta_id"]})
        assert applied["ok"] is True, applied
        client = dst.client(kernel_id)
        assert ok_cell(run_cell, client, "print(shared)").strip() == "changed"
        client.stop_channels()
    finally:
        if dst is not None:
            dst.stop()
        src.stop()


def test_no_kernel_starts_or_restarts_on_a_retired_server_until_it_thaws(tmp_path, run_cell):
    """A notebook opened between retire and the route switch started a kernel
    on the source, which nothing brought to the destination: its work went
    with the source pod. From a server-wide retire on, starts and restarts
    are refused in plain words; a thaw (the move undone) allows them again."""
    srv = JupyterServer(tmp_path).start()
    try:
        kernel_id = srv.start_session("work/first.ipynb")
        client = srv.client(kernel_id)
        ok_cell(run_cell, client, "x = 1")
        client.stop_channels()
        _, [frozen] = srv.request("POST", "/api/elastichub/live", {"phase": "freeze", "wait_s": 5, "lease_s": 60})
        assert frozen["ok"] is True, frozen
        _, [retired] = srv.request("POST", "/api/elastichub/live", {"phase": "retire"})
        assert retired["ok"] is True, retired

        (srv.root / "work/late.ipynb").write_text(json.dumps(
            {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
        code, body = srv.error("POST", "/api/sessions", body={
            "path": "work/late.ipynb", "type": "notebook", "kernel": {"name": "elastic-python"}})
        assert code >= 500 and "moving this server to another node" in body["message"], (code, body)
        code, body = srv.error("POST", "/api/kernels", body={"name": "elastic-python"})
        assert code == 503 and "Try again in a few seconds" in body["message"], (code, body)
        code, _ = srv.error("POST", f"/api/kernels/{kernel_id}/restart", body={})
        assert code >= 500
        _, kernels = srv.request("GET", "/api/kernels")
        assert [k["id"] for k in kernels] == [kernel_id]

        _, [thawed] = srv.request("POST", "/api/elastichub/live", {"phase": "thaw", "abandon": True})
        assert thawed["ok"] is True and thawed["was"] == "retired", thawed
        late = srv.start_session("work/late.ipynb")
        assert late != kernel_id
    finally:
        srv.stop()


def test_a_kernel_restarted_by_its_user_as_the_precopy_is_asked_is_precopied_after_its_restart(tmp_path, run_cell):
    """The student restarts a kernel just as the move's pre-copy reaches it:
    the request met the old process shutting down, it never answered, and
    the whole move failed (its next move a restart). The pre-copy now waits
    for the restart and asks the new process (a fresh state: nothing to save)."""
    import threading

    srv = JupyterServer(tmp_path).start()
    try:
        kernel_id = srv.start_session("work/restarted.ipynb")
        client = srv.client(kernel_id)
        marker = tmp_path / "shutting-down"
        # Its shutdown takes a while (within Jupyter's 2.5 s before SIGTERM): the window the pre-copy meets.
        ok_cell(run_cell, client, f"""x = 1
import pathlib, time
_k = get_ipython().kernel
_down = _k.do_shutdown
async def _slow(restart):
    pathlib.Path({str(marker)!r}).write_text("now")
    time.sleep(1.5)
    return await _down(restart)
_k.do_shutdown = _slow""")
        client.stop_channels()
        restart = threading.Thread(target=srv.request, args=("POST", f"/api/kernels/{kernel_id}/restart", {}))
        restart.start()
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert time.monotonic() < deadline, srv.read_log()[-3000:]
            time.sleep(0.05)
        _, [pre] = srv.request("POST", "/api/elastichub/live", {"phase": "precopy"})
        restart.join(60)
        assert pre["ok"] is True and pre["kernel_id"] == kernel_id, pre
        assert pre["base_id"] is None, pre  # the new process's state: fresh, nothing to pre-copy
        client = srv.client(kernel_id)
        assert "NameError" in str(run_cell(client, "x")["error"])
        client.stop_channels()
    finally:
        srv.stop()


def _large_precopy_under_way(srv: JupyterServer, run_cell, tmp_path, chunk_s: float):
    """A 128 MiB state's pre-copy (32 MiB chunks, each written in `chunk_s` more: a slow disk),
    asked in a thread and writing its first chunk: (kernel id, the thread, {"precopy": its answer})."""
    import threading

    kernel_id = srv.start_session("work/large.ipynb")
    client = srv.client(kernel_id)
    marker = tmp_path / "writing"
    ok_cell(run_cell, client, f"""import numpy as np
big = np.ones(16 << 20)
def _install():
    import pathlib, time
    def hook(blob, offset):
        pathlib.Path({str(marker)!r}).write_text("writing")
        time.sleep({chunk_s})
    get_ipython().kernel._live_precopy_hook = hook
_install()
del _install""")
    client.stop_channels()
    answers: dict = {}
    thread = threading.Thread(target=lambda: answers.update(
        precopy=srv.request("POST", "/api/elastichub/live", {"phase": "precopy"})[1]))
    thread.start()
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline, srv.read_log()[-3000:]
        time.sleep(0.05)
    return kernel_id, thread, answers


def test_a_stop_during_a_large_precopy_cancels_it_and_checkpoints_at_once(tmp_path, run_cell):
    """The student (or the culler) stops the server while a move pre-copies
    a large state: the stop's checkpoint waited until the whole pre-copy was
    written (the kernel serves one control message at a time). It now
    cancels the pre-copy, which leaves no file behind, and goes first."""
    srv = JupyterServer(tmp_path).start()
    try:
        _, thread, answers = _large_precopy_under_way(srv, run_cell, tmp_path, chunk_s=2)  # about 10 s in all
        asked = time.monotonic()
        _, [saved] = srv.request("POST", "/api/elastichub/checkpoint", {})  # the stop's, by the spawner
        print(f"the stop's checkpoint answered after {time.monotonic() - asked:.1f} s")
        thread.join(60)
        [pre] = answers["precopy"]
        assert pre["ok"] is False and "the pre-copy was cancelled" in pre["error"], pre
        assert saved["ok"] is True and "big" in saved["migrated"], saved
        left = [p.name for p in srv.checkpoints.rglob("*") if "live-base" in p.name]
        assert left == [], left
        assert not list(srv.runtime.glob("elastichub-precopy-cancel-*"))
    finally:
        srv.stop()


def test_a_restart_during_a_large_precopy_cancels_it_and_the_restarted_kernel_is_precopied(tmp_path, run_cell):
    """The student restarts the kernel while its pre-copy is written: the
    restart's checkpoint cancels the pre-copy (as a stop's does), and the
    pre-copy is asked again of the restarted kernel: the move goes on."""
    srv = JupyterServer(tmp_path).start()
    try:
        kernel_id, thread, answers = _large_precopy_under_way(srv, run_cell, tmp_path, chunk_s=1)
        srv.request("POST", f"/api/kernels/{kernel_id}/restart", {})
        thread.join(60)
        [pre] = answers["precopy"]
        assert pre["ok"] is True and pre["base_id"] is None, pre  # the restarted kernel's fresh state
        assert [p.name for p in srv.checkpoints.rglob("*") if "live-base" in p.name] == []
    finally:
        srv.stop()
