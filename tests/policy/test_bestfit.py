"""BestFit answers exactly what a node-by-node scan answers, through binds, unbinds and status changes."""

from hypothesis import given, settings
from hypothesis import strategies as st

from elastichub.policy.bestfit import BestFit

# Allocatables shared by several nodes (groups), and odd floats: used values
# that drift like sums of 0.1s do, so equal shares and boundary fits happen.
ALLOCS = [(4.0, 8.0), (4.0, 8.0), (8.0, 16.0), (2.5, 3.3)]
AMOUNTS = [0.0, 0.1, 0.2, 0.30000000000000004, 0.5, 1.0, 1.1, 2.0, 2.5, 3.3, 4.0, 8.0]


def scan(nodes: dict, cpu: float, ram: float):
    """The scheduler as the engine used to write it: the first node in rank
    order with the greatest (priority, used RAM share) among those it fits."""
    best, best_key = None, None
    for rank in sorted(nodes):
        priority, a_cpu, a_ram, u_cpu, u_ram = nodes[rank]
        if cpu <= a_cpu - u_cpu and ram <= a_ram - u_ram:
            key = (priority, u_ram / a_ram if a_ram > 0 else 1.0)
            if best is None or key > best_key:
                best, best_key = rank, key
    return best


ops = st.lists(st.tuples(st.sampled_from(["query", "update", "remove", "add"]), st.integers(0, 11),
                         st.sampled_from(AMOUNTS), st.sampled_from(AMOUNTS)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 10]), st.sampled_from(ALLOCS), st.sampled_from(AMOUNTS),
                          st.sampled_from(AMOUNTS)), min_size=1, max_size=12), ops)
def test_best_fit_equals_the_scan(initial, operations):
    nodes = {}
    for rank, (priority, (a_cpu, a_ram), u_cpu, u_ram) in enumerate(initial):
        nodes[rank] = (priority, a_cpu, a_ram, min(u_cpu, a_cpu), min(u_ram, a_ram))
    removed = {}
    index = BestFit((rank, *values) for rank, values in nodes.items())
    for op, rank, x, y in operations:
        if op == "query":
            assert index.best(x, y) == scan(nodes, x, y)
        elif op == "update" and rank in nodes:
            priority, a_cpu, a_ram, _, _ = nodes[rank]
            nodes[rank] = (priority, a_cpu, a_ram, x, y)  # may overcommit: the index must not care
            index.update(rank, x, y)
        elif op == "remove" and rank in nodes:
            removed[rank] = nodes.pop(rank)
            index.remove(rank)
        elif op == "add" and rank in removed:
            nodes[rank] = removed.pop(rank)
            index.add(rank, *nodes[rank])
        assert (rank in index) == (rank in nodes)
    for cpu in AMOUNTS:
        assert index.best(cpu, cpu * 2) == scan(nodes, cpu, cpu * 2)


def test_ties_go_to_the_lowest_rank_and_priority_beats_packing():
    index = BestFit([(2, 1, 4.0, 8.0, 1.0, 4.0), (0, 1, 4.0, 8.0, 1.0, 4.0), (5, 10, 4.0, 8.0, 0.0, 0.0)])
    assert index.best(1.0, 1.0) == 5  # on-prem (priority 10), even empty, before a fuller cloud node
    index.remove(5)
    assert index.best(1.0, 1.0) == 0  # equal share: the lowest rank
    assert index.best(4.0, 1.0) is None  # CPU fits nowhere
    index.update(2, 1.0, 6.0)
    assert index.best(1.0, 2.0) == 2  # the fuller node takes it
    assert index.best(1.0, 3.0) == 0  # ... unless it does not fit there
