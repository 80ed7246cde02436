"""The paper workload's shape, lifetimes, the registry and trace replay."""

from __future__ import annotations

import random
import statistics

import pytest

from elastichub.policy import GiB, Resources
from elastichub.simulator.params import ClusterParams
from elastichub.simulator.trace import TraceError, load_trace
from elastichub.simulator.workload import (
    DAY_S, WORKLOADS, LifetimeModel, Workload, make_workload, register_workload, session_lifetime,
    workload_names,
)

from sim_helpers import write_csv

LARGEST = ClusterParams().node_shapes


def demand_ru(wl: Workload, lo: int, hi: int) -> list[float]:
    """RAM (in RU) that would run each minute in [lo, hi) if nobody waited."""
    minutes = [0.0] * ((hi - lo) // 60)
    for r in wl.requests:
        start, end = r.arrival_s + 6, r.arrival_s + 6 + r.duration_s
        for m in range(max(lo, start) // 60, min(hi, end) // 60):
            if lo // 60 <= m < hi // 60:
                minutes[m - lo // 60] += r.requests.ram / GiB
    return minutes


def test_paper_day1_peaks_near_but_mostly_under_onprem_capacity():
    wl = make_workload("paper", seed=1)
    day1 = demand_ru(wl, 0, DAY_S)
    onprem = 8 * 50
    assert 0.85 * onprem <= max(day1) <= 1.1 * onprem
    assert sum(1 for d in day1 if d > onprem) / len(day1) < 0.05
    assert max(day1[:6 * 60]) < 0.2 * onprem  # nights are quiet


def test_paper_day2_has_class_bursts_of_100_users_within_five_minutes():
    wl = make_workload("paper", seed=1)
    assert wl.horizon_s == 2 * DAY_S
    assert len(wl.classes) == 3 and all(c.start_s >= DAY_S for c in wl.classes)
    for c in wl.classes:
        came = [r for r in wl.requests if r.kind == "class" and c.start_s <= r.arrival_s < c.start_s + 300]
        assert len(came) == c.users >= 100
    day1_classes = [r for r in wl.requests if r.kind == "class" and r.arrival_s < DAY_S]
    assert not day1_classes
    assert max(demand_ru(wl, DAY_S, 2 * DAY_S)) > 1.3 * 400  # the bursty day overflows on-prem


def test_paper_workload_is_seeded():
    assert make_workload("paper", seed=4) == make_workload("paper", seed=4)
    assert make_workload("paper", seed=4).requests != make_workload("paper", seed=5).requests


def test_days_cut_or_extend_the_scenario():
    short = make_workload("paper", days=0.5, seed=1)
    assert short.horizon_s == DAY_S // 2 and all(r.arrival_s < DAY_S // 2 for r in short.requests)
    four = make_workload("paper", days=4, seed=1)
    assert len(four.classes) == 6  # days 2 and 4 teach
    with pytest.raises(ValueError, match="--days"):
        make_workload("paper", days=0, seed=1)


def test_lifetime_is_truncated_normal():
    model = LifetimeModel(mean_s=3600, sd_s=900, min_s=300)
    rng = random.Random(1)
    draws = [model.sample(rng) for _ in range(20_000)]
    assert min(draws) >= 300
    assert statistics.mean(draws) == pytest.approx(3600, rel=0.02)
    assert statistics.stdev(draws) == pytest.approx(900, rel=0.05)
    with pytest.raises(ValueError, match="--lifetime-min-min"):
        LifetimeModel(mean_s=600, sd_s=60, min_s=3600)


def test_registry_lists_and_rejects():
    assert "paper" in workload_names()
    with pytest.raises(ValueError, match="unknown workload 'nope'.*paper"):
        make_workload("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_workload("paper", WORKLOADS["paper"])


def test_trace_roundtrip(tmp_path):
    path = write_csv(tmp_path / "t.csv",
                     "user,arrival_s,duration_s,cpu,ram_gib\n"
                     "bob,30,600,1,2\n"
                     "ann,0,120.4,0.5,1.5\n"
                     "\n")
    wl = load_trace(path, LARGEST)
    assert [r.arrival_s for r in wl.requests] == [0, 30]  # sorted
    assert wl.requests[0].duration_s == 120 and wl.requests[0].requests.ram == 1.5 * GiB
    assert wl.requests[1].requests.cpu == 1
    assert wl.horizon_s == 3600  # end of the last server, rounded up to the hour
    assert load_trace(path, LARGEST, horizon_s=100).horizon_s == 100


@pytest.mark.parametrize("text", [
    "\ufeffarrival_s,duration_s,cpu,ram_gib\r\n30,600,1,2\r\n0,120,0.5,1.5\r\n",  # a spreadsheet's CSV, BOM and CRLF
    "arrival_s;duration_s;cpu;ram_gib\n30;600;1;2\n0;120;0,5;1,5\n",  # semicolons and decimal commas
    "arrival_s\tduration_s\tcpu\tram_gib\n30\t600\t1\t2\n0\t120\t0.5\t1.5\n",  # tabs
])
def test_a_spreadsheets_export_reads_as_the_same_trace(tmp_path, text):
    path = tmp_path / "export.csv"
    path.write_bytes(text.encode())
    wl = load_trace(path, LARGEST)
    assert [(r.arrival_s, r.duration_s, r.requests.ram) for r in wl.requests] == [(0, 120, 1.5 * GiB),
                                                                                  (30, 600, 2 * GiB)]


def test_a_trace_cut_by_days_holds_only_the_servers_it_replays(tmp_path):
    """--days 14 of a 90-day history: the replay ran 4,232 servers while the
    header said 25,440 and the lifetime model told to the strategy (and
    printed into the orchestrator's config) came from sessions never replayed,
    as a generated workload's would not."""
    path = write_csv(tmp_path / "t.csv", "arrival_s,duration_s,cpu,ram_gib\n0,600,1,2\n3600,700,1,2\n"
                                         "86400,90000,1,2\n90000,80000,1,2\n")
    cut = load_trace(path, LARGEST, horizon_s=DAY_S)
    assert [r.arrival_s for r in cut.requests] == [0, 3600]
    assert "(2 servers" in cut.description
    assert session_lifetime(cut) == (650, 37)


def test_a_trace_of_timestamps_starts_at_midnight_of_its_first_day(tmp_path):
    # As the orchestrator's history_file writes it, with a row from a local clock among them
    path = write_csv(tmp_path / "h.csv",
                     "arrival,duration_s,cpu,ram_gib,user,waited_s\n"
                     "2026-03-29T09:00:30+02:00,600,1,2,bob,0\n"
                     "2026-03-28T13:30:00+01:00,3600,0.5,1,ann,12\n"
                     "2026-03-28T12:30:00Z,60,0.5,1,cy,0\n")
    wl = load_trace(path, LARGEST)
    # from 2026-03-28 00:00 +01:00: ann at 13:30, cy at 12:30 UTC = 13:30 +01:00, bob 19.5 h later
    assert [r.arrival_s for r in wl.requests] == [13.5 * 3600, 13.5 * 3600, 24 * 3600 + 8 * 3600 + 30]
    assert sorted(r.duration_s for r in wl.requests[:2]) == [60, 3600]
    assert "from 2026-03-28 00:00+01:00" in wl.description
    # a UTC row among local ones is no clock change: the same moment, replayed as one
    assert wl.meta["warnings"] == [
        f"{path}: the arrivals' UTC offset changes from +01:00 to +00:00 at line 4 and 1 more time(s), within 30 "
        "days (rows written in different time zones?): replayed in elapsed time from midnight at +01:00, so "
        "calendar times ('D HH:MM') are that offset's; write every row in the hub's zone (or every one in UTC)"]


@pytest.mark.parametrize("rows, local", [
    # Europe/Berlin: clocks forward on 2026-03-29, back on 2026-10-25; 09:00 is 09:00 on each day
    (["2026-03-27T09:00:00+01:00", "2026-03-30T09:00:00+02:00"], ["1 09:00", "4 09:00"]),
    (["2026-10-24T09:00:00+02:00", "2026-10-26T09:00:00+01:00"], ["1 09:00", "3 09:00"]),
    (["2026-03-27T09:00:00+01:00", "2026-04-01T13:00:00+02:00", "2026-10-26T09:00:00+01:00"],
     ["1 09:00", "6 13:00", "214 09:00"]),
])
def test_a_trace_across_a_daylight_saving_change_keeps_the_hubs_wall_clock(tmp_path, rows, local):
    """A calendar's "D HH:MM" is the hub's clock: counted in elapsed
    seconds, every arrival after a clock change was an hour off it."""
    from elastichub.policy.calendar import parse_start

    path = write_csv(tmp_path / "dst.csv", "arrival,duration_s,cpu,ram_gib\n"
                                           + "".join(f"{r},600,1,2\n" for r in rows))
    wl = load_trace(path, LARGEST)
    assert [r.arrival_s for r in wl.requests] == [parse_start(t) for t in local]
    assert [r.duration_s for r in wl.requests] == [600] * len(rows)  # elapsed, as they ran
    [warning] = [w for w in wl.meta["warnings"] if "UTC offset" in w]  # (the third: idle for months too)
    assert warning.startswith(f"{path}: the arrivals' UTC offset changes from {rows[0][-6:]} to {rows[1][-6:]} "
                              "at line 3")
    assert warning.endswith(", a daylight-saving change: each arrival is replayed at its local time, so calendar "
                            "times ('D HH:MM') and days are the hub's, and the replay's clock skips (or repeats) the "
                            "hour the clocks did")


def test_unix_times_in_the_arrival_column_read_as_utc(tmp_path):
    # 2025-12-01 12:33:20 UTC, then 100 s and a day later; a database's export
    path = write_csv(tmp_path / "u.csv", "arrival,duration_s,cpu,ram_gib\n"
                                          "1764592500,600,1,2\n1764592400,60,1,2\n1764678800.4,60,1,2\n")
    wl = load_trace(path, LARGEST)
    noon = 12 * 3600 + 33 * 60 + 20
    assert [r.arrival_s for r in wl.requests] == [noon, noon + 100, 86400 + noon]
    assert "from 2025-12-01 00:00+00:00" in wl.description


def test_strategies_are_told_the_session_lifetimes_the_workload_has(tmp_path):
    """A lifetime-aware strategy reasons with the hub's session lifetimes:
    the model a workload was drawn from, the durations of a replayed trace.
    With the defaults, a 30-minute hub would be planned as a 60-minute one."""
    from elastichub.simulator.runner import RunSpec, build_strategy

    short = make_workload("paper", days=0.5, seed=1, lifetime=LifetimeModel(mean_s=1800, sd_s=450))
    assert session_lifetime(short) == (1800, 450)
    strategy = build_strategy(RunSpec("elastic", "migration", 80.0), short, ClusterParams(cloud_boot_s=120))
    assert (strategy.lifetime_mean_s, strategy.lifetime_sd_s, strategy.boot_s) == (1800, 450, 120)
    # an option the run sets wins over the model
    told = build_strategy(RunSpec("elastic", "migration", 80.0, options={"lifetime_mean_s": 999.0}), short,
                          ClusterParams())
    assert told.lifetime_mean_s == 999.0

    path = write_csv(tmp_path / "t.csv", "arrival_s,duration_s,cpu,ram_gib\n0,600,1,2\n10,1800,1,2\n20,3000,1,2\n")
    trace = load_trace(path, LARGEST)
    assert trace.lifetime is None
    assert session_lifetime(trace) == (1800, 890)  # median 1800, IQR 1200 s / 1.349, to the second
    assert build_strategy(RunSpec("elastic", "migration", 80.0), trace, ClusterParams()).lifetime_mean_s == 1800


def test_trace_reads_requests_as_kubectl_shows_them(tmp_path):
    path = write_csv(tmp_path / "k.csv", "arrival_s,duration_s,cpu,ram_gib\n0,60,500m,512Mi\n5,60,2,2Gi\n")
    assert [r.requests for r in load_trace(path, LARGEST).requests] == [Resources(0.5, 0.5 * GiB),
                                                                       Resources(2, 2 * GiB)]


@pytest.mark.parametrize("text, message", [
    ("arrival_s,cpu,ram_gib\n1,1,1\n", "line 1: missing column(s) duration_s"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,10,1,1\n5,-3,1,1\n", "line 3, column duration_s: negative value -3"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,0,1,1\n", "line 2, column duration_s: must be > 0"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,10,one,1\n", "line 2, column cpu: not a number of cores: 'one'"),
    # kubectl's quantities are read where they mean the column's unit, refused where they would not
    ("arrival_s,duration_s,cpu,ram_gib\n0,10,1,2G\n", "line 2, column ram_gib: '2G' in GiB: Kubernetes reads 'G' "
     "as a power of 10 (of bytes); write 2Gi for 2 GiB"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,10,2Gi,1\n", "line 2, column cpu: '2Gi' is not a number of cores"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,10,1\n", "line 2, column ram_gib: empty value"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,10,1,64\n", "line 2, column ram_gib: 64 GiB is more than the largest node has (50 GiB)"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,10,26,1\n", "line 2, column cpu: 26 cores is more than the largest node has (25 cores)"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,10,nan,1\n", "column cpu: not a finite number"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,10,0,0\n", "line 2: cpu and ram_gib are both 0"),
    ("arrival_s,duration_s,cpu,ram_gib\n", "no rows after the header"),
    ("", "empty file"),
    ("arrival,duration_s,cpu,ram_gib\n2026-12-01T09:00:00,10,1,1\n",
     "line 2, column arrival: '2026-12-01T09:00:00' has no time zone"),
    ("arrival,duration_s,cpu,ram_gib\n9 o'clock,10,1,1\n", "line 2, column arrival: not an ISO 8601 timestamp"),
    ("arrival,arrival_s,duration_s,cpu,ram_gib\n", "line 1: columns arrival_s and arrival both present"),
    # Unix times in arrival_s would replay 56 years of empty cycles, for hours
    ("arrival_s,duration_s,cpu,ram_gib\n1764590000,3600,1,1\n1764590100,60,1,1\n",
     "column arrival_s: the first server arrives 1764590000 s (20,423 days) after the start: arrival_s counts "
     "seconds from the start of the replay. For Unix times or ISO 8601 timestamps, name the column arrival instead"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,3600,1,1\n40000000,60,1,1\n",
     "line 3: this server ends 463 days after the start; a replay spans at most 400 days (arrival_s in "
     "milliseconds?)"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,3600,1,1\n100,1e9,1,1\n",
     "line 3, column duration_s: 1000000000 s is 11,574 days; a replay spans at most 400 days (a value in "
     "milliseconds?)"),
    ("arrival,duration_s,cpu,ram_gib\n2025-01-01T09:00:00Z,60,1,1\n2026-04-01T09:00:00z,60,1,1\n",
     "line 3: this server ends 455 days after the start; a replay spans at most 400 days (split the history)"),
    # a decimal comma in a comma-separated file shifts every value after it
    ("arrival_s,duration_s,cpu,ram_gib\n0,3600,0,5,2\n", "line 2: 5 values for 4 columns (a decimal comma"),
    ("arrival_s,duration_s,cpu,cpu,ram_gib\n0,3600,1,2,2\n", "line 1: column(s) cpu named twice"),
    ("arrival_s;duration_s;cpu;ram_gib\n100;3.600;1;2\n",
     "line 2, column duration_s: '3.600' in a file whose decimal separator is ',': a thousands point or a "
     "decimal one?"),
    ("arrival,duration_s,cpu,ram_gib\n1764590000000,10,1,1\n", "line 2, column arrival: not a Unix time: "
     "'1764590000000' (milliseconds?)"),
    ("arrival,duration_s,cpu,ram_gib\n-5,10,1,1\n", "line 2, column arrival: not a Unix time: '-5'"),
    # years no hub's history has: a database's empty time, or one no clock can show (was an OverflowError)
    ("arrival,duration_s,cpu,ram_gib\n0,10,1,1\n", "line 2, column arrival: '0' is in the year 1970: not a time "
     "of a hub's history"),
    ("arrival,duration_s,cpu,ram_gib\n9999-12-31T23:59:59-12:00,60,1,2\n", "line 2, column arrival: "
     "'9999-12-31T23:59:59-12:00' is in the year 9999"),
    ("arrival,duration_s,cpu,ram_gib\n253402300799,60,1,2\n", "line 2, column arrival: '253402300799' is in the "
     "year 9999"),
    ("arrival_s,duration_s,cpu,ram_gib\n0,1e300,1,1\n", "line 2, column duration_s: 1e+300 s is 1.16e+295 days"),
])
def test_trace_errors_name_line_and_column(tmp_path, text, message):
    path = write_csv(tmp_path / "bad.csv", text)
    with pytest.raises(TraceError) as info:
        load_trace(path, LARGEST)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert str(path) in str(info.value)


def test_a_header_in_other_case_and_a_spreadsheets_unicode_text_read_as_the_same_trace(tmp_path):
    plain = load_trace(write_csv(tmp_path / "t.csv", "arrival_s,duration_s,cpu,ram_gib\n0,3600,1,2\n"), LARGEST)
    upper = tmp_path / "u.csv"
    upper.write_text("ARRIVAL_S\tDuration_S\tCPU\tRAM_GiB\r\n0\t3600\t1\t2\r\n", encoding="utf-16")
    assert load_trace(upper, LARGEST).requests == plain.requests
    latin = tmp_path / "l.csv"
    latin.write_bytes("arrival_s,duration_s,cpu,ram_gib,user\n0,3600,1,2,ann\n5,60,1,2,zo\xeb\n".encode("latin-1"))
    with pytest.raises(TraceError, match=r"l.csv line 3: not UTF-8 text \(byte 0xeb\): save the file as CSV UTF-8"):
        load_trace(latin, LARGEST)


def test_missing_trace_file(tmp_path):
    with pytest.raises(TraceError, match="not found"):
        load_trace(tmp_path / "absent.csv", LARGEST)


def test_a_trace_idle_for_months_warns_of_a_wrong_date(tmp_path):
    """One wrong year in three rows made the replay span 365 days (54 s a run, 15 minutes a --tune)."""
    path = write_csv(tmp_path / "t.csv", "arrival,duration_s,cpu,ram_gib\n2026-12-01T09:00:00Z,3600,1,2\n"
                                         "2025-12-01T10:00:00Z,3600,1,2\n2026-12-01T11:00:00Z,3600,1,2\n")
    (warning,) = load_trace(path, LARGEST).meta["warnings"]
    assert warning.startswith(f"{path}: nobody is on the hub for 365 days, from the end of line 3's session to "
                              "line 2's arrival")
    assert load_trace(path, LARGEST, horizon_s=11 * 3600).meta["warnings"] == []  # --days: the span is the admin's
    busy = write_csv(tmp_path / "b.csv", "arrival_s,duration_s,cpu,ram_gib\n0,3600,1,2\n86400,3600,1,2\n")
    assert load_trace(busy, LARGEST).meta["warnings"] == []
    # before the first arrival too: seconds counted from another start (200 days: 27 s a run, none said)
    late = write_csv(tmp_path / "l.csv", "arrival_s,duration_s,cpu,ram_gib\n17283600,3600,1,2\n17280000,3600,1,2\n")
    (warning,) = load_trace(late, LARGEST).meta["warnings"]
    assert warning.startswith(f"{late}: nobody is on the hub for 200 days, from the replay's start (arrival_s 0) "
                              "to line 3's arrival (100% of the 200 days replayed")


def test_histories_joined_with_cat_read_as_one(tmp_path):
    """Each week's history_file has its header; `cat week*.csv` put the
    second one among the rows: 'line 3, column duration_s: not a number'."""
    week = "arrival,duration_s,cpu,ram_gib,user,server,waited_s\n"
    path = write_csv(tmp_path / "all.csv", week + "2026-12-01T09:00:00+00:00,3600,1,2,a,,0\n"
                                           + week + "2026-12-08T09:00:00+00:00,1800,1,2,b,,0\n")
    trace = load_trace(path, LARGEST)
    assert [(r.arrival_s, r.duration_s) for r in trace.requests] == [(9 * 3600, 3600), (7 * 86400 + 9 * 3600, 1800)]


def test_a_logs_trace_joined_with_the_history_after_it_reads_each_part_by_its_own_header(tmp_path):
    """The hub's log before ElasticHub (`elastichub trace`: spawn_s, ended) then the orchestrator's history_file
    (waited_s): the second header was read as a row, 'line 3, column arrival: not an ISO 8601 timestamp'."""
    path = write_csv(tmp_path / "all.csv", "arrival,duration_s,cpu,ram_gib,user,server,spawn_s,ended\n"
                                           "2026-12-01T09:00:00+00:00,3600,1,2,a,,3.5,log-end\n"
                                           "arrival,duration_s,cpu,ram_gib,user,server,waited_s\n"
                                           "2026-12-08T09:00:00+00:00,1800,1,2,b,,0\n"
                                           "ram_gib,cpu,duration_s,arrival\n4,2,60,2026-12-09T09:00:00+00:00\n")
    trace = load_trace(path, LARGEST)
    assert [(r.arrival_s, r.duration_s, r.requests, r.censored) for r in trace.requests] == [
        (9 * 3600, 3600, Resources(1, 2 * GiB), True), (7 * 86400 + 9 * 3600, 1800, Resources(1, 2 * GiB), False),
        (8 * 86400 + 9 * 3600, 60, Resources(2, 4 * GiB), False)]
    mixed = write_csv(tmp_path / "m.csv", "arrival,duration_s,cpu,ram_gib\n2026-12-01T09:00:00Z,60,1,2\n"
                                          "arrival_s,duration_s,cpu,ram_gib\n0,60,1,2\n")
    with pytest.raises(TraceError, match=r"m.csv line 3: a header with arrival_s, after .*m.csv line 1's with "
                                         r"arrival: files joined whose arrivals count differently"):
        load_trace(mixed, LARGEST)


def test_a_replay_shorter_than_the_trace_says_what_it_leaves_out(tmp_path):
    """--days ending before the first arrival ran nothing, and --tune chose on nothing, without a word."""
    path = write_csv(tmp_path / "t.csv", "arrival,duration_s,cpu,ram_gib\n2026-12-01T19:00:00Z,3600,1,2\n"
                                         "2026-12-01T18:00:00Z,3600,1,2\n")
    with pytest.raises(TraceError, match=r"t.csv line 3: the first server arrives 64,800 s \(18 h\) after the "
                                         r"replay's start at 2026-12-01 00:00\+00:00, after its end at 43,200 s "
                                         r"\(--days\): nothing to replay"):
        load_trace(path, LARGEST, horizon_s=43_200)
    assert len(load_trace(path, LARGEST, horizon_s=68_400).requests) == 1  # 19:00 is the end: not replayed


def test_a_utc_history_is_replayed_on_the_clock_of_the_hubs_zone(tmp_path):
    """The orchestrator's history_file writes UTC: given the hub's zone, a
    09:00 class in Berlin is at 09:00 of its day, winter and summer."""
    import zoneinfo

    from elastichub.policy.calendar import parse_start

    path = write_csv(tmp_path / "history.csv", "arrival,duration_s,cpu,ram_gib\n"
                                               "2026-03-30T07:00:00+00:00,600,1,2\n"
                                               "2026-03-27T08:00:00Z,600,1,2\n"
                                               "1774857600,60,1,2\n")  # 2026-03-30 08:00 UTC, Unix time
    wl = load_trace(path, LARGEST, zone=zoneinfo.ZoneInfo("Europe/Berlin"))
    assert [r.arrival_s for r in wl.requests] == [parse_start(t) for t in ("1 09:00", "4 09:00", "4 10:00")]
    assert "from 2026-03-27 00:00+01:00" in wl.description and wl.meta["warnings"] == []
    plain = load_trace(path, LARGEST)  # without: UTC's clock, one offset
    assert [r.arrival_s for r in plain.requests] == [parse_start(t) for t in ("1 08:00", "4 07:00", "4 08:00")]


def test_a_time_zone_needs_timestamps(tmp_path):
    import zoneinfo

    path = write_csv(tmp_path / "t.csv", "arrival_s,duration_s,cpu,ram_gib\n0,600,1,2\n")
    with pytest.raises(TraceError, match=r"t.csv line 1: a time zone is given \(--timezone\), but arrival_s counts "
                                         r"seconds from the start, with no clock to set"):
        load_trace(path, LARGEST, zone=zoneinfo.ZoneInfo("UTC"))


def test_a_history_given_twice_is_refused_as_one_server_running_twice_at_once(tmp_path):
    """`cat week1.csv week1-2.csv`: every session of week 1 was replayed twice, the load doubled, without a word."""
    week = ("arrival,duration_s,cpu,ram_gib,user,server,waited_s\n2026-12-01T09:00:00+00:00,3600,1,2,ann,,0\n"
            "2026-12-01T09:30:00+00:00,600,1,2,ann,gpu,0\n")
    path = write_csv(tmp_path / "all.csv", week + week)
    with pytest.raises(TraceError, match=r"all.csv line 5: the server of user 'ann' is asked for while line 2's "
                                         r"session of it runs, for 3,600 s more: a server runs once at a time \(the "
                                         r"same sessions given twice"):
        load_trace(path, LARGEST)
    later = write_csv(tmp_path / "w.csv", week + "2026-12-01T10:35:00+01:00,600,1,2,ann,gpu,0\n")
    with pytest.raises(TraceError, match=r"w.csv line 4: server 'gpu' of user 'ann' is asked for while line 3's "
                                         r"session of it runs, for 300 s"):
        load_trace(later, LARGEST)  # 09:35 UTC: moments compared, whatever the offset
    # one after the other, to the second (a stop and a start again; the log's rounding), or other users: a trace
    again = write_csv(tmp_path / "a.csv", week + "2026-12-01T09:59:58+00:00,60,1,2,ann,,3\n"
                                                 "2026-12-01T09:00:00+00:00,3600,1,2,bob,,0\n")
    assert len(load_trace(again, LARGEST).requests) == 4
    unnamed = write_csv(tmp_path / "u.csv", "arrival_s,duration_s,cpu,ram_gib\n0,60,1,2\n0,60,1,2\n")
    assert len(load_trace(unnamed, LARGEST).requests) == 2  # a class arriving at once: nobody named
    servers = write_csv(tmp_path / "s.csv", "arrival_s,duration_s,cpu,ram_gib,user\n0,60,1,2,ann\n0,60,1,2,ann\n")
    assert len(load_trace(servers, LARGEST).requests) == 2  # no server column: two named servers of hers, maybe


def test_a_gzip_compressed_history_is_read_and_other_compressed_files_named(tmp_path):
    """history.csv.gz, kept as the hub's rotated logs are: 'line 1: not UTF-8 text (byte 0x8b): save the file as
    CSV UTF-8'."""
    import bz2
    import gzip

    text = "arrival,duration_s,cpu,ram_gib\n2026-12-01T09:00:00Z,3600,1,2\n2026-12-01T10:00:00Z,60,1,2\n"
    plain = load_trace(write_csv(tmp_path / "h.csv", text), LARGEST)
    (tmp_path / "h.csv.gz").write_bytes(gzip.compress(text.encode()))
    assert load_trace(tmp_path / "h.csv.gz", LARGEST).requests == plain.requests
    (tmp_path / "cut.csv.gz").write_bytes(gzip.compress(text.encode())[:30])
    with pytest.raises(TraceError, match=r"trace file .*cut.csv.gz: a gzip file that cannot be read"):
        load_trace(tmp_path / "cut.csv.gz", LARGEST)
    (tmp_path / "h.csv.bz2").write_bytes(bz2.compress(text.encode()))
    with pytest.raises(TraceError, match=r"trace file .*h.csv.bz2: bzip2-compressed, not CSV text"):
        load_trace(tmp_path / "h.csv.bz2", LARGEST)


def test_a_hub_log_given_as_a_trace_is_told_to_be_made_one(tmp_path):
    """`simulate --trace hub.log`: 'line 1: missing column(s) arrival_s, duration_s, cpu, ram_gib'."""
    path = write_csv(tmp_path / "hub.log", "Loading /usr/local/etc/jupyterhub/secret/values.yaml\n"
                                           "[I 2026-12-01 09:00:00.000 JupyterHub app:3300] Running JupyterHub version "
                                           "5.2.1\n")
    with pytest.raises(TraceError, match=r"hub.log: a JupyterHub log, not a trace: make one of it with "
                                         r"`elastichub trace .*hub.log --cpu CORES --ram-gib GIB --out trace.csv`"):
        load_trace(path, LARGEST)


def test_spreadsheet_exports_joined_with_cat_read_past_the_second_ones_byte_order_mark(tmp_path):
    """Each week saved by a spreadsheet as "CSV UTF-8" (a byte-order mark, CR LF), `cat` joined: the second header
    was a row, 'line 3, column arrival: not an ISO 8601 timestamp: '\\ufeffarrival''."""
    week = "\ufeffarrival,duration_s,cpu,ram_gib\r\n2026-12-0{}T09:00:00Z,3600,1,2\r\n"
    (tmp_path / "bom.csv").write_bytes((week.format(1) + week.format(8)).encode("utf-8"))
    assert [r.arrival_s for r in load_trace(tmp_path / "bom.csv", LARGEST).requests] == [9 * 3600,
                                                                                      7 * 86400 + 9 * 3600]
