"""Property: nobody waits while there is room, on clusters of several nodes.

After every step of the clock, no queued server fits on any Ready node (CPU
and RAM). With one node a scheduler that looks at the wrong node still looks
at the right one, so the clusters here have two to four on-prem nodes of
different sizes (and cloud nodes in the modes that use them).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elastichub.policy import NodeStatus
from elastichub.simulator import ClusterParams
from elastichub.simulator.runner import RunSpec, build_strategy

from sim_helpers import CheckedSimulation, request, workload

SIZES = (1, 2, 4)  # GiB; CPU is half of it


class RoomCheckedSimulation(CheckedSimulation):
    def _record(self, t):
        ready = [n for n in self.nodes if n.status is NodeStatus.READY]
        for s in self.queue.values():
            for n in ready:
                room = (n.alloc_cpu - n.used_cpu, n.alloc_ram - n.used_ram)
                assert not (s.cpu <= room[0] and s.ram <= room[1]), (t, s.name, "waits while", n.name, "has room")
        super()._record(t)


traces = st.lists(
    st.tuples(st.integers(0, 900), st.integers(60, 1800), st.sampled_from(SIZES)), min_size=5, max_size=60)


@st.composite
def clusters(draw):
    return ClusterParams(
        onprem_nodes=draw(st.integers(2, 4)), onprem_node_ru=draw(st.sampled_from([4, 8, 16])),
        cloud_nodes=draw(st.integers(0, 3)), cloud_node_ru=draw(st.sampled_from([4, 8])),
        cloud_boot_s=draw(st.integers(0, 300)), server_start_s=draw(st.integers(0, 10)),
        tmon_s=draw(st.sampled_from([5, 15])), tcool_s=draw(st.sampled_from([0, 60, 300])),
        drain_concurrency=draw(st.sampled_from([1, 4])))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces, clusters(), st.sampled_from(["onprem-only", "no-migration", "migration"]),
       st.sampled_from([0, 50, 80]))
def test_nobody_waits_while_a_ready_node_has_room(rows, params, mode, theta):
    wl = workload([request(a, d, g) for a, d, g in rows], horizon=4000)
    spec = RunSpec("paper", mode, None if mode == "onprem-only" else theta)
    sim = RoomCheckedSimulation(wl, build_strategy(spec, wl, params), params, seed=1, mode=mode,
                                theta_out=spec.theta_out)
    result = sim.run()
    assert result.servers == len(rows)
