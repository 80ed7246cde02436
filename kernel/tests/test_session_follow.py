"""A notebook renamed, or saved under another path, while its kernel runs.

The kernel keys its checkpoints by the path it started with; after a move,
the kernel the notebook starts is keyed by the path it has then. Without
the kernel following its notebook, a student who renamed Untitled.ipynb
lost every variable at the next move, and nothing said so.

End to end on a real `jupyter server` (test_serverext's), with the REST
calls JupyterLab makes for a rename: the file, then the session's path and
name.
"""

from __future__ import annotations

import json
import os

import pytest
from test_serverext import JupyterServer, ok_cell

from elastichub_kernel import SESSION_REQUEST
from elastichub_kernel.storage import move_session_dir, session_key

pytestmark = pytest.mark.timeout(240)

NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def open_notebook(srv: JupyterServer, path: str) -> str:
    """A session as JupyterLab opens one (path and file name); its kernel id."""
    (srv.root / path).parent.mkdir(parents=True, exist_ok=True)
    if not (srv.root / path).exists():
        (srv.root / path).write_text(json.dumps(NOTEBOOK))
    status, model = srv.request("POST", "/api/sessions", {
        "path": path, "name": os.path.basename(path), "type": "notebook", "kernel": {"name": "elastic-python"}})
    assert status == 201, model
    return model["kernel"]["id"]


def rename(srv: JupyterServer, old: str, new: str, *, move_file: bool = True) -> None:
    if move_file:
        (srv.root / new).parent.mkdir(parents=True, exist_ok=True)
        srv.request("PATCH", f"/api/contents/{old}", {"path": new})
    _, sessions = srv.request("GET", "/api/sessions")
    [session] = [s for s in sessions if s["path"] == old]
    _, model = srv.request("PATCH", f"/api/sessions/{session['id']}", {"path": new, "name": os.path.basename(new)})
    assert model["path"] == new


def work_in(srv: JupyterServer, run_cell, path: str, code: str) -> None:
    client = srv.client(open_notebook(srv, path))
    try:
        ok_cell(run_cell, client, code)
    finally:
        client.stop_channels()


def value_of(srv: JupyterServer, run_cell, path: str, expression: str) -> dict:
    client = srv.client(open_notebook(srv, path))
    try:
        return run_cell(client, f"print({expression})")
    finally:
        client.stop_channels()


@pytest.mark.parametrize("stop", ["endpoint", "sigterm"])
def test_a_renamed_notebook_gets_its_state_back_after_a_move(tmp_path, run_cell, stop):
    """endpoint: the orchestrator's checkpoint request, then the stop;
    sigterm: only the pod's stop (the kernels' own checkpoints at shutdown)."""
    srv = JupyterServer(tmp_path)
    try:
        srv.start()
        work_in(srv, run_cell, "Untitled.ipynb", "grades = {'ada': 11, 'alan': 12}")
        rename(srv, "Untitled.ipynb", "course/hw3.ipynb")
        if stop == "endpoint":
            status, [result] = srv.request("POST", "/api/elastichub/checkpoint", {})
            assert status == 200 and result["ok"] is True, result
            assert os.path.basename(os.path.dirname(result["path"])).startswith("hw3.ipynb-")
        srv.stop()

        srv.start()
        after = value_of(srv, run_cell, "course/hw3.ipynb", "grades")
        assert after["error"] is None and after["stdout"].strip() == "{'ada': 11, 'alan': 12}", after
        assert "restored" in after["stderr"]
        # The old name is free: a new Untitled.ipynb starts clean.
        fresh = value_of(srv, run_cell, "Untitled.ipynb", "'grades' in globals()")
        assert fresh["stdout"].strip() == "False"
    finally:
        srv.stop()


def test_save_as_takes_the_state_along_and_a_checkpoint_already_at_the_new_path_is_kept(tmp_path, run_cell):
    """Save As: the session moves to a new file, the old file stays. A
    notebook that had the new path before left a checkpoint there: it is set
    aside, never overwritten or restored into the renamed notebook."""
    srv = JupyterServer(tmp_path)
    try:
        srv.start()
        work_in(srv, run_cell, "final.ipynb", "old = 'the first final.ipynb'")
        srv.request("DELETE", "/api/sessions/" + srv.request("GET", "/api/sessions")[1][0]["id"])
        assert list(srv.checkpoints.iterdir())  # final.ipynb's kernel checkpointed at its shutdown

        work_in(srv, run_cell, "draft.ipynb", "work = list(range(5))")
        (srv.root / "final.ipynb").write_text(json.dumps(NOTEBOOK))  # Save As over it
        rename(srv, "draft.ipynb", "final.ipynb", move_file=False)
        srv.stop()

        set_aside = [p.name for p in srv.checkpoints.iterdir() if ".replaced-" in p.name]
        assert len(set_aside) == 1 and set_aside[0].startswith("final.ipynb-")
        srv.start()
        after = value_of(srv, run_cell, "final.ipynb", "work, 'old' in globals()")
        assert after["stdout"].strip() == "[0, 1, 2, 3, 4] False", after
        draft = value_of(srv, run_cell, "draft.ipynb", "'work' in globals()")
        assert draft["stdout"].strip() == "False"
    finally:
        srv.stop()


def test_the_kernel_refuses_to_follow_without_a_path_or_during_a_live_move(tmp_path, start_elastic_kernel,
                                                                          run_cell, control_request):
    _, kc = start_elastic_kernel(tmp_path, session_name="a.ipynb")
    assert run_cell(kc, "x = 1")["error"] is None
    bad = control_request(kc, SESSION_REQUEST, {"session_name": ""})["content"]
    assert bad["ok"] is False and "'session_name' must be the notebook's path" in bad["error"]
    same = control_request(kc, SESSION_REQUEST, {"session_name": "a.ipynb"})["content"]
    assert same["ok"] is True and same["moved"] is False

    pre = control_request(kc, "elastichub_live_request", {"phase": "precopy"})["content"]
    assert pre["ok"] is True, pre
    during = control_request(kc, SESSION_REQUEST, {"session_name": "b.ipynb"})["content"]
    assert during["ok"] is False and "live migration" in during["error"] and "'a.ipynb'" in during["error"]
    assert os.path.isdir(tmp_path / session_key("a.ipynb")) and not os.path.exists(tmp_path / session_key("b.ipynb"))
    assert control_request(kc, "elastichub_live_request", {"phase": "thaw"})["content"]["ok"] is True


def test_moving_a_session_dir_with_nothing_there_is_nothing(tmp_path):
    assert move_session_dir(str(tmp_path / "none"), str(tmp_path / "new")) is None
    assert not (tmp_path / "new").exists()
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "checkpoint.ehk").write_text("another notebook's")
    kept = move_session_dir(str(tmp_path / "none"), str(tmp_path / "new"))  # nothing to move: still set aside
    assert kept and (tmp_path / kept).joinpath("checkpoint.ehk").read_text() == "another notebook's"
    assert not (tmp_path / "new").exists()
