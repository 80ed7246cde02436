"""`elastichub trace`: JupyterHub's log lines -> a trace `simulate --trace` replays."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import zoneinfo
from datetime import datetime, timedelta

import pytest

from elastichub.policy import GiB, Resources
from elastichub.simulator.hublog import LogError, read_sessions
from elastichub.simulator.trace import load_trace

UTC = zoneinfo.ZoneInfo("UTC")
LOG = """\
[I 2026-12-01 08:59:59.001 JupyterHub app:3300] JupyterHub is now running at http://:8000
[I 2026-12-01 09:00:13.500 JupyterHub base:1193] User alice took 3.500 seconds to start
[I 2026-12-01 09:01:00.000 JupyterHub log:192] 200 GET /hub/api/users (admin@127.0.0.1) 5.00ms
\x1b[32m[I 2026-12-01 09:02:00.000 JupyterHub base:1193]\x1b[0m User bob:gpu took 300.250 seconds to start
[I 2026-12-01 09:30:13.500 JupyterHub proxy:360] Removing user alice from proxy (/jhub/user/alice/)
[I 2026-12-01 09:40:00.000 JupyterHub proxy:360] Removing user carol from proxy (/jhub/user/carol/)
[I 2026-12-01 10:02:00.000 JupyterHub proxy:360] Removing user bob from proxy (/jhub/user/bob/gpu/)
[I 2026-12-01 10:05:00 JupyterHub base:1193] User zoë.o'neil@uni.edu took 1.000 seconds to start
[I 2026-12-01 10:15:00.000 JupyterHub log:192] 200 GET /hub/api
"""


def test_starts_and_stops_pair_into_sessions_that_ask_when_the_spawn_began():
    s = read_sessions([("hub.log", LOG.splitlines(keepends=True))], zoneinfo.ZoneInfo("Europe/Berlin"))
    assert [(r["user"], r["server"], r["arrival"], r["duration_s"], r["spawn_s"]) for r in s.rows] == [
        ("bob", "gpu", "2026-12-01T08:56:59+01:00", 3600, 300.25),  # asked 300 s before it was ready
        ("alice", "", "2026-12-01T09:00:10+01:00", 1800, 3.5),
        ("zoë.o'neil@uni.edu", "", "2026-12-01T10:04:59+01:00", 600, 1.0),  # cut at the log's last line
    ]
    assert (s.stops_without_start, s.cut_at_end) == (1, 1)  # carol started before the log


def test_a_named_servers_stop_is_told_by_its_route_escaped_as_the_hub_writes_it():
    log = ("[I 2026-12-01 09:00:00.000 JupyterHub base:1193] User zoë took 2.000 seconds to start\n"
           "[I 2026-12-01 09:00:00.000 JupyterHub base:1193] User zoë:my lab took 2.000 seconds to start\n"
           "[I 2026-12-01 09:10:00.000 JupyterHub proxy:360] Removing user zoë from proxy (/user/zo%C3%AB/my%20lab/)\n"
           "[I 2026-12-01 09:20:00.000 JupyterHub proxy:360] Removing user zoë from proxy (/user/zo%C3%AB/)\n")
    rows = read_sessions([("hub.log", log.splitlines())], UTC).rows
    assert sorted((r["server"], r["duration_s"]) for r in rows) == [("", 1200), ("my lab", 600)]


def run_trace(tmp_path, *args, stdin=None):
    return subprocess.run([sys.executable, "-m", "elastichub", "trace", *args], capture_output=True, text=True,
                          cwd=tmp_path, input=stdin, timeout=60)


def one_line_error(done, message: str) -> None:
    """The command stopped with one line on its standard error, holding `message`."""
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr


def test_the_command_writes_a_trace_simulate_replays(tmp_path):
    (tmp_path / "hub.log").write_text(LOG, encoding="utf-8")
    done = run_trace(tmp_path, "hub.log", "--cpu", "0,5", "--ram-gib", "2", "--out", "trace.csv")
    assert done.returncode == 0, done.stderr
    assert "3 server session(s) from 2026-12-01 08:59 to 2026-12-01 10:15 UTC" in done.stderr
    assert "1 stop(s) of servers started before the log begins: left out" in done.stderr
    trace = load_trace(tmp_path / "trace.csv", [Resources(64, 64 * GiB)])
    assert [(r.duration_s, r.requests) for r in trace.requests] == [
        (3600, Resources(0.5, 2 * GiB)), (1800, Resources(0.5, 2 * GiB)), (600, Resources(0.5, 2 * GiB))]
    piped = run_trace(tmp_path, "-", "--cpu", "1", "--ram-gib", "1", stdin=LOG)
    assert piped.returncode == 0
    assert piped.stdout.splitlines()[0] == "arrival,duration_s,cpu,ram_gib,user,server,spawn_s,ended"
    # and on into the simulator, through a pipe
    replayed = subprocess.run([sys.executable, "-m", "elastichub", "simulate", "--trace", "-", "--mode", "migration",
                               "--json"], input=piped.stdout, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["runs"][0]["servers"] == 3


def test_requests_may_be_given_as_kubectl_shows_them(tmp_path):
    (tmp_path / "hub.log").write_text(LOG)
    done = run_trace(tmp_path, "hub.log", "--cpu", "500m", "--ram-gib", "1536Mi")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert {(r["cpu"], r["ram_gib"]) for r in rows} == {("0.5", "1.5")}


@pytest.mark.parametrize("args, message", [
    (["hub.log", "--cpu", "x", "--ram-gib", "1"], "--cpu and --ram-gib must be numbers (or 500m, 512Mi): not a number "
                                                  "of cores: 'x'"),
    # KubeSpawner reads mem_guarantee "2G" as 2 GiB, Kubernetes as 10**9 bytes: which one is not guessed
    (["hub.log", "--cpu", "1", "--ram-gib", "2G"], "'2G' in GiB: Kubernetes reads 'G' as a power of 10"),
    (["hub.log", "--cpu", "0", "--ram-gib", "0"], "not both 0"),
    (["hub.log", "--cpu", "nan", "--ram-gib", "1"], "finite"),
    (["hub.log", "--cpu", "1", "--ram-gib", "1", "--timezone", "Mars/Olympus"],
     "--timezone: unknown time zone 'Mars/Olympus': give a zone name (UTC, Europe/Berlin) or a fixed UTC offset"),
    (["hub.log", "--cpu", "1", "--ram-gib", "1", "--timezone", "+25:00"],
     "--timezone: '+25:00' is no UTC offset (they reach from -12:00 to +14:00)"),
    (["absent.log", "--cpu", "1", "--ram-gib", "1"], "cannot read absent.log (No such file or directory)"),
    (["notes.txt", "--cpu", "1", "--ram-gib", "1"], "no server start found in notes.txt: is it JupyterHub's log?"),
    (["hub.log", "hub.log", "--cpu", "1", "--ram-gib", "1"], "hub.log (from 2026-12-01 08:59) overlaps hub.log (to "
                                                             "2026-12-01 10:15): give each log once"),
    (["hub.log", "--cpu", "1", "--ram-gib", "1", "--out", "no/such/dir/t.csv"],
     "--out: cannot write no/such/dir/t.csv (No such file or directory)"),
])
def test_bad_input_is_one_line(tmp_path, args, message):
    (tmp_path / "hub.log").write_text(LOG)
    (tmp_path / "notes.txt").write_text("not a log\n")
    done = run_trace(tmp_path, *args)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def kubectl_timestamps(log: str, hours: int = 0) -> str:
    """`kubectl logs --timestamps`: each line read a moment after the hub wrote it, in UTC (the hub's clock
    `hours` ahead of UTC)."""
    def stamp(line):
        at = datetime.fromisoformat(re.search(r"\[[A-Z] (\S+ \S{8})", line)[1]) - timedelta(hours=hours)
        return f"{at:%Y-%m-%dT%H:%M:%S}.123456789Z {line}\n"
    return "".join(stamp(line) for line in log.splitlines())


def test_kubectl_logs_timestamps_before_each_line_are_no_obstacle():
    rows = read_sessions([("hub.log", kubectl_timestamps(LOG).splitlines())], UTC).rows
    assert [(r["user"], r["duration_s"]) for r in rows] == [("bob", 3600), ("alice", 1800),
                                                           ("zoë.o'neil@uni.edu", 600)]


def test_a_hub_log_in_another_zone_than_timezone_is_told_by_kubectls_timestamps(tmp_path):
    """A hub pod with TZ=Europe/Berlin read as UTC (the default): every session an hour late, without a word,
    though `kubectl logs --timestamps` gave each line's UTC time."""
    (tmp_path / "hub.log").write_text(kubectl_timestamps(LOG, hours=1))
    done = run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1")
    one_line_error(done, "hub.log line 1: the hub's time 2026-12-01 08:59:59 is not in --timezone UTC: the timestamp "
                         "before it says 2026-12-01 07:59:59 UTC, so the hub's clock was at UTC+01:00: give the hub's "
                         "time zone with --timezone")
    done = run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1", "--timezone", "Europe/Berlin")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("2026-12-01T08:56:59+01:00,3600,1,1,bob,gpu,")
    # `kubectl logs --prefix --timestamps`: the pod's name first
    (tmp_path / "hub.log").write_text("".join(f"[pod/hub-7d9c/hub] {line}\n"
                                              for line in kubectl_timestamps(LOG, hours=1).splitlines()))
    one_line_error(run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1"),
                   "so the hub's clock was at UTC+01:00")
    # a shipper's prefix read 12 minutes late (it fell behind): no quarter of an hour, no other zone
    assert len(read_sessions([("hub.log", kubectl_timestamps(LOG, hours=-0.2).splitlines())], UTC).rows) == 3
    # the hour a clock shows twice: the prefix tells which pass a line is in, from the log's first line on
    autumn = ("[I 2026-10-25 02:30:00.000 JupyterHub base:1193] User ann took 1.000 seconds to start\n"
              "[I 2026-10-25 02:40:00.000 JupyterHub proxy:360] Removing user ann from proxy (/user/ann/)\n")
    rows = read_sessions([("hub.log", kubectl_timestamps(autumn, hours=1).splitlines())],
                         zoneinfo.ZoneInfo("Europe/Berlin")).rows
    assert [(r["arrival"], r["duration_s"]) for r in rows] == [("2026-10-25T02:29:59+01:00", 600)]


@pytest.mark.parametrize("offset", ["+01:00", "+0100", "UTC+1", "utc+01:00", "GMT +1"])
def test_a_fixed_utc_offset_is_a_timezone_as_a_zone_name_is(tmp_path, offset):
    """`--timezone +01:00`, as many admins write a zone, was 'unknown time zone'."""
    (tmp_path / "hub.log").write_text(kubectl_timestamps(LOG, hours=1))
    done = run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1", "--timezone", offset)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("2026-12-01T08:56:59+01:00,3600,1,1,bob,gpu,")
    assert "to 2026-12-01 10:15 UTC+01:00" in done.stderr or f"10:15 {offset}" in done.stderr


def test_a_hubs_own_log_datefmt_is_read_and_a_time_it_cannot_read_named(tmp_path):
    """c.JupyterHub.log_datefmt changed: the log's starts were 'no server start found: is it JupyterHub's log?'."""
    def log(stamp):  # JupyterHub's `%(asctime)s.%(msecs).03d`, asctime in the hub's log_datefmt
        return (f"[I {stamp('09:00:00')}.000 JupyterHub base:1193] User ann took 1.000 seconds to start\n"
                f"[I 261201 09:05:00 cull_idle:155] Culling server ann:gpu (inactive for 01:00:00)\n"  # the culler's
                f"[I {stamp('09:10:00')}.250 JupyterHub proxy:360] Removing user ann from proxy (/user/ann/)\n")

    iso = log(lambda t: f"2026-12-01T{t}+0100")  # ISO 8601 with %z: the line's own offset, whatever --timezone
    assert [(r["arrival"], r["duration_s"]) for r in read_sessions([("hub.log", iso.splitlines())], UTC).rows] == [
        ("2026-12-01T07:59:59+00:00", 600)]
    (tmp_path / "hub.log").write_text(log(lambda t: f"01/12/2026 {t}"))
    (tmp_path / "hub.log.1").write_text(log(lambda t: f"2026-11-30 {t}"))  # rotated before log_datefmt changed
    done = run_trace(tmp_path, "hub.log", "hub.log.1", "--cpu", "1", "--ram-gib", "1",
                     "--log-datefmt", "%d/%m/%Y %H:%M:%S")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == ["2026-11-30T08:59:59+00:00,600,1,1,ann,,1.0,stop",
                                            "2026-12-01T08:59:59+00:00,600,1,1,ann,,1.0,stop"]
    for args, message in ((["hub.log"], "hub.log line 1: its time '01/12/2026 09:00:00.000' is not a date and time "
                                        "as JupyterHub writes them by default (2026-12-01 09:00:13): give the hub's "
                                        "c.JupyterHub.log_datefmt with --log-datefmt"),
                          (["hub.log", "--log-datefmt", "%H:%M:%S"], "--log-datefmt '%H:%M:%S' has no date")):
        done = run_trace(tmp_path, *args, "--cpu", "1", "--ram-gib", "1")
        assert done.returncode == 2 and message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_rotated_logs_in_any_order_read_as_one_history_and_overlaps_are_refused():
    """`elastichub trace hub.log*` lists the newest file first (hub.log,
    hub.log.1): read as given, sessions across the cut were paired with
    the wrong stops, ended before they began and came out 21 s long."""
    lines = LOG.splitlines()
    older, newer = ("hub.log.1", lines[:4]), ("hub.log", lines[4:])
    one = read_sessions([("hub.log", lines)], UTC)
    both = read_sessions([newer, older], UTC)
    assert both.rows == one.rows and (both.first, both.last) == (one.first, one.last)
    with pytest.raises(LogError, match=r"hub.log.1 \(from 2026-12-01 08:59\) overlaps hub.log \(to 2026-12-01 "
                                       r"10:15\): give each log once"):
        read_sessions([("hub.log", lines), ("hub.log.1", lines[:4])], UTC)
    with pytest.raises(LogError, match=r"joined.log line 10: the time goes back, from 2026-12-01 10:15:00 to "
                                       r"2026-12-01 08:59:59: is it two logs in one file"):
        read_sessions([("joined.log", lines + lines[:2])], UTC)


def test_the_hour_a_clock_shows_twice_is_read_as_it_happened():
    """Europe/Berlin, 2026-10-25: 02:00-03:00 runs twice. A start at 02:30
    summer time and a stop at 02:20 winter time are 50 minutes apart, not
    -10 (a 1-second session before)."""
    log = ("[I 2026-10-25 02:30:00.000 JupyterHub base:1193] User ann took 3.000 seconds to start\n"
           "[I 2026-10-25 02:50:00.000 JupyterHub log:192] 200 GET /hub/api\n"
           "[I 2026-10-25 02:20:00.000 JupyterHub proxy:360] Removing user ann from proxy (/user/ann/)\n"
           "[I 2026-10-25 02:40:00.000 JupyterHub base:1193] User ben took 1.000 seconds to start\n"
           "[I 2026-10-25 03:10:00.000 JupyterHub proxy:360] Removing user ben from proxy (/user/ben/)\n")
    rows = read_sessions([("hub.log", log.splitlines())], zoneinfo.ZoneInfo("Europe/Berlin")).rows
    assert [(r["user"], r["arrival"], r["duration_s"]) for r in rows] == [
        ("ann", "2026-10-25T02:29:57+02:00", 50 * 60), ("ben", "2026-10-25T02:39:59+01:00", 30 * 60)]


def test_a_server_started_again_with_no_stop_logged_ends_when_the_next_was_asked_for():
    log = ("[I 2026-12-01 09:00:00.000 JupyterHub base:1193] User ann took 2.000 seconds to start\n"
           "[I 2026-12-01 10:00:05.000 JupyterHub base:1193] User ann took 5.000 seconds to start\n"
           "[I 2026-12-01 10:30:05.000 JupyterHub proxy:360] Removing user ann from proxy (/user/ann/)\n")
    s = read_sessions([("hub.log", log.splitlines())], UTC)
    assert [(r["arrival"], r["duration_s"]) for r in s.rows] == [
        ("2026-12-01T08:59:58+00:00", 3600), ("2026-12-01T10:00:00+00:00", 1800)]
    assert (s.started_again, s.stops_without_start) == (1, 0)


def entries(*lines):
    return [f"[I 2026-12-01 {at} JupyterHub app:1] {message}" for at, message in lines]


def trace_lines(tmp_path, log: list[str]):
    """`elastichub trace` of a hub.log of these lines."""
    (tmp_path / "hub.log").write_text("\n".join(log) + "\n")
    return run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1")


def test_servers_end_where_the_hub_ended_them_without_a_proxy_line():
    """A hub shutdown with cleanup_servers stops every server and logs no
    `Removing user`: read as running on, alice's 30 minutes became 7 hours
    and bob's 2 days (restart.log). A restart without cleanup leaves them
    running (`still running`): those go on."""
    log = entries(
        ("09:00:00.000", "User alice took 2.000 seconds to start"),
        ("09:01:00.000", "User bob took 1.000 seconds to start"),
        ("09:30:00.000", "Cleaning up single-user servers..."),
        ("09:31:00.000", "Running JupyterHub version 5.2.1"),
        ("10:00:00.000", "User carol took 1.000 seconds to start"),
        ("10:00:00.000", "User dan took 1.000 seconds to start"),
        ("10:00:00.000", "User eve:lab took 1.000 seconds to start"),
        ("10:00:00.000", "User fay took 1.000 seconds to start"),
        ("10:00:01.000", "Failed to add fay to proxy!"),
        ("10:00:01.000", "Stopping fay to avoid inconsistent state"),
        ("10:30:00.000", "Leaving single-user servers running"),
        ("10:40:00.000", "Running JupyterHub version 5.2.1"),
        ("10:40:01.000", "carol still running"),
        ("10:40:02.000", "eve:lab appears to have stopped while the Hub was down"),
        ("10:40:03.000", "Stopping spawner for blocked user: dan"),
        ("11:00:00.000", "Removing user carol from proxy (/user/carol/)"),
        ("12:00:00.000", "200 GET /hub/health (@10.0.0.1) 0.50ms"),
    )
    s = read_sessions([("hub.log", log)], UTC)
    assert sorted((r["user"], r["server"], r["duration_s"], r["ended"]) for r in s.rows) == [
        ("alice", "", 1800, "hub-shutdown"), ("bob", "", 1740, "hub-shutdown"),
        ("carol", "", 3600, "stop"),  # still running across the restart
        ("dan", "", 2403, "hub-stop"),  # a blocked user's server, stopped at the restart
        ("eve", "lab", 1800, "found-stopped"),  # ended while the hub was down: counted from its shutdown
        ("fay", "", 1, "hub-stop")]
    assert (s.count("hub-shutdown"), s.count("found-stopped"), s.stops_without_start) == (2, 1, 0)


def test_a_hub_coming_back_is_told_from_its_own_first_lines_and_servers_it_does_not_find_end_with_the_old():
    """A new hub logs config warnings (and with --debug more) before `Running
    JupyterHub version`: taking the line just before it as the old hub's last
    charged bob the whole downtime (14390 s, not 3590). A server the new hub
    never names (two hubs' logs run together) ran on for two days."""
    log = entries(
        ("09:00:10.000", "User bob took 10.000 seconds to start"),
        ("09:00:20.000", "User alice took 1.000 seconds to start"),
        ("10:00:00.000", "200 GET /hub/health (@10.0.0.1) 1.00ms"),
        ("12:59:58.000", "Looking for jupyterhub_config in /srv/jupyterhub"),
        ("13:00:00.000", "Config option `foo` not recognized by `JupyterHub`."),
        ("13:00:00.500", "Running JupyterHub version 5.2.1"),
        ("13:00:02.000", "bob appears to have stopped while the Hub was down"),
        ("13:00:03.000", "Initialized 1 spawners in 0.120 seconds"),
        ("15:00:00.000", "200 GET /hub/health (@10.0.0.1) 1.00ms"),
    )
    s = read_sessions([("hub.log", log)], UTC)
    assert sorted((r["user"], r["duration_s"], r["ended"]) for r in s.rows) == [
        ("alice", 3580, "not-found"), ("bob", 3590, "found-stopped")]


def test_servers_running_from_before_the_log_are_said_to_be_left_out(tmp_path):
    """A log that begins with the hub's start: dave's server, found still running, ran through the whole log and
    was left out without a word, and so was frank's end, found stopped at a restart."""
    log = entries(
        ("08:00:00.000", "Running JupyterHub version 5.2.1"),
        ("08:00:01.000", "dave still running"),
        ("08:00:01.000", "erin still running"),
        ("08:00:01.000", "frank still running"),
        ("08:00:02.000", "Initialized 3 spawners in 0.120 seconds"),
        ("09:00:00.000", "User alice took 2.000 seconds to start"),
        ("09:30:00.000", "Removing user erin from proxy (/user/erin/)"),
        ("10:00:00.000", "Leaving single-user servers running"),
        ("10:05:00.000", "Running JupyterHub version 5.2.1"),
        ("10:05:01.000", "alice still running"),
        ("10:05:01.000", "dave still running"),  # found again: the same server
        ("10:05:01.000", "frank appears to have stopped while the Hub was down"),
        ("10:05:02.000", "Initialized 3 spawners in 0.120 seconds"),
        ("11:00:00.000", "Removing user alice from proxy (/user/alice/)"),
    )
    s = read_sessions([("hub.log", log)], UTC)
    assert [(r["user"], r["duration_s"]) for r in s.rows] == [("alice", 7200)]
    assert (s.stops_without_start, s.running_throughout) == (2, 1)  # erin's and frank's ends; dave's server
    done = trace_lines(tmp_path, log)
    assert ("2 stop(s) of servers started before the log begins: left out; 1 server(s) a hub found running, "
            "started before the log begins and not stopped in it: left out") in done.stderr, done.stderr


def test_a_hub_before_0_9_is_read_in_its_own_words():
    """JupyterHub 0.8 wrote 'User alice server took ...' and no route in its stops: every session was user
    'alice server', running until that user's next start or the log's end, and every stop went unread."""
    log = entries(
        ("09:00:00.000", "User alice server took 2.000 seconds to start"),
        ("09:00:00.001", "Adding user alice to proxy /user/alice => http://127.0.0.1:50321"),
        ("09:30:00.000", "Removing user alice from proxy"),
        ("10:00:00.000", "User alice server took 1.000 seconds to start"),
        ("10:10:00.000", "Removing user alice from proxy"),
        ("12:00:00.000", "200 GET /hub/api/users (cull-idle@127.0.0.1) 5.00ms"),
    )
    s = read_sessions([("hub.log", log)], UTC)
    assert [(r["user"], r["server"], r["duration_s"], r["ended"]) for r in s.rows] == [
        ("alice", "", 1800, "stop"), ("alice", "", 600, "stop")]
    assert s.stops_without_start == 0


def test_spawns_that_failed_are_said_to_be_left_out(tmp_path):
    """A spawn that timed out waiting for room (start_timeout) asked for a server the trace cannot hold: it was
    left out without a word, where the hub lacked room most."""
    log = entries(
        ("09:00:00.000", "User alice took 2.000 seconds to start"),
        ("09:05:00.000", "User bob is slow to start (timeout=10)"),
        ("09:10:00.000", "bob's server failed to start in 300 seconds, giving up."),
        ("09:11:00.000", "carol's server never showed up at http://10.0.0.7:8888/user/carol/ after 30 seconds. "
                         "Giving up."),
        ("09:12:00.000", "Unhandled error starting dan's server: (422) Reason: Unprocessable Entity"),
        ("09:12:01.000", "Error starting server dan: (422) Reason: Unprocessable Entity"),  # the same, on its page
        ("09:13:00.000", "Not starting erin's server lab: You have too many servers running"),
        ("09:20:00.000", "Interrupting spawner fay:gpu, pending spawn"),  # she gave up waiting: cancelled
        ("09:20:01.000", "Removing user fay from proxy (/user/fay/gpu/)"),  # the route it never had: no stop
        ("09:30:00.000", "Removing user alice from proxy (/user/alice/)"),
    )
    s = read_sessions([("hub.log", log)], UTC)
    assert [r["user"] for r in s.rows] == ["alice"]
    assert (s.failed_spawns, s.timed_out_spawns, s.cancelled_spawns, s.stops_without_start) == (5, 2, 1, 0)
    done = trace_lines(tmp_path, log)
    assert ("5 spawn(s) failed (2 timed out, 1 cancelled while pending): no server ran, so none is in the "
            "trace") in done.stderr, done.stderr


def test_a_hubs_log_with_no_start_says_what_it_held(tmp_path):
    """A week nobody started a server, or one whose spawns all failed: 'is it JupyterHub's log?', of a hub's."""
    log = entries(("08:00:00.000", "Running JupyterHub version 5.2.1"),
                  ("09:10:00.000", "bob's server failed to start in 300 seconds, giving up."),
                  ("09:30:00.000", "Removing user alice from proxy (/user/alice/)"))
    done = trace_lines(tmp_path, log)
    one_line_error(done, "no server start found in hub.log: its lines from 2026-12-01 08:00 to 2026-12-01 09:30 UTC "
                         "hold 1 stop(s) of servers started before it, 1 failed spawn(s): nothing to replay")


def test_a_hub_logging_above_info_is_told_its_starts_are_not_logged(tmp_path):
    """c.JupyterHub.log_level = 'WARN': no start is logged ('no server start found ... is it JupyterHub's log?')."""
    (tmp_path / "hub.log").write_text(
        "[W 2026-12-01 09:00:00.000 JupyterHub base:1313] User ann is slow to start (timeout=10)\n"
        "[E 2026-12-01 09:10:00.000 JupyterHub user:1073] Unhandled error starting bob's server: (422)\n")
    done = run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1")
    one_line_error(done, "hub.log: only E/W lines, no INFO one: the hub logs each server's start and stop at INFO; "
                         "set c.JupyterHub.log_level = 'INFO' (its default) to have a history")


@pytest.mark.parametrize("line, message", [
    # a corrupt line (a disk's, a shipper's): its time is no date, or its start lasts for ever
    ("[I 2026-13-45 25:61:00.000 JupyterHub base:1] User x took 1.000 seconds to start",
     "hub.log line 1: its time '2026-13-45 25:61:00.000' is not a date and time"),
    ('{"message": "User x took 1.000 seconds to start", "timestamp": "2026-02-30T09:00:00Z"}',
     "hub.log line 1: its time '2026-02-30T09:00:00Z' is not a date and time"),
    ("[I 0001-01-01 00:00:00.000 JupyterHub base:1] User x took 1.000 seconds to start",
     "hub.log line 1: its time '0001-01-01 00:00:00.000' is not a date and time"),  # before year 1 in UTC
    ("[I 2026-12-01 09:00:00.000 JupyterHub base:1] User x took 99999999999999999999.000 seconds to start",
     "hub.log line 1: a server that took 99999999999999999999.000 seconds to start, over a year: not a time a "
     "spawn takes"),
])
def test_a_corrupt_line_is_one_line_naming_it(tmp_path, line, message):
    """Each was a traceback (ValueError: month must be in 1..12; OverflowError)."""
    done = trace_lines(tmp_path, ["2026-12-01T09:00:00+9999 [I 2026-12-01 09:00:00.000 JupyterHub base:1] hello",
                                  line])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert message.replace("line 1", "line 2") in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_start_in_a_log_format_not_read_is_named_with_its_line(tmp_path):
    """c.JupyterHub.log_format = '%(asctime)s %(levelname)s %(name)s %(message)s': 'is it JupyterHub's log?'."""
    (tmp_path / "hub.log").write_text("2026-12-01 09:00:00,000 INFO JupyterHub Running JupyterHub version 5.2.1\n"
                                      "2026-12-01 09:00:13,400 INFO JupyterHub User alice took 3.350 seconds to "
                                      "start\n")
    done = run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1")
    one_line_error(done, "no server start found in hub.log: hub.log line 2 is a server's start in a format not "
                         "read: JupyterHub's default log_format")


def test_a_log_written_twice_line_by_line_is_read_once(tmp_path):
    """The hub's output redirected to hub.log and extra_log_file = 'hub.log': each line twice, and each session a
    1-second one 'started again', its stop one of a server 'started before the log begins'."""
    log = [line for line in LOG.splitlines() for _ in range(2)]
    once = read_sessions([("hub.log", LOG.splitlines())], UTC)
    twice = read_sessions([("hub.log", log)], UTC)
    assert twice.rows == once.rows and twice.stops_without_start == once.stops_without_start == 1
    assert twice.repeated == 6  # 3 starts, 3 stops (carol's, whose start is not in the log, counted once)
    done = trace_lines(tmp_path, log)
    assert "6 start or stop line(s) written twice, at the same millisecond" in done.stderr, done.stderr


def test_the_command_says_how_many_sessions_the_hub_ended(tmp_path):
    log = entries(("09:00:00.000", "User alice took 2.000 seconds to start"),
                  ("09:30:00.000", "Cleaning up single-user servers..."),
                  ("09:45:00.000", "Running JupyterHub version 5.2.1"))
    done = trace_lines(tmp_path, log)
    assert done.returncode == 0, done.stderr
    assert "1 ended at a hub shutdown that stopped every server" in done.stderr
    assert done.stdout.splitlines()[1].endswith(",1800,1,1,alice,,2.0,hub-shutdown")


def test_user_names_with_a_colon_are_told_apart_from_named_servers():
    """JupyterHub logs a server as `user:server`, and a user may be called
    `github:alice`: the proxy lines name the user and the route."""
    log = entries(
        ("09:00:00.000", "User github:alice took 1.000 seconds to start"),
        ("09:00:00.100", "Adding user github:alice to proxy /user/github:alice/ => http://10.0.0.5:8888"),
        ("09:00:00.000", "User github:alice:gpu took 1.000 seconds to start"),
        ("09:00:00.100", "Adding user github:alice to proxy /user/github:alice/gpu/ => http://10.0.0.6:8888"),
        ("09:00:00.000", "User bob:lab took 1.000 seconds to start"),  # no proxy line: bob is a known user
        ("09:00:00.000", "User github:carol took 1.000 seconds to start"),
        ("09:10:00.000", "Removing user github:alice from proxy (/user/github:alice/gpu/)"),
        ("09:20:00.000", "Removing user bob from proxy (/user/bob/)"),
        ("09:30:00.000", "Removing user github:carol from proxy (/user/github:carol/)"),
        ("10:00:00.000", "200 GET /hub/health (@10.0.0.1) 0.50ms"),
    )
    s = read_sessions([("hub.log", log)], UTC)
    assert sorted((r["user"], r["server"], r["duration_s"], r["ended"]) for r in s.rows) == [
        ("bob", "lab", 3600, "log-end"), ("github:alice", "", 3600, "log-end"), ("github:alice", "gpu", 600, "stop"),
        ("github:carol", "", 1800, "stop")]
    assert s.stops_without_start == 1  # bob's default server


def test_a_terminals_colours_are_no_obstacle():
    """tornado's LogFormatter ends its prefix with terminfo's sgr0: ESC ( B ESC [ m on xterm, ESC [ m SI on
    screen and tmux; the hub wrote CR LF (color.log)."""
    log = ["\x1b[32m[I 2026-12-01 09:00:00.000 JupyterHub base:1193]\x1b(B\x1b[m User ann took 1.000 seconds to "
           "start\r\n",
           "\x1b[32m[I 2026-12-01 09:10:00.000 JupyterHub proxy:360]\x1b[m\x0f Removing user ann from proxy "
           "(/user/ann/)\r\n"]
    assert [(r["user"], r["duration_s"], r["ended"]) for r in read_sessions([("hub.log", log)], UTC).rows] == [
        ("ann", 600, "stop")]


def test_gzip_compressed_rotated_logs_are_read_and_other_binary_files_refused(tmp_path):
    import bz2
    import gzip

    lines = LOG.splitlines(keepends=True)
    (tmp_path / "hub.log.1.gz").write_bytes(gzip.compress("".join(lines[:4]).encode()))
    (tmp_path / "hub.log").write_text("".join(lines[4:]))
    done = run_trace(tmp_path, "hub.log", "hub.log.1.gz", "--cpu", "1", "--ram-gib", "1")
    assert done.returncode == 0, done.stderr
    assert "3 server session(s) from 2026-12-01 08:59" in done.stderr  # bob's start is in the .gz
    (tmp_path / "hub.log.2.bz2").write_bytes(bz2.compress(LOG.encode()))
    refused = run_trace(tmp_path, "hub.log", "hub.log.2.bz2", "--cpu", "1", "--ram-gib", "1")
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        "elastichub trace: error: hub.log.2.bz2: bzip2-compressed data, not a text log: give the log itself "
        "(plain, or gzip-compressed)"]


def test_json_records_are_read_and_ones_without_a_message_and_time_refused(tmp_path):
    """A hub logging through python-json-logger (its record; with timestamp=True), and a container runtime's
    JSON log holding the plain line: 'JSON log records, which `elastichub trace` does not read', and the
    hub's JSON log is the only one it has."""
    log = ['{"asctime": "2026-12-01 09:00:13,123", "levelname": "INFO", "name": "JupyterHub", '
           '"message": "User alice took 3.123 seconds to start"}',
           '{"levelname": "INFO", "message": "User bob:gpu took 1.000 seconds to start", '
           '"timestamp": "2026-12-01T10:00:20.000000+01:00"}',  # its own offset: 09:00:20 UTC
           '{"log":"[I 2026-12-01 09:30:10.000 JupyterHub proxy:360] Removing user alice from proxy (/user/alice/)\\n",'
           '"stream":"stderr","time":"2026-12-01T09:30:10.000123456Z"}',
           '{"levelname": "INFO", "message": "Removing user bob from proxy (/user/bob/gpu/)", '
           '"created": 1796117420.0}']  # 09:30:20 UTC
    # `kubectl logs --timestamps` before the first: a prefix, as before a plain line
    (tmp_path / "hub.json").write_text("2026-12-01T09:00:13.123456789Z " + "\n".join(log) + "\n")
    done = run_trace(tmp_path, "hub.json", "--cpu", "1", "--ram-gib", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == ["2026-12-01T09:00:10+00:00,1797,1,1,alice,,3.123,stop",
                                            "2026-12-01T09:00:19+00:00,1800,1,1,bob,gpu,1.0,stop"]
    (tmp_path / "far.json").write_text('{"message": "User ann took 1.000 seconds to start", "created": 1e20}\n')
    done = run_trace(tmp_path, "far.json", "--cpu", "1", "--ram-gib", "1")
    assert done.returncode == 2 and "far.json line 1: its time '1e+20' is not a date and time" in done.stderr
    (tmp_path / "other.json").write_text('{"level": "info", "event": "spawned"}\n')
    done = run_trace(tmp_path, "other.json", "--cpu", "1", "--ram-gib", "1")
    assert done.returncode == 2
    assert ("other.json: JSON log records with neither a hub log line in them nor a message and its time "
            "(message or msg; timestamp, @timestamp, time, asctime or created)") in done.stderr


def test_a_long_log_is_read_a_line_at_a_time(tmp_path):
    """A term of a busy hub's log is gigabytes: it was held whole, decoded,
    split and parsed (about 4x its size in memory, 9 GB for 2 GB of log)."""
    import gzip
    import tracemalloc

    from elastichub.simulator.hublog import read_log

    busy = "".join(f"[I 2026-12-01 {h:02d}:{m:02d}:{s:02d}.000 JupyterHub log:192] 200 POST "
                   f"/hub/api/users/user{s}/activity (user{s}@10.1.2.3) 12.34ms\n"
                   for h in range(10, 14) for m in range(60) for s in range(60))  # 14,400 lines
    path = tmp_path / "hub.log.gz"
    path.write_bytes(gzip.compress((LOG.splitlines(keepends=True)[1] + busy * 2 + LOG.splitlines()[-1]).encode(),
                                   compresslevel=1))  # the day twice: time goes back, the error below
    path.with_suffix("").write_text(LOG.splitlines(keepends=True)[1] + busy)
    size = path.with_suffix("").stat().st_size
    tracemalloc.start()
    try:
        s = read_sessions([("hub.log", read_log(str(path.with_suffix(""))))], UTC)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(r["user"], r["ended"]) for r in s.rows] == [("alice", "log-end")]
    assert peak < size / 4, (peak, size)
    with pytest.raises(LogError, match="hub.log.gz line 14402: the time goes back"):
        read_sessions([("hub.log.gz", read_log(str(path)))], UTC)


def test_a_trace_written_over_its_own_log_is_refused(tmp_path):
    """`--out hub.log` (a slip for hub.csv) replaced the log with the trace: the history was gone."""
    (tmp_path / "hub.log").write_text(LOG)
    done = run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1", "--out", "./hub.log")
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "elastichub trace: error: --out ./hub.log is a log given to read: writing the trace there would replace it"]
    assert (tmp_path / "hub.log").read_text() == LOG


