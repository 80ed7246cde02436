"""Per-second series, CSV and table on a hand-made trace."""

from __future__ import annotations

import csv

from elastichub.simulator import ClusterParams, summary
from elastichub.simulator.report import SERIES_COLUMNS, format_table, per_second, write_series_csv

from sim_helpers import request, run_checked, workload

TINY = ClusterParams(onprem_nodes=1, onprem_node_ru=8, cloud_nodes=0, cloud_node_ru=8)


def tiny_run():
    wl = workload([request(0, 100, 6), request(10, 10, 4), request(20, 50, 2), request(30, 10, 8)], 200)
    return run_checked(wl, TINY, mode="onprem-only")[1]


def test_per_second_series_follow_the_queue():
    s = per_second(tiny_run())
    assert len(s["t_s"]) == 200
    assert s["queue_len"][5] == 0 and s["queue_len"][10] == 1 and s["queue_len"][30] == 2
    assert s["queue_len"][106] == 1 and s["queue_len"][122] == 0
    assert s["max_wait_s"][50] == 40  # B has waited since 10
    assert s["max_wait_s"][110] == 80  # then D, since 30
    assert s["max_wait_s"][150] == 0
    assert s["onprem_ram_pct"][0] == 75.0 and s["onprem_ram_pct"][25] == 100.0
    assert s["ram_occupancy_pct"][25] == 100.0 and s["cloud_active"].max() == 0


def test_csv_matches_the_series(tmp_path):
    result = tiny_run()
    path = tmp_path / "run.csv"
    write_series_csv(result, path)
    rows = list(csv.reader(path.read_text().splitlines()))
    assert tuple(rows[0]) == SERIES_COLUMNS and len(rows) == 201
    series = per_second(result)
    for t in (0, 10, 30, 50, 106, 110, 150, 199):
        for i, column in enumerate(SERIES_COLUMNS):
            assert float(rows[t + 1][i]) == round(float(series[column][t]), 2), (t, column)


def test_table_has_one_row_per_run():
    text = format_table([summary(tiny_run())])
    header, rule, row = text.splitlines()
    assert header.split()[:4] == ["policy", "mode", "theta_out", "node-h"]
    assert row.split()[:4] == ["paper", "onprem-only", "-", "0.0"]
    assert len(rule) == len(header)


def test_a_server_still_waiting_at_the_end_is_noted_under_the_table():
    """Its wait is counted up to the end: a floor the row cannot show."""
    wl = workload([request(0, 300, 6), request(10, 500, 8)], 200)  # the second waits past the end
    result = run_checked(wl, TINY, mode="onprem-only")[1]
    lines = format_table([summary(tiny_run()), summary(result)]).splitlines()
    assert len(lines) == 5
    assert lines[4] == ("note: paper onprem-only -: 1 server(s) still waiting when the simulation ends (no room for "
                        "them in this mode, or not yet), counted as waiting until then: the run's waits are at "
                        "least those shown")
