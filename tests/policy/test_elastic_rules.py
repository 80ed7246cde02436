"""One test per rule of the `elastic` strategy (elastichub/policy/elastic.py)."""

import math

import pytest

from elastichub.policy import (
    ClusterSnapshot,
    ControllerState,
    ElasticState,
    ElasticStrategy,
    GiB,
    Node,
    NodeStatus,
    PolicyConfig,
    Resources,
    ScaleIn,
    ScaleOut,
    Server,
    Tier,
    make_strategy,
)
from elastichub.policy.elastic import expected_remaining_s

ALLOC = Resources(25, 50 * GiB)  # the paper's node: 50 RU, 1 RU = 0.5 vCPU + 1 GiB
NOW = 100_000.0


def servers_of(node, n, ram_gib=1, cpu=0.5, started_at=NOW, created_at=None, prefix=None):
    prefix = prefix or node
    return tuple(
        Server(f"{prefix}-{i}", Resources(cpu, ram_gib * GiB), node, started_at=started_at,
               created_at=created_at if created_at is not None else started_at)
        for i in range(n)
    )


def node(name, tier=Tier.ONPREM, status=NodeStatus.READY, servers=(), alloc=ALLOC):
    used = Resources.total(s.requests for s in servers)
    return Node(name, tier, alloc, used, tuple(servers), status)


def onprem(n_nodes=8, ram_each=0, **kw):
    return [node(f"op{i}", servers=servers_of(f"op{i}", ram_each, **kw)) for i in range(n_nodes)]


def pool(n, status=NodeStatus.STOPPED, start=0):
    return [node(f"cloud{i}", Tier.CLOUD, status) for i in range(start, start + n)]


def strategy(theta_out=80.0, **options):
    # a fixed reserve keeps the arithmetic of these tests simple; the
    # arrivals-based default has tests of its own below
    options.setdefault("reserve_basis", "onprem")
    return ElasticStrategy(PolicyConfig(theta_out=theta_out), **options)


# -- sized scale-out ------------------------------------------------------


def test_starts_as_many_nodes_as_keep_ram_at_theta():
    # reserve_basis "onprem" (see strategy() above): demand + 20 % of the 400 GiB on-prem <= capacity.
    # 8 x 50 GiB on-prem, 45 GiB used each: 360 + 80 <= 400 + 50 n -> n = 1.
    snap = ClusterSnapshot(tuple(onprem(ram_each=45) + pool(8)))
    action, state = strategy().decide(snap, ControllerState(), NOW)
    assert action == ScaleOut(("cloud0",), reason=action.reason)
    # 48 GiB each: 384 + 80 <= 400 + 50 n -> n = 2 (1.28 rounded up)
    snap = ClusterSnapshot(tuple(onprem(ram_each=48) + pool(8)))
    action, _ = strategy().decide(snap, ControllerState(), NOW)
    assert action.nodes == ("cloud0", "cloud1")
    assert state.last_scale_out_at == NOW


def test_queued_demand_counts_and_nodes_already_booting_are_not_started_twice():
    full = onprem(ram_each=50)
    pending = tuple(Server(f"q{i}", Resources(0.5, 1 * GiB), None, created_at=NOW - 5) for i in range(60))
    # 400 + 60 = 460 GiB + 80 reserve needs 540 GiB: 400 + 3 x 50
    snap = ClusterSnapshot(tuple(full + pool(8)), pending)
    action, _ = strategy().decide(snap, ControllerState(), NOW)
    assert action.nodes == ("cloud0", "cloud1", "cloud2")
    # "all": the paper's eq. 2 over every node: 460 <= 0.8 * (400 + 50 n) -> n = 4
    action, _ = strategy(reserve_basis="all").decide(snap, ControllerState(), NOW)
    assert action.nodes == ("cloud0", "cloud1", "cloud2", "cloud3")
    # the same demand with three booting: nothing more to start
    snap = ClusterSnapshot(tuple(full + pool(3, NodeStatus.BOOTING) + pool(5, start=3)), pending)
    action, _ = strategy().decide(snap, ControllerState(), NOW)
    assert action is None


def test_scale_out_is_not_gated_by_the_cooldown():
    state = ElasticState(last_action_at=NOW - 15, last_scale_out_at=NOW - 15)
    snap = ClusterSnapshot(tuple(onprem(ram_each=45) + pool(1, NodeStatus.BOOTING) + pool(3, start=1)),
                           tuple(Server(f"q{i}", Resources(0.5, GiB), None) for i in range(40)))
    action, _ = strategy().decide(snap, state, NOW)
    assert isinstance(action, ScaleOut) and action.nodes


