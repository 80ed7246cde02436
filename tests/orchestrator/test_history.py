"""The hub's history as a simulator trace (elastichub/orchestrator/history.py):
one row per server session, across its moves, that `simulate --trace` replays."""

from __future__ import annotations

import csv
import json
from datetime import datetime, timezone

import pytest

from elastichub import podmeta
from elastichub.orchestrator.history import COLUMNS, HistoryFile, SessionTracker
from elastichub.orchestrator.records import pod_record
from elastichub.policy import GiB, Resources
from elastichub.simulator.trace import load_trace

T0 = datetime.fromisoformat("2027-01-15T08:00:00+00:00").timestamp()


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


def pod(name, user="alice", created=T0, started=None, phase="Running", memory="2Gi", node="onprem-1",
        annotations=None):
    return pod_record({
        "metadata": {"name": name, "namespace": "jh", "creationTimestamp": iso(created),
                     "labels": {podmeta.MANAGED_LABEL: "true"},
                     "annotations": {podmeta.USER_ANNOTATION: user, podmeta.SERVER_NAME_ANNOTATION: "",
                                     **(annotations or {})}},
        "spec": {"nodeName": node if started is not None else None,
                 "containers": [{"name": "notebook", "resources": {"requests": {"cpu": "500m", "memory": memory}}}]},
        "status": {"phase": phase if started is not None else "Pending",
                   **({"startTime": iso(started)} if started is not None else {})}})


def drain_naming(*servers) -> str:
    return json.dumps({"servers": {s: {"step": "restart"} for s in servers}})


def test_a_session_is_a_row_when_its_pod_is_gone():
    tracker = SessionTracker()
    assert tracker.update([pod("jupyter-alice", started=None)], [], T0 + 5) == []  # waiting for room
    assert tracker.update([pod("jupyter-alice", started=T0 + 12)], [], T0 + 15) == []
    assert tracker.update([pod("jupyter-alice", started=T0 + 12)], [], T0 + 3612) == []
    (row,) = tracker.update([], [], T0 + 3627)
    assert row == {"arrival": "2027-01-15T08:00:00+00:00", "duration_s": 3600, "cpu": "0.5", "ram_gib": "2",
                   "user": "alice", "server": "", "waited_s": 12}
    assert tracker.update([], [], T0 + 3642) == []  # once


def test_a_live_move_and_a_restart_move_are_one_session_from_the_first_ask():
    tracker = SessionTracker()
    first = pod("jupyter-alice", started=T0 + 2)
    tracker.update([first], [], T0 + 15)
    # live: the destination runs beside the source and carries the server's first start
    # (and when its user asked: the source's creation)
    dest = pod("jupyter-alice-m1", created=T0 + 600, started=T0 + 601, node="onprem-2",
               annotations={podmeta.MOVE_OF_ANNOTATION: "jupyter-alice", podmeta.STARTED_ANNOTATION: iso(T0 + 2),
                            podmeta.ASKED_ANNOTATION: iso(T0)})
    assert tracker.update([first, dest], [], T0 + 615) == []
    assert tracker.update([dest], [], T0 + 630) == []
    # by a restart: no pod for a while, but the node's drain record names the server
    assert tracker.update([], [drain_naming("alice")], T0 + 900) == []
    later = pod("jupyter-alice", created=T0 + 910, started=T0 + 920)
    assert tracker.update([later], [drain_naming("alice")], T0 + 930) == []
    # the drain writes when its user asked on the new pod (Drain._keep_times) before its record ends
    later = pod("jupyter-alice", created=T0 + 910, started=T0 + 920, annotations={podmeta.ASKED_ANNOTATION: iso(T0)})
    assert tracker.update([later], [], T0 + 2000) == []
    (row,) = tracker.update([], [], T0 + 2015)
    assert row["arrival"] == "2027-01-15T08:00:00+00:00" and row["duration_s"] == 2000 - 2
    assert row["waited_s"] == 2
    # without a record naming it (an admin's annotation is none), a gone pod ends the session
    tracker.update([first], [], T0 + 15)
    assert len(tracker.update([], ["not a drain record", drain_naming("bob")], T0 + 900)) == 1


