"""Properties of the scale-in plan (eq. 3) and the paper controller, on random clusters."""

from hypothesis import given, settings
from hypothesis import strategies as st

from elastichub.policy import (
    ControllerState,
    NodeStatus,
    PolicyConfig,
    PaperStrategy,
    Resources,
    ScaleIn,
    ScaleOut,
    Tier,
    candidate_order,
    plan_migration,
)

from random_clusters import clusters


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_plan_never_overcommits_and_respects_order_and_targets(snap):
    for candidate in candidate_order(snap.nodes):
        plan = plan_migration(snap, candidate)
        if plan is None:
            continue
        # every server of the candidate is moved exactly once, biggest RAM first
        assert sorted(m.server.name for m in plan.moves) == sorted(s.name for s in candidate.servers)
        rams = [m.server.requests.ram for m in plan.moves]
        assert rams == sorted(rams, reverse=True)
        used = {n.name: n.used for n in snap.nodes}
        for move in plan.moves:
            dest = snap.node(move.destination)
            assert dest.name != candidate.name
            assert dest.status is NodeStatus.READY  # never cordoned, booting, not-ready or stopped
            # the chosen destination is the preferred one among those that fit now
            fitting = [
                n for n in snap.nodes
                if n.active and n.name != candidate.name
                and move.server.requests.fits_in(n.allocatable - used[n.name])
            ]
            assert dest in fitting
            best_priority = max(n.priority for n in fitting)
            assert dest.priority == best_priority
            share = lambda n: used[n.name].ram / n.allocatable.ram
            assert share(dest) == max(share(n) for n in fitting if n.priority == best_priority)
            used[dest.name] = used[dest.name] + move.server.requests
        for n in snap.nodes:
            assert used[n.name].cpu <= n.allocatable.cpu + 1e-9
            assert used[n.name].ram <= n.allocatable.ram


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_a_plan_exists_whenever_one_node_could_take_everything(snap):
    """Greedy placement never gives up while a single destination could absorb
    the whole candidate: that node keeps room for whatever is left."""
    for candidate in candidate_order(snap.nodes):
        demand = Resources.total(s.requests for s in candidate.servers)
        if any(
            n.active and n.name != candidate.name and demand.fits_in(n.free) for n in snap.nodes
        ):
            assert plan_migration(snap, candidate) is not None


@settings(max_examples=300, deadline=None)
@given(clusters(), st.floats(0, 100), st.booleans())
def test_controller_actions_are_well_formed(snap, theta, migration):
    strategy = PaperStrategy(PolicyConfig(theta_out=theta, migration=migration))
    action, state = strategy.decide(snap, ControllerState(), 1000.0)
    if action is None:
        assert state.last_action_at is None
        return
    assert state.last_action_at == 1000.0
    if isinstance(action, ScaleOut):
        assert len(action.nodes) == 1
        assert snap.node(action.nodes[0]).status is NodeStatus.STOPPED
        assert snap.node(action.nodes[0]).tier is Tier.CLOUD
    else:
        assert isinstance(action, ScaleIn)
        drained = snap.node(action.node)
        assert drained.tier is Tier.CLOUD and drained.active
        assert all(m.destination != action.node for m in action.moves)
        if not migration:
            assert action.moves == ()
    # the same snapshot inside the cooldown never acts again
    assert strategy.decide(snap, state, 1000.0 + strategy.config.tcool - 1) == (None, state)
