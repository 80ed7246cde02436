"""The published policy, rule by rule (shared/PAPER.md, "EHO")."""

import math

import pytest

from elastichub.policy import (
    ClusterSnapshot,
    ControllerState,
    GiB,
    Node,
    NodeStatus,
    PolicyConfig,
    PaperStrategy,
    Resources,
    ScaleIn,
    ScaleOut,
    Server,
    Tier,
    candidate_order,
    make_strategy,
    occupancy,
    plan_migration,
    scale_out_needed,
)

ALLOC = Resources(25, 50 * GiB)  # 50 RU


def srv(name, ram_gib, cpu=None, node=None):
    return Server(name, Resources(cpu if cpu is not None else ram_gib / 2, ram_gib * GiB), node)


def node(name, tier=Tier.ONPREM, servers=(), status=NodeStatus.READY, extra_used=Resources()):
    servers = tuple(Server(s.name, s.requests, name) for s in servers)
    used = Resources.total(s.requests for s in servers) + extra_used
    return Node(name, tier, ALLOC, used, servers, status)


def test_occupancy_is_equation_1_over_the_node_set():
    a = node("a", servers=[srv("u1", 10)])
    b = node("b", servers=[srv("u2", 30), srv("u3", 10)])
    assert occupancy([a, b], "ram") == pytest.approx(50 / 100 * 100)
    assert occupancy([a], "ram") == pytest.approx(20.0)
    assert occupancy([a, b], "cpu") == pytest.approx(25 / 50 * 100)


def test_occupancy_of_nothing_is_nothing_and_an_empty_cluster_grows_only_for_someone_waiting():
    assert occupancy([], "ram") == 0.0
    pool = (node("c1", Tier.CLOUD, status=NodeStatus.STOPPED),)
    assert scale_out_needed(ClusterSnapshot(pool), 80) is False
    assert scale_out_needed(ClusterSnapshot(pool, pending=(srv("u1", 4),)), 80) is True
    assert scale_out_needed(ClusterSnapshot(pool, pending=(srv("u1", 4),)), 101) is False  # above 100: never


def test_occupancy_rejects_unknown_resource():
    with pytest.raises(ValueError, match="gpu"):
        occupancy([node("a")], "gpu")


def test_scale_out_counts_only_active_nodes():
    busy = node("a", servers=[srv("u1", 45)])
    cordoned_empty = node("b", status=NodeStatus.CORDONED)
    booting = node("c", Tier.CLOUD, status=NodeStatus.BOOTING)
    snap = ClusterSnapshot((busy, cordoned_empty, booting))
    # 45/50 = 90 % over N_total = {a}; cordoned and booting nodes are not in it.
    assert scale_out_needed(snap, 80)
    assert not scale_out_needed(snap, 90)  # strictly greater than theta_out


def test_candidate_is_fewest_servers_then_lowest_ram():
    c1 = node("c1", Tier.CLOUD, servers=[srv("a", 1), srv("b", 1)])
    c2 = node("c2", Tier.CLOUD, servers=[srv("c", 20)])
    c3 = node("c3", Tier.CLOUD, servers=[srv("d", 4)])
    onprem = node("op", servers=[])
    cordoned = node("c4", Tier.CLOUD, status=NodeStatus.CORDONED)
    order = candidate_order([c1, c2, c3, onprem, cordoned])
    assert [n.name for n in order] == ["c3", "c2", "c1"]


def test_plan_moves_biggest_first_onprem_first_most_used_first():
    cand = node("cloud", Tier.CLOUD, servers=[srv("small", 2), srv("big", 8), srv("mid", 4)])
    op_full = node("op-full", servers=[srv("x", 45)])  # 5 GiB free
    op_half = node("op-half", servers=[srv("y", 25)])  # 25 GiB free
    op_empty = node("op-empty")
    other_cloud = node("cloud2", Tier.CLOUD, servers=[srv("z", 40)])
    snap = ClusterSnapshot((cand, op_full, op_half, op_empty, other_cloud))
    plan = plan_migration(snap, cand)
    assert plan is not None
    assert [m.server.name for m in plan.moves] == ["big", "mid", "small"]
    # big (8) does not fit op-full (5 free): goes to the most used on-prem node that fits.
    # mid (4) fits op-full (most used on-prem). small (2) -> op-full is now 49/50 used: no,
    # 45+4=49, 1 GiB free, so small goes to op-half (33/50), the most used that fits.
    assert [m.destination for m in plan.moves] == ["op-half", "op-full", "op-half"]
    assert all(m.source == "cloud" for m in plan.moves)


def test_plan_checks_every_resource():
    cand = node("cloud", Tier.CLOUD, servers=[srv("cpu-heavy", 2, cpu=20)])
    op = node("op", extra_used=Resources(10, 0))  # 15 cores free, lots of RAM
    snap = ClusterSnapshot((cand, op))
    assert plan_migration(snap, cand) is None


