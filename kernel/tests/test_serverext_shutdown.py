"""Jupyter Server's shutdown and restart of an Elastic kernel ask for its
checkpoint first (serverstop.py): a checkpoint longer than Jupyter's
shutdown_wait_time (SIGKILL after 5 s) is written whole.

The write is made slow (7 s, past the 5 s Jupyter gives a kernel) by a
cell that patches the kernel's storage.write_all: test only.
"""

from __future__ import annotations

import time

import pytest
from test_kernel_shutdown_checkpoint import slow_writes
from test_serverext import JupyterServer, ok_cell

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SLOW_S = 7


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = JupyterServer(tmp_path_factory.mktemp("jupyter"))
    srv.start()
    yield srv
    srv.stop()


def _session(server, path):
    status, model = server.request("POST", "/api/sessions", {"path": path, "type": "notebook",
                                                             "kernel": {"name": "elastic-python"}})
    assert status == 201, model
    return model["id"], model["kernel"]["id"]


def _first_cell(server, run_cell, kernel_id, code):
    client = server.client(kernel_id)
    try:
        return run_cell(client, code, timeout=120)
    finally:
        client.stop_channels()


def test_closing_a_notebook_waits_for_a_checkpoint_longer_than_jupyters_kill(server, run_cell):
    (server.root / "work").mkdir(exist_ok=True)
    (server.root / "work" / "closed.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, '
                                                       '"nbformat_minor": 5}')
    session_id, kernel_id = _session(server, "work/closed.ipynb")
    client = server.client(kernel_id)
    ok_cell(run_cell, client, slow_writes(SLOW_S))
    ok_cell(run_cell, client, "marker = 'closed'")
    client.stop_channels()
    started = time.monotonic()
    status, _ = server.request("DELETE", f"/api/sessions/{session_id}")  # closing the notebook
    assert status == 204 and time.monotonic() - started >= SLOW_S

    _, kernel_id = _session(server, "work/closed.ipynb")
    out = _first_cell(server, run_cell, kernel_id, "print(marker)")
    assert out["stdout"].strip() == "closed" and "NOT all saved" not in out["stderr"], out
    server.request("DELETE", f"/api/kernels/{kernel_id}")


def test_a_restart_and_the_server_stopping_wait_for_it_too(tmp_path, run_cell):
    srv = JupyterServer(tmp_path)
    try:
        srv.start()
        kernel_id = srv.start_session("work/restarted.ipynb")
        client = srv.client(kernel_id)
        ok_cell(run_cell, client, slow_writes(SLOW_S))
        ok_cell(run_cell, client, "marker = 'before restart'")
        client.stop_channels()
        status, _ = srv.request("POST", f"/api/kernels/{kernel_id}/restart")  # the user's "Restart kernel"
        assert status == 200
        out = _first_cell(srv, run_cell, kernel_id, "%elastic_restore\nprint(marker)")
        assert out["stdout"].splitlines()[-1] == "before restart", out

        client = srv.client(kernel_id)
        ok_cell(run_cell, client, slow_writes(SLOW_S))
        ok_cell(run_cell, client, "marker = 'at server stop'")
        client.stop_channels()
        srv.stop()  # SIGTERM, as a pod stop: the server shuts its kernels down

        srv.start()
        kernel_id = srv.start_session("work/restarted.ipynb")
        out = _first_cell(srv, run_cell, kernel_id, "print(marker)")
        assert out["stdout"].strip() == "at server stop" and "NOT all saved" not in out["stderr"], out
    finally:
        srv.stop()