def test_a_server_stopped_and_started_again_between_two_updates_is_two_sessions():
    """A restart from the hub's home page within one Tmon: one row used to
    span both sessions, so a tune saw fewer arrivals and longer lifetimes."""
    tracker = SessionTracker()
    again = pod("jupyter-alice", created=T0 + 3605, started=T0 + 3608)
    assert tracker.update([pod("jupyter-alice", started=T0 + 10)], [], T0 + 3600) == []
    (first,) = tracker.update([again], [], T0 + 3615)
    assert (first["arrival"], first["duration_s"]) == ("2027-01-15T08:00:00+00:00", 3600 - 10)
    assert tracker.update([again], [], T0 + 7200) == []
    (second,) = tracker.update([], [], T0 + 7215)
    assert (second["arrival"], second["duration_s"], second["waited_s"]) == ("2027-01-15T09:00:05+00:00",
                                                                             7200 - 3608, 3)


def test_a_spawn_cancelled_while_it_waited_and_a_failed_pod():
    tracker = SessionTracker()
    tracker.update([pod("jupyter-bob", user="bob"), pod("jupyter-cy", user="cy", started=T0 + 1)], [], T0 + 60)
    rows = tracker.update([pod("jupyter-cy", user="cy", started=T0 + 1, phase="Failed")], [], T0 + 75)
    assert [r["user"] for r in rows] == ["cy"]  # bob never ran: nothing to replay; cy's pod failed: ended


def test_the_file_is_a_trace_the_simulator_replays(tmp_path):
    path = tmp_path / "history.csv"
    history = HistoryFile(str(path))
    history.check()
    tracker = SessionTracker()
    tracker.update([pod("jupyter-alice", started=T0 + 10), pod("jupyter-bob", user="bob", created=T0 + 3600,
                                                                started=T0 + 3900, memory="512Mi")], [], T0 + 4000)
    history.append(tracker.update([pod("jupyter-bob", user="bob", created=T0 + 3600, started=T0 + 3900,
                                       memory="512Mi")], [], T0 + 4010))
    history.append(tracker.update([], [], T0 + 9000))
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS) and len(lines) == 3  # one header
    trace = load_trace(path, [Resources(4, 16 * GiB)])
    assert [(r.arrival_s, r.duration_s, r.requests.ram / GiB) for r in trace.requests] == [
        (8 * 3600, 3990, 2.0), (9 * 3600, 110, 0.5)]  # from midnight of the first day, UTC
    with open(path) as f:
        assert [int(r["waited_s"]) for r in csv.DictReader(f)] == [10, 300]


def test_a_file_of_other_columns_is_refused_at_start_and_the_history_of_a_restart_appends(tmp_path):
    """A trace of `elastichub trace` given as history_file: rows appended
    under its header put waited_s under `ended`, and the file no longer
    replays. The orchestrator's own file, restarted, appends."""
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival,duration_s,cpu,ram_gib,user,server,spawn_s,ended\n"
                     "2027-01-15T08:00:00+00:00,60,1,2,a,,3.2,stop\n")
    with pytest.raises(ValueError, match=r"trace.csv holds the columns 'arrival,duration_s,cpu,ram_gib,user,server,"
                                         r"spawn_s,ended', not a history's arrival,duration_s,cpu,ram_gib,user,"
                                         r"server,waited_s: rows appended there would not replay; give a new file"):
        HistoryFile(str(trace)).check()
    own = tmp_path / "history.csv"
    HistoryFile(str(own)).check()  # new: fine, and so is an empty one
    HistoryFile(str(own)).append([{"arrival": "2027-01-15T08:00:00+00:00", "duration_s": 60, "cpu": "1",
                                   "ram_gib": "2", "user": "a", "server": "", "waited_s": 0}])
    HistoryFile(str(own)).check()


