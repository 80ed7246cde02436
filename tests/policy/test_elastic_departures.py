"""The departures look-ahead and the thrift rules of `elastic` (issue 12):
sessions expected to end within one boot count as room coming, and at high
theta_out a new request may wait up to its patience for that room."""

import math

import pytest

from elastichub.policy import (
    ClusterSnapshot, ControllerState, ElasticStrategy, GiB, PolicyConfig, Resources, ScaleIn, ScaleOut, Server,
    make_strategy,
)
from elastichub.policy.lifetime import ending_within

from test_elastic_rules import NOW, cloud_ready, node, onprem, pool, servers_of


def test_ending_within_is_a_conditional_probability():
    for age in (0, 1800, 3600, 5400, 20_000):
        values = [ending_within(age, span, 3600, 900) for span in (0, 60, 305, 600, 3600, 1e6)]
        assert values[0] == 0.0 and values[-1] == pytest.approx(1.0)
        assert all(0.0 <= v <= 1.0 for v in values) and values == sorted(values)
    # a young session rarely ends within a boot, one past the mean often does
    assert ending_within(60, 305, 3600, 900) < 1e-3
    assert 0.2 < ending_within(3700, 305, 3600, 900) < 0.5
    # the hazard of a normal lifetime grows with age
    ages = [ending_within(a, 305, 3600, 900) for a in range(0, 10_000, 500)]
    assert ages == sorted(ages)
    assert ending_within(10**9, 305, 3600, 900) == 1.0  # far tail: no division by zero
    assert ending_within(100, 305, 3600, 0) == 0.0 and ending_within(3500, 305, 3600, 0) == 1.0


def _scale_in_case(onprem_started_at):
    # theta_out 90: the scale-in level keeps 100 - (90 - 5) = 15 % of on-prem
    # (60 GiB) at most, the recent arrivals plus a 5 % gap (20 GiB) at least.
    # On-prem holds 8 x 47 GiB, the cloud node 10 x 1 GiB of young servers
    # (asked for 60 s ago: 10 GiB of arrivals). 376 + 10 + 10 + 20 > 400.
    nodes = [node(f"op{i}", servers=servers_of(f"op{i}", 47, started_at=onprem_started_at)) for i in range(8)]
    cloud = cloud_ready("cloud0", 10)
    return ClusterSnapshot(tuple(nodes + [cloud] + pool(7, start=1)))


def test_scale_in_counts_the_sessions_about_to_end():
    s = ElasticStrategy(PolicyConfig(theta_out=90))
    old = _scale_in_case(NOW - 3700)  # past the mean lifetime: ~1/3 end within a boot
    action, _ = s.decide(old, ControllerState(), NOW)
    assert isinstance(action, ScaleIn) and action.node == "cloud0"
    # without thrift (the rules before issue 12), or with young sessions, the headroom is missing
    assert ElasticStrategy(PolicyConfig(theta_out=90), thrift=0).decide(
        old, ControllerState(), NOW)[0] is None
    assert s.decide(_scale_in_case(NOW - 600), ControllerState(), NOW)[0] is None


def test_thrift_share_follows_theta_out():
    share = {theta: ElasticStrategy(PolicyConfig(theta_out=theta)).thrift_share for theta in (60, 80, 85, 90, 95)}
    assert share == {60: 0.0, 80: 0.0, 85: pytest.approx(0.5), 90: 1.0, 95: 1.0}
    s = ElasticStrategy(PolicyConfig(theta_out=95), boot_s=290)
    assert s.patience_s == 290 and s.soon_s == 305 and s.scale_out_horizon_s == 595
    assert ElasticStrategy(PolicyConfig(theta_out=80)).scale_out_horizon_s == 0.0
    custom = ElasticStrategy(PolicyConfig(theta_out=95), thrift=0.5, queue_patience_s=60)
    assert custom.thrift_share == 0.5 and custom.patience_s == 60
    with pytest.raises(ValueError, match="thrift"):
        make_strategy("elastic", thrift=1.5)
    with pytest.raises(ValueError, match="queue_patience_s"):
        make_strategy("elastic", queue_patience_s=-1)


