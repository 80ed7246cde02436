"""A checkpoint at shutdown is not cut short by jupyter_client's SIGTERM, and
one that did not complete (killed, or failed) is said at the next start.

jupyter_client's graceful stop sends SIGTERM 2.5 s and SIGKILL 5 s after its
shutdown request. A large state's write is simulated by a slow write_all,
patched in the kernel by a cell (test only): a real GB would take the same
seconds and disk here.
"""

import glob
import os
import signal
import time

import pytest

from elastichub_kernel.storage import CHECKPOINT_NAME, session_key
from elastichub_kernel.shutdownguard import UNSAVED_MARKER

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/big.ipynb"


def slow_writes(seconds: float, error: str = "") -> str:
    """A cell that makes each checkpoint write take `seconds` (or fail with
    `error`) from now on, leaving no variable behind."""
    return (
        "import elastichub_kernel.storage as _s, time as _t\n"
        "def _slow(fd, data, _w=_s.write_all, _t=_t):\n"
        f"    if {error!r}: raise OSError(28, {error!r})\n"
        f"    _t.sleep({seconds} if len(memoryview(data)) == 16 else 0)  # once per file: at its header\n"
        "    _w(fd, data)\n"
        "_s.write_all = _slow\n"
        "del _s, _t, _slow"
    )


def _ok(run_cell, kc, code):
    out = run_cell(kc, code)
    assert out["error"] is None, out
    return out


def _sigterm(km) -> None:
    os.kill(km.provisioner.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while km.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not km.is_alive()


def _graceful_stop(km, kc) -> float:
    started = time.monotonic()
    kc.stop_channels()
    km.shutdown_kernel(now=False)  # jupyter_client's: SIGTERM at 2.5 s, SIGKILL at 5 s
    return time.monotonic() - started


def test_a_shutdown_checkpoint_longer_than_sigterm_is_finished(tmp_path, start_elastic_kernel, run_cell):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    _ok(run_cell, kc, slow_writes(3.5))
    _ok(run_cell, kc, "marker = 'work'")
    took = _graceful_stop(km, kc)
    assert took > 3.5  # it wrote through jupyter_client's SIGTERM, and stopped once done
    session = tmp_path / session_key(SESSION)
    assert (session / CHECKPOINT_NAME).is_file()
    assert not glob.glob(str(session / ".*tmp-*")) and not (session / UNSAVED_MARKER).exists()

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = _ok(run_cell, kc, "print(marker)")
    assert out["stdout"].strip() == "work" and "NOT all saved" not in out["stderr"], out


def test_a_killed_shutdown_checkpoint_is_said_and_its_partial_file_removed(tmp_path, start_elastic_kernel,
                                                                          run_cell, control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    _ok(run_cell, kc, "marker = 'gen1'")
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["ok"] is True
    _ok(run_cell, kc, slow_writes(30))
    _ok(run_cell, kc, "marker = 'gen2'")
    _graceful_stop(km, kc)  # SIGKILL at 5 s, mid-write
    session = tmp_path / session_key(SESSION)
    partial = glob.glob(str(session / f".{CHECKPOINT_NAME}.tmp-*"))
    assert partial and (session / UNSAVED_MARKER).exists()

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = _ok(run_cell, kc, "print(marker)")
    assert out["stdout"].strip() == "gen1"
    # Which checkpoint this is, and that the later work is lost: said plainly.
    assert "restored 1 variable(s) from the checkpoint of" in out["stderr"], out
    assert "NOT all saved" in out["stderr"] and "did not complete" in out["stderr"], out
    assert "what was done after it is lost" in out["stderr"], out
    deadline = time.monotonic() + 10  # removed in the background at start
    while any(os.path.exists(p) for p in partial) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(os.path.exists(p) for p in partial)
    assert "NOT all saved" not in _ok(run_cell, kc, "1")["stderr"]  # said once


def test_a_failed_shutdown_checkpoint_is_said_with_its_reason(tmp_path, start_elastic_kernel, run_cell):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    _ok(run_cell, kc, slow_writes(0, error="No space left on device"))
    _ok(run_cell, kc, "marker = 'lost'")
    _graceful_stop(km, kc)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = _ok(run_cell, kc, "print('marker' in globals())")
    assert out["stdout"].strip() == "False"
    assert "NOT all saved" in out["stderr"] and "No space left on device" in out["stderr"], out
    assert "run your notebook's cells again" in out["stderr"] and "namespace" not in out["stderr"], out


def test_sigterm_to_an_idle_kernel_with_unsaved_work_is_said(tmp_path, start_elastic_kernel, run_cell):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    _ok(run_cell, kc, "marker = 'unsaved'")
    _sigterm(km)  # not during a write: it stops at once, as before

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = _ok(run_cell, kc, "print('marker' in globals())")
    assert out["stdout"].strip() == "False" and "stopped (SIGTERM)" in out["stderr"], out


def test_sigterm_after_a_thread_worked_past_the_checkpoint_is_said(tmp_path, start_elastic_kernel, run_cell,
                                                                  control_request):
    """No cell ran since the checkpoint, but the notebook's thread did: its
    work is not in the checkpoint, and the next start must say so."""
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    done = tmp_path / "thread-done"
    _ok(run_cell, kc, "import threading, time\nresults = []\n"
                      "def work():\n    time.sleep(1.5)\n    results.extend(range(100_000))\n"
                      f"    open({str(done)!r}, 'w').close()\n"
                      "threading.Thread(target=work).start()")
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"] and not done.exists(), reply  # saved while the thread still slept
    deadline = time.monotonic() + 30
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert done.exists()
    _sigterm(km)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = _ok(run_cell, kc, "print(len(results))")
    assert out["stdout"].strip() == "0" and "stopped (SIGTERM)" in out["stderr"], out


def test_the_note_goes_next_to_the_root_when_the_session_directory_refuses_it(tmp_path):
    from elastichub_kernel.shutdownguard import ShutdownGuardMixin

    class Kernel(ShutdownGuardMixin):
        log = None
        checkpoint_root = str(tmp_path)
        session_dir = str(tmp_path / "nb-0123")
        restored = None
        _skipped_restore = False

    (tmp_path / "nb-0123").write_text("not a directory: nothing can be written in it")
    kernel = Kernel()
    kernel._notes = []
    kernel._mark_unsaved("OSError: read-only file system")
    assert (tmp_path / f".nb-0123.{UNSAVED_MARKER}").exists()
    kernel._note_unsaved_shutdown()
    assert "read-only file system" in kernel._notes[0] and "run your notebook's cells again" in kernel._notes[0]
    assert not (tmp_path / f".nb-0123.{UNSAVED_MARKER}").exists()
