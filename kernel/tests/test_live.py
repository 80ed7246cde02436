"""Live migration (make-before-break) between two real kernels sharing the
checkpoint directory: precopy -> changes -> freeze -> apply -> retire."""

from __future__ import annotations

import json
import os
import time
from queue import Empty

import pytest

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

SESSION = "live/notebook.ipynb"
DEST_ENV = {"ELASTICHUB_LIVE_DESTINATION": "1"}

SETUP = """
import hashlib, json, pickle
import numpy as np
big = np.arange(200_000, dtype=np.float64)
view = big[100:200]
alias = big
small = 1
rebind = [1, 2, 3]
gone = "delete me"
shared = {"k": [1, 2]}
other = shared
untouched = np.ones(50_000)
"""

CHANGE = """
small = 2
rebind = (4, 5)
del gone
fresh = np.zeros(10) + 7
big[5] = -1.0
shared["k"].append(3)
twin = untouched.copy()
"""

NAMES = ["big", "view", "alias", "small", "rebind", "gone", "shared", "other", "untouched", "fresh", "twin"]

# One print, no new variable: the digest cell must not change the state.
DIGEST = (
    "print(json.dumps({'digest': {n: hashlib.sha256(pickle.dumps(v)).hexdigest() "
    f"for n, v in globals().items() if n in {NAMES!r}}}, "
    "'identity': [alias is big, other is shared, bool(np.shares_memory(view, big)), "
    "bool(np.shares_memory(twin, untouched))]}))"
)


def live(control_request, kc, phase, **content):
    reply = control_request(kc, "elastichub_live_request", {"phase": phase, **content})
    assert reply["msg_type"] == "elastichub_live_reply"
    body = reply["content"]
    assert body["phase"] == phase and isinstance(body["seconds"], float) and "error" in body
    return body


def stream_text(kc, msg_id) -> str:
    """What the cell `msg_id` printed (stdout and stderr), read up to its idle status."""
    text = []
    while True:
        msg = kc.get_iopub_msg(timeout=10)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(text)


def frozen_with_a_waiting_cell(tmp_path, start_elastic_kernel, run_cell, control_request):
    """A kernel frozen after its pre-copy, and the msg_id of a cell (`n += 1`, n was 1) sent since."""
    _, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    run_cell(kc, "n = 1")
    live(control_request, kc, "precopy")
    assert live(control_request, kc, "freeze", wait_s=5, lease_s=60)["ok"] is True
    msg_id = kc.execute("n += 1\nprint('ran', n)")
    time.sleep(0.5)
    return kc, msg_id


def digest(run_cell, kc):
    out = run_cell(kc, DIGEST)
    assert out["error"] is None, out
    return json.loads(out["stdout"]), out


def session_dir(control_request, kc):
    return control_request(kc, "elastichub_status_request")["content"]["checkpoint_dir"]


