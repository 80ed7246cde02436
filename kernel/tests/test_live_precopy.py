"""The live pre-copy writes live-base.ehk without holding the state lock:
cells run while it is written, a buffer changed meanwhile (torn in the
file) is re-sent by the delta, and checkpoint.ehk is never touched."""

from __future__ import annotations

import json
import os
import time

import pytest
import xxhash

import elastichub_kernel
from elastichub_kernel.storage import read_checkpoint

from test_live import DEST_ENV, live, session_dir

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

SESSION = "live/precopy.ipynb"

# Installed from a cell without leaving a variable behind (the hook lives
# on the kernel object): it notes when each chunk was written and waits a
# little, so the write surely spans the cell sent after the request.
SLOW_HOOK = """
def _install():
    import time
    kernel = get_ipython().kernel
    kernel._chunk_times = []
    def hook(blob, offset):
        kernel._chunk_times.append(time.time())
        time.sleep(0.05)
    kernel._live_precopy_hook = hook
_install()
del _install
"""

# After the first chunk of the first buffer (a, 2 chunks) is written: a[0]
# is already in the file (it keeps the old value), a[-1] not yet (the file
# gets the new one). The file's copy of a then matches neither state.
TEARING_HOOK = """
def _install():
    kernel = get_ipython().kernel
    def hook(blob, offset):
        if blob == 1 and offset == 0:
            a = get_ipython().user_ns["a"]
            a[0], a[-1] = 7.0, 9.0
    kernel._live_precopy_hook = hook
_install()
del _install
"""

DIGEST = ("import hashlib, pickle, json\n"
          "print(json.dumps({n: hashlib.sha256(pickle.dumps(globals()[n])).hexdigest() "
          "for n in ('a', 'b', 'c') if n in globals()}))")


def _digest(run_cell, kc):
    out = run_cell(kc, DIGEST)
    assert out["error"] is None, out
    return json.loads(out["stdout"])


def test_kernels_import_this_copy(tmp_path, start_elastic_kernel, run_cell):
    _, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = run_cell(kc, "import elastichub_kernel; print(elastichub_kernel.__file__)")
    assert out["stdout"].strip() == elastichub_kernel.__file__


def test_a_cell_runs_while_the_precopy_is_written(tmp_path, start_elastic_kernel, run_cell, control_request):
    _, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    # 256 MB: 8 chunks of 32 MiB.
    setup = "import numpy as np\narrays = [np.full(8_000_000, float(i)) for i in range(4)]"
    assert run_cell(kc, setup)["error"] is None
    assert run_cell(kc, SLOW_HOOK)["error"] is None

    request = kc.session.msg("elastichub_live_request", {"phase": "precopy"})
    kc.control_channel.send(request)
    time.sleep(0.2)  # the pickling (under the lock) is done well before this
    cell_id = kc.execute("import time\nprint(time.time())")
    order, cell_time, precopy = [], None, None
    deadline = time.monotonic() + 120
    while len(order) < 2 and time.monotonic() < deadline:
        for channel, name in ((kc.shell_channel, "cell"), (kc.control_channel, "precopy")):
            try:
                msg = channel.get_msg(timeout=0.01)
            except Exception:
                continue
            parent = msg["parent_header"].get("msg_id")
            if name == "cell" and parent == cell_id:
                order.append("cell")
                assert msg["content"]["status"] == "ok", msg["content"]
            elif name == "precopy" and parent == request["header"]["msg_id"]:
                order.append("precopy")
                precopy = msg["content"]
    assert order == ["cell", "precopy"], order
    assert precopy["ok"] is True and precopy["base_id"] and precopy["bytes"] > 256_000_000, precopy
    while True:  # the cell's printed time
        msg = kc.get_iopub_msg(timeout=10)
        if msg["parent_header"].get("msg_id") == cell_id and msg["msg_type"] == "stream":
            cell_time = float(msg["content"]["text"])
            break
    times = json.loads(run_cell(kc, "print(__import__('json').dumps(get_ipython().kernel._chunk_times))")["stdout"])
    assert len(times) >= 8
    assert times[0] < cell_time < times[-1]  # the cell ran in the middle of the write


def test_a_torn_buffer_is_resent_and_the_destination_is_identical(tmp_path, start_elastic_kernel, run_cell,
                                                                 control_request):
    km, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    # a: 48 MB, 2 chunks; b untouched; c a small value.
    assert run_cell(src, "import numpy as np\na = np.zeros(6_000_000)\nb = np.ones(1000)\nc = 'x'")["error"] is None
    assert run_cell(src, TEARING_HOOK)["error"] is None
    pre = live(control_request, src, "precopy")
    assert pre["ok"] is True, pre
    directory = session_dir(control_request, src)

    # The file's a is torn (old first chunk, new last chunk), and the
    # fingerprint the kernel keeps is of exactly those bytes.
    loaded = read_checkpoint(os.path.join(directory, "live-base.ehk"))
    assert loaded.index["base_id"] == pre["base_id"] and loaded.index["kind"] == "live-base"
    torn = memoryview(loaded.blobs[1]).cast("d")
    assert (torn[0], torn[len(torn) - 1]) == (0.0, 9.0)
    kept = json.loads(run_cell(src, "print(__import__('json').dumps(get_ipython().kernel._live_precopy"
                                    "['fingerprints']))")["stdout"])
    assert kept == [xxhash.xxh3_128_hexdigest(b) for b in loaded.blobs[1:]]
    assert run_cell(src, "print(a[0], a[-1])")["stdout"].split() == ["7.0", "9.0"]
    assert not os.path.exists(os.path.join(directory, "checkpoint.ehk"))

    dkm, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    status = control_request(dst, "elastichub_status_request")["content"]["live"]
    assert status["restored_base_id"] == pre["base_id"] and status["awaiting_apply"]

    assert run_cell(src, "c = 'y'\nget_ipython().kernel._live_precopy_hook = None")["error"] is None
    before = _digest(run_cell, src)
    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    assert frozen["ok"] is True and frozen["base_id"] == pre["base_id"], frozen
    assert (frozen["changed_buffers"], frozen["reused_buffers"]) == (1, 1), frozen  # a re-sent, b reused
    assert live(control_request, dst, "apply", delta_id=frozen["delta_id"])["ok"] is True
    assert live(control_request, src, "retire")["ok"] is True
    assert _digest(run_cell, dst) == before
    assert run_cell(dst, "print(a[0], a[-1], a[1:-1].any())")["stdout"].split() == ["7.0", "9.0", "False"]

    # The destination dies before its first checkpoint: a normal (not a
    # destination) start restores the pair live-base.ehk + live-delta.ehk.
    dkm.shutdown_kernel(now=True)
    _, third = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert _digest(run_cell, third) == before
    run_cell(third, "c = 'z'")
    assert control_request(third, "elastichub_checkpoint_request")["content"]["ok"] is True
    assert sorted(n for n in os.listdir(directory) if n.endswith(".ehk")) == ["checkpoint.ehk"]


