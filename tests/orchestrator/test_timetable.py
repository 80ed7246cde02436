"""The live hub's weekly class timetable (elastichub/orchestrator/timetable.py):
rows parsed with errors naming row and column, classes placed at their local
time across daylight saving, a strategy that boots for them each day, and a
file whose edits take effect without a restart."""

import os
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from elastichub.orchestrator.timetable import TimetabledStrategy, TimetableFile, classes_around, parse_timetable
from elastichub.policy import (
    ClusterSnapshot, ControllerState, GiB, Node, NodeStatus, PolicyConfig, Resources, ScaleOut, Server, Tier,
    make_strategy,
)

BERLIN = ZoneInfo("Europe/Berlin")
ROWS = [
    {"day": "Tue", "time": "10:00", "users": "100", "cpu": "1", "ram_gib": "2", "name": "stats"},
    {"day": "2027-01-14", "time": "13:30", "users": "40", "cpu": "0.5", "ram_gib": "1", "spread_s": "300"},
]


NODE = Resources(25, 50 * GiB)


def onprem(ram_each: int) -> list[Node]:
    """8 on-prem nodes with `ram_each` 1-GiB servers each."""
    nodes = []
    for i in range(8):
        servers = tuple(Server(f"op{i}-{j}", Resources(0.5, GiB), f"op{i}", started_at=0.0, created_at=0.0)
                        for j in range(ram_each))
        nodes.append(Node(f"op{i}", Tier.ONPREM, NODE, Resources.total(s.requests for s in servers), servers,
                          NodeStatus.READY))
    return nodes


def pool(n: int) -> list[Node]:
    return [Node(f"cloud{i}", Tier.CLOUD, NODE, Resources(), (), NodeStatus.STOPPED) for i in range(n)]


def at(text: str, zone=BERLIN) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=zone).timestamp()


def test_rows_become_weekly_and_one_off_entries():
    stats, workshop = parse_timetable(ROWS)
    assert (stats.weekday, stats.on, stats.at.hour, stats.users, stats.request.ram) == (1, None, 10, 100, 2 * GiB)
    assert stats.spread_s == 600.0 and stats.name == "stats"
    assert workshop.weekday is None and workshop.on.isoformat() == "2027-01-14" and workshop.spread_s == 300.0
    assert parse_timetable([{**ROWS[0], "day": "tuesday"}])[0].weekday == 1


@pytest.mark.parametrize("change, message", [
    ({"day": "Tuesdays"}, "row 1: column 'day' must be a weekday (Mon..Sun) or a date YYYY-MM-DD, got 'Tuesdays'"),
    ({"time": "10h"}, "row 1: column 'time' must be HH:MM (24 h), got '10h'"),
    ({"time": "24:00"}, "column 'time' must be HH:MM"),
    ({"users": "12.5"}, "column 'users' must be a whole number"),
    ({"users": "1e7"}, "column 'users' must be at most 100,000 (one class), got '1e7'"),
    ({"ram_gib": "0"}, "column 'ram_gib' must be > 0"),
    ({"cpu": ""}, "row 1: missing column 'cpu'"),
])
def test_bad_rows_name_the_row_and_the_column(change, message):
    with pytest.raises(ValueError) as e:
        parse_timetable([{**ROWS[0], **change}], source="calendar file t.csv")
    assert message in str(e.value) and str(e.value).startswith("calendar file t.csv row 1")
    with pytest.raises(ValueError, match="no classes"):
        parse_timetable([], source="calendar file t.csv")


def test_a_class_keeps_its_local_time_across_daylight_saving():
    entries = parse_timetable(ROWS[:1])
    winter = classes_around(entries, at("2027-01-12T08:00"), BERLIN, days_ahead=0, days_back=0)
    summer = classes_around(entries, at("2027-07-13T08:00"), BERLIN, days_ahead=0, days_back=0)
    assert [datetime.fromtimestamp(c.start_s, timezone.utc).hour for c in winter + summer] == [9, 8]
    assert winter[0].name == "stats 2027-01-12 10:00" and winter[0].users == 100
    # one class a week: a week ahead from a Wednesday finds next Tuesday's only
    week = classes_around(entries, at("2027-01-13T12:00"), BERLIN, days_ahead=7, days_back=0)
    assert [c.name for c in week] == ["stats 2027-01-19 10:00"]
    # the one-off workshop on its date only
    both = parse_timetable(ROWS)
    assert [c.name for c in classes_around(both, at("2027-01-14T09:00"), BERLIN, days_ahead=0, days_back=0)] == [
        "class 2027-01-14 13:30"]
    # by default it looks back far enough for the longest arrival window (Tuesday's, from Thursday)
    assert len(classes_around(both, at("2027-01-14T09:00"), BERLIN)) == 2


