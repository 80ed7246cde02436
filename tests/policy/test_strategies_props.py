"""Properties every registered strategy keeps, on random clusters and states:
no planned move overcommits a node on any resource, at most one node is
removed per cycle (and none while a drain runs), moves only go to Ready,
schedulable nodes other than the one drained, and only stopped cloud
nodes are started. A drain that still runs blocks a second one: checked on
clusters built to exercise it in test_drain_exclusive_props.py."""

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elastichub.policy import (
    STRATEGIES,
    ClusterSnapshot,
    ControllerState,
    ElasticState,
    GiB,
    NodeStatus,
    PolicyConfig,
    Resources,
    ScaleIn,
    ScaleOut,
    ScheduledClass,
    Tier,
    make_strategy,
)

from random_clusters import NOW, clusters


@st.composite
def states(draw, snap):
    if draw(st.booleans()):
        return ControllerState(last_action_at=draw(st.none() | st.floats(NOW - 2000, NOW)))
    cordoned_cloud = [n.name for n in snap.nodes if n.tier is Tier.CLOUD and n.status is NodeStatus.CORDONED]
    return ElasticState(
        last_action_at=None,
        last_scale_out_at=draw(st.none() | st.floats(NOW - 2000, NOW)),
        last_scale_in_at=draw(st.none() | st.floats(NOW - 2000, NOW)),
        draining=draw(st.sampled_from([None] + cordoned_cloud)),
        unneeded_since=draw(st.none() | st.floats(NOW - 2000, NOW)),
    )


@st.composite
def strategies(draw):
    config = PolicyConfig(
        theta_out=draw(st.floats(0, 110)),
        tcool=draw(st.sampled_from([0.0, 60.0, 580.0])),
        scale_out=draw(st.booleans()),
        migration=draw(st.booleans()),
    )
    name = draw(st.sampled_from(sorted(STRATEGIES)))
    if name == "paper":
        return make_strategy(name, config)
    options = dict(
        theta_in=draw(st.floats(0, 50)),
        unneeded_s=draw(st.sampled_from([0.0, 30.0])),
        lifetime_aware=draw(st.booleans()),
        min_saving_s=draw(st.sampled_from([0.0, 600.0])),
        thrift=draw(st.none() | st.floats(0, 1)),
        queue_patience_s=draw(st.none() | st.sampled_from([0.0, 60.0, 600.0])),
        min_fill=draw(st.none() | st.sampled_from([0.0, 0.25, 1.0])),
    )
    if name == "calendar" or draw(st.booleans()):
        options["schedule"] = tuple(
            ScheduledClass(NOW + draw(st.integers(-900, 900)), draw(st.integers(0, 50)),
                           Resources(draw(st.integers(0, 4)) / 2, draw(st.integers(1, 8)) * GiB))
            for _ in range(draw(st.integers(1, 3)))
        )
    return make_strategy(name, config, **options)


def check_action(snap, state, action):
    if action is None:
        return
    if isinstance(action, ScaleOut):
        assert action.nodes and len(set(action.nodes)) == len(action.nodes)
        for name in action.nodes:
            n = snap.node(name)
            assert n.tier is Tier.CLOUD and n.status is NodeStatus.STOPPED
        return
    assert isinstance(action, ScaleIn)  # one node, by construction of the action
    drained = snap.node(action.node)
    assert drained.tier is Tier.CLOUD and drained.status is NodeStatus.READY
    draining = getattr(state, "draining", None)
    if draining is not None:
        # a drain still running: no second node may be removed
        assert snap.node(draining).status is not NodeStatus.CORDONED
    assert sorted(m.server.name for m in action.moves) == sorted(s.name for s in drained.servers)
    used = {n.name: n.used for n in snap.nodes}
    for move in action.moves:
        dest = snap.node(move.destination)
        assert move.source == action.node and dest.name != action.node
        assert dest.status is NodeStatus.READY  # never draining, cordoned, booting, not ready or stopped
        used[dest.name] = used[dest.name] + move.server.requests
    for n in snap.nodes:
        assert used[n.name].cpu <= n.allocatable.cpu + 1e-9
        assert used[n.name].ram <= n.allocatable.ram + 1e-6


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_strategy_plans_only_safe_actions(data):
    snap = data.draw(clusters())
    state = data.draw(states(snap))
    strategy = data.draw(strategies())
    action, new_state = strategy.decide(snap, state, NOW)
    check_action(snap, state if strategy.name != "paper" else ControllerState(), action)
    assert isinstance(new_state, ControllerState)


def apply(snap: ClusterSnapshot, action) -> ClusterSnapshot:
    """The cluster one cycle later, the action started but not finished:
    started nodes are booting, the drained node is cordoned with its
    servers still on it (moves run one after another)."""
    if action is None:
        return snap
    if isinstance(action, ScaleOut):
        nodes = tuple(replace(n, status=NodeStatus.BOOTING) if n.name in action.nodes else n for n in snap.nodes)
    else:
        nodes = tuple(replace(n, status=NodeStatus.CORDONED) if n.name == action.node else n for n in snap.nodes)
    return ClusterSnapshot(nodes, snap.pending)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_at_most_one_node_removed_and_never_two_drains_at_once(data):
    snap = data.draw(clusters())
    strategy = data.draw(strategies())
    state = ControllerState()
    now = NOW
    draining = set()
    for _ in range(4):
        before = state
        action, state = strategy.decide(snap, before, now)
        # the state the decision was taken in: the one after it names the
        # node just drained, which is never cordoned yet (always true)
        check_action(snap, before, action)
        if isinstance(action, ScaleIn) and strategy.name != "paper":
            # a second drain while the first still runs would remove two nodes
            # at once (the paper relies on tcool outlasting a drain instead)
            assert not draining, f"{action.node} drained while {draining} still drains"
            draining.add(action.node)
        if isinstance(action, ScaleOut):
            assert not set(action.nodes) & {n.name for n in snap.nodes if n.status is NodeStatus.BOOTING}
        snap = apply(snap, action)
        now += strategy.config.tmon
