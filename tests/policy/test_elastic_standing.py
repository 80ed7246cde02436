"""The standing reserve of `elastic`: a low theta_out keeps headroom against
bursts that recent arrivals do not foretell (docs/strategies.md)."""

import pytest

from elastichub.policy import (
    ClusterSnapshot, ControllerState, ElasticStrategy, GiB, Node, NodeStatus, PolicyConfig, Resources, ScaleOut,
    Server, Tier,
)

ALLOC = Resources(25, 50 * GiB)  # the paper's node: 50 RU
NOW = 100_000.0


def quiet_cluster(used_ru_each: int) -> ClusterSnapshot:
    """8 on-prem nodes with `used_ru_each` RU used each, every server old
    (no recent arrival), and 8 stopped cloud nodes."""
    nodes = []
    for i in range(8):
        servers = tuple(Server(f"op{i}-{j}", Resources(0.5, GiB), f"op{i}", NOW - 7200, NOW - 7200)
                        for j in range(used_ru_each))
        nodes.append(Node(f"op{i}", Tier.ONPREM, ALLOC, Resources.total(s.requests for s in servers), servers))
    nodes += [Node(f"cloud{i}", Tier.CLOUD, ALLOC, status=NodeStatus.STOPPED) for i in range(8)]
    return ClusterSnapshot(tuple(nodes))


@pytest.mark.parametrize("theta, share", [(50, 5 / 6), (60, 5 / 6), (65, 5 / 6), (70, 2 / 3), (80, 1 / 3), (85, 1 / 6),
                                          (90, 0.0), (95, 0.0)])
def test_the_standing_share_falls_from_five_sixths_of_the_cap_to_none(theta, share):
    assert ElasticStrategy(PolicyConfig(theta_out=theta)).standing_share == pytest.approx(share)


def test_a_low_theta_keeps_headroom_without_recent_arrivals():
    # 68 % of on-prem used, nobody arrived lately: at theta 60, 5/6 of the
    # 40 % cap stands (a node starts); at 90 the arrivals reserve (none) rules.
    snap = quiet_cluster(used_ru_each=34)  # 272 of 400 RU
    state = ControllerState()
    action, _ = ElasticStrategy(PolicyConfig(theta_out=60)).decide(snap, state, NOW)
    assert isinstance(action, ScaleOut) and len(action.nodes) == 1  # 272 + 133 RU reserve > 400: one node more
    assert ElasticStrategy(PolicyConfig(theta_out=90)).decide(snap, state, NOW)[0] is None
    off = ElasticStrategy(PolicyConfig(theta_out=60), standing_reserve=0.0)
    assert off.decide(snap, state, NOW)[0] is None


@pytest.mark.parametrize("value, message", [(1.5, "standing_reserve is a share of the reserve cap, 0..1"),
                                            (-0.1, "standing_reserve must be >= 0"),
                                            ("all", "standing_reserve must be a number")])
def test_bad_standing_reserve_is_refused(value, message):
    with pytest.raises(ValueError, match=message):
        ElasticStrategy(PolicyConfig(), standing_reserve=value)


def test_below_65_the_standing_reserve_is_no_larger_than_at_65():
    # 264 RU used, nobody arrived lately: at theta 60 the whole 40 % cap
    # (160 RU) would start a node; 5/6 of it (133 RU) fits in the 136 RU
    # free. The whole cap below 65 cost more node-hours than paper on
    # teaching days (docs/strategies.md); asked for, it still stands.
    snap = quiet_cluster(used_ru_each=33)
    state = ControllerState()
    assert ElasticStrategy(PolicyConfig(theta_out=60)).decide(snap, state, NOW)[0] is None
    action, _ = ElasticStrategy(PolicyConfig(theta_out=60), standing_reserve=1.0).decide(snap, state, NOW)
    assert isinstance(action, ScaleOut) and len(action.nodes) == 1