def test_the_strategy_boots_for_each_days_class_and_only_then():
    entries = parse_timetable(ROWS[:1])  # 100 students x 2 GiB at 10:00 on Tuesdays
    base = make_strategy("calendar", PolicyConfig(theta_out=80), schedule=classes_around(
        entries, at("2027-01-12T07:00"), BERLIN, days_ahead=7), boot_s=290)
    strategy = TimetabledStrategy(base, entries, BERLIN)
    assert strategy.name == "calendar" and strategy.config.theta_out == 80
    # on-prem at 320 of 400 GiB: room for the background, not for 200 GiB of students
    snap = ClusterSnapshot(tuple(onprem(ram_each=40) + pool(8)))
    lead = 290 + 15 + 60  # boot + tmon + margin: nodes must be asked for this long before
    tuesday = at("2027-01-12T10:00")
    assert strategy.decide(snap, ControllerState(), tuesday - lead - 60)[0] is None
    action, _ = strategy.decide(snap, ControllerState(), tuesday - lead + 15)
    assert isinstance(action, ScaleOut) and len(action.nodes) >= 3
    # next day: its own (empty) schedule, nothing to boot for
    wednesday = at("2027-01-13T10:00")
    assert strategy.schedule_at(wednesday - lead + 15)[-1].start_s < wednesday - 86_400 + 3600
    assert strategy.decide(snap, ControllerState(), wednesday - lead + 15)[0] is None
    # a week later, the class again, at the same local time
    next_week = at("2027-01-19T10:00")
    assert isinstance(strategy.decide(snap, ControllerState(), next_week - lead + 15)[0], ScaleOut)


@pytest.mark.timeout(60)
async def test_live_the_nodes_are_ready_before_the_class_arrives(cluster_factory, wire):
    """The orchestrator's real loop against the local cluster: no user has
    asked for anything yet, and a class of 10 x 2 GiB (more than the 16 GiB
    on-prem) is due; the controller, its clock one lead before the start,
    boots cloud nodes, which are Ready with nobody waiting."""
    from podtools import cluster_config, until

    cluster = await cluster_factory(cluster_config())
    entries = parse_timetable([{"day": "Tue", "time": "10:00", "users": "10", "cpu": "0.1", "ram_gib": "2"}])
    tuesday = at("2027-01-12T10:00")
    base = make_strategy("calendar", PolicyConfig(theta_out=80, tmon=0.2), boot_s=5, lead_margin_s=0,
                         schedule=classes_around(entries, tuesday, BERLIN))
    strategy = TimetabledStrategy(base, entries, BERLIN)
    ctl = await wire(cluster, strategy)
    ctl.clock = lambda: tuesday - 60  # before the lead (5 s boot + 0.2 s tmon)
    assert (await ctl.cycle())["action"] == "none"
    ctl.clock = lambda: tuesday - 4
    decision = await ctl.cycle()
    assert decision["action"] == "scale-out" and set(decision["nodes"]) <= {"cloud-1", "cloud-2"}, decision
    await until(lambda: all(ctl.nodes.records[n].ready for n in decision["nodes"]), what="cloud nodes Ready")
    assert decision["pending"] == 0 and not ctl.pods.records  # nobody has asked for a server yet
    assert ctl.status()["classes"][0]["users"] == 10
    from elastichub.orchestrator.web import render_page
    # at the timetable's local time (Berlin), not the orchestrator process's (UTC in a pod)
    assert "<li>Tue 10:00 class 2027-01-12 10:00: 10 students</li>" in render_page(ctl.status())


HEADER = "day,time,users,cpu,ram_gib\n"


def write(path, rows: str) -> None:
    path.write_text(HEADER + rows)
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 1))  # a coarse clock still moves


def test_the_file_is_read_again_only_when_it_changes_and_a_bad_edit_is_named_once(tmp_path):
    path = tmp_path / "t.csv"
    write(path, "Tue,10:00,100,1,2\n")
    timetable = TimetableFile(str(path))
    assert timetable.load()[0].users == 100
    assert timetable.changed() is None  # unchanged: not read again
    write(path, "Tue,10:00,120,1,2\nThu,14:00,30,1,4\n")
    assert [e.users for e in timetable.changed()] == [120, 30]
    write(path, "Tue,25:00,120,1,2\n")  # a typo
    with pytest.raises(ValueError, match=r"t.csv row 1: column 'time' must be HH:MM"):
        timetable.changed()
    assert timetable.changed() is None  # said once, not every cycle
    path.unlink()
    with pytest.raises(FileNotFoundError):
        timetable.changed()
    assert timetable.changed() is None
    write(path, "Wed,08:00,10,1,2\n")  # back, fixed
    assert timetable.changed()[0].weekday == 2
    # Saved again from a spreadsheet that splits by ';' (with its BOM and line ends): the same timetable.
    path.write_bytes("\ufeffday;time;users;cpu;ram_gib;name\r\nWed;08:00;10;0,5;2;stats, part 2\r\n".encode())
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 2))
    assert [(e.weekday, e.users, e.request.cpu, e.name) for e in timetable.changed()] == [(2, 10, 0.5, "stats, part 2")]
    path.write_bytes(b"day,time,users,cpu,ram_gib\nWed,08:00,\"10,1,2\n")  # an unclosed quote
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 3))
    with pytest.raises(ValueError, match="t.csv"):
        timetable.changed()