def test_the_precopy_never_touches_checkpoint_ehk_nor_is_restored_alone(tmp_path, start_elastic_kernel, run_cell,
                                                                       control_request):
    km, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(src, "import numpy as np\na = np.arange(100_000.0)\nc = 'saved'")["error"] is None
    assert control_request(src, "elastichub_checkpoint_request")["content"]["ok"] is True
    directory = session_dir(control_request, src)
    ckpt = os.path.join(directory, "checkpoint.ehk")
    with open(ckpt, "rb") as f:
        saved = f.read()
    mtime = os.stat(ckpt).st_mtime_ns
    assert run_cell(src, "c = 'pre-copied'\na[0] = -1")["error"] is None
    pre = live(control_request, src, "precopy")
    assert pre["ok"] is True and pre["path"].endswith("live-base.ehk")
    assert live(control_request, src, "precopy")["base_id"] == pre["base_id"]  # nothing ran: the same base
    with open(ckpt, "rb") as f:
        assert f.read() == saved
    assert os.stat(ckpt).st_mtime_ns == mtime

    # The kernel dies (no shutdown checkpoint). A normal start restores
    # checkpoint.ehk, never the pre-copy alone; the pre-copy file stays
    # until a full checkpoint (a move may still be using it).
    km.shutdown_kernel(now=True)
    _, normal = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(normal, "print(c, a[0])")["stdout"].split() == ["saved", "0.0"]
    assert os.path.exists(os.path.join(directory, "live-base.ehk"))
    # Without checkpoint.ehk either: a clean namespace.
    os.rename(ckpt, ckpt + ".away")
    _, clean = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(clean, "print('c' in globals())")["stdout"].strip() == "False"
    os.rename(ckpt + ".away", ckpt)
    # A destination does start from it.
    _, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    assert control_request(dst, "elastichub_status_request")["content"]["live"]["restored_base_id"] == pre["base_id"]
    # A full checkpoint of a kernel that is not the source of a move removes it.
    run_cell(normal, "c = 'later'")
    assert control_request(normal, "elastichub_checkpoint_request")["content"]["ok"] is True
    assert not os.path.exists(os.path.join(directory, "live-base.ehk"))


def test_a_move_nobody_finishes_leaves_no_precopy_behind(tmp_path, start_elastic_kernel, run_cell, control_request):
    _, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(src, "import numpy as np\na = np.arange(1000.0)")["error"] is None
    assert live(control_request, src, "precopy")["ok"] is True
    directory = session_dir(control_request, src)
    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=0.5)
    assert frozen["ok"] is True
    deadline = time.monotonic() + 20
    while os.path.exists(os.path.join(directory, "live-base.ehk")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(os.path.join(directory, "live-base.ehk"))
    assert not os.path.exists(os.path.join(directory, "live-delta.ehk"))
    # A freeze after that: no base file, so the delta carries everything.
    again = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    assert again["ok"] is True and again["base_id"] is None and again["reused_buffers"] == 0
    assert live(control_request, src, "thaw")["delta_removed"] is True


@pytest.mark.parametrize("undone", ["before the pause", "after the freeze"])
def test_a_move_undone_leaves_no_precopy_behind(tmp_path, start_elastic_kernel, run_cell, control_request, undone):
    """The move is undone (the destination did not start, another kernel
    was busy...): the source's thaw left its pre-copy, a full copy of the
    state, on the checkpoint volume until its next full checkpoint, which
    that copy could leave no room for. A thaw between two tries of the
    pause keeps it (the retry's delta builds on it)."""
    _, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(src, "import numpy as np\na = np.arange(1000.0)")["error"] is None
    assert live(control_request, src, "precopy")["ok"] is True
    base = os.path.join(session_dir(control_request, src), "live-base.ehk")
    if undone == "after the freeze":
        assert live(control_request, src, "freeze", wait_s=5, lease_s=60)["ok"] is True
        assert live(control_request, src, "thaw")["was"] == "frozen"  # a retry of the pause: kept
        assert os.path.exists(base)
        assert live(control_request, src, "freeze", wait_s=5, lease_s=60)["base_id"] is not None
        assert live(control_request, src, "thaw", abandon=True)["was"] == "frozen"
    else:
        assert live(control_request, src, "thaw")["was"] == "running"
    assert not os.path.exists(base)
    assert run_cell(src, "print(a[:2].tolist())")["stdout"].strip() == "[0.0, 1.0]"
