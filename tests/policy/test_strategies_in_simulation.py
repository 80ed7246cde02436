"""The issue-5 strategies driven by the simulator: scenarios, calendars, the
Pareto plot, the CLI seams. Short workloads, so the file runs in seconds."""

import json
import subprocess
import sys

import pytest

from elastichub.policy import GiB, Resources, ScheduledClass
from elastichub.simulator import ClusterParams, make_workload
from elastichub.simulator.pareto import pareto_front, plot_pareto
from elastichub.simulator.runner import plan_runs, run_all, schedule_of, summary
from elastichub.simulator.scenarios import class_window_waits, load_calendar, with_calendar, write_trace
from elastichub.simulator.trace import load_trace

PARAMS = ClusterParams()
BOUND_S = PARAMS.tmon_s + PARAMS.cloud_boot_s + PARAMS.server_start_s  # ~311 s


@pytest.fixture(scope="module")
def morning():
    """A teaching morning: background plus the 08:30 and 10:00 classes."""
    return make_workload("teaching-day", days=0.5, seed=3)


@pytest.fixture(scope="module")
def morning_runs(morning):
    specs = plan_runs(["paper", "elastic", "calendar"], ["migration"], [80.0])
    return {r.policy: r for r in run_all(specs, morning, PARAMS, seed=3)}


def test_scenarios_are_registered_and_seeded(morning):
    again = make_workload("teaching-day", days=0.5, seed=3)
    assert again.requests == morning.requests
    assert [c.users for c in morning.classes] == [60, 140]
    assert sum(r.kind == "class" for r in morning.requests) == 200
    weekend = make_workload("weekend", days=1, seed=1)
    assert not weekend.classes and 0 < len(weekend.requests) < len(make_workload("paper", days=1).requests)


def test_calendar_class_waits_nothing_elastic_stays_within_one_boot(morning, morning_runs):
    cal = class_window_waits(morning_runs["calendar"], morning)
    assert cal and all(w == 0 for w in cal.values()), cal
    assert max(w[1] for w in morning_runs["elastic"].waits) <= BOUND_S
    # without the calendar the 140-student class does wait (for the boot)
    assert max(class_window_waits(morning_runs["paper"], morning).values()) > 0
    assert max(class_window_waits(morning_runs["elastic"], morning).values()) > 0


def test_schedule_of_a_workload_is_its_class_list(morning):
    schedule = schedule_of(morning)
    assert [(c.start_s, c.users) for c in schedule] == [(8.5 * 3600, 60), (10 * 3600, 140)]


def test_with_calendar_adds_students_and_the_schedule():
    base = make_workload("weekend", days=1, seed=2)
    burst = ScheduledClass(11 * 3600.0, 120, Resources(1, 2 * GiB), 300, "exam")
    wl = with_calendar(base, (burst,), seed=2)
    assert len(wl.requests) == len(base.requests) + 120
    assert [c.name for c in wl.classes] == ["exam"]
    added = [r for r in wl.requests if r.kind == "class"]
    assert all(11 * 3600 <= r.arrival_s <= 11 * 3600 + 300 for r in added)
    specs = plan_runs(["calendar"], ["migration"], [80.0])
    (res,) = run_all(specs, wl, PARAMS, seed=2)
    assert class_window_waits(res, wl) == {"exam": 0}
    with pytest.raises(ValueError, match="after the simulated"):
        with_calendar(base, (ScheduledClass(2 * 86400.0, 1, Resources(1, GiB)),), seed=1)


