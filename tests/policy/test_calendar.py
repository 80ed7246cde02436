"""The class calendar: parsing, reserved demand, and the `calendar` strategy."""

from dataclasses import replace

import pytest

from elastichub.policy import (
    ClusterSnapshot,
    ControllerState,
    GiB,
    Node,
    NodeStatus,
    PolicyConfig,
    Resources,
    ScaleIn,
    ScaleOut,
    ScheduledClass,
    Server,
    Tier,
    make_strategy,
    parse_schedule,
)
from elastichub.policy.calendar import parse_start, reserved_demand

ALLOC = Resources(25, 50 * GiB)
REQ = Resources(0.5, 2 * GiB)
START = 2 * 86400 + 10 * 3600.0  # day 3, 10:00


def node(name, tier=Tier.ONPREM, status=NodeStatus.READY, servers=()):
    used = Resources.total(s.requests for s in servers)
    return Node(name, tier, ALLOC, used, tuple(servers), status)


def arrivals(n, at, node_name):
    return tuple(Server(f"s{i}", REQ, node_name, started_at=at, created_at=at) for i in range(n))


def cluster(extra_onprem=(), cloud_ready=0, cloud_stopped=8):
    nodes = [node(f"op{i}") for i in range(8)]
    if extra_onprem:
        nodes[0] = node("op0", servers=extra_onprem)
    nodes += [node(f"cloud{i}", Tier.CLOUD) for i in range(cloud_ready)]
    nodes += [node(f"cloud{i}", Tier.CLOUD, NodeStatus.STOPPED) for i in range(cloud_ready, cloud_ready + cloud_stopped)]
    return ClusterSnapshot(tuple(nodes))


CLASS = ScheduledClass(START, users=150, request=REQ, spread_s=600, name="stats101")


def test_reserved_demand_over_the_window():
    snap = cluster()
    lead = 425.0
    assert reserved_demand([CLASS], snap, START - lead - 1, lead) == Resources()
    assert reserved_demand([CLASS], snap, START - lead, lead) == CLASS.demand
    assert reserved_demand([CLASS], snap, START + 600, lead) == CLASS.demand  # nobody came yet
    assert reserved_demand([CLASS], snap, START + 601, lead) == Resources()
    # 20 users came (created inside the window): 130 still expected
    came = cluster(arrivals(20, START + 30, "op0"))
    assert reserved_demand([CLASS], came, START + 60, lead) == Resources(0.5 * 130, 2 * GiB * 130)
    # servers from before the window are the ordinary load, not the class
    before = cluster(arrivals(20, START - 3600, "op0"))
    assert reserved_demand([CLASS], before, START + 60, lead) == CLASS.demand


def test_arrivals_are_matched_to_classes_in_start_order():
    a = ScheduledClass(START, 10, REQ, name="a")
    b = ScheduledClass(START + 60, 10, Resources(1, 4 * GiB), name="b")
    snap = cluster(arrivals(15, START + 70, "op0"))
    # 15 arrivals: class a complete, 5 of class b: 5 x b's request left
    assert reserved_demand([b, a], snap, START + 90, 425) == Resources(5, 20 * GiB)