def test_a_file_whose_last_line_lost_its_end_gets_its_rows_on_lines_of_their_own(tmp_path):
    """Edited by hand and saved without the last line's end: the next row was
    glued to it, one line of 13 values that no longer replayed."""
    path = tmp_path / "history.csv"
    path.write_text(",".join(COLUMNS) + "\n2027-01-15T08:00:00+00:00,60,1,2,a,,0")
    HistoryFile(str(path)).append([{"arrival": "2027-01-15T09:00:00+00:00", "duration_s": 30, "cpu": "1",
                                    "ram_gib": "2", "user": "b", "server": "", "waited_s": 0}])
    assert [r.duration_s for r in load_trace(path, [Resources(4, 16 * GiB)]).requests] == [60, 30]


def test_a_failed_write_keeps_its_rows_for_the_next(tmp_path):
    path = tmp_path / "history.csv"
    path.mkdir()  # as unwritable as a full disk
    history = HistoryFile(str(path))
    with pytest.raises(OSError):
        history.check()
    row = {"arrival": "2027-01-15T08:00:00+00:00", "duration_s": 60, "cpu": "1", "ram_gib": "2", "user": "a",
           "server": "", "waited_s": 0}
    with pytest.raises(OSError):
        history.append([row])
    assert history.unwritten == [row]
    path.rmdir()
    history.append([])
    assert path.read_text().splitlines()[1].startswith("2027-01-15T08:00:00+00:00,60,1,2,a")
    assert history.unwritten == [] and history.written == 1


