"""The engine on hand-made traces: waits, FIFO without head-of-line
blocking, boot delay, migration, conservation, determinism."""

from __future__ import annotations

import dataclasses

import pytest

from elastichub.policy import ClusterSnapshot, ControllerState, PolicyConfig, ScaleIn, ScaleOut, make_strategy
from elastichub.simulator import ClusterParams, SimulationError, make_workload, simulate, summary

from sim_helpers import request, run_checked, workload

# One on-prem node of 8 RU (4 vCPU, 8 GiB), no cloud unless a test adds it.
TINY = ClusterParams(onprem_nodes=1, onprem_node_ru=8, cloud_nodes=0, cloud_node_ru=8)


def waits_by_arrival(result):
    return {created: wait for created, wait, _ in result.waits}


def test_waits_fifo_without_head_of_line_blocking():
    wl = workload([
        request(0, 100, 6),    # A: bound at 0, runs 6..106
        request(10, 10, 4),    # B: no room until A leaves at 106
        request(20, 50, 2),    # C: fits beside A at once: B does not block it
        request(30, 10, 8),    # D: needs the whole node: after C (76) and B (106+6+10=122)
    ], horizon=1000)
    sim, result = run_checked(wl, TINY, mode="onprem-only")
    assert waits_by_arrival(result) == {0: 0, 10: 96, 20: 0, 30: 92}
    s = summary(result)
    assert s["wait_max_s"] == 96 and s["waited"] == 2
    assert s["wait_mean_s"] == pytest.approx((96 + 92) / 4)
    assert s["servers"] == 4 and s["still_queued"] == 0 and s["cloud_node_hours"] == 0


def test_older_request_gets_freed_room_first():
    # At 106 the room A leaves fits B or D alone; B asked first, so B gets it.
    wl = workload([request(0, 100, 8), request(10, 50, 8), request(20, 50, 8)], horizon=1000)
    _, result = run_checked(wl, TINY, mode="onprem-only")
    assert waits_by_arrival(result) == {0: 0, 10: 96, 20: 96 + 56 - 10}


def test_request_still_waiting_at_the_end_is_counted_censored():
    wl = workload([request(0, 10_000, 8), request(100, 10, 8)], horizon=1000)
    _, result = run_checked(wl, TINY, mode="onprem-only")
    assert result.still_queued == 1
    assert waits_by_arrival(result)[100] == 900


CLOUD = dataclasses.replace(TINY, cloud_nodes=1, tcool_s=580)


def test_node_counts_may_be_whole_floats_and_stay_counts():
    params = ClusterParams(onprem_nodes=1.0, onprem_node_ru=8, cloud_nodes=1.0, cloud_node_ru=8)
    assert type(params.onprem_nodes) is int and type(params.cloud_nodes) is int
    _, result = run_checked(workload([request(0, 5000, 6), request(10, 5000, 4)], horizon=700), params, theta=50)
    assert result.scale_outs == 1
    with pytest.raises(ValueError, match="--cloud-nodes must be a whole number"):
        ClusterParams(cloud_nodes=1.5)


def test_scale_out_waits_for_the_cloud_boot():
    # 6 of 8 GiB used at t=0: above theta 50, so a cloud VM starts at t=0 and
    # is Ready at 290; the request at 10 waits there.
    wl = workload([request(0, 5000, 6), request(10, 5000, 4)], horizon=700)
    _, result = run_checked(wl, CLOUD, mode="migration", theta=50)
    assert waits_by_arrival(result) == {0: 0, 10: 280}
    assert result.scale_outs == 1


def drain_workload(horizon):
    # A holds on-prem until 1006; B lands on the cloud node at 290 and runs
    # until 296 + 3000. Once A left, B fits on-prem.
    return workload([request(0, 1000, 6), request(10, 3000, 4)], horizon)


def test_migration_moves_the_server_and_stops_the_vm_early():
    sim, result = run_checked(drain_workload(3200), CLOUD, mode="migration", theta=50)
    assert result.migrations == 1 and result.scale_ins == 1
    # First cooled tick after 1006 (ticks every 15 s, cooled since 580): 1020.
    # The VM stops when B's downtime (11..22 s) ends.
    seconds = result.cloud_node_hours * 3600
    assert 1020 + 11 <= seconds <= 1020 + 22
    assert result.migration_waits == [0]  # on-prem had room for it at once
    b = sim.servers["s2"]
    assert b.node.name.startswith("onprem") and b.started_at == 296  # session start kept


def test_without_migration_the_vm_runs_until_its_server_ends():
    _, result = run_checked(drain_workload(3600), CLOUD, mode="no-migration", theta=50)
    assert result.migrations == 0 and result.scale_ins == 1
    # B ends at 3296; the node is removed at the first cooled tick after: 3300.
    assert result.cloud_node_hours * 3600 == 3300