def test_precopy_change_freeze_apply_retire(tmp_path, start_elastic_kernel, run_cell, control_request):
    km, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(src, SETUP)["error"] is None
    pre = live(control_request, src, "precopy")
    assert pre["ok"] is True and pre["base_id"] and "big" in pre["migrated"], pre

    dkm, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    status = control_request(dst, "elastichub_status_request")["content"]["live"]
    assert status["destination"] and status["awaiting_apply"] and status["base_buffers_held"]
    assert status["restored_base_id"] == pre["base_id"]

    assert run_cell(src, CHANGE)["error"] is None
    before, out = digest(run_cell, src)
    count = out["reply"]["execution_count"]
    assert before["identity"] == [True, True, True, False]
    assert "gone" not in before["digest"] and "fresh" in before["digest"]

    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    assert frozen["ok"] is True, frozen
    assert frozen["base_id"] == pre["base_id"] and frozen["delta_id"]
    # big changed in place, fresh is new, twin equals untouched but may not
    # share its buffer: 3 written; untouched reused from the pre-copy.
    assert (frozen["changed_buffers"], frozen["reused_buffers"]) == (3, 1), frozen
    directory = session_dir(control_request, src)
    assert os.path.isfile(os.path.join(directory, "live-delta.ehk"))

    applied = live(control_request, dst, "apply", delta_id=frozen["delta_id"])
    assert applied["ok"] is True, applied
    assert applied["bytes_read"] > 0 and "fresh" in applied["migrated"] and "gone" not in applied["migrated"]
    assert live(control_request, src, "retire")["ok"] is True

    after, out = digest(run_cell, dst)
    assert after == before
    assert out["reply"]["execution_count"] == count + 1  # the counter continues the source's
    assert "moved to another node" in out["stderr"]
    assert run_cell(dst, "print('gone' in globals())")["stdout"].strip() == "False"
    assert run_cell(dst, "big[150] = 5.5; print(view[50])")["stdout"].strip() == "5.5"  # still a view

    # The retired source runs nothing more, and says so.
    late = run_cell(src, "print('ran'); late = 1")
    assert late["reply"]["status"] == "error" and late["stdout"] == ""
    assert "ElasticHub was moving this server to another node as this cell was sent: it did not run. " \
           "Run it again." in late["stderr"]
    # Its shutdown writes no checkpoint: the destination owns the state.
    # (The pre-copy never wrote checkpoint.ehk: it is live-base.ehk.)
    ckpt = os.path.join(directory, "checkpoint.ehk")
    assert not os.path.exists(ckpt)
    base = os.path.join(directory, "live-base.ehk")
    mtime = os.stat(base).st_mtime_ns
    refused = control_request(src, "elastichub_checkpoint_request")["content"]
    assert refused["ok"] is False and "retired" in refused["error"]

    # The destination dies without writing a checkpoint: a restart still
    # comes back with the delta (live-base.ehk + live-delta.ehk), even
    # as a destination again (its pod restarted with the same env).
    dkm.shutdown_kernel(now=True)
    assert os.stat(base).st_mtime_ns == mtime and not os.path.exists(ckpt)
    _, third = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    again, out = digest(run_cell, third)
    assert again == before  # the source's frozen state (the change on the killed one was never saved)
    assert "restored" in out["stderr"]
    # Its first cell makes it the owner; its first full checkpoint replaces both files.
    assert control_request(third, "elastichub_status_request")["content"]["live"]["awaiting_apply"] is False
    run_cell(third, "x_new = 1")
    assert control_request(third, "elastichub_checkpoint_request")["content"]["ok"] is True
    assert not os.path.exists(os.path.join(directory, "live-delta.ehk")) and not os.path.exists(base)
    assert os.path.isfile(ckpt)


