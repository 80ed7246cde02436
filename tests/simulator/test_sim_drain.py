"""A drain restarts up to `drain_concurrency` servers at once, as the orchestrator's (drainpool.py): one more
begins only when it and those in flight still waiting for room fit together on the Ready nodes, and always
when none is in flight; 1 is the paper's drain, one restart after another, to the number."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from elastichub.simulator import ClusterParams
from elastichub.simulator.engine import Simulation
from elastichub.simulator.runner import RunSpec, build_strategy
from elastichub.simulator.workload import make_workload

from sim_helpers import CheckedSimulation, DrainCloudAt600, request, workload

ROOMY = ClusterParams(onprem_nodes=1, onprem_node_ru=16, cloud_nodes=1, cloud_node_ru=16)


def drained(params: ClusterParams, keep_gib: float = 0):
    """Six 2 GiB servers on cloud-1 (on-prem is full when they come), drained at 600 onto on-prem, which has
    all its 16 GiB free by then but `keep_gib` (a server that stays)."""
    rows = [request(0, 540, 16 - keep_gib)] + [request(300, 5000, 2) for _ in range(6)]
    if keep_gib:
        rows.append(request(0, 5000, keep_gib))
    sim = CheckedSimulation(workload(rows, 2000), DrainCloudAt600(), params, seed=3)
    return sim, sim.run()


def overlap(downtimes) -> int:
    """The most restarts in flight at one second (each from its start for its downtime: none waited)."""
    return max(sum(1 for b, d in downtimes if b <= t < b + d) for t, _ in downtimes)


@pytest.mark.parametrize("n", [1, 2, 4, 6])
def test_restarts_overlap_up_to_drain_concurrency_and_the_vm_stops_after_the_last(n):
    sim, result = drained(replace(ROOMY, drain_concurrency=n))
    assert result.migrations == 6 and result.migration_waits == [0] * 6  # on-prem had room for all
    assert sum(1 for began, _ in result.downtimes if began == 600) == n
    assert overlap(result.downtimes) == n
    assert all(11 <= d <= 22 for _, d in result.downtimes)
    stopped = result.cloud_node_hours * 3600  # booted at 0
    assert stopped == max(b + d for b, d in result.downtimes)
    assert len(result.waits) == 7  # moves are no arrivals


def test_a_drain_at_several_at_once_ends_no_later_and_draws_the_same_downtimes():
    one = drained(replace(ROOMY, drain_concurrency=1))[1]
    four = drained(replace(ROOMY, drain_concurrency=4))[1]
    assert sorted(d for _, d in four.downtimes) == sorted(d for _, d in one.downtimes)
    assert four.cloud_node_hours < one.cloud_node_hours
    assert one.cloud_node_hours * 3600 == 600 + sum(d for _, d in one.downtimes)  # one after another


def test_a_restart_begins_only_when_it_and_those_in_flight_fit_together():
    # 4 GiB stay free on-prem: two 2 GiB servers fit at once, a third would not, so 2 of 4 begin at 600;
    # once they are placed on-prem is full: each of the others begins alone (none in flight), as in a drain
    # of one at a time, and waits for room in the queue (never overcommitted: CheckedSimulation).
    sim, result = drained(replace(ROOMY, drain_concurrency=4), keep_gib=12)
    began = sorted(b for b, _ in result.downtimes)
    assert result.migrations == 6 and began.count(600) == 2 and len(set(began[2:])) == 4
    assert len(sim.queue) == 4 and all(s.bound_once for s in sim.queue.values())  # moved, not arrivals


# Fingerprints of the base commit's engine (one restart after another; 66406d3, before drain_concurrency):
# each run's node-seconds, moves, waits, downtimes and series, hashed. drain_concurrency 1 must be that drain.
ONE_AT_A_TIME = {
    (1, "paper", 80.0): (18.794722222222223, 23, "d1950fd300ab95c5"),
    (1, "elastic", 80.0): (13.778055555555556, 69, "89802fe6e611d1d2"),
    (2, "paper", 80.0): (17.496944444444445, 24, "12cc96072726cec3"),
    (2, "elastic", 80.0): (11.66388888888889, 81, "c73e8ca036ebda6f"),
}


def fingerprint(r) -> tuple:
    text = repr((r.cloud_node_hours, r.migrations, r.scale_ins, r.waits, r.downtimes, r.migration_waits, r.series))
    return r.cloud_node_hours, r.migrations, hashlib.sha256(text.encode()).hexdigest()[:16]


def paper_run(seed: int, policy: str, theta: float, params: ClusterParams):
    wl = make_workload("paper", seed=seed)
    spec = RunSpec(policy, "migration", theta)
    return Simulation(wl, build_strategy(spec, wl, params), params, seed=seed, mode="migration",
                      theta_out=theta).run()


@pytest.mark.parametrize("key", sorted(ONE_AT_A_TIME))
def test_one_at_a_time_is_the_paper_drain_to_the_number(key):
    seed, policy, theta = key
    assert ClusterParams().drain_concurrency == 1  # the paper's evaluation, the dominance table
    assert fingerprint(paper_run(seed, policy, theta, ClusterParams(drain_concurrency=1))) == ONE_AT_A_TIME[key]
    again = paper_run(seed, policy, theta, ClusterParams(drain_concurrency=4))
    assert fingerprint(again) == fingerprint(paper_run(seed, policy, theta, ClusterParams(drain_concurrency=4)))
    assert again.cloud_node_hours <= ONE_AT_A_TIME[key][0]  # the same drains, shorter


@pytest.mark.parametrize("value, message", [
    (0, "--drain-concurrency must be a whole number from 1 to 16"),
    (17, "--drain-concurrency must be a whole number from 1 to 16"),
    (2.5, "--drain-concurrency must be a whole number from 1 to 16"),
    (-1, "--drain-concurrency must not be negative"),
    ("4", "--drain-concurrency must be a number"),
])
def test_a_bad_drain_concurrency_is_named(value, message):
    with pytest.raises(ValueError, match=message):
        ClusterParams(drain_concurrency=value)
