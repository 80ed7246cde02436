"""The paper scenario's qualitative results (shared/PAPER.md, "The paper's
evaluation"), from one run of the default scenario cached for the module."""

from __future__ import annotations

import pytest

from elastichub.simulator import ClusterParams, make_workload, plan_runs, run_all, summary


@pytest.fixture(scope="module")
def runs():
    wl = make_workload("paper", seed=1)
    results = run_all(plan_runs(["paper"], ["onprem-only", "no-migration", "migration"], [50, 80]),
                      wl, ClusterParams(), seed=1)
    return {(s["mode"], s["theta_out"]): s for s in map(summary, results)}


def test_onprem_only_waits_over_1000_s_on_the_bursty_day(runs):
    onprem = runs[("onprem-only", None)]
    day1, day2 = onprem["wait_max_by_day_s"]
    assert day2 > 1000
    assert day2 > day1
    assert onprem["cloud_node_hours"] == 0 and onprem["scale_outs"] == 0


@pytest.mark.parametrize("theta", [50, 80])
def test_cloud_cuts_waiting(runs, theta):
    onprem = runs[("onprem-only", None)]
    for mode in ("no-migration", "migration"):
        run = runs[(mode, theta)]
        assert run["wait_max_s"] < onprem["wait_max_s"] / 2
        assert run["wait_mean_s"] < onprem["wait_mean_s"] / 2


@pytest.mark.parametrize("theta", [80])
def test_migration_uses_fewer_node_hours_than_no_migration(runs, theta):
    without, with_ = runs[("no-migration", theta)], runs[("migration", theta)]
    assert with_["migrations"] > 0 and without["migrations"] == 0
    assert with_["cloud_node_hours"] < 0.95 * without["cloud_node_hours"]


def test_lower_theta_out_waits_less_and_costs_more(runs):
    for mode in ("no-migration", "migration"):
        low, high = runs[(mode, 50)], runs[(mode, 80)]
        assert low["cloud_node_hours"] > 2 * high["cloud_node_hours"]
        assert low["wait_mean_s"] < high["wait_mean_s"] / 2
        assert low["wait_p95_s"] < high["wait_p95_s"]
        assert low["wait_max_s"] < high["wait_max_s"]


def test_every_server_is_served(runs):
    counts = {run["servers"] for run in runs.values()}
    assert len(counts) == 1 and counts.pop() > 2000  # the same workload in every run
    for run in runs.values():
        assert run["still_queued"] == 0
        assert run["scale_ins"] <= run["scale_outs"] <= run["scale_ins"] + 8