def test_moved_server_that_finds_no_room_waits_in_the_queue():
    # Between the plan (at the tick) and the restart nothing can intervene in
    # one second, so force it: the strategy plans a move onto on-prem while
    # on-prem is full; the moved server must queue, not overcommit.
    class PlanAnyway:
        name = "plan-anyway"

        def decide(self, snapshot: ClusterSnapshot, state, now):
            cloud = snapshot.node("cloud-1")
            if now >= 600 and cloud.active and cloud.servers:
                from elastichub.policy import Migration
                moves = tuple(Migration(s, "cloud-1", "onprem-1") for s in cloud.servers)
                return ScaleIn("cloud-1", moves), state
            if now == 0:
                return ScaleOut(("cloud-1",)), state
            return None, state

    wl = workload([request(0, 5000, 8), request(10, 5000, 4)], horizon=2000)
    from sim_helpers import CheckedSimulation
    sim = CheckedSimulation(wl, PlanAnyway(), CLOUD, seed=1)
    result = sim.run()
    assert result.migrations == 1
    assert "s2" in sim.queue  # waiting for room, not lost, not overcommitted
    assert 600 + 11 <= result.cloud_node_hours * 3600 <= 600 + 22  # stopped after its downtime
    assert result.scale_ins == 1


@pytest.mark.parametrize("action, message", [
    (ScaleOut(("onprem-1",)), "asked to start node onprem-1"),
    (ScaleOut(("nowhere",)), "unknown node 'nowhere'"),
    (ScaleIn("cloud-1", ()), "asked to remove node cloud-1"),
])
def test_impossible_actions_are_policy_bugs(action, message):
    class Bad:
        name = "bad"

        def decide(self, snapshot, state, now):
            return action, state

    with pytest.raises(SimulationError, match=message):
        simulate(workload([request(0, 10, 1)], 100), Bad(), CLOUD)


def test_conservation_on_a_busy_paper_day():
    # The teaching day's afternoon (day 2, 12:00-19:00) of the paper workload
    # on half the cluster, so every mechanism fires: long queues, the whole
    # cloud pool booted, then drains with migrations as demand falls.
    wl = make_workload("paper", days=2, seed=3)
    start = 86_400 + 12 * 3600
    afternoon = workload([dataclasses.replace(r, arrival_s=r.arrival_s - start) for r in wl.requests
                          if start <= r.arrival_s < start + 7 * 3600], horizon=7 * 3600)
    params = ClusterParams(onprem_nodes=4, cloud_nodes=4, tcool_s=120)
    for mode in ("onprem-only", "no-migration", "migration"):
        sim, result = run_checked(afternoon, params, mode=mode, theta=80)
        assert sim.steps > 1000
        placed = sum(1 for s in sim.servers.values() if s.bound_once)
        assert placed + result.still_queued == result.servers == len(afternoon.requests)
        assert len(result.waits) == result.servers
        assert max(w for _, w, _ in result.waits) > 0  # it really was busy
        if mode == "migration":
            assert result.migrations > 0 and result.scale_ins > 0
        if mode != "onprem-only":
            assert result.scale_outs >= params.cloud_nodes


def test_same_seed_same_run_other_seed_other_run():
    def run(seed):
        wl = make_workload("paper", days=0.75, seed=seed)
        strategy = make_strategy("paper", PolicyConfig(theta_out=60))
        return simulate(wl, strategy, ClusterParams(), seed=seed, mode="migration", theta_out=60)

    a, b, c = run(5), run(5), run(6)
    strip = lambda r: {k: v for k, v in summary(r).items() if k != "wall_s"}
    assert strip(a) == strip(b) and a.series == b.series and a.waits == b.waits
    assert a.waits != c.waits


def test_decisions_every_tmon():
    wl = workload([request(0, 10, 1)], horizon=3600)
    result = simulate(wl, make_strategy("paper", PolicyConfig()), dataclasses.replace(TINY, tmon_s=30))
    assert result.decisions == 3600 // 30


def test_the_state_a_strategy_returns_is_passed_to_its_next_call():
    class Recording:
        name = "recording"

        def __init__(self):
            self.calls = []

        def decide(self, snapshot, state, now):
            self.calls.append((now, state.last_action_at))
            return None, ControllerState(last_action_at=now)

    strategy = Recording()
    simulate(workload([request(0, 10, 1)], horizon=100), strategy, dataclasses.replace(TINY, tmon_s=30))
    assert strategy.calls == [(0, None), (30, 0), (60, 30), (90, 60)]


def test_nodes_sized_in_cores_and_gib_where_cpu_and_ram_are_not_one_to_two():
    from elastichub.policy import GiB, Resources
    from elastichub.simulator.engine import make_nodes

    params = ClusterParams(onprem_nodes=2, onprem_node_cpu=32, onprem_node_ram_gib=128, cloud_nodes=1,
                           cloud_node_cpu=8, cloud_node_ram_gib=32)
    sizes = [(n.name, n.allocatable) for n in make_nodes(params)]
    assert sizes == [("onprem-1", Resources(32, 128 * GiB)), ("onprem-2", Resources(32, 128 * GiB)),
                     ("cloud-1", Resources(8, 32 * GiB))]
    assert params.node_shapes == [Resources(32, 128 * GiB), Resources(8, 32 * GiB)]
    assert ClusterParams(onprem_nodes=0, cloud_nodes=1, cloud_node_cpu=8,
                         cloud_node_ram_gib=64).node_shapes == [Resources(8, 64 * GiB)]