def test_runs_get_their_strategy_options_from_the_runner_alone():
    """A fresh process that never loads the scenarios module (a hand-built
    workload): `calendar` still gets the workload's classes, and both
    elastic strategies the modelled boot time."""
    code = (
        "import sys\n"
        "from elastichub.simulator import ClusterParams, Workload\n"
        "from elastichub.simulator.params import ru\n"
        "from elastichub.simulator.runner import RunSpec, build_strategy\n"
        "from elastichub.simulator.workload import ClassSession\n"
        "wl = Workload('hand-made', (), 3600, classes=(ClassSession('c', 1800, 10, 300, ru(2)),))\n"
        "params = ClusterParams(cloud_boot_s=100)\n"
        "cal = build_strategy(RunSpec('calendar', 'migration', 80.0), wl, params)\n"
        "ela = build_strategy(RunSpec('elastic', 'migration', 80.0), wl, params)\n"
        "assert 'elastichub.simulator.scenarios' not in sys.modules\n"
        "print(len(cal.schedule), cal.boot_s, ela.boot_s)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "100", "100"]


def test_load_calendar_errors_name_file_row_and_column(tmp_path):
    good = tmp_path / "cal.csv"
    good.write_text("start,users,cpu,ram_gib,name\n1 10:00,140,1,2,stats\n")
    (c,) = load_calendar(good)
    assert c.start_s == 36000 and c.users == 140 and c.request == Resources(1, 2 * GiB)
    exported = tmp_path / "export.csv"  # a spreadsheet's, in a locale that splits by ';'
    exported.write_bytes("\ufeffstart;users;cpu;ram_gib;name\r\n1 10:00;140;1;2;stats\r\n".encode())
    assert load_calendar(exported) == (c,)
    bad = tmp_path / "bad.csv"
    bad.write_text("start,users,cpu\n10:00,5,1\n")
    with pytest.raises(ValueError, match=r"bad.csv row 1: missing column 'ram_gib'"):
        load_calendar(bad)
    with pytest.raises(ValueError, match="not found"):
        load_calendar(tmp_path / "nope.csv")
    # a student's request no node can hold: an error, not a queue that never moves
    huge = tmp_path / "huge.csv"
    huge.write_text("start,users,cpu,ram_gib,name\n1 10:00,5,1,64,gpu-lab\n")
    assert load_calendar(huge)[0].users == 5  # without a cluster to check against
    huge.write_text("start,users,cpu,ram_gib,name\n1 11:00,5,1,2,intro\n1 10:00,5,1,64,gpu-lab\n")
    with pytest.raises(ValueError, match=r"huge.csv row 2, column ram_gib: 64 GiB is more than the largest node"):
        load_calendar(huge, PARAMS.node_shapes)


def test_a_calendar_reads_as_spreadsheets_save_it_as_a_trace_does(tmp_path):
    """Header case and spaces, blank rows a spreadsheet leaves below the
    table, UTF-16 "Unicode text": read like a trace; a file in a legacy
    code page is named by its line, not by the codec's message."""
    (c,) = load_calendar(_saved(tmp_path / "good.csv", "start,users,cpu,ram_gib,name\n1 10:00,140,1,2,stats\n"))
    exported = _saved(tmp_path / "excel.csv", "Start, Users, CPU, RAM_GiB, Name\r\n1 10:00,140,1,2,stats\r\n,,,,\r\n")
    assert load_calendar(exported) == (c,)
    unicode_text = tmp_path / "unicode.csv"
    unicode_text.write_text("start\tusers\tcpu\tram_gib\tname\n1 10:00\t140\t1\t2\tstats\n", encoding="utf-16")
    assert load_calendar(unicode_text) == (c,)
    legacy = tmp_path / "latin1.csv"
    legacy.write_bytes("start,users,cpu,ram_gib,name\n1 10:00,140,1,2,Einf\u00fchrung\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.csv line 2: not UTF-8 text \(byte 0xfc\): save the file as CSV"):
        load_calendar(legacy)


def test_a_calendar_start_saved_with_its_seconds_reads(tmp_path):
    """A spreadsheet saves 1 10:00 as 1 10:00:00: it was 'not a time'."""
    (c,) = load_calendar(_saved(tmp_path / "cal.csv", "start,users,cpu,ram_gib\n2 10:00:30,140,1,2\n"))
    assert c.start_s == 86400 + 36000 + 30


def test_the_orchestrators_weekly_timetable_given_as_a_calendar_is_named(tmp_path):
    weekly = _saved(tmp_path / "weekly.csv", "day,time,users,cpu,ram_gib\nTue,10:00,140,1,2\n")
    with pytest.raises(ValueError, match=r"weekly.csv line 1: columns day,time are a weekly timetable \(the "
                                         r"orchestrator's calendar_file\); a simulated calendar names each class's"):
        load_calendar(weekly)


def _saved(path, text: str):
    path.write_text(text, newline="")
    return path


def test_pareto_front():
    pts = [(10, 300), (12, 100), (15, 0), (16, 50), (11, 400), (12, 90)]
    assert pareto_front(pts) == [0, 5, 2]


def test_pareto_plot_written_for_several_thetas(tmp_path, morning):
    specs = plan_runs(["paper", "elastic"], ["migration"], [80.0, 95.0])
    summaries = [summary(r) for r in run_all(specs, morning, PARAMS, seed=3)]
    path = plot_pareto(summaries, tmp_path)
    assert path is not None and path.stat().st_size > 10_000
    assert plot_pareto(summaries[:1], tmp_path / "x") is None  # one run: nothing to compare


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "elastichub", "simulate", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.timeout(120)
def test_cli_default_policy_and_calendar_option(tmp_path):
    cal = tmp_path / "cal.csv"
    cal.write_text("start,users,cpu,ram_gib,name\n1 11:00,100,1,2,exam\n")
    proc = _cli("--workload", "weekend", "--days", "0.6", "--mode", "migration", "--json",
                "--policy", "elastic,calendar", "--calendar", str(cal))
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)["runs"]
    assert [r["policy"] for r in runs] == ["elastic", "calendar"]
    default = _cli("--workload", "weekend", "--days", "0.2", "--mode", "migration", "--json")
    assert [r["policy"] for r in json.loads(default.stdout)["runs"]] == ["elastic"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("args, message", [
    (["--calendar", "missing.csv"], "--calendar: calendar file missing.csv: not found"),
    (["--policy", "calendar", "--workload", "weekend"], "policy 'calendar' needs a schedule"),
    (["--calendar", "huge.csv"], "--calendar: calendar file huge.csv row 1, column ram_gib: 64 GiB is more than "
                                 "the largest node has (50 GiB)"),
    (["--calendar", "late.csv"], "--calendar: calendar file late.csv: class 'exam' starts at 723600 s (day 9), after "
                                 "the simulated 8640 s (0.1 days): give --days, or drop the class"),
    (["--calendar", "late.csv", "--schedule", "late.csv"], "--calendar adds the classes' students, --schedule only"),
])
def test_cli_calendar_errors_are_one_line(tmp_path, args, message):
    (tmp_path / "huge.csv").write_text("start,users,cpu,ram_gib\n1 01:00,5,1,64\n")
    (tmp_path / "late.csv").write_text("start,users,cpu,ram_gib,name\n9 09:00,5,1,2,exam\n")
    proc = _cli("--days", "0.1", "--mode", "migration", *args, cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.timeout(120)
def test_replayed_trace_plus_calendar_file_gives_the_class_no_wait(tmp_path, morning):
    """A hub's history (here: a generated weekend day saved as a trace) and
    its timetable (a calendar file) drive the calendar strategy end to end."""
    trace = write_trace(make_workload("weekend", days=0.5, seed=4), tmp_path / "trace.csv")
    cal = tmp_path / "cal.csv"
    cal.write_text("start,users,cpu,ram_gib,spread_s,name\n1 10:00,250,1,2,300,exam\n")
    proc = _cli("--trace", str(trace), "--days", "0.5", "--calendar", str(cal), "--mode", "migration",
                "--policy", "paper,calendar", "--json")
    assert proc.returncode == 0, proc.stderr
    runs = {r["policy"]: r for r in json.loads(proc.stdout)["runs"]}
    assert runs["calendar"]["wait_max_s"] == 0
    assert runs["paper"]["wait_max_s"] > BOUND_S  # one node per cooldown for 500 GiB of students

    # a real history holds the class's students already: --schedule tells the calendar policy, adds nobody
    history = write_trace(with_calendar(load_trace(trace, PARAMS.node_shapes, 43200), load_calendar(cal), seed=1),
                          tmp_path / "history.csv")
    told = _cli("--trace", str(history), "--days", "0.5", "--schedule", str(cal), "--mode", "migration",
                "--policy", "paper,calendar", "--json")
    assert told.returncode == 0, told.stderr
    runs = {r["policy"]: r for r in json.loads(told.stdout)["runs"]}
    held = len(load_trace(history, PARAMS.node_shapes).requests)
    assert runs["calendar"]["servers"] == runs["paper"]["servers"] == held
    assert runs["calendar"]["wait_max_s"] == 0 and runs["paper"]["wait_max_s"] > BOUND_S


def test_a_hub_of_cloud_nodes_only_starts_a_node_for_someone_and_gives_it_back():
    """No on-prem node: eq. (1) over no node is 0/0. As "full", `paper`
    started a node and stopped it again every cooldown for two days; and
    `elastic`'s scale-in gap, a share of one cloud node there, kept the last
    node for ever. Now both start a node when someone asks and stop it after;
    below theta_out 90 `elastic` keeps one warm node (its standing reserve)."""
    from elastichub.simulator.workload import Request, Workload

    two = tuple(Request(at, 3600, Resources(1, 2 * GiB), "trace") for at in (36000, 208800))
    workload = Workload("two sessions", two, 60 * 3600, "two sessions two days apart")
    params = ClusterParams(onprem_nodes=0)
    runs = {(r.policy, r.theta_out): r for r in run_all(
        plan_runs(["paper", "elastic"], ["migration"], [80.0, 90.0]), workload, params, seed=1)}
    for key in [("paper", 80.0), ("paper", 90.0), ("elastic", 90.0)]:
        run = runs[key]
        assert (run.scale_outs, run.scale_ins) == (2, 2), key
        assert summary(run)["cloud_node_hours"] < 2 * (1 + 1200 / 3600), key  # a session plus boot and drain
        assert summary(run)["wait_max_s"] <= params.tmon_s + params.cloud_boot_s + params.server_start_s, key
    warm = runs[("elastic", 80.0)]
    assert (warm.scale_outs, warm.scale_ins, summary(warm)["wait_max_s"]) == (1, 0, 0)
