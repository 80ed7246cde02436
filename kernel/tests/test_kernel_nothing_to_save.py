"""Opening and closing a notebook without changing anything writes nothing.

A kernel that ran no cell and restored nothing has nothing to save: no file
(a file would make the next start take the restore path). A kernel that
restored a checkpoint and changed nothing leaves that file as it is.
"""

import os

import pytest

from elastichub_kernel.storage import CHECKPOINT_NAME, RESTART_MARKER, session_key

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

SESSION = "work/untouched.ipynb"


def _files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_fresh_kernel_writes_no_file_on_request_or_shutdown(tmp_path, start_elastic_kernel, stop_elastic_kernel,
                                                             control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"] is True and reply["unchanged"] is True
    assert reply["bytes"] == 0 and reply["path"] == "" and reply["migrated"] == []
    stop_elastic_kernel(km, kc)
    assert not km.is_alive()
    assert _files(tmp_path) == []


def test_restored_untouched_kernel_leaves_the_file_alone(tmp_path, start_elastic_kernel, stop_elastic_kernel,
                                                         run_cell):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(kc, "a = 1\nb = 'two'\nc = [3.0]")["error"] is None
    stop_elastic_kernel(km, kc)
    path = tmp_path / session_key(SESSION) / CHECKPOINT_NAME
    before = os.stat(path)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    stop_elastic_kernel(km, kc)   # restored, nothing run
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)
    assert _files(tmp_path) == [os.path.join(session_key(SESSION), CHECKPOINT_NAME)]


def test_clean_restart_then_close_keeps_the_checkpoint_and_the_clean_start(
        tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(kc, "kept = 41 + 1")["error"] is None
    km.restart_kernel(now=False)    # the user's "Restart kernel": clean namespace
    kc.wait_for_ready(timeout=60)
    path = tmp_path / session_key(SESSION) / CHECKPOINT_NAME
    saved = os.stat(path).st_mtime_ns
    stop_elastic_kernel(km, kc)     # closed without running anything
    # The checkpoint is still there (the clean kernel had nothing to save
    # over it), and the next start is clean too, as the user chose.
    assert os.stat(path).st_mtime_ns == saved
    assert (tmp_path / session_key(SESSION) / RESTART_MARKER).exists()
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = run_cell(kc, "print('kept' in globals())")
    assert out["stdout"].strip() == "False" and "%elastic_restore" in out["stderr"]
    out = run_cell(kc, "%elastic_restore\nprint(kept)")
    assert out["stdout"].splitlines()[-1] == "42", out