def _full_onprem_and_queue(queue):
    # every on-prem node full of 1 GiB sessions 4000 s old: each is likely
    # (p ~ 0.59) to end within one boot + the patience (595 s), not within
    # one boot (p ~ 0.34)
    return ClusterSnapshot(tuple(onprem(ram_each=50, started_at=NOW - 4000) + pool(8)), tuple(queue))


def _new(n, waited_s):
    return [Server(f"q{i}", Resources(0.5, GiB), None, created_at=NOW - waited_s) for i in range(n)]


def test_a_new_request_waits_its_patience_for_sessions_about_to_end():
    s = ElasticStrategy(PolicyConfig(theta_out=95))
    assert s.decide(_full_onprem_and_queue(_new(10, 60)), ControllerState(), NOW)[0] is None
    # past its patience it counts only on room that exists or boots
    action, _ = s.decide(_full_onprem_and_queue(_new(10, 400)), ControllerState(), NOW)
    assert action == ScaleOut(("cloud0",), reason=action.reason)


def test_past_its_patience_a_request_counts_on_no_departure():
    # sessions 5400 s old are likely to end within one boot, but one that
    # outlives its odds stays "likely" every cycle: a request counting on
    # them past its patience could wait without bound (measured: 842 s with
    # 100-RU cloud nodes, where the paper's policy's longest wait was 389 s)
    assert ending_within(5400, 305, 3600, 900) >= 0.5
    s = ElasticStrategy(PolicyConfig(theta_out=95))
    snap = ClusterSnapshot(tuple(onprem(ram_each=50, started_at=NOW - 5400) + pool(8)), tuple(_new(1, 300)))
    action, _ = s.decide(snap, ControllerState(), NOW)
    assert action == ScaleOut(("cloud0",), reason=action.reason)
    within = ClusterSnapshot(snap.nodes, tuple(_new(1, 200)))  # still patient: it may wait
    assert s.decide(within, ControllerState(), NOW)[0] is None


def test_a_big_request_counts_on_one_departure_not_on_many_small_ones():
    # every on-prem session (1 GiB, 4000 s old) is likely to end within the
    # horizon, 50 GiB a node; but the scheduler hands each GiB that frees to
    # whatever fits, so a queued 4 GiB request is helped only by a departure
    # of 4 GiB or more (with the room free beside it). Summed, an 8-GiB
    # request waited 703 s on a hub of 30-minute sessions (paper: 82 s at most)
    s = ElasticStrategy(PolicyConfig(theta_out=95))
    big = [Server("big", Resources(2, 4 * GiB), None, created_at=NOW - 60)]
    small_only = ClusterSnapshot(tuple(onprem(ram_each=50, started_at=NOW - 4000) + pool(8)), tuple(big))
    action, _ = s.decide(small_only, ControllerState(), NOW)
    assert action == ScaleOut(("cloud0",), reason=action.reason)
    # one 4 GiB session among them: the request may wait for it
    op0 = node("op0", servers=servers_of("op0", 46, started_at=NOW - 4000)
               + servers_of("op0", 1, ram_gib=4, cpu=2, started_at=NOW - 4000, prefix="op0-big"))
    one_big = ClusterSnapshot((op0,) + small_only.nodes[1:], tuple(big))
    assert s.decide(one_big, ControllerState(), NOW)[0] is None


def test_no_patience_at_theta_80_and_none_for_a_moved_server():
    action, _ = ElasticStrategy(PolicyConfig(theta_out=80)).decide(
        _full_onprem_and_queue(_new(10, 60)), ControllerState(), NOW)
    assert isinstance(action, ScaleOut)
    # a moved server has run before: it is no new request and never waits on purpose
    moved = Server("moved", Resources(0.5, GiB), None, started_at=NOW - 1000, created_at=NOW - 1010)
    s = ElasticStrategy(PolicyConfig(theta_out=95))
    urgent, patient, waited = s._split_queue([moved] + _new(2, 60), NOW)
    assert urgent == [moved.requests] and len(patient) == 2 and waited == 120
    action, _ = s.decide(_full_onprem_and_queue([moved]), ControllerState(), NOW)
    assert isinstance(action, ScaleOut)


