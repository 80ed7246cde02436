"""The demo's verdict and summary table, without running the demo
(tests/e2e/test_demo.py runs it)."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest
from rich.console import Console
from rich.text import Text

from elastichub.demo.play import failures, sessions_since
from elastichub.demo.stage import StageError, claim_workdir
from elastichub.demo.view import summary_table


def summary(**changes) -> dict:
    base = {"students": 3, "scale_outs": 1, "scale_ins": 1, "cloud_node_seconds": 100.0, "max_wait_s": 12.0,
            "migrations": [{"user": "s2", "from_node": "cloud-1", "to_node": "onprem-1", "method": "live",
                            "downtime_s": 0.3, "state_identical": True, "same_kernel": True}],
            "all_states_identical": True, "failed_students": {}, "left": ["s1"], "history_file": None,
            "history_kept": False, "history_sessions": [], "seconds": 90.0}
    return {**base, **changes}


def rendered(s: dict) -> str:
    console = Console(width=200, record=True)
    console.print(summary_table(s))
    return console.export_text()


def test_a_clean_run_passes():
    assert failures(summary()) == []


def test_a_student_who_could_not_work_fails_the_demo_and_the_table_says_why():
    s = summary(failed_students={"s3": "s3's cell failed: [Errno 28] No space left on device"})
    assert failures(s) == ["1 student(s) could not work (why: in the table): s3"]
    assert "s3's cell failed: [Errno 28] No space left on device" in rendered(s)  # brackets kept, not markup


def test_a_state_that_differs_fails_the_demo():
    s = summary(all_states_identical=False)
    assert failures(s) == ["a moved student's state differs from what it held before the move"]


def test_the_summary_counts_this_runs_sessions_not_those_of_a_kept_workdirs_earlier_runs(tmp_path):
    history = tmp_path / "history.csv"
    history.write_text("arrival,duration_s,cpu,ram_gib,user,server,waited_s\n"
                       "2026-12-02T10:34:31+00:00,50,0.1,1,student03,,0\n"  # yesterday's run
                       "# elastichub orchestrator stopped at 2026-12-02T10:34:40+00:00 with 0 server session(s) "
                       "running\n"
                       "# elastichub orchestrator started at 2026-12-02T10:35:40+00:00\n"
                       "2026-12-02T10:35:48+00:00,59,0.1,1,student03,,0\n"
                       "2026-12-02T10:35:49+00:00,59,0.1,1,student04,,0\n")
    started = datetime(2026, 12, 2, 10, 35, 40, 700_000, tzinfo=timezone.utc).timestamp()
    assert sessions_since(history, started) == ["student03", "student04"]


def test_a_workdir_another_demo_holds_is_refused_by_name(tmp_path):
    held = claim_workdir(tmp_path)
    try:
        with pytest.raises(StageError, match=rf"{tmp_path} is in use by another elastichub demo "
                                             rf"\(pid {os.getpid()}\): give another --workdir"):
            claim_workdir(tmp_path)
    finally:
        held.close()
    claim_workdir(tmp_path).close()  # free again once the holder is gone


def test_free_ports_are_never_handed_out_twice(monkeypatch):
    """The kernel may give the same free port to two binds in a row: a hub's
    proxy then got one port for its API and its public side, and never came up."""
    from elastichub.demo import stage

    ports = iter([41001, 41001, 41002])

    class OnePortTwice:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def bind(self, address):
            self.port = next(ports)

        def getsockname(self):
            return ("127.0.0.1", self.port)

    monkeypatch.setattr(stage.socket, "socket", OnePortTwice)
    monkeypatch.setattr(stage, "_GIVEN", set())
    assert [stage.free_port(), stage.free_port()] == [41001, 41002]


def test_piped_the_live_views_last_line_and_the_summarys_title_are_on_lines_of_their_own():
    import io

    from elastichub.demo.view import live_view

    out = io.StringIO()
    console = Console(file=out, width=60)  # no terminal: piped, as in a CI log
    with live_view(console, Text("checking the moved students' kernels"), transient=False):
        pass
    console.print("ElasticHub demo: summary")
    assert out.getvalue().splitlines() == ["checking the moved students' kernels", "ElasticHub demo: summary"]


def test_a_hub_that_fails_on_its_config_is_told_with_the_file_line_and_the_exception():
    from elastichub.demo.stage import error_lines

    log = ["[I 2026-12-02 22:48:52.500 JupyterHub app:3400] Loading config",
           "[E 2026-12-02 22:48:52.604 JupyterHub app:4090]",
           "    Traceback (most recent call last):",
           '      File "/venv/jupyterhub/app.py", line 4087, in launch_instance_async',
           "        await self.initialize(argv)",
           '      File "/tmp/badcfg.py", line 3',
           "        this is bad(",
           "                   ^",
           "    SyntaxError: '(' was never closed",
           "    ",
           "[I 2026-12-02 22:48:52.700 JupyterHub app:4100] bye"]
    assert error_lines(log) == ["[E 2026-12-02 22:48:52.604 JupyterHub app:4090]\n"
                                '    File "/tmp/badcfg.py", line 3\n'
                                "    SyntaxError: '(' was never closed"]
    assert error_lines(["[E 2026 JupyterHub app:1] no traceback"]) == ["[E 2026 JupyterHub app:1] no traceback"]


def test_the_scale_rows_say_they_count_actions_not_vms():
    """A run showed 2 'cloud VMs started' and 3 'given back' of a pool of 2: the
    counts are the orchestrator's actions (a drain started again counts twice)."""
    text = rendered(summary(scale_outs=2, scale_ins=3))
    assert "scale-outs (boots ordered)" in text and "scale-ins (drains started)" in text
    assert "VMs given back" not in text


def test_each_students_node_is_read_from_the_same_status_as_the_node_table():
    # The final frame of a run: the room had last located s2 on its source node, before its move.
    from types import SimpleNamespace

    from elastichub.demo.view import render

    node = {"tier": "on-prem", "draining": False, "status": "ready", "occupancy_ram": 50.0}
    status = {"theta_out": 80, "occupancy": {"ram": 50.0}, "pending": [], "decisions": [],
              "migrations": {"in_flight": [], "recent": []},
              "nodes": [{**node, "name": "onprem-1", "servers": ["s1", "s2"]},
                        {**node, "name": "cloud-1", "tier": "cloud", "status": "stopped", "servers": []}]}
    students = [SimpleNamespace(name="s1", phase="working", node="onprem-1", wait_s=3.0),
                SimpleNamespace(name="s2", phase="moved, state identical", node="cloud-1", wait_s=9.0),
                SimpleNamespace(name="s3", phase="left", node="cloud-1", wait_s=4.0)]
    console = Console(width=200, record=True)
    console.print(render(status, students, []))
    rows = {line.split()[0]: line for line in console.export_text().splitlines() if line.startswith("s")}
    assert "onprem-1" in rows["s2"] and "cloud-1" not in rows["s2"]
    assert "onprem-1" in rows["s1"] and "cloud-1" not in rows["s3"]
