"""The guards in front of a scale-in, one by one (found unguarded by the
mutation run, scripts/mutation.py): the pause after a scale-out, and when a
remembered drain is over (its node stopped, booting again, or gone)."""

from elastichub.policy import ClusterSnapshot, ElasticState, NodeStatus, ScaleIn, Tier

from test_elastic_rules import NOW, cloud_ready, node, onprem, servers_of, strategy


def drainable():
    return onprem(ram_each=10) + [cloud_ready("cloud0", 1)]


def test_no_scale_in_until_the_pause_after_a_scale_out_has_passed():
    s = strategy(delay_after_add_s=600.0)
    snap = ClusterSnapshot(tuple(drainable()))
    for since, drains in ((0.0, False), (100.0, False), (599.0, False), (600.0, True), (700.0, True),
                          (5000.0, True), (NOW - 10.0, True)):
        action, _ = s.decide(snap, ElasticState(last_scale_out_at=NOW - since), NOW)
        assert isinstance(action, ScaleIn) is drains, since


def test_a_drain_whose_node_boots_again_is_over():
    # the drained node was stopped and a scale-out is starting it again
    snap = ClusterSnapshot(tuple(drainable() + [node("cloud2", Tier.CLOUD, NodeStatus.BOOTING)]))
    _, state = strategy().decide(snap, ElasticState(draining="cloud2"), NOW)
    assert state.draining is None


def test_a_drain_whose_node_is_gone_is_over():
    snap = ClusterSnapshot(tuple(drainable()))  # "cloud9" deleted from the cluster
    action, state = strategy().decide(snap, ElasticState(draining="cloud9"), NOW)
    assert isinstance(action, ScaleIn) and action.node == "cloud0" and state.draining == "cloud0"


def test_a_drain_whose_node_is_still_cordoned_goes_on():
    snap = ClusterSnapshot(tuple(drainable() + [node("cloud2", Tier.CLOUD, NodeStatus.CORDONED,
                                                     servers_of("cloud2", 1))]))
    action, state = strategy().decide(snap, ElasticState(draining="cloud2"), NOW)
    assert action is None and state.draining == "cloud2"
