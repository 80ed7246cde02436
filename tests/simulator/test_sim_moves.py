"""A moved server is the same server: never an arrival to the policy, and its
delay is migration downtime, reported apart from the waits of new requests."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elastichub.policy import (
    ClusterSnapshot, GiB, Node, NodeStatus, PolicyConfig, Resources, Server, Tier,
)
from elastichub.policy.elastic import ElasticStrategy
from elastichub.simulator import ClusterParams, summary
from elastichub.simulator.engine import Simulation
from elastichub.simulator.runner import RunSpec, build_strategy

from sim_helpers import DrainCloudAt600, request, workload

CLOUD = ClusterParams(onprem_nodes=1, onprem_node_ru=8, cloud_nodes=1, cloud_node_ru=8)


class Recorder:
    """Wraps a strategy and keeps every snapshot it was shown."""

    def __init__(self, inner):
        self.inner, self.name, self.seen = inner, inner.name, []

    def decide(self, snapshot, state, now):
        self.seen.append((now, snapshot))
        return self.inner.decide(snapshot, state, now)


LIVE = replace(CLOUD, move_method="live")


def run_recorded(wl, params, policy="paper", theta=50.0):
    spec = RunSpec(policy, "migration", theta)
    strategy = Recorder(build_strategy(spec, wl, params))
    sim = Simulation(wl, strategy, params, mode="migration", theta_out=theta)
    return sim, sim.run(), strategy.seen


def moved_views(seen):
    """(now, server view) of every server in a snapshot that had run before."""
    for now, snap in seen:
        for s in snap.pending:
            if s.started_at is not None:
                yield now, s
        for node in snap.nodes:
            for s in node.servers:
                yield now, s


def check_moves(sim, result, seen, arrivals):
    assert len(result.waits) == len(arrivals)  # one wait per request, none per move
    assert sorted(c for c, _, _ in result.waits) == sorted(arrivals)
    if sim.live:  # a live move whose user left before it switched has no downtime
        assert len(result.downtimes) <= len(result.migration_waits) <= result.migrations
        assert all(d == sim.p.live_pause_s for _, d in result.downtimes)
    else:
        assert len(result.downtimes) == result.migrations == len(result.migration_waits)
    for name, s in sim.servers.items():
        assert s.view.created_at == s.created_at, name  # never re-stamped by a move
    for now, view in moved_views(seen):
        name = view.name.removesuffix("~move")  # a live move's destination stands for its server
        assert view.created_at == sim.servers[name].created_at, (now, view.name)


def test_a_drained_server_keeps_its_request_time_and_reports_a_downtime():
    # A holds on-prem until 1006; B runs on the cloud node from 290 and moves
    # back on-prem once A is gone (paper, theta 50).
    wl = workload([request(0, 1000, 6), request(10, 3000, 4)], 3200)
    sim, result, seen = run_recorded(wl, CLOUD)
    assert result.migrations == 1
    check_moves(sim, result, seen, [0, 10])
    ((moved_at, downtime),) = result.downtimes
    assert moved_at >= 1006 and 11 <= downtime <= 22  # restart only: on-prem had room
    s = summary(result)
    assert s["migration_downtime_max_s"] == downtime and s["wait_max_s"] == 280  # B's boot wait, once


def test_a_moved_server_waiting_for_room_is_shown_with_its_own_request_time():
    # Force a move onto a full on-prem node: the moved server (asked for at
    # 10) waits in the queue; every snapshot must show it as that request,
    # and an arrival at 900 as the only new one.
    wl = workload([request(0, 1500, 8), request(10, 5000, 4), request(900, 100, 8)], horizon=2000)
    strategy = DrainCloudAt600()
    sim = Simulation(wl, strategy, CLOUD, seed=1)
    result = sim.run()
    pending = [(now, s) for now, snap in strategy.seen for s in snap.pending]
    moved = [s for now, s in pending if s.name == "s2" and now > 600]
    assert moved and all(s.created_at == 10 and s.started_at == 296 for s in moved)
    assert {s.created_at for now, s in pending if now > 600 and s.name != "s2"} == {900}
    ((moved_at, downtime),) = result.downtimes
    assert moved_at == 600 and downtime >= 1506 - 600 + 11  # waited for A to leave, then restarted
    assert len(result.waits) == 3 and sorted(c for c, _, _ in result.waits) == [0, 10, 900]
    s = summary(result)
    assert s["migration_downtime_max_s"] == downtime
    assert 11 <= downtime - s["migration_wait_max_s"] <= 22  # downtime = wait for room + the restart


def test_a_live_move_keeps_the_server_at_the_source_until_the_destination_has_started():
    # As above, moved live: from the move (A gone at 1006) the destination
    # holds its room on-prem for 20 s while B runs on at the cloud node;
    # then B is on-prem, its user saw 0.5 s, and the VM stops at the switch.
    wl = workload([request(0, 1000, 6), request(10, 3000, 4)], 3200)
    sim, result, seen = run_recorded(wl, replace(LIVE, live_prepare_s=20))
    check_moves(sim, result, seen, [0, 10])
    ((moved_at, downtime),) = result.downtimes
    assert downtime == 0.5 and result.migration_waits == [0]
    during = [(now, snap) for now, snap in seen if moved_at < now < moved_at + 20]
    assert during, "no decision fell inside the 20 s the destination starts"
    for now, snap in during:
        assert [s.name for s in snap.node("cloud-1").servers] == ["s2"]
        (mover,) = snap.node("onprem-1").servers
        assert mover.name == "s2~move" and mover.created_at == 10 and mover.started_at is not None
    restart = run_recorded(wl, CLOUD)[1]
    moved_r, down_r = restart.downtimes[0]
    assert moved_r == moved_at  # same decision; only how long the VM stays up differs
    assert result.cloud_node_hours * 3600 == pytest.approx(restart.cloud_node_hours * 3600 + 20 - down_r)


def test_a_live_move_is_called_off_when_its_session_ends_first():
    # B's destination waits for room on-prem (A holds it until 1506), and B
    # ends at 996 before any came: nothing switches, the VM stops then.
    wl = workload([request(0, 1500, 8), request(10, 700, 4)], horizon=2000)
    result = Simulation(wl, DrainCloudAt600(), LIVE, seed=1).run()
    assert result.migrations == 1 and result.downtimes == [] and result.migration_waits == []
    assert result.cloud_node_hours * 3600 == 996  # booted at 0, stopped when B (started 296) ended
    assert summary(result)["migration_downtime_max_s"] == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 900), st.integers(60, 1800), st.sampled_from((1, 2, 4))),
                min_size=5, max_size=50),
       st.sampled_from(["paper", "elastic"]), st.sampled_from([0.0, 50.0, 80.0, 95.0]),
       st.sampled_from(["restart", "live"]), st.sampled_from([1, 3]))
def test_a_moved_server_is_never_counted_as_an_arrival(rows, policy, theta, method, concurrency):
    params = ClusterParams(onprem_nodes=1, onprem_node_ru=8, cloud_nodes=2, cloud_node_ru=8,
                           cloud_boot_s=60, tcool_s=60, move_method=method, drain_concurrency=concurrency)
    wl = workload([request(a, d, g) for a, d, g in rows], horizon=4000)
    sim, result, seen = run_recorded(wl, params, policy, theta)
    check_moves(sim, result, seen, [a for a, _, _ in rows])


def test_elastic_arrival_estimate_leaves_moved_servers_out():
    now = 10_000.0
    strategy = ElasticStrategy(PolicyConfig(theta_out=80))
    alloc = Resources(4, 8 * GiB)
    fresh = Server("new", Resources(1, 2 * GiB), None, None, now - 30)
    moved = Server("moved", Resources(2, 4 * GiB), None, now - 2000, now - 2010)  # re-queued just now
    snap = ClusterSnapshot((Node("a", Tier.ONPREM, alloc, status=NodeStatus.READY),), (fresh, moved))
    assert strategy._inflow(snap, now) == Resources(1, 2 * GiB)
