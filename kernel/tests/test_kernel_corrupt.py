"""A checkpoint that cannot be trusted: clean start, a message naming it, file kept."""

import json
import os
import struct

import pytest

from elastichub_kernel import engine
from elastichub_kernel.diskspeed import DiskSpeed
from elastichub_kernel.recorder import HistoryRecorder
from elastichub_kernel.storage import CHECKPOINT_NAME, FORMAT_VERSION, session_key

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

HEAVY = ["numpy", "pandas", "torch", "scipy", "sklearn", "matplotlib", "polars", "lightgbm", "networkx"]


def _write_good_checkpoint(root, session):
    directory = os.path.join(root, session_key(session))
    ns = {"x": list(range(1000)), "secret": "value", "blob": bytes(range(256)) * 64}
    reply = engine.checkpoint(directory, ns, list(ns), HistoryRecorder(), DiskSpeed(str(root), 500.0), session)
    assert reply["ok"]
    return reply["path"]


def _truncate(path):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) * 2 // 3)
    return "truncated"


def _garble(path):
    with open(path, "r+b") as f:
        f.seek(200)
        chunk = f.read(16)
        f.seek(200)
        f.write(bytes(b ^ 0xFF for b in chunk))
    return "checksum mismatch"


def _from_a_newer_kernel(path):
    with open(path, "r+b") as f:
        f.seek(8)  # the header's format version
        f.write(struct.pack(">I", FORMAT_VERSION + 1))
    return (f"saved by a newer version of ElasticHub's kernel, in checkpoint format version {FORMAT_VERSION + 1}; "
            f"this kernel reads format version {FORMAT_VERSION} only")


def _give_away(path):
    if os.geteuid() != 0:
        pytest.skip("making a file owned by another user needs root (the in-process check is in test_storage)")
    os.chown(path, 65534, 65534)
    return "owned by uid 65534"


@pytest.mark.parametrize("damage", [_truncate, _garble, _from_a_newer_kernel, _give_away],
                         ids=["truncated", "garbled", "newer-format", "foreign-owned"])
def test_untrusted_checkpoint_means_clean_start_message_and_file_kept(
        tmp_path, damage, start_elastic_kernel, stop_elastic_kernel, run_cell):
    session = f"work/{damage.__name__}.ipynb"
    path = _write_good_checkpoint(tmp_path, session)
    expected_reason = damage(path)
    damaged_bytes = open(path, "rb").read()

    km, kc = start_elastic_kernel(tmp_path, session_name=session)
    out = run_cell(kc, f"import sys, json\nprint(json.dumps(['x' in globals(), [m for m in {HEAVY!r} if m in sys.modules]]))")
    assert out["error"] is None, out
    assert json.loads(out["stdout"]) == [False, []]  # clean start, no library pulled in
    message = out["stderr"]
    assert path in message and expected_reason in message, message
    # What it means and what to do, in a student's words ("a clean namespace" said neither).
    assert "your variables were NOT restored" in message and "run your notebook's cells again" in message, message
    assert "tell the course staff" in message and "namespace" not in message, message

    directory = os.path.dirname(path)
    kept = [name for name in os.listdir(directory) if name.startswith(CHECKPOINT_NAME + ".rejected-")]
    assert len(kept) == 1 and os.path.join(directory, kept[0]) in message
    assert open(os.path.join(directory, kept[0]), "rb").read() == damaged_bytes
    assert not os.path.exists(path)

    # The next checkpoint goes to the usual name and never touches the kept file.
    run_cell(kc, "y = 2")
    stop_elastic_kernel(km, kc)
    assert os.path.exists(path)
    assert open(os.path.join(directory, kept[0]), "rb").read() == damaged_bytes


def test_no_checkpoint_means_silent_clean_start(tmp_path, start_elastic_kernel, run_cell, control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=None)  # JPY_SESSION_NAME unset: cwd fallback
    out = run_cell(kc, "z = 1")
    assert out["stderr"] == "" and out["error"] is None
    status = control_request(kc, "elastichub_status_request")["content"]
    assert status["status"] == "ok" and status["session_key"].startswith("no-session-")
    assert status["restored"] is None and status["last_checkpoint"] is None
    assert status["checkpoint_dir"].startswith(str(tmp_path))


def test_the_restore_report_waits_for_a_cell_the_user_runs(tmp_path, start_elastic_kernel, run_cell):
    """A frontend extension's own request (a variable inspector's: store_history=False, not silent) is
    shown nowhere: the report must not be spent on it."""
    _write_good_checkpoint(tmp_path, "work/seen.ipynb")
    km, kc = start_elastic_kernel(tmp_path, session_name="work/seen.ipynb")
    streams = []
    kc.execute_interactive("_inspector = 1", store_history=False, silent=False, timeout=60,
                           output_hook=lambda msg: streams.append(msg["content"].get("text", "")))
    assert not any("ElasticHub" in text for text in streams), streams
    out = run_cell(kc, "print(len(x))")
    assert out["stdout"].strip() == "1000" and "ElasticHub: restored 3 variable(s)" in out["stderr"], out


def test_a_checkpoint_in_a_folder_others_may_write_is_not_restored_and_the_student_is_told_what_to_do(
        tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell):
    """It said "directory ... is group/world-writable. The kernel started with a clean namespace.": what that
    means for the student's variables, and what to do, was not said."""
    session = "work/loose.ipynb"
    path = _write_good_checkpoint(tmp_path, session)
    os.chmod(os.path.dirname(path), 0o777)
    km, kc = start_elastic_kernel(tmp_path, session_name=session)
    out = run_cell(kc, "print('x' in globals())")
    stop_elastic_kernel(km, kc)
    assert out["stdout"].strip() == "False", out
    message = out["stderr"]
    assert "your variables were NOT restored" in message and os.path.dirname(path) in message, message
    assert "run your notebook's cells again" in message and "namespace" not in message, message
