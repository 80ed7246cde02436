"""plan_migration (eq. 3), case by case, with hand-computed answers.

Each case pins one part of the rule the mutation run (scripts/mutation.py)
found unguarded by the example tests: both resources must fit (exact fit
included), placements accumulate on both resources, the most used node by
RAM *share* comes first within a tier, ties go to the lowest name, and the
candidate itself (and only it) is excluded.
"""

from elastichub.policy import GiB, Node, NodeStatus, Resources, Server, Tier, plan_migration, ClusterSnapshot


def srv(name, cpu, ram_gib):
    return Server(name, Resources(cpu, ram_gib * GiB), "cand")


def node(name, alloc_cpu, alloc_gib, used_cpu=0.0, used_gib=0.0, tier=Tier.ONPREM):
    return Node(name, tier, Resources(alloc_cpu, alloc_gib * GiB), Resources(used_cpu, used_gib * GiB), (),
                NodeStatus.READY)


def cand(*servers):
    used = Resources.total(s.requests for s in servers)
    return Node("cand", Tier.CLOUD, Resources(32, 64 * GiB), used, tuple(servers), NodeStatus.READY)


def plan(candidate, *nodes):
    result = plan_migration(ClusterSnapshot((candidate, *nodes)), candidate)
    return None if result is None else [(m.server.name, m.destination) for m in result.moves]


def test_both_resources_must_fit():
    # "cpu-only" has the CPU but not the RAM, "ram-only" the RAM but not the CPU
    c = cand(srv("s", 2, 4))
    assert plan(c, node("cpu-only", 8, 3), node("ram-only", 1, 16)) is None
    assert plan(c, node("cpu-only", 8, 3), node("ram-only", 1, 16), node("both", 2, 4)) == [("s", "both")]


def test_an_exact_fit_fits():
    c = cand(srv("s", 2, 4))
    assert plan(c, node("exact", 4, 8, used_cpu=2, used_gib=4)) == [("s", "exact")]


def test_placements_accumulate_on_cpu_and_on_ram():
    # Two servers, one node with room for one by CPU: the second goes on.
    by_cpu = cand(srv("a", 2, 2), srv("b", 2, 1))
    assert plan(by_cpu, node("x", 3, 16), node("y", 3, 16)) == [("a", "x"), ("b", "y")]
    assert plan(by_cpu, node("x", 3, 16)) is None
    # ... and one with room for one by RAM.
    by_ram = cand(srv("a", 1, 4), srv("b", 1, 3))
    assert plan(by_ram, node("x", 8, 5), node("y", 8, 5)) == [("a", "x"), ("b", "y")]
    assert plan(by_ram, node("x", 8, 5)) is None


def test_the_most_used_by_ram_share_first():
    # "big" holds more GiB (8 of 64: 12.5 %), "small" the higher share (3 of 8: 37.5 %),
    # and "cpu-full" the most CPU but the lowest share: "small" wins.
    c = cand(srv("s", 1, 1))
    nodes = (node("big", 32, 64, used_gib=8), node("small", 32, 8, used_gib=3),
             node("cpu-full", 4, 64, used_cpu=3, used_gib=1))
    assert plan(c, *nodes) == [("s", "small")]
    # the placement counts for the next server's choice: after "s", a node
    # of share 4/8 beats one of 7/16, which beat "s"'s destination before
    c = cand(srv("first", 1, 2), srv("second", 1, 1))
    assert plan(c, node("p", 32, 8, used_gib=2), node("q", 32, 16, used_gib=7)) == [("first", "q"),
                                                                                   ("second", "q")]
    # placing 4 GiB on q (7 of 16 used) raises its share to 11/16: the next
    # server goes there too, not to p (3 of 8)
    c = cand(srv("first", 1, 4), srv("second", 1, 1))
    assert plan(c, node("p", 32, 8, used_gib=3), node("q", 32, 16, used_gib=7)) == [("first", "q"),
                                                                                   ("second", "q")]


def test_on_prem_before_cloud_whatever_the_share():
    c = cand(srv("s", 1, 1))
    assert plan(c, node("cloud-full", 32, 8, used_gib=6, tier=Tier.CLOUD), node("onprem-empty", 32, 64)) == [
        ("s", "onprem-empty")]


def test_equal_nodes_the_lowest_name_wins():
    c = cand(srv("s", 1, 1))
    assert plan(c, node("n2", 8, 8), node("n1", 8, 8), node("n3", 8, 8)) == [("s", "n1")]
    assert plan(c, node("n3", 8, 8, used_gib=1), node("n1", 8, 8), node("n2", 8, 8, used_gib=1)) == [("s", "n2")]


def test_only_the_candidate_is_excluded():
    # destinations named before and after the candidate in name order
    c = cand(srv("s", 1, 1))
    assert plan(c, node("a-node", 8, 8)) == [("s", "a-node")]
    assert plan(c, node("z-node", 8, 8)) == [("s", "z-node")]
    # a node named like the candidate (an equal string, not the same object)
    # is the candidate: never a destination
    twin = Node("".join(["ca", "nd"]), Tier.ONPREM, Resources(32, 64 * GiB), Resources(), (), NodeStatus.READY)
    assert plan_migration(ClusterSnapshot((twin, node("z", 0.5, 1))), c) is None


def test_a_node_without_allocatable_ram_counts_as_full():
    # Only a server that requests no RAM fits there; for packing, such a node
    # is as used as a full one (share 1.0): a tie, broken by name.
    c = cand(srv("no-ram", 1, 0))
    assert plan(c, node("a-full", 8, 4, used_gib=4), node("zero-ram", 8, 0)) == [("no-ram", "a-full")]
    assert plan(c, node("b-half", 8, 4, used_gib=2), node("zero-ram", 8, 0)) == [("no-ram", "zero-ram")]
