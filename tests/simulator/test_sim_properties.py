"""Property tests: on random small traces and clusters, in every mode, the
engine never loses a server or overcommits a node (checked every step by
`CheckedSimulation`), waits are FIFO among equal requests, and nobody waits
while there is room."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elastichub.simulator import ClusterParams

from sim_helpers import request, run_checked, workload

SIZES = (1, 2, 4)  # GiB; CPU is half of it (1 RU = 0.5 vCPU + 1 GiB)

traces = st.lists(
    # Dense enough to queue, burst to the cloud and drain it again.
    st.tuples(st.integers(0, 900), st.integers(60, 1800), st.sampled_from(SIZES)),
    min_size=5, max_size=60,
)
clusters = st.builds(
    ClusterParams,
    onprem_nodes=st.integers(1, 3), onprem_node_ru=st.sampled_from([4, 8]),
    cloud_nodes=st.integers(0, 3), cloud_node_ru=st.sampled_from([4, 8]),
    cloud_boot_s=st.integers(0, 300), server_start_s=st.integers(0, 10),
    tmon_s=st.sampled_from([5, 15]), tcool_s=st.sampled_from([0, 60, 300]),
    drain_concurrency=st.sampled_from([1, 2, 4]),
)
modes = st.sampled_from(["onprem-only", "no-migration", "migration"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces, clusters, modes, st.sampled_from([0, 50, 80, 95]), st.sampled_from(["paper", "elastic"]))
def test_random_traces_keep_every_invariant(rows, params, mode, theta, policy):
    wl = workload([request(a, d, g) for a, d, g in rows], horizon=4000)
    sim, result = run_checked(wl, params, mode=mode, theta=theta, policy=policy)  # checks every step

    assert result.servers == len(rows)
    assert len(result.waits) == len(rows)
    placed = sum(1 for s in sim.servers.values() if s.bound_once)
    assert placed + result.still_queued == len(rows)
    assert all(w >= 0 for _, w, _ in result.waits)
    assert result.scale_ins <= result.scale_outs
    if mode == "onprem-only":
        assert result.scale_outs == 0 and result.cloud_node_hours == 0
    if mode != "migration":
        assert result.migrations == 0

    # FIFO among equal requests: one asked earlier is never bound later.
    bound = {}
    for s in sim.servers.values():
        if s.bound_once:
            bound[s.name] = s.started_at - sim.start_s
    by_size: dict[float, list] = {}
    for s in sorted(sim.servers.values(), key=lambda s: (s.created_at, int(s.name[1:]))):
        by_size.setdefault(s.ram, []).append(bound.get(s.name, float("inf")))
    for times in by_size.values():
        assert times == sorted(times)


@settings(max_examples=30, deadline=None)
@given(traces.filter(lambda rows: sum(g for _, _, g in rows) <= 40 * 4))
def test_nobody_waits_when_on_prem_holds_everyone(rows):
    # Every request of the trace fits at once (at most 160 GiB in all), so
    # nobody may wait. Several nodes: tests/simulator/test_sim_room_props.py.
    big = ClusterParams(onprem_nodes=1, onprem_node_ru=40 * 4, cloud_nodes=0)
    wl = workload([request(a, d, g) for a, d, g in rows], horizon=4000)
    _, result = run_checked(wl, big, mode="onprem-only")
    assert all(w == 0 for _, w, _ in result.waits)