def test_departures_are_computed_once_per_cycle_and_span():
    s = ElasticStrategy(PolicyConfig(theta_out=95))
    snap = _full_onprem_and_queue(_new(10, 60))
    t = s._tally(snap, Resources(), NOW)
    total, per_node = s._outflow(t, 595)
    assert s._outflow(t, 595) is t.outflow[595]
    assert total.ram == pytest.approx(400 * GiB * ending_within(4000, 595, 3600, 900))
    # per node, each likely session's request on its own
    assert set(per_node) == {f"op{i}" for i in range(8)}
    assert all(len(reqs) == 50 and all(r.ram == GiB for r in reqs) for reqs in per_node.values())
    assert s._outflow(t, 305)[1] == {}  # p ~ 0.34 < 1/2: nothing is likely to end within a boot
    assert math.isclose(s._outflow(t, 305)[0].ram, 400 * GiB * ending_within(4000, 305, 3600, 900))


def test_calendar_keeps_no_thrift_unless_asked():
    from elastichub.policy import ScheduledClass

    cls = (ScheduledClass(NOW, 10, Resources(0.5, GiB)),)
    assert make_strategy("calendar", PolicyConfig(theta_out=95), schedule=cls).thrift_share == 0.0
    assert make_strategy("calendar", PolicyConfig(theta_out=95), schedule=cls, thrift=1.0).patience_s == 290.0


def test_without_migration_a_small_remainder_waits_for_departures():
    # 10 x 1 GiB past their patience (290 s) find no room likely within a
    # boot: with migration a node is started for them; without, a node would
    # live as long as its last session, and 10 GiB fill less than a quarter
    # of it, so they wait until someone has waited 1.5 patiences (435 s)
    mig, nomig = (ElasticStrategy(PolicyConfig(theta_out=95, migration=m)) for m in (True, False))
    assert mig.fill_share == 0.0 and nomig.fill_share == 0.25
    assert ElasticStrategy(PolicyConfig(theta_out=80, migration=False)).fill_share == 0.0
    small = _full_onprem_and_queue(_new(10, 300))
    assert isinstance(mig.decide(small, ControllerState(), NOW)[0], ScaleOut)
    assert nomig.decide(small, ControllerState(), NOW)[0] is None
    # a quarter of a node or more, or a request that has waited 1.5 patiences: a node at once
    for queue in (_new(13, 300), _new(10, 440)):
        action, _ = nomig.decide(_full_onprem_and_queue(queue), ControllerState(), NOW)
        assert action == ScaleOut(("cloud0",), reason=action.reason)
    # the option overrides the default either way
    assert ElasticStrategy(PolicyConfig(theta_out=95, migration=False), min_fill=0).decide(
        small, ControllerState(), NOW)[0] is not None
    with pytest.raises(ValueError, match="min_fill"):
        make_strategy("elastic", min_fill=2)


def test_without_migration_the_queue_counts_on_departures_within_the_patience_it_has_left():
    # on-prem sessions 4000 s old are likely (p ~ 0.59) to end within one
    # boot + tmon + the whole patience (595 s), not within 345 s (p ~ 0.38).
    # 20 x 1 GiB (over min_fill's quarter of a node) that have waited 250 s
    # of their 290 s of patience can wait 40 s more: no departure after that
    # comes sooner than a node started then would be Ready
    assert ending_within(4000, 345, 3600, 900) < 0.5 <= ending_within(4000, 595, 3600, 900)
    mig, nomig = (ElasticStrategy(PolicyConfig(theta_out=95, migration=m)) for m in (True, False))
    late = _full_onprem_and_queue(_new(20, 250))
    action, _ = nomig.decide(late, ControllerState(), NOW)
    assert isinstance(action, ScaleOut) and action.nodes == ("cloud0",)
    # just asked: nearly the whole patience left, so it still waits
    assert nomig.decide(_full_onprem_and_queue(_new(20, 10)), ControllerState(), NOW)[0] is None
    # with migration the queue counts on the whole patience (a node started
    # for too little is drained as departures make room)
    assert mig.decide(late, ControllerState(), NOW)[0] is None