def test_freeze_waits_for_a_running_cell_then_reports_busy(tmp_path, start_elastic_kernel, run_cell,
                                                           control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    run_cell(kc, "a = 1")
    assert live(control_request, kc, "precopy")["ok"] is True
    msg_id = kc.execute("import time\nprint('running', flush=True)\ntime.sleep(3)\nb = 2")
    while True:
        msg = kc.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            break
    busy = live(control_request, kc, "freeze", wait_s=0.3, lease_s=30)
    assert busy["ok"] is False and busy["busy"] is True and "still running" in busy["error"]
    assert control_request(kc, "elastichub_status_request")["content"]["live"]["phase"] == "running"
    frozen = live(control_request, kc, "freeze", wait_s=20, lease_s=30)
    assert frozen["ok"] is True and "b" in frozen["migrated"]  # after the cell, not during it
    thawed = live(control_request, kc, "thaw")
    assert thawed["ok"] and thawed["was"] == "frozen" and thawed["delta_removed"] is True
    assert not os.path.exists(os.path.join(session_dir(control_request, kc), "live-delta.ehk"))
    kc.get_shell_msg(timeout=30)


def test_a_cell_sent_while_frozen_waits_blocks_retire_and_runs_after_thaw(tmp_path, start_elastic_kernel,
                                                                            run_cell, control_request):
    kc, msg_id = frozen_with_a_waiting_cell(tmp_path, start_elastic_kernel, run_cell, control_request)
    with pytest.raises(Empty):
        kc.get_shell_msg(timeout=0.5)  # not run while frozen
    refused = live(control_request, kc, "retire")
    assert refused["ok"] is False and refused["activity"] is True and "arrived" in refused["error"]
    assert control_request(kc, "elastichub_status_request")["content"]["live"]["phase"] == "frozen"
    assert live(control_request, kc, "thaw")["ok"] is True
    reply = kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "ok"
    assert stream_text(kc, msg_id).strip() == "ran 2"


def test_the_lease_thaws_a_frozen_kernel_by_itself(tmp_path, start_elastic_kernel, run_cell, control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    run_cell(kc, "n = 1")
    live(control_request, kc, "precopy")
    frozen = live(control_request, kc, "freeze", wait_s=5, lease_s=1.0)
    assert frozen["ok"] and frozen["lease_s"] == 1.0
    started = time.monotonic()
    out = run_cell(kc, "print(n + 1)")  # waits for the lease, then runs
    assert out["stdout"].strip() == "2" and 0.5 < time.monotonic() - started < 20
    status = control_request(kc, "elastichub_status_request")["content"]["live"]
    assert status["phase"] == "running" and status["delta_id"] is None
    assert not os.path.exists(os.path.join(session_dir(control_request, kc), "live-delta.ehk"))


def test_malformed_requests_are_clear_errors(tmp_path, start_elastic_kernel, control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    bad = live(control_request, kc, "melt")
    assert bad["ok"] is False and "unknown live-migration phase 'melt'" in bad["error"]
    assert "Traceback" not in bad["error"]
    for content, words in [({"lease_s": 0}, "must be more than 0"), ({"lease_s": 10**9}, "'lease_s' must be between"),
                           ({"wait_s": "soon"}, "'wait_s' must be a number")]:
        reply = live(control_request, kc, "freeze", **content)
        assert reply["ok"] is False and words in reply["error"], reply
    assert "delta_id" in live(control_request, kc, "apply")["error"]
    assert "not frozen" in live(control_request, kc, "retire")["error"]


def test_apply_refuses_a_base_mismatch_and_a_damaged_delta(tmp_path, start_elastic_kernel, run_cell,
                                                           control_request):
    km, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    run_cell(src, "import numpy as np\nx = np.arange(100_000)\ny = 'one'")
    live(control_request, src, "precopy")
    _, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    # A new pre-copy after the destination started: another base.
    run_cell(src, "y = 'two'")
    live(control_request, src, "precopy")
    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    reply = live(control_request, dst, "apply", delta_id=frozen["delta_id"])
    assert reply["ok"] is False and "base mismatch" in reply["error"] and "namespace unchanged" in reply["error"]
    live(control_request, src, "thaw")

    # Same base, damaged delta file.
    directory = session_dir(control_request, src)
    _, dst2 = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    run_cell(src, "y = 'three'\nx[0] = -5")
    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    path = os.path.join(directory, "live-delta.ehk")
    with open(path, "r+b") as f:
        f.seek(20)
        byte = f.read(1)
        f.seek(20)
        f.write(bytes([byte[0] ^ 0xFF]))
    reply = live(control_request, dst2, "apply", delta_id=frozen["delta_id"])
    assert reply["ok"] is False and "checksum mismatch" in reply["error"], reply
    reply = live(control_request, dst2, "apply", delta_id="not-this-one")
    assert reply["ok"] is False and "delta mismatch" in reply["error"]
    out = run_cell(dst2, "print(y, x[0])")
    assert out["stdout"].strip() == "two 0"  # the pre-copy's state, untouched
    live(control_request, src, "thaw")


def test_a_destination_awaiting_apply_never_writes_the_sources_checkpoint(tmp_path, start_elastic_kernel,
                                                                          stop_elastic_kernel, run_cell,
                                                                          control_request):
    km, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    run_cell(src, "v = 1")
    pre = live(control_request, src, "precopy")
    dkm, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    ckpt = os.path.join(session_dir(control_request, src), "checkpoint.ehk")
    base = os.path.join(session_dir(control_request, src), "live-base.ehk")
    mtime = os.stat(base).st_mtime_ns
    reply = control_request(dst, "elastichub_checkpoint_request", {"force": True})["content"]
    assert reply["ok"] is False and "awaiting apply" in reply["error"]
    stop_elastic_kernel(dkm, dst)  # graceful: its shutdown writes nothing either
    assert os.stat(base).st_mtime_ns == mtime and not os.path.exists(ckpt)
    assert live(control_request, src, "precopy")["base_id"] == pre["base_id"]  # nothing changed: reused


def test_without_a_base_the_delta_carries_every_buffer(tmp_path, start_elastic_kernel, run_cell, control_request):
    km, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    pre = live(control_request, src, "precopy")
    assert pre["ok"] is True and pre["base_id"] is None and pre["bytes"] == 0  # nothing to save
    _, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    run_cell(src, "import numpy as np\nz = np.arange(1000)\nw = z[::2]")
    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    assert frozen["ok"] and frozen["base_id"] is None and frozen["reused_buffers"] == 0
    assert frozen["changed_buffers"] == 1  # w is a view of z: no buffer of its own
    assert live(control_request, dst, "apply", delta_id=frozen["delta_id"])["ok"] is True
    out = run_cell(dst, "w[1] = -7\nprint(int(z.sum()), z[2])")
    assert out["stdout"].strip() == f"{sum(range(1000)) - 2 + (-7)} -7", out


def test_a_comm_message_while_frozen_is_activity(tmp_path, start_elastic_kernel, run_cell, control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    run_cell(kc, "n = 1")
    assert live(control_request, kc, "freeze", wait_s=5, lease_s=60)["ok"] is True
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": "no-such-widget", "data": {}}))
    deadline = time.monotonic() + 10
    while not control_request(kc, "elastichub_status_request")["content"]["live"]["activity"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    refused = live(control_request, kc, "retire")
    assert refused["ok"] is False and refused["activity"] is True
    assert live(control_request, kc, "thaw")["ok"] is True
    assert run_cell(kc, "print(n)")["stdout"].strip() == "1"  # the kernel carries on after the comm


def test_interrupting_a_cell_waiting_on_a_frozen_kernel_answers_it(tmp_path, start_elastic_kernel, run_cell,
                                                                    control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    run_cell(kc, "n = 1")
    assert live(control_request, kc, "freeze", wait_s=5, lease_s=60)["ok"] is True
    msg_id = kc.execute("n += 1")
    time.sleep(0.5)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "error"
    assert "this cell did not run" in reply["content"]["evalue"] and reply["content"]["traceback"] == []
    assert live(control_request, kc, "thaw")["ok"] is True
    assert run_cell(kc, "print(n)")["stdout"].strip() == "1"  # not run behind the user's back


def test_a_second_freeze_and_apply_after_a_thaw_lands_the_latest_state(tmp_path, start_elastic_kernel, run_cell,
                                                                       control_request):
    """The orchestrator's retry: a cell arrived during the pause, the source
    thawed and ran it, then froze again; the destination applies the new
    delta over the first (its base buffers are still held: no cell ran there)."""
    km, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(src, SETUP)["error"] is None
    live(control_request, src, "precopy")
    _, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    first = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    assert live(control_request, dst, "apply", delta_id=first["delta_id"])["ok"] is True
    assert control_request(dst, "elastichub_status_request")["content"]["live"]["base_buffers_held"]
    assert live(control_request, src, "thaw")["ok"] is True
    assert run_cell(src, CHANGE)["error"] is None
    before, _ = digest(run_cell, src)
    second = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    assert second["ok"] is True and second["delta_id"] != first["delta_id"]
    applied = live(control_request, dst, "apply", delta_id=second["delta_id"])
    assert applied["ok"] is True, applied
    assert live(control_request, src, "retire")["ok"] is True
    after, _ = digest(run_cell, dst)
    assert after == before
    assert not control_request(dst, "elastichub_status_request")["content"]["live"]["base_buffers_held"]


def test_a_forced_retire_answers_the_waiting_cell_without_running_it(tmp_path, start_elastic_kernel, run_cell,
                                                                     control_request):
    """The orchestrator's last try for a kernel that is never quiet: the cell
    that arrived during the pause is answered, said not run, and did not run."""
    kc, msg_id = frozen_with_a_waiting_cell(tmp_path, start_elastic_kernel, run_cell, control_request)
    assert live(control_request, kc, "retire")["activity"] is True  # refused without force
    forced = live(control_request, kc, "retire", force=True)
    assert forced["ok"] is True and forced["activity"] is True, forced
    reply = kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "error"
    assert "it did not run. Run it again." in stream_text(kc, msg_id)
    assert live(control_request, kc, "thaw")["ok"] is True  # an undone move: the source serves again
    assert run_cell(kc, "print(n)")["stdout"].strip() == "1"  # the refused cell never ran


def test_the_sessions_directory_sys_path_and_environment_move_live(tmp_path, start_elastic_kernel, run_cell,
                                                                   control_request):
    """What the session changed after the pre-copy arrives with the delta,
    before the delta's modules are imported (its helper is found through
    the session's sys.path entry); decimal's precision, which lives in the
    cells' execution context, reaches the destination's cells, though the
    delta is applied on its control thread."""
    home = tmp_path / "home"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "lab_helper.py").write_text("def double(x):\n    return 2 * x\n")
    (home / "data").mkdir()
    _, src = start_elastic_kernel(tmp_path, session_name=SESSION, cwd=home)
    assert run_cell(src, "import os, sys\nn = 1\nos.environ['BEFORE'] = 'pre'")["error"] is None
    assert live(control_request, src, "precopy")["ok"] is True
    _, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV, cwd=home)

    change = ("sys.path.append('lib')\nfrom lab_helper import double\n%cd data\n"
              "os.environ['AFTER'] = 'post'\ndel os.environ['BEFORE']\n"
              "import decimal\ndecimal.getcontext().prec = 40")  # the cells' context: applied before the next cell
    assert run_cell(src, change)["error"] is None
    probe = ("print(repr((os.getcwd(), 'lib' in sys.path, os.environ.get('BEFORE'), os.environ.get('AFTER'), "
             "double(n), str(decimal.Decimal(1) / 7))))")
    before = run_cell(src, probe)["stdout"]
    assert before.strip() == repr((str(home / "data"), True, None, "post", 2, "0." + "142857" * 6 + "1429"))
    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    assert frozen["ok"] is True, frozen
    applied = live(control_request, dst, "apply", delta_id=frozen["delta_id"])
    assert applied["ok"] is True and "double" in applied["migrated"], applied
    assert live(control_request, src, "retire")["ok"] is True
    assert run_cell(dst, probe)["stdout"] == before


IDIOMS_SETUP = r'''
import functools, os, tempfile
class Link:
    def __init__(self, v, nxt=None):
        self.v, self.nxt = v, nxt
chain = None
for i in range(3000):
    chain = Link(i, chain)
@functools.lru_cache(maxsize=None)
def sq(n):
    return n * n
sq(3)
path = os.path.join(tempfile.mkdtemp(), "d.npy")
np.save(path, np.arange(1000.0))
X = np.load(path, mmap_mode="r")
'''
IDIOMS_PROBE = r'''
n, s, node = 0, 0, chain
while node is not None:
    n, s, node = n + 1, s + node.v, node.nxt
print(n, s, sq(4), type(X).__name__, str(X.filename) == path, float(X.sum()))
'''


def test_a_list_too_deep_for_pickle_a_cached_function_and_a_memory_map_move_live(tmp_path, start_elastic_kernel,
                                                                                  run_cell, control_request):
    """The pre-copy saves the list flat; the delta saves it flat again after
    it grew; the destination maps the file and fills the cache again."""
    _, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(src, SETUP)["error"] is None and run_cell(src, IDIOMS_SETUP)["error"] is None
    pre = live(control_request, src, "precopy")
    assert pre["ok"] is True and pre["not_restorable"] == [] and {"chain", "sq", "X"} <= set(pre["migrated"])
    _, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    assert run_cell(src, "for i in range(3000, 3500):\n    chain = Link(i, chain)")["error"] is None
    before = run_cell(src, IDIOMS_PROBE)["stdout"]
    assert before.split()[:2] == ["3500", str(sum(range(3500)))]

    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    assert frozen["ok"] is True and frozen["not_restorable"] == [], frozen
    applied = live(control_request, dst, "apply", delta_id=frozen["delta_id"])
    assert applied["ok"] is True, applied
    assert [d["name"] for d in applied["differs"]] == ["sq"]
    assert "2 cached result" in applied["differs"][0]["reason"]
    assert live(control_request, src, "retire")["ok"] is True
    after = run_cell(dst, IDIOMS_PROBE)
    assert after["stdout"] == before
    assert "Note: sq: sq() is restored with its 2 cached result(s)" in after["stderr"]  # sq(3), the probe's sq(4)


SQL_SETUP = r'''
import sqlite3
db = sqlite3.connect(":memory:")
db.execute("create table t(x)")
db.executemany("insert into t values (?)", [(i,) for i in range(100)])
db.commit()
cur = db.cursor()
'''
SQL_PROBE = "print(db.execute('select count(*), sum(x) from t').fetchone(), cur.connection is db)"


def test_a_database_in_memory_moves_live_and_the_destinations_cells_can_use_it(tmp_path, start_elastic_kernel,
                                                                              run_cell, control_request):
    """The delta is applied on the destination's control thread; a sqlite3
    connection answers only the thread that made it, so it is made on the
    thread the cells run on."""
    _, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(src, SQL_SETUP)["error"] is None
    pre = live(control_request, src, "precopy")
    assert pre["ok"] is True and {"db", "cur"} <= set(pre["migrated"]), pre
    _, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    assert run_cell(src, "db.execute('insert into t values (1000)'); db.commit()")["error"] is None
    before = run_cell(src, SQL_PROBE)["stdout"]
    assert before.strip() == "(101, 5950) True"

    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    assert frozen["ok"] is True and frozen["not_restorable"] == [], frozen
    applied = live(control_request, dst, "apply", delta_id=frozen["delta_id"])
    assert applied["ok"] is True, applied
    assert "open again (in memory)" in {d["name"]: d["reason"] for d in applied["differs"]}["db"]
    assert live(control_request, src, "retire")["ok"] is True
    assert run_cell(dst, SQL_PROBE)["stdout"] == before
    out = run_cell(dst, "db.execute('insert into t values (1)'); db.commit(); " + SQL_PROBE)
    assert out["error"] is None and out["stdout"].strip() == "(102, 5951) True", out


CODE_AT_LOAD_SETUP = r'''
import os
def norm(k):
    return k.lower()
class CIDict(dict):
    def __setitem__(self, k, v):
        super().__setitem__(norm(k), v)
UNIT = "cm"
class Length:
    def __init__(self, v):
        self.v, self.label = v, f"{v}{UNIT}"
    def __getstate__(self):
        return {"v": self.v}
    def __setstate__(self, s):
        self.v, self.label = s["v"], f"{s['v']}{UNIT}"
class Picky:
    def __init__(self):
        self.pid, self.refuse = os.getpid(), False
    def __setstate__(self, s):
        if s["refuse"] and s["pid"] != os.getpid():
            raise ValueError("refused on another node")
        self.__dict__.update(s)
small = 1
'''
CODE_AT_LOAD_CHANGE = r'''
def norm(k):
    return k.upper()
cid = CIDict()
cid["Apple"] = 1
UNIT = "in"
ln = Length(3)
small = 2
picky = Picky()
picky.refuse = True
'''
CODE_AT_LOAD_PROBE = "print(dict(cid), ln.label, norm('Ab'), UNIT, small)"


def test_notebook_code_run_by_the_delta_sees_the_sources_values_and_a_refused_apply_binds_nothing(
        tmp_path, start_elastic_kernel, run_cell, control_request):
    """A __setstate__ or a dict subclass's __setitem__ run while the delta
    loaded saw the destination's pre-copy globals (UNIT "cm", the old
    norm), and the move said the variables came along unchanged: {'apple':
    1} and '3cm' instead of {'APPLE': 1} and '3in'. The delta's values are
    now bound as they load; an apply refused half-way unbinds them all."""
    _, src = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(src, CODE_AT_LOAD_SETUP)["error"] is None
    assert live(control_request, src, "precopy")["ok"] is True
    _, dst = start_elastic_kernel(tmp_path, session_name=SESSION, env=DEST_ENV)
    assert run_cell(src, CODE_AT_LOAD_CHANGE)["error"] is None
    before = run_cell(src, CODE_AT_LOAD_PROBE)["stdout"]
    assert before.strip() == "{'APPLE': 1} 3in AB in 2"

    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    refused = live(control_request, dst, "apply", delta_id=frozen["delta_id"])
    assert refused["ok"] is False and "picky (could not be loaded (ValueError: refused on another node))" \
        in refused["error"] and "namespace unchanged" in refused["error"], refused
    probe = "print(norm('Ab'), UNIT, small, [n in globals() for n in ('cid', 'ln', 'picky')])"
    assert run_cell(dst, probe)["stdout"].strip() == "ab cm 1 [False, False, False]"  # the pre-copy's state

    live(control_request, src, "thaw")
    assert run_cell(src, "picky.refuse = False")["error"] is None
    frozen = live(control_request, src, "freeze", wait_s=5, lease_s=60)
    applied = live(control_request, dst, "apply", delta_id=frozen["delta_id"])
    assert applied["ok"] is True and applied["differs"] == [], applied
    assert live(control_request, src, "retire")["ok"] is True
    assert run_cell(dst, CODE_AT_LOAD_PROBE)["stdout"] == before


@pytest.mark.parametrize("report", [None, {"migrated": ["a"], "recomputed": [], "notes": []}])
def test_a_move_whose_last_changes_could_not_be_applied_says_so_in_the_students_words(report):
    """It said "WARNING: the live-migration delta ... was NOT applied ...; the variables above are those of the
    pre-copy checkpoint": ElasticHub's parts, and nothing of what to do."""
    from elastichub_kernel import live as live_module

    note = live_module._delta_note(report, "/home/s/.elastichub/nb/delta.ehk", "checksum mismatch in the index",
                                   "/home/s/.elastichub/nb/delta.ehk.rejected-1")["notes"][-1]
    assert note.startswith("ElasticHub: WARNING: the last changes to your variables before your server moved "
                           "were NOT restored (checksum mismatch in the index"), note
    assert "delta.ehk.rejected-1" in note and "live-migration" not in note and "pre-copy" not in note, note
    assert ("run again the cells you ran last" if report else "run your notebook's cells again") in note, note