def test_cpu_demand_alone_triggers_scale_out():
    # RAM at 16 %, CPU at 100 %: the paper's RAM-only test would not fire
    heavy = [node(f"op{i}", servers=servers_of(f"op{i}", 8, ram_gib=1, cpu=25 / 8)) for i in range(8)]
    snap = ClusterSnapshot(tuple(heavy + pool(8)))
    action, _ = strategy().decide(snap, ControllerState(), NOW)
    assert isinstance(action, ScaleOut)
    # 200 cores + 20 % of 200 <= 200 + 25 n -> n = 2
    assert len(action.nodes) == 2


def test_a_queued_request_that_fits_no_free_slot_starts_a_node_below_theta():
    # 10 GiB free on every node (80 GiB in all, 80 % used: not above theta_out=81)
    nodes = onprem(ram_each=40)
    big = Server("big", Resources(1, 20 * GiB), None, created_at=NOW)
    snap = ClusterSnapshot(tuple(nodes + pool(2)), (big,))
    action, _ = strategy(theta_out=90).decide(snap, ControllerState(), NOW)
    assert action == ScaleOut(("cloud0",), reason=action.reason)


def test_an_empty_pool_blocks_scale_in_as_the_paper_does():
    nodes = onprem(ram_each=50) + [node("cloud0", Tier.CLOUD, servers=())]
    snap = ClusterSnapshot(tuple(nodes))
    action, _ = strategy().decide(snap, ControllerState(), NOW)
    assert action is None


def test_onprem_only_and_theta_above_100_never_scale_out():
    snap = ClusterSnapshot(tuple(onprem(ram_each=50) + pool(2)),
                           (Server("q", Resources(1, GiB), None),))
    cfg = PolicyConfig(scale_out=False)
    assert ElasticStrategy(cfg).decide(snap, ControllerState(), NOW)[0] is None
    assert strategy(theta_out=101).decide(snap, ControllerState(), NOW)[0] is None


# -- scale-in ---------------------------------------------------------------


def cloud_ready(name, n_servers, started_at=NOW - 60):
    return node(name, Tier.CLOUD, servers=servers_of(name, n_servers, started_at=started_at))


def test_scale_in_waits_for_delay_after_add_then_fires():
    snap = ClusterSnapshot(tuple(onprem(ram_each=20) + [cloud_ready("cloud0", 3)] + pool(7, start=1)))
    s = strategy(delay_after_add_s=580)
    state = ElasticState(last_action_at=NOW - 100, last_scale_out_at=NOW - 100)
    assert s.decide(snap, state, NOW)[0] is None
    action, new = s.decide(snap, state, NOW + 480)
    assert isinstance(action, ScaleIn) and action.node == "cloud0" and len(action.moves) == 3
    assert new.draining == "cloud0" and new.last_scale_in_at == NOW + 480


def test_hysteresis_keeps_headroom_below_theta_out():
    # 8 x 50 on-prem + one cloud node: used 320 + 10 = 330 GiB. Removing the cloud
    # node must leave a reserve of 100 - (80 - 10) = 30 % of on-prem (120 GiB):
    # 330 + 120 > 400, so it stays.
    nodes = onprem(ram_each=40) + [cloud_ready("cloud0", 10)] + pool(7, start=1)
    s = strategy(theta_in=10)
    assert s.decide(ClusterSnapshot(tuple(nodes)), ControllerState(), NOW)[0] is None
    # 8 x 34 + 10 = 282 + 120 > 400 -> stays; 8 x 33 + 10 = 274 + 120 <= 400 -> goes
    nodes = onprem(ram_each=34) + [cloud_ready("cloud0", 10)] + pool(7, start=1)
    assert s.decide(ClusterSnapshot(tuple(nodes)), ControllerState(), NOW)[0] is None
    nodes = onprem(ram_each=33) + [cloud_ready("cloud0", 10)] + pool(7, start=1)
    action, _ = s.decide(ClusterSnapshot(tuple(nodes)), ControllerState(), NOW)
    assert isinstance(action, ScaleIn)