def test_plan_is_none_when_any_server_has_no_room():
    cand = node("cloud", Tier.CLOUD, servers=[srv("a", 30), srv("b", 30)])
    op1 = node("op1", servers=[srv("x", 15)])  # 35 free
    op2 = node("op2", servers=[srv("y", 25)])  # 25 free: b does not fit after a takes op1
    snap = ClusterSnapshot((cand, op1, op2))
    assert plan_migration(snap, cand) is None


def test_plan_never_targets_cordoned_booting_or_not_ready_nodes():
    cand = node("cloud", Tier.CLOUD, servers=[srv("a", 4)])
    others = [
        node("cordoned", status=NodeStatus.CORDONED),
        node("booting", Tier.CLOUD, status=NodeStatus.BOOTING),
        node("notready", status=NodeStatus.NOT_READY),
        node("stopped", Tier.CLOUD, status=NodeStatus.STOPPED),
    ]
    snap = ClusterSnapshot((cand, *others))
    assert plan_migration(snap, cand) is None


def cluster(onprem_used_gib, cloud_servers=(), stopped=("c2",)):
    nodes = [node(f"op{i}", servers=[srv(f"u{i}", g)]) for i, g in enumerate(onprem_used_gib)]
    if cloud_servers is not None:
        nodes.append(node("c1", Tier.CLOUD, servers=cloud_servers))
    nodes += [node(n, Tier.CLOUD, status=NodeStatus.STOPPED) for n in stopped]
    return ClusterSnapshot(tuple(nodes))


def test_scale_out_starts_one_stopped_node_and_starts_the_cooldown():
    snap = cluster([48, 48], cloud_servers=None, stopped=("c3", "c2"))
    action, state = PaperStrategy(PolicyConfig(theta_out=80)).decide(snap, ControllerState(), 100.0)
    assert action == ScaleOut(("c2",), action.reason)
    assert state.last_action_at == 100.0


def test_nothing_happens_inside_the_cooldown():
    strategy = PaperStrategy(PolicyConfig(theta_out=80, tcool=580))
    snap = cluster([48, 48], cloud_servers=None)
    state = ControllerState(last_action_at=1000.0)
    assert strategy.decide(snap, state, 1579.0) == (None, state)
    action, _ = strategy.decide(snap, state, 1580.0)
    assert isinstance(action, ScaleOut)


def test_scale_out_is_evaluated_before_scale_in():
    # c1 is empty and removable, but RAM is above theta_out: scale out wins.
    snap = cluster([48, 48], cloud_servers=())
    action, _ = PaperStrategy(PolicyConfig(theta_out=60)).decide(snap, ControllerState(), 0.0)
    assert isinstance(action, ScaleOut)


def test_full_cluster_with_empty_pool_does_nothing():
    snap = cluster([48, 48], cloud_servers=(), stopped=())
    action, state = PaperStrategy(PolicyConfig(theta_out=60)).decide(snap, ControllerState(), 0.0)
    assert action is None and state.last_action_at is None


def test_scale_in_migrates_when_servers_fit():
    snap = cluster([10, 10], cloud_servers=[srv("a", 4), srv("b", 8)])
    action, state = PaperStrategy(PolicyConfig(theta_out=80)).decide(snap, ControllerState(), 5.0)
    assert isinstance(action, ScaleIn) and action.node == "c1"
    assert [m.server.name for m in action.moves] == ["b", "a"]
    assert state.last_action_at == 5.0


def test_no_migration_mode_removes_only_empty_nodes():
    strategy = PaperStrategy(PolicyConfig(theta_out=80, migration=False))
    busy = cluster([10, 10], cloud_servers=[srv("a", 4)])
    assert strategy.decide(busy, ControllerState(), 0.0)[0] is None
    empty = cluster([10, 10], cloud_servers=())
    action, _ = strategy.decide(empty, ControllerState(), 0.0)
    assert action == ScaleIn("c1", (), action.reason)


def test_onprem_only_mode_never_scales_out():
    strategy = PaperStrategy(PolicyConfig(scale_out=False))
    snap = cluster([50, 50], cloud_servers=None)
    assert strategy.decide(snap, ControllerState(), 0.0)[0] is None


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"theta_out": float("nan")}, "theta_out"),
        ({"theta_out": "80"}, "theta_out"),
        ({"tmon": 0}, "tmon"),
        ({"tcool": -1}, "tcool"),
        ({"tcool": math.inf}, "tcool"),
    ],
)
def test_config_rejects_impossible_values_by_name(kwargs, word):
    with pytest.raises(ValueError, match=word):
        PolicyConfig(**kwargs)


def test_registry_names_unknown_policies():
    assert make_strategy("paper").name == "paper"
    with pytest.raises(ValueError, match="unknown policy 'nope'.*paper"):
        make_strategy("nope")


def test_snapshot_rejects_duplicate_node_names():
    with pytest.raises(ValueError, match="duplicate node name 'a'"):
        ClusterSnapshot((node("a"), node("a")))