def test_a_trace_written_over_another_file_is_refused_but_over_its_own_trace_replaces_it(tmp_path):
    """`--out history.csv`, the orchestrator's history_file of the docs' example: weeks of it replaced."""
    (tmp_path / "hub.log").write_text(LOG)
    history = "arrival,duration_s,cpu,ram_gib,user,server,waited_s\n2026-12-08T09:00:00+00:00,60,1,2,a,,0\n"
    (tmp_path / "history.csv").write_text(history)
    done = run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1", "--out", "history.csv")
    one_line_error(done, "--out history.csv holds other data than a trace of elastichub trace ('arrival,duration_s,"
                         "cpu,ram_gib,user,server,waited_s'): writing the trace there would replace it")
    assert (tmp_path / "history.csv").read_text() == history
    for _ in range(2):  # a trace again: replaced
        done = run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1", "--out", "trace.csv")
        assert done.returncode == 0, done.stderr
    assert len((tmp_path / "trace.csv").read_text().splitlines()) == 4


def test_an_empty_log_is_said_to_be_empty(tmp_path):
    """Not 'no server start found ... is it JupyterHub's log?': there is no line at all to judge."""
    (tmp_path / "hub.log").write_text("\n")
    done = run_trace(tmp_path, "hub.log", "-", "--cpu", "1", "--ram-gib", "1", stdin="")
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "elastichub trace: error: hub.log, standard input: empty, not a line in it"]


def test_a_log_saved_by_windows_powershell_is_read(tmp_path):
    """`kubectl logs deploy/hub > hub.log` in Windows PowerShell writes UTF-16: it was 'binary data'."""
    (tmp_path / "hub.log").write_text(LOG.replace("\n", "\r\n"), encoding="utf-16", newline="")
    done = run_trace(tmp_path, "hub.log", "--cpu", "1", "--ram-gib", "1")
    assert done.returncode == 0, done.stderr
    assert "zoë.o'neil@uni.edu" in done.stdout and "3 server session(s) from 2026-12-01 08:59" in done.stderr