@pytest.mark.parametrize("blocker", ["pending", "booting", "draining"])
def test_no_scale_in_while_users_wait_nodes_boot_or_a_drain_runs(blocker):
    nodes = onprem(ram_each=10) + [cloud_ready("cloud0", 0), cloud_ready("cloud1", 1)]
    pending = ()
    state = ElasticState()
    if blocker == "pending":
        pending = (Server("q", Resources(30, GiB), None),)  # fits nowhere by CPU
        nodes += pool(1, start=2)
    elif blocker == "booting":
        nodes += pool(1, NodeStatus.BOOTING, start=2)
    else:
        nodes += [node("cloud2", Tier.CLOUD, NodeStatus.CORDONED, servers_of("cloud2", 1))]
        state = ElasticState(draining="cloud2")
    snap = ClusterSnapshot(tuple(nodes), pending)
    action, _ = ElasticStrategy(PolicyConfig(theta_out=80), theta_in=0).decide(snap, state, NOW)
    assert not isinstance(action, ScaleIn)


def test_draining_is_forgotten_once_the_node_stopped():
    nodes = onprem(ram_each=10) + [cloud_ready("cloud0", 0), node("cloud2", Tier.CLOUD, NodeStatus.STOPPED)]
    action, state = strategy().decide(ClusterSnapshot(tuple(nodes)), ElasticState(draining="cloud2"), NOW)
    assert isinstance(action, ScaleIn) and action.node == "cloud0" and state.draining == "cloud0"


def test_unneeded_time_must_pass_before_scale_in():
    snap = ClusterSnapshot(tuple(onprem(ram_each=10) + [cloud_ready("cloud0", 0)]))
    s = strategy(unneeded_s=300)
    action, state = s.decide(snap, ElasticState(), NOW)
    assert action is None and state.unneeded_since == NOW
    action, state = s.decide(snap, state, NOW + 299)
    assert action is None
    action, _ = s.decide(snap, state, NOW + 300)
    assert isinstance(action, ScaleIn)
    # a cycle where the conditions fail restarts the clock
    busy = ClusterSnapshot(tuple(onprem(ram_each=40) + [cloud_ready("cloud0", 0)]))
    _, state2 = s.decide(busy, state, NOW + 200)
    assert state2.unneeded_since is None


def test_without_migration_only_empty_nodes_go():
    nodes = onprem(ram_each=10) + [cloud_ready("cloud0", 2)]
    s = ElasticStrategy(PolicyConfig(migration=False))
    assert s.decide(ClusterSnapshot(tuple(nodes)), ControllerState(), NOW)[0] is None
    nodes.append(cloud_ready("cloud1", 0))
    action, _ = s.decide(ClusterSnapshot(tuple(nodes)), ControllerState(), NOW)
    assert action.node == "cloud1" and action.moves == ()


# -- lifetime-aware scale-in --------------------------------------------------


def test_expected_remaining_lifetime():
    assert expected_remaining_s(0, 3600, 900) == pytest.approx(3600, rel=1e-3)
    values = [expected_remaining_s(a, 3600, 900) for a in range(0, 20000, 500)]
    assert all(b < a for a, b in zip(values, values[1:]))  # older -> less left
    assert all(v > 0 for v in values)
    # past the mean, about sd^2 / (age - mean)
    assert expected_remaining_s(3600 + 9000, 3600, 900) == pytest.approx(900**2 / 9000, rel=0.02)
    assert expected_remaining_s(10, 3600, 0) == 3590
    assert math.isfinite(expected_remaining_s(1e9, 3600, 900))


def test_servers_about_to_end_are_not_migrated_young_ones_are():
    onp = onprem(ram_each=10)
    old = cloud_ready("cloud0", 2, started_at=NOW - 7200)  # 2 h old: ~3.4 min left each
    young = cloud_ready("cloud1", 3, started_at=NOW - 600)  # 10 min old: ~50 min left
    snap = ClusterSnapshot(tuple(onp + [old, young]))
    action, _ = strategy(theta_in=0).decide(snap, ControllerState(), NOW)
    # the paper would take cloud0 (fewest servers); moving them saves too little
    assert action.node == "cloud1"
    action, _ = strategy(theta_in=0, lifetime_aware=False).decide(snap, ControllerState(), NOW)
    assert action.node == "cloud0"
    only_old = ClusterSnapshot(tuple(onp + [old]))
    assert strategy(theta_in=0).decide(only_old, ControllerState(), NOW)[0] is None


def test_empty_cloud_nodes_always_pay_off():
    s = strategy(theta_in=0)
    assert s.migration_saving_s(cloud_ready("c", 0), NOW) == math.inf
    snap = ClusterSnapshot(tuple(onprem(ram_each=10) + [cloud_ready("cloud0", 0)]))
    assert s.decide(snap, ControllerState(), NOW)[0].moves == ()


