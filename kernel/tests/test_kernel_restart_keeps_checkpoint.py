"""After the user's "Restart kernel", the checkpoint start skipped is kept
until the new session has variables of its own.

The restart note tells the user %elastic_restore brings it back: a session
that only ran read-only cells (%elastic_status, a print) must not replace it
with an empty one at its next checkpoint or shutdown. Real work done after
the restart is saved as usual, over it.
"""

import os

import pytest

from elastichub_kernel.storage import CHECKPOINT_NAME, RESTART_MARKER, session_key

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/restarted.ipynb"


def _saved_then_restarted(tmp_path, start_elastic_kernel, run_cell):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(kc, "important = list(range(5))")["error"] is None
    km.restart_kernel(now=False)  # the user's "Restart kernel": its shutdown checkpoints `important`
    kc.wait_for_ready(timeout=60)
    return km, kc, tmp_path / session_key(SESSION) / CHECKPOINT_NAME


def test_read_only_cells_after_a_restart_keep_the_checkpoint(tmp_path, start_elastic_kernel, stop_elastic_kernel,
                                                             run_cell, control_request):
    km, kc, path = _saved_then_restarted(tmp_path, start_elastic_kernel, run_cell)
    before = os.stat(path)
    out = run_cell(kc, "%elastic_status")
    assert out["error"] is None and "%elastic_restore" in out["stderr"]
    assert "variables of your own" in out["stderr"], out["stderr"]  # says when the checkpoint is replaced
    # In a student's words, and what to do first ("restarted with a clean namespace" said neither).
    assert "run %elastic_restore before you create" in out["stderr"] and "namespace" not in out["stderr"], out
    assert run_cell(kc, "print('just looking')\n1 + 1")["error"] is None
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"] is True and reply["bytes"] == 0 and "kept" in reply["note"], reply
    out = run_cell(kc, "%elastic_checkpoint")  # asked for, still nothing to save over it
    assert "no checkpoint written" in out["stdout"], out
    stop_elastic_kernel(km, kc)  # a graceful stop (the server moves): its checkpoint must not empty the file
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)
    assert (path.parent / RESTART_MARKER).exists()

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = run_cell(kc, "print('important' in globals())")
    assert out["stdout"].strip() == "False" and "%elastic_restore" in out["stderr"], out
    out = run_cell(kc, "%elastic_restore\nprint(important)")
    assert "restored 1 variable(s)" in out["stdout"] and out["stdout"].splitlines()[-1] == "[0, 1, 2, 3, 4]", out


def test_real_work_after_a_restart_replaces_the_checkpoint(tmp_path, start_elastic_kernel, stop_elastic_kernel,
                                                           run_cell, control_request):
    km, kc, path = _saved_then_restarted(tmp_path, start_elastic_kernel, run_cell)
    assert run_cell(kc, "%elastic_status")["error"] is None
    assert run_cell(kc, "import math\ndel math")["error"] is None  # nothing of the user's left
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]  # the server's periodic one
    assert reply["bytes"] == 0 and "kept" in reply["note"], reply
    assert run_cell(kc, "fresh = 'new work'")["error"] is None
    stop_elastic_kernel(km, kc)
    assert not (path.parent / RESTART_MARKER).exists()

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = run_cell(kc, "print(fresh, 'important' in globals())")
    assert out["stdout"].strip() == "new work False", out
    assert "restored 1 variable(s)" in out["stderr"], out


def test_an_empty_checkpoint_is_named_as_such(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(kc, "x = 1")["error"] is None
    assert run_cell(kc, "del x")["error"] is None  # the user's own choice: the empty namespace is saved
    stop_elastic_kernel(km, kc)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = run_cell(kc, "print('x' in globals())")
    assert out["stdout"].strip() == "False"
    assert "holds no variables" in out["stderr"] and "restored 0" not in out["stderr"], out


def test_elastic_restore_names_the_variables_of_this_session_it_replaced(tmp_path, start_elastic_kernel, run_cell,
                                                                         control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(kc, "a = 1\nb = 'old b'\nimport math")["error"] is None
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["ok"] is True
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=60)
    assert run_cell(kc, "b = 'new b'\nc = 3\nimport math\na = 1")["error"] is None
    out = run_cell(kc, "%elastic_restore\nprint(a, b, c)")
    assert out["error"] is None, out
    lines = out["stdout"].splitlines()
    assert lines[-1] == "1 old b 3"
    # b had a value of this session's: said, by name. a (equal) and math (the same module) were not replaced.
    [replaced] = [line for line in lines if "REPLACED" in line]
    assert "value of b was REPLACED by the checkpoint's" in replaced and "math" not in replaced
    assert replaced.startswith("This session's own value of b was REPLACED"), replaced
    assert any(line == "Kept as this session had them: c." for line in lines), lines