@pytest.mark.timeout(60)
async def test_live_the_controller_writes_each_ended_server_to_the_history_file(cluster_factory, wire, tmp_path):
    """The orchestrator's loop against the local cluster (real informers):
    two servers run, one ends; its row is in the file, the other's is not."""
    from podtools import cluster_config, node_of, server_pod, until

    from elastichub.policy import PolicyConfig, make_strategy

    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1))
    for user in ("ann", "bob"):
        cluster.store.create("pods", server_pod(user, "1Gi"))
    await until(lambda: all(node_of(cluster.store, f"jupyter-{u}") for u in ("ann", "bob")), what="pods bound")
    ctl = await wire(cluster, make_strategy("elastic", PolicyConfig(tmon=0.2)), tmon=0.2)
    ctl.history = HistoryFile(str(tmp_path / "history.csv"))
    await until(lambda: all(p.started for p in ctl.pods.records.values()), what="both running in the cache")
    await ctl.cycle()
    cluster.store.delete("pods", "jupyter-ann", "default")

    async def ended():
        await ctl.cycle()
        return ctl.history.written
    await until(ended, what="ann's session written", step=0.2)
    with open(tmp_path / "history.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["user"], r["ram_gib"], r["cpu"]) for r in rows] == [("ann", "1", "0.1")], rows
    assert int(rows[0]["duration_s"]) >= 1 and datetime.fromisoformat(rows[0]["arrival"]).tzinfo is not None
    assert list(ctl.sessions.sessions) == ["bob"]
    assert ctl.status()["history"] == {"file": str(tmp_path / "history.csv"), "written": 1, "unwritten": 0,
                                       "running": 1}
    from elastichub.orchestrator.web import render_page
    page = render_page(ctl.status())
    assert f'History: 1 session written to <span title="{tmp_path / "history.csv"}">history.csv</span>' in page


def test_a_file_that_cannot_be_written_is_one_event_and_the_rows_wait(tmp_path):
    from elastichub.orchestrator.controller import Controller

    path = tmp_path / "history.csv"
    path.mkdir()
    ctl = Controller(None, None, None, None, None, None, history=HistoryFile(str(path)), clock=lambda: T0)
    row = {"arrival": "2027-01-15T08:00:00+00:00", "duration_s": 60, "cpu": "1", "ram_gib": "2", "user": "a",
           "server": "", "waited_s": 0}
    ctl._write_history([row])
    ctl._write_history([dict(row, user="b")])
    assert [e["kind"] for e in ctl.events] == ["error"] and "cannot write" in ctl.events[0]["message"]
    path.rmdir()
    ctl._write_history([])
    assert [e["kind"] for e in ctl.events] == ["error", "history"]
    with open(path) as f:
        assert [r["user"] for r in csv.DictReader(f)] == ["a", "b"]


def test_a_restart_marks_the_hours_the_orchestrator_did_not_watch_and_the_replay_warns(tmp_path):
    """Sessions that ended while the orchestrator was down had no row, and
    nothing in the file said so: a replay of those hours saw fewer servers
    than the hub had, without a word."""
    path = tmp_path / "history.csv"
    history = HistoryFile(str(path))
    history.check(T0)
    tracker = SessionTracker()
    alice = pod("jupyter-alice", started=T0 + 10)
    bob = pod("jupyter-bob", user="bob", created=T0 + 60, started=T0 + 70)
    carol = pod("jupyter-carol", user="carol", created=T0 + 100, started=T0 + 110)
    tracker.update([alice, bob, carol], [], T0 + 200)
    history.append(tracker.update([alice, bob], [], T0 + 250))  # carol's ends while it watches
    history.append([], stopped=(T0 + 300, tracker.running()))  # the controller's shutdown
    # down for an hour: bob's server ends; alice's runs on
    history = HistoryFile(str(path))
    history.check(T0 + 3900)
    tracker = SessionTracker()
    tracker.update([alice], [], T0 + 3900)
    history.append(tracker.update([], [], T0 + 4000))
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS) and lines[1].startswith("2027-01-15T08:01:40+00:00,")  # carol's
    assert lines[2:4] == ["# elastichub orchestrator stopped at 2027-01-15T08:05:00+00:00 with 2 server session(s) "
                          "running", "# elastichub orchestrator started at 2027-01-15T09:05:00+00:00"]
    assert lines[4].startswith("2027-01-15T08:00:00+00:00,")  # alice's, across the restart
    with open(path, "a") as f:  # a user named "#x" in the first column is a row, not a comment
        f.write("#x,2027-01-15T09:10:00+00:00,60,1,2,,0\n")
    with pytest.raises(ValueError, match=r"line 6, column arrival: not an ISO 8601 timestamp: '#x'"):
        load_trace(path, [Resources(4, 16 * GiB)])
    path.write_text("\n".join(lines) + "\n")
    trace = load_trace(path, [Resources(4, 16 * GiB)])
    assert len(trace.requests) == 2
    (warning,) = trace.meta["warnings"]
    assert warning == (f"{path} line 4: the orchestrator that wrote this history did not watch from 2027-01-15 "
                       "08:05+00:00 until 2027-01-15 09:05+00:00; of the 2 session(s) running when it stopped, 1 "
                       "ran on (rows after line 4), the other 1 ended while it was down (no row) or still run at the "
                       "file's end: sessions that ended then have no row, nor "
                       "have those started and ended in between, so the replay sees fewer servers than the hub had "
                       "in those hours")
    # killed without its stop line: the gap starts after its last row
    HistoryFile(str(path)).check(T0 + 7200)
    (warning,) = load_trace(path, [Resources(4, 16 * GiB)]).meta["warnings"]
    assert warning.endswith("; 1 more such gap(s), 1.9 h in all")  # 1 h, then from alice's end at 09:04:50
    path.write_text("\n".join(lines[:2]) + "\n")
    HistoryFile(str(path)).check(T0 + 7200)
    (warning,) = load_trace(path, [Resources(4, 16 * GiB)]).meta["warnings"]
    assert warning.startswith(f"{path} line 3: the orchestrator that wrote this history did not watch from "
                              "2027-01-15 08:03+00:00 until 2027-01-15 10:00+00:00 (no line says when it stopped: "
                              "killed, or a crash?): sessions that ended then have no row")


async def test_the_controllers_shutdown_writes_when_it_stopped_watching(tmp_path):
    from elastichub.orchestrator.controller import Controller

    path = tmp_path / "history.csv"
    ctl = Controller(None, None, None, None, None, None, history=HistoryFile(str(path)), clock=lambda: T0)
    ctl.sessions.update([pod("jupyter-alice", started=T0 + 10)], [], T0 + 20)
    await ctl.close()
    assert path.read_text().splitlines() == [",".join(COLUMNS), "# elastichub orchestrator stopped at "
                                             "2027-01-15T08:00:00+00:00 with 1 server session(s) running"]