# -- options and registry -----------------------------------------------------


def test_registry_and_option_errors():
    assert make_strategy("elastic").name == "elastic"
    assert make_strategy("elastic", PolicyConfig(theta_out=70), theta_in=5).theta_in == 5
    with pytest.raises(ValueError, match="theta_in"):
        make_strategy("elastic", theta_in=-1)
    with pytest.raises(ValueError, match="min_saving_s"):
        make_strategy("elastic", min_saving_s=float("nan"))
    with pytest.raises(ValueError, match="schedule"):
        make_strategy("calendar")
    with pytest.raises(ValueError, match="reserve_basis"):
        make_strategy("elastic", reserve_basis="cloud")
    with pytest.raises(ValueError, match="policy 'elastic' has no option 'no_such_option': its options are "
                                         "boot_s, delay_after_add_s, "):
        make_strategy("elastic", no_such_option=1)


# -- the arrivals-based reserve (the default) ---------------------------------


def test_reserve_follows_recent_arrivals_capped_by_theta():
    # 360 GiB used on 400. Old servers: no recent arrivals, no reserve -> fits.
    old = onprem(ram_each=45, started_at=NOW - 3600)
    s = ElasticStrategy(PolicyConfig(theta_out=80))
    assert s.reserve_basis == "arrivals"
    assert s.decide(ClusterSnapshot(tuple(old + pool(8))), ControllerState(), NOW)[0] is None
    # the same load, all of it asked for within the last boot + tmon: the
    # reserve is capped at 20 % of on-prem (80 GiB): 360 + 80 -> one node
    fresh = onprem(ram_each=45, started_at=NOW - 100)
    action, _ = s.decide(ClusterSnapshot(tuple(fresh + pool(8))), ControllerState(), NOW)
    assert action.nodes == ("cloud0",)
    # 30 GiB arrived recently: 360 + 30 <= 400, nothing to start
    mixed = onprem(ram_each=45, started_at=NOW - 3600)[:2] + [
        node(f"op{i}", servers=servers_of(f"op{i}", 40, started_at=NOW - 3600) + servers_of(
            f"op{i}", 5, started_at=NOW - 100, prefix=f"new{i}")) for i in range(2, 8)]
    assert s.decide(ClusterSnapshot(tuple(mixed + pool(8))), ControllerState(), NOW)[0] is None


def test_arrivals_of_a_scheduled_class_are_not_a_trend():
    from elastichub.policy import ScheduledClass

    fresh = onprem(ram_each=45, started_at=NOW - 100)
    cls = ScheduledClass(NOW - 200, users=0, request=Resources(0.5, GiB), spread_s=300)
    s = ElasticStrategy(PolicyConfig(theta_out=80), schedule=(cls,))
    # the 360 GiB arrived inside the class window: no reserve for them
    assert s.decide(ClusterSnapshot(tuple(fresh + pool(8))), ControllerState(), NOW)[0] is None


# -- servers only a cloud node can run --------------------------------------


def test_a_server_only_a_cloud_node_can_run_starts_one_though_on_prem_has_room():
    """A "cloud burst" profile: counted on on-prem room, the server waited
    for ever (the scheduler never puts it there)."""
    quiet = onprem(8, ram_each=10)  # 20 % used: room everywhere on-prem
    burst = Server("carol", Resources(1, 2 * GiB), None, created_at=NOW - 20, cloud_only=True)
    for theta_out, thrift in ((80.0, None), (95.0, None), (95.0, 1.0)):  # patience and min_fill do not hold it
        s = strategy(theta_out, thrift=thrift)
        action, _ = s.decide(ClusterSnapshot(tuple(quiet + pool(2)), (burst,)), ElasticState(), NOW)
        assert isinstance(action, ScaleOut) and action.nodes == ("cloud0",), (theta_out, action)
        plain = Server("carol", Resources(1, 2 * GiB), None, created_at=NOW - 20)
        assert s.decide(ClusterSnapshot(tuple(quiet + pool(2)), (plain,)), ElasticState(), NOW)[0] is None
    # a cloud node up with room, or one booting: nothing more to start
    for status in (NodeStatus.READY, NodeStatus.BOOTING):
        snap = ClusterSnapshot(tuple(quiet + pool(1, status) + pool(1, start=1)), (burst,))
        assert strategy().nodes_to_start(snap, NOW) == []