def test_calendar_boots_enough_nodes_one_lead_time_before_the_class():
    s = make_strategy("calendar", PolicyConfig(theta_out=80), schedule=(CLASS,), reserve_basis="onprem")
    assert s.lead_s == s.boot_s + s.config.tmon + s.lead_margin_s
    snap = cluster()
    assert s.decide(snap, ControllerState(), START - s.lead_s)[0] is None
    # 300 GiB expected on an idle 400 GiB on-prem: 300 <= 0.8 x 400, nothing to start;
    # a bigger class needs cloud nodes: 600 GiB + a reserve of 20 % of on-prem (80) = 680 -> 400 + 6 x 50
    big = ScheduledClass(START, users=300, request=REQ, name="big")
    s = make_strategy("calendar", PolicyConfig(theta_out=80), schedule=(big,), reserve_basis="onprem")
    # before its window an idle cluster does nothing; at the window's opening it boots
    assert s.decide(snap, ControllerState(), START - s.lead_s - 15)[0] is None
    action, _ = s.decide(snap, ControllerState(), START - s.lead_s)
    assert isinstance(action, ScaleOut)
    assert len(action.nodes) == 6
    # Booted nodes arrive Ready before the class starts: the first monitor
    # tick (from two hours ahead) at which the strategy boots them is one
    # boot and one tick (Ready just after a tick) or more before the start.
    ticks = [START - 7200 + k * s.config.tmon for k in range(int(7200 // s.config.tmon) + 1)]
    opening = next(t for t in ticks if isinstance(s.decide(snap, ControllerState(), t)[0], ScaleOut))
    assert opening + s.boot_s + s.config.tmon <= START
    # and, once Ready, they are enough: nothing more starts, none goes back
    ready = ClusterSnapshot(tuple(replace(n, status=NodeStatus.READY) if n.name in action.nodes else n
                                  for n in snap.nodes))
    state = ControllerState(last_action_at=opening)
    for t in (opening + s.boot_s + s.config.tmon, START - s.config.tmon, START):
        assert s.decide(ready, state, t)[0] is None, t


def test_the_ordinary_load_counts_besides_the_class():
    # 150 x 2 GiB = 300 on a 400 GiB cluster already holding 100: 400 + 80 reserve -> 500
    busy = ClusterSnapshot(tuple(
        [node(f"op{i}", servers=tuple(Server(f"o{i}-{j}", Resources(0.5, 12.5 * GiB), f"op{i}",
                                             started_at=0.0, created_at=0.0) for j in range(1)))
         for i in range(8)]
        + [node(f"cloud{i}", Tier.CLOUD, NodeStatus.STOPPED) for i in range(8)]
    ))
    s = make_strategy("calendar", PolicyConfig(theta_out=80), schedule=(CLASS,), reserve_basis="onprem")
    action, _ = s.decide(busy, ControllerState(), START - s.lead_s)
    assert isinstance(action, ScaleOut) and len(action.nodes) == 2


def test_calendar_holds_capacity_through_the_class_window():
    # two idle cloud nodes Ready, class about to start: elastic gives them back, calendar keeps them
    snap = cluster(cloud_ready=2, cloud_stopped=6)
    big = ScheduledClass(START, users=200, request=REQ, name="big")
    s_cal = make_strategy("calendar", PolicyConfig(theta_out=80), schedule=(big,), reserve_basis="onprem")
    s_ela = make_strategy("elastic", PolicyConfig(theta_out=80), reserve_basis="onprem")
    assert isinstance(s_ela.decide(snap, ControllerState(), START - 60)[0], ScaleIn)
    action, _ = s_cal.decide(snap, ControllerState(), START - 60)
    assert not isinstance(action, ScaleIn)
    # once the window closes they may go
    assert isinstance(s_cal.decide(snap, ControllerState(), START + 601)[0], ScaleIn)


def test_parse_schedule_accepts_seconds_and_clock_times():
    rows = [
        {"start": "2 10:00", "users": "140", "cpu": "0.5", "ram_gib": "2", "name": "stats"},
        {"start": "3600", "users": "5", "cpu": "1", "ram_gib": "1.5", "spread_s": "120"},
    ]
    classes = parse_schedule(rows)
    assert [c.start_s for c in classes] == [3600.0, 86400 + 36000.0]  # sorted by start
    assert classes[1].users == 140 and classes[1].request == Resources(0.5, 2 * GiB)
    assert classes[0].spread_s == 120 and classes[1].spread_s == 600
    assert parse_start("09:30") == 9.5 * 3600


@pytest.mark.parametrize(
    "row, message",
    [
        ({"users": "1", "cpu": "1", "ram_gib": "1"}, "row 1: missing column 'start'"),
        ({"start": "25:00", "users": "1", "cpu": "1", "ram_gib": "1"}, "row 1: column 'start'"),
        ({"start": "0 10:00", "users": "1", "cpu": "1", "ram_gib": "1"}, "row 1: column 'start'"),
        ({"start": "10", "users": "many", "cpu": "1", "ram_gib": "1"}, "row 1: column 'users' is not a number"),
        ({"start": "10", "users": "1.5", "cpu": "1", "ram_gib": "1"}, "row 1: column 'users' must be a whole"),
        ({"start": "10", "users": "1", "cpu": "-1", "ram_gib": "1"}, "row 1: column 'cpu' must be"),
        ({"start": "10", "users": "1", "cpu": "1", "ram_gib": "0"}, "row 1: column 'ram_gib' must be > 0"),
        ({"start": "10", "users": "1", "cpu": "1", "ram_gib": ""}, "row 1: missing column 'ram_gib'"),
        ({"start": "10", "users": "1", "cpu": "1", "ram_gib": "4G"}, "row 1: column 'ram_gib': '4G' in GiB"),
        ({"start": "10", "users": "1", "cpu": "1Gi", "ram_gib": "1"}, "row 1: column 'cpu': '1Gi' is not a number of"),
    ],
)
def test_parse_schedule_errors_name_row_and_column(row, message):
    with pytest.raises(ValueError, match=message):
        parse_schedule([row], source="cal.csv")
    with pytest.raises(ValueError, match="cal.csv row 2"):
        parse_schedule([{"start": "1", "users": "1", "cpu": "1", "ram_gib": "1"}, row], source="cal.csv")


def test_parse_schedule_reads_requests_as_kubectl_shows_them():
    (c,) = parse_schedule([{"start": "10:00", "users": "30", "cpu": "500m", "ram_gib": "1536Mi"}])
    assert c.request == Resources(0.5, 1.5 * GiB)


def test_scheduled_class_validation():
    with pytest.raises(ValueError, match="users"):
        ScheduledClass(0, -1, REQ)
    with pytest.raises(ValueError, match="spread_s"):
        ScheduledClass(0, 1, REQ, spread_s=-5)
    with pytest.raises(ValueError, match="ram"):
        ScheduledClass(0, 1, Resources(1, 0))