def test_a_time_cell_saved_with_its_seconds_reads(tmp_path):
    """A spreadsheet saves a time cell as 10:00:00: it was 'must be HH:MM'."""
    (entry,) = parse_timetable([{"day": "Tue", "time": "10:00:00", "users": "5", "cpu": "1", "ram_gib": "2"}])
    assert entry.at.hour == 10 and entry.at.minute == 0 and entry.at.second == 0
    with pytest.raises(ValueError, match="column 'time' must be HH:MM"):
        parse_timetable([{"day": "Tue", "time": "10:00:60", "users": "5", "cpu": "1", "ram_gib": "2"}])


def test_a_timetable_reads_as_spreadsheets_save_it(tmp_path):
    """As the simulator's calendar and trace: header case and spaces, blank
    rows below the table, UTF-16; a legacy code page is named by its line."""
    path = tmp_path / "t.csv"
    path.write_bytes(b"Day, Time, Users, CPU, RAM_GiB\r\nTue,10:00,100,1,2\r\n,,,,\r\n\r\n")
    assert [(e.weekday, e.users) for e in TimetableFile(str(path)).load()] == [(1, 100)]
    path.write_text("day\ttime\tusers\tcpu\tram_gib\nTue\t10:00\t100\t1\t2\n", encoding="utf-16")
    assert [(e.weekday, e.users) for e in TimetableFile(str(path)).load()] == [(1, 100)]
    path.write_bytes("day,time,users,cpu,ram_gib,name\nTue,10:00,100,1,2,Einf\u00fchrung\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"t.csv line 2: not UTF-8 text \(byte 0xfc\)"):
        TimetableFile(str(path)).load()


@pytest.mark.timeout(60)
async def test_live_an_edited_timetable_changes_the_next_decision_and_a_bad_edit_changes_nothing(
        cluster_factory, wire, tmp_path):
    """The orchestrator as the app wires it (calendar_file), its clock at
    Tuesday 09:29:57 in Berlin: the 10:00 class is not due yet; moved to
    09:30 by an edit, the next cycle boots for it; a bad edit or a deleted
    file is one event each and the timetable in force stays."""
    from podtools import cluster_config

    from elastichub.orchestrator.app import ElasticOrchestrator

    cluster = await cluster_factory(cluster_config())
    path = tmp_path / "t.csv"
    write(path, "Tue,10:00,10,0.1,2\n")
    app = ElasticOrchestrator(policy="calendar", calendar_file=str(path), calendar_timezone="Europe/Berlin",
                              tmon=0.2, policy_options={"boot_s": 5, "lead_margin_s": 0})
    now = at("2027-01-12T09:29:57")
    ctl = await wire(cluster, app.build_strategy(now=now), tmon=0.2)
    ctl.timetable, ctl.clock = app.timetable_file, lambda: now
    assert (await ctl.cycle())["action"] == "none"
    assert [c["name"] for c in ctl.status()["classes"]] == ["class 2027-01-12 10:00"]

    write(path, "Tue,09:30,10,0.1,2\n")
    decision = await ctl.cycle()
    assert decision["action"] == "scale-out", (decision, list(ctl.events))
    assert [c["name"] for c in ctl.status()["classes"]] == ["class 2027-01-12 09:30"]
    reloads = [e["message"] for e in ctl.events if e["kind"] == "timetable"]
    assert len(reloads) == 1 and "reloaded: 1 row(s), next class: class 2027-01-12 09:30" in reloads[0], reloads

    for edit, named in ((lambda: write(path, "Tue,09:30,ten,0.1,2\n"), "row 1: column 'users'"),
                        (path.unlink, "cannot read {path} (No such file or directory)")):
        edit()
        events = len(ctl.events)
        await ctl.cycle()
        await ctl.cycle()
        said = [e for e in list(ctl.events)[events:] if e["kind"] in ("error", "timetable")]
        assert len(said) == 1 and said[0]["kind"] == "error", said  # once, not every cycle
        assert said[0]["message"].startswith("calendar_file not reloaded, the timetable in force stays: ")
        assert named.format(path=path) in said[0]["message"], said
        assert [c["name"] for c in ctl.status()["classes"]] == ["class 2027-01-12 09:30"]
    write(path, "2026-01-13,09:30,10,0.1,2\n")  # back, with last year's workshop only: taken, and said
    await ctl.cycle()
    reloads = [e["message"] for e in ctl.events if e["kind"] == "timetable"]
    assert len(reloads) == 2 and reloads[-1].endswith("no class from now on"), reloads
    assert ctl.status()["classes"] == []
