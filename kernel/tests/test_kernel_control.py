"""Control-channel checkpoint/status requests against a real kernel."""

import json
import os
import stat
import time

import pytest

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory, start_elastic_kernel_module):
    root = tmp_path_factory.mktemp("ck")
    km, kc = start_elastic_kernel_module(root, session_name="ctl/notebook.ipynb")
    return root, km, kc


def test_request_waits_for_a_running_cell_and_sees_its_result(kernel, run_cell, control_request):
    root, km, kc = kernel
    msg_id = kc.execute("import time\nprint('running', flush=True)\ntime.sleep(1.5)\nafter_sleep = 42")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # wait until the cell is really running
        msg = kc.get_iopub_msg(timeout=30)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream"
                and "running" in msg["content"]["text"]):
            break
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"] is True, reply
    assert "after_sleep" in reply["migrated"]  # a consistent state: after the cell, not during it
    assert reply["unchanged"] is False
    kc.get_shell_msg(timeout=30)  # the execute reply


def test_repeated_request_without_changes_rewrites_nothing(kernel, run_cell, control_request):
    root, km, kc = kernel
    run_cell(kc, "v = list(range(10))")
    first = control_request(kc, "elastichub_checkpoint_request")["content"]
    mtime = os.stat(first["path"]).st_mtime_ns
    second = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert second["ok"] and second["unchanged"] is True and second["path"] == first["path"]
    assert os.stat(first["path"]).st_mtime_ns == mtime
    assert stat.S_IMODE(os.stat(first["path"]).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(first["path"])).st_mode) == 0o700
    run_cell(kc, "v.append(10)")
    third = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert third["unchanged"] is False and os.stat(first["path"]).st_mtime_ns != mtime


def test_status_reports_the_session_and_last_checkpoint(kernel, control_request):
    root, km, kc = kernel
    reply = control_request(kc, "elastichub_status_request")
    assert reply["msg_type"] == "elastichub_status_reply"
    status = reply["content"]
    assert status["status"] == "ok"
    assert status["session_key"].startswith("notebook.ipynb-")
    assert status["checkpoint_dir"] == os.path.join(str(root), status["session_key"])
    assert status["last_checkpoint"]["ok"] is True and status["restored"] is None
    assert status["disk_speed"]["source"] == "configured"


def test_checkpoint_error_is_a_reply_not_a_crash(kernel, run_cell, control_request):
    root, km, kc = kernel
    session_dir = control_request(kc, "elastichub_status_request")["content"]["checkpoint_dir"]
    os.chmod(session_dir, 0o777)  # someone loosened our directory: refuse to write there
    try:
        run_cell(kc, "w = 1")
        reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    finally:
        os.chmod(session_dir, 0o700)
    assert reply["status"] == "error" and reply["ok"] is False
    assert "writable" in reply["error"] and session_dir in reply["error"]
    assert run_cell(kc, "print(w)")["stdout"].strip() == "1"  # the kernel carries on


def test_restore_after_user_restart_is_configurable(tmp_path, start_elastic_kernel, run_cell):
    km, kc = start_elastic_kernel(tmp_path, session_name="cfg.ipynb",
                                  args=["--ElasticKernel.restore_after_user_restart=True"])
    run_cell(kc, "kept = {'a': 1}")
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=60)
    out = run_cell(kc, "print(kept)")
    assert out["stdout"].strip() == "{'a': 1}", out
    assert "ElasticHub: restored 1 variable(s)" in out["stderr"]


def test_magics_checkpoint_and_status(kernel, run_cell):
    root, km, kc = kernel
    out = run_cell(kc, "import threading\nmagic_lock = threading.Lock()\nmagic_lock.acquire()\n%elastic_checkpoint")
    assert out["error"] is None, out
    assert "ElasticHub: checkpoint written to" in out["stdout"]
    assert "not restorable: magic_lock:" in out["stdout"]
    out = run_cell(kc, "%elastic_status --json")
    status = json.loads(out["stdout"])
    assert status["last_checkpoint"]["ok"] is True and "magic_lock" in str(status["last_checkpoint"]["not_restorable"])


def test_kernel_info_names_the_implementation(kernel):
    root, km, kc = kernel
    reply = kc.kernel_info(reply=True, timeout=30)
    assert reply["content"]["implementation"] == "elastic-python"
