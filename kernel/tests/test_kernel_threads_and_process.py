"""What a notebook's threads and process settings do to its checkpoints,
with real kernels:

- an array a thread writes into while the checkpoint writes it (the file
  failed its checksum, and the next start lost every variable);
- a raised recursion limit and a deeply nested list (SIGSEGV at the
  checkpoint: the session was lost);
- a thread's work after the last checkpoint (closing the notebook only
  confirmed that checkpoint);
- process settings set with a call (``sys.set_int_max_str_digits(0)``...);
- a checkpoint volume that turned read-only (no note of the lost work).
"""

import os
import time

import pytest

from elastichub_kernel.storage import CHECKPOINT_NAME, session_key

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/threads.ipynb"


def _ok(run_cell, kc, code):
    out = run_cell(kc, code)
    assert out["error"] is None, out
    return out


def _wait_for(path, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.exists(path), f"{path} never appeared"


def test_an_array_changed_while_the_checkpoint_writes_it_is_restored(tmp_path, start_elastic_kernel, run_cell,
                                                                      control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    _ok(run_cell, kc, "import numpy as np\nimportant = {'grades': [1, 2, 3]}\na = np.zeros(100_000)")
    # A thread of the notebook's writing into `a` while os.write (GIL released) writes it, made
    # deterministic: `a` changes just before each write of its bytes.
    _ok(run_cell, kc, "import elastichub_kernel.storage as _s\n"
                      "def _racing(fd, data, _w=_s.write_all):\n"
                      "    if memoryview(data).nbytes == a.nbytes:\n"
                      "        a[:] += 1\n"
                      "    _w(fd, data)\n"
                      "_s.write_all = _racing\n"
                      "del _s, _racing")
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"] is True and "a" in reply["migrated"], reply
    km.shutdown_kernel(now=True)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = _ok(run_cell, kc, "print(important, a.shape, set(a.tolist()) <= {0.0, 1.0}, len(set(a.tolist())))")
    # Saved as it was when copied: one value throughout (one chunk), never a file the next start refuses.
    assert out["stdout"].split() == ["{'grades':", "[1,", "2,", "3]}", "(100000,)", "True", "1"], out
    assert "NOT restored" not in out["stderr"], out


def test_a_deep_list_under_a_raised_recursion_limit_never_kills_the_kernel(tmp_path, start_elastic_kernel,
                                                                         run_cell, control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    _ok(run_cell, kc, "import sys, sqlite3\n"
                      "sys.setrecursionlimit(300_000)\n"
                      "important = {'grades': [1, 2, 3]}\n"
                      "def nested(depth):\n"
                      "    top = cur = []\n"
                      "    for _ in range(depth):\n"
                      "        cur.append([])\n"
                      "        cur = cur[0]\n"
                      "    return top\n"
                      "deep = nested(50_000)\n"
                      "deeper = nested(400_000)\n"
                      "db = sqlite3.connect(':memory:')\n"
                      "db.execute('create table t (x)').close()\n"
                      "db.execute('insert into t values (7)').close()")
    # Pickled on the control thread: 50,000 levels overflowed its 8 MB C stack before the limit.
    reply = control_request(kc, "elastichub_checkpoint_request", timeout=120)["content"]
    assert reply["ok"] is True, reply
    assert {"important", "deep", "db"} <= set(reply["migrated"]), reply
    reasons = {item["name"]: item["reason"] for item in reply["not_restorable"]}
    assert "recursion" in reasons.get("deeper", ""), reply  # deeper than the limit itself: named
    # From a cell (the cells' thread waits, and reads the sqlite3 connection for the pickling thread).
    out = _ok(run_cell, kc, "%elastic_checkpoint")
    assert km.is_alive() and "deeper" in out["stdout"] + out["stderr"], out
    km.shutdown_kernel(now=True)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = _ok(run_cell, kc, "def depth(v):\n"
                            "    n = 0\n"
                            "    while v:\n"
                            "        v, n = v[0], n + 1\n"
                            "    return n\n"
                            "print(sys.getrecursionlimit(), depth(deep), important['grades'],"
                            " db.execute('select x from t').fetchall(), 'deeper' in globals())")
    assert out["stdout"].strip() == "300000 50000 [1, 2, 3] [(7,)] False", out


def test_a_threads_work_after_the_last_checkpoint_is_saved_at_shutdown(tmp_path, start_elastic_kernel,
                                                                       stop_elastic_kernel, run_cell,
                                                                       control_request):
    work = tmp_path / "work"
    work.mkdir()
    checkpoint = tmp_path / "ckpt" / session_key(SESSION) / CHECKPOINT_NAME
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=work)
    # The thread appends once the first checkpoint is on disk, then ends; no cell runs after it.
    _ok(run_cell, kc, "import os, threading, time\n"
                      "results = []\n"
                      "def trainer():\n"
                      f"    while not os.path.exists({str(checkpoint)!r}):\n"
                      "        time.sleep(0.01)\n"
                      "    results.extend(range(5))\n"
                      "    open('done', 'w').close()\n"
                      "threading.Thread(target=trainer, daemon=True).start()")
    first = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert first["ok"] is True and first["unchanged"] is False, first
    _wait_for(work / "done")
    stop_elastic_kernel(km, kc)  # closing the notebook: only "confirmed" the first checkpoint

    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=work)
    out = _ok(run_cell, kc, "print(results)")
    assert out["stdout"].strip() == "[0, 1, 2, 3, 4]", out
    # A thread blocked for good changes nothing: the next request confirms the checkpoint.
    _ok(run_cell, kc, "import threading\n"
                      "ready, never = threading.Event(), threading.Event()\n"
                      "def waiter():\n"
                      "    ready.set()\n"
                      "    never.wait()\n"
                      "threading.Thread(target=waiter, daemon=True).start()\n"
                      "ready.wait()")
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["unchanged"] is False
    again = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert again["ok"] is True and again["unchanged"] is True, again


def test_process_settings_hold_after_a_move(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    _ok(run_cell, kc, "import sys, math, socket, gc\n"
                      "sys.set_int_max_str_digits(0)\n"
                      "socket.setdefaulttimeout(5.0)\n"
                      "gc.disable()\n"
                      "gc.set_threshold(5000, 20, 20)\n"
                      "sys.setswitchinterval(0.002)\n"
                      "f = math.factorial(3000)")
    stop_elastic_kernel(km, kc)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = _ok(run_cell, kc, "print(len(str(f)), sys.get_int_max_str_digits(), socket.getdefaulttimeout(),"
                            " gc.isenabled(), gc.get_threshold(), sys.getswitchinterval())")
    assert out["stdout"].strip() == "9131 0 5.0 False (5000, 20, 20) 0.002", out


def test_a_read_only_checkpoint_volume_still_says_the_work_was_lost(tmp_path, start_elastic_kernel,
                                                                     stop_elastic_kernel, run_cell,
                                                                     control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    _ok(run_cell, kc, "good = [1, 2, 3]")
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["ok"] is True
    km.shutdown_kernel(now=True)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert _ok(run_cell, kc, "print(good)")["stdout"].strip() == "[1, 2, 3]"
    # The volume turns read-only (a tmpfs remounted `ro` needs root; here, every open for writing under
    # the checkpoint root fails as it would): neither the checkpoint nor a note next to it can be written.
    _ok(run_cell, kc, "import os as _os\n"
                      f"def _read_only(path, flags, *args, _open=_os.open, _m=_os, _root={str(tmp_path)!r}, **kw):\n"
                      "    if str(path).startswith(_root) and flags & (_m.O_WRONLY | _m.O_RDWR):\n"
                      "        raise OSError(30, 'Read-only file system', path)\n"
                      "    return _open(path, flags, *args, **kw)\n"
                      "_os.open = _read_only\n"
                      "del _os, _read_only")
    _ok(run_cell, kc, "more = 1")
    stop_elastic_kernel(km, kc)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = _ok(run_cell, kc, "print(good, 'more' in globals())")
    assert out["stdout"].strip() == "[1, 2, 3] False", out
    assert "NOT all saved" in out["stderr"] and "Read-only file system" in out["stderr"], out
    assert "what was done after it is lost" in out["stderr"], out
    assert "NOT all saved" not in _ok(run_cell, kc, "1")["stderr"]  # said once
