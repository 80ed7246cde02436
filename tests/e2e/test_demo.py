"""`elastichub demo` as a new user runs it: the whole system on one machine,
configured by jupyterhub_config_example.py (the demo is that file's test).
It ends clean: no process left behind, Ctrl-C included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.timeout(400), pytest.mark.slow]


def processes_under(path: Path) -> list[str]:
    """Processes whose working directory or command line mention `path`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd.startswith(str(path)) or str(path) in cmd:
            found.append(f"{pid}: {cmd[:200]}")
    return found


def demo(workdir: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "elastichub", "demo", "--workdir", str(workdir), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_the_demo_bursts_moves_every_student_back_with_their_state_and_ends_clean(tmp_path):
    proc = demo(tmp_path / "demo", "--json")
    out, err = proc.communicate(timeout=380)
    assert proc.returncode == 0, err[-4000:]
    summary = json.loads(out.strip().splitlines()[-1])
    assert {"students", "scale_outs", "scale_ins", "cloud_node_seconds", "max_wait_s", "migrations"} <= set(summary)
    assert summary["students"] == 10 and summary["failed_students"] == {}
    assert summary["scale_outs"] >= 1 and summary["scale_ins"] >= 1 and summary["cloud_node_seconds"] > 0
    assert summary["migrations"], "no student was moved off the cloud"
    for move in summary["migrations"]:
        assert {"user", "from_node", "to_node", "method", "downtime_s", "state_identical"} <= set(move)
        assert move["from_node"].startswith("cloud-") and move["to_node"].startswith("onprem-")
        assert move["state_identical"] is True and move["downtime_s"] > 0
        # the demo runs the example config: live moves keep the notebook's kernel
        assert move["method"] == "live" and move["same_kernel"] is True, move
    # The history (history_file): each student who left is one session; a move ends none.
    sessions = summary["history_sessions"]
    assert len(summary["left"]) == 10 - 4 and set(summary["left"]) <= set(sessions), summary
    assert len(sessions) == len(set(sessions)), sessions
    assert summary["history_kept"] is True  # --workdir
    from elastichub.policy import GiB, Resources
    from elastichub.simulator.trace import load_trace
    trace = load_trace(summary["history_file"], [Resources(64, 64 * GiB)])  # a trace the simulator replays
    assert len(trace.requests) == len(sessions) and all(r.duration_s >= 1 for r in trace.requests)
    assert processes_under(tmp_path / "demo") == []


def test_ctrl_c_stops_everything(tmp_path):
    proc = demo(tmp_path / "demo")
    deadline = time.monotonic() + 120
    log = tmp_path / "demo" / "jupyterhub.log"
    while time.monotonic() < deadline and "Adding user student" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    os.kill(proc.pid, signal.SIGINT)  # students' servers are starting: the middle of everything
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted" in err or "interrupted" in _
    time.sleep(1)
    assert processes_under(tmp_path / "demo") == []


def test_a_config_whose_orchestrator_cannot_start_fails_fast_names_why_and_leaves_nothing(tmp_path):
    """An admin's own config (given relative to where they stand) with a
    setting the orchestrator refuses: the demo used to wait 90 s, print the
    proxy's noise, and leave configurable-http-proxy running."""
    example = Path(__file__).resolve().parents[2] / "jupyterhub_config_example.py"
    (tmp_path / "my_hub.py").write_text(f"exec(open({str(example)!r}).read())\n"
                                        "c.ElasticOrchestrator.theta_out = 0.8\n")
    proc = subprocess.Popen([sys.executable, "-m", "elastichub", "demo", "--workdir", "demo", "--config", "my_hub.py"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    started = time.monotonic()
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err[-3000:]
    text = out + err
    assert "the orchestrator exited at start" in text and "0.8 looks like a fraction" in text, text[-3000:]
    assert "ConfigProxy" not in text
    assert time.monotonic() - started < 80  # not the 90 s wait for a service that is not coming
    time.sleep(1)
    assert processes_under(tmp_path / "demo") == []
