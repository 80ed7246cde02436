"""Idioms of a sixth probe round, through the serializer and the loader
directly: memoryview slices of a memoryview over a buffer no variable holds;
nested builtin containers deeper than the recursion limit."""

import sys
import threading

from elastichub_kernel import deepstack, loader, serializer


def _round_trip(ns):
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert dumped.failed == {}
    return loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {"__name__": "__main__"})


def test_slices_of_a_memoryview_over_an_unnamed_bytearray_still_write_into_it():
    """`buf = memoryview(bytearray(8)); head = buf[:4]`: the zero-copy idiom.
    head came back over a copy of its bytes, silently: a write through it no
    longer showed in buf."""
    buf = memoryview(bytearray(b"abcdefgh"))
    ns = {"head": buf[:4], "tail": buf[4:], "buf": buf}
    values, failed, notes = _round_trip(ns)
    assert failed == {} and notes == {}
    assert bytes(values["buf"]) == b"abcdefgh" and bytes(values["tail"]) == b"efgh"
    assert values["head"].obj is values["buf"].obj is values["tail"].obj
    values["head"][0] = ord("z")
    values["tail"][-1] = ord("q")
    assert bytes(values["buf"]) == b"zbcdefgq"


def test_a_partial_memoryview_alone_is_still_a_copy_of_what_it_covers():
    big = bytearray(1000)
    ns = {"small": memoryview(big)[:4], "part": memoryview(big)[10:20]}
    values, failed, notes = _round_trip(ns)
    assert failed == {} and notes == {}
    assert len(values["small"].obj) == 4 and len(values["part"].obj) == 10


def test_nested_lists_tuples_and_dicts_deeper_than_the_recursion_limit_are_saved():
    """A cons list `node = [i, node]` 5,000 long (or a chain of tuples and
    dicts) could not be saved flat (only objects of plain classes can): it
    was named 'excessively deep recursion' and lost."""
    node = None
    for i in range(5000):
        node = [i, node]
    chain = None
    for i in range(3000):
        chain = (i, {"next": chain})
    limit = sys.getrecursionlimit()
    values, failed, notes = _round_trip({"node": node, "chain": chain, "n": 1})
    assert failed == {} and notes == {} and sys.getrecursionlimit() == limit
    seen, cell = [], values["node"]
    while cell is not None:
        seen.append(cell[0])
        cell = cell[1]
    assert seen == list(range(4999, -1, -1))
    depth, link = 0, values["chain"]
    while link is not None:
        depth, link = depth + 1, link[1]["next"]
    assert depth == 3000


def test_nesting_past_the_deep_limit_is_named_and_the_rest_saved(monkeypatch):
    limit = sys.getrecursionlimit()
    monkeypatch.setattr(serializer, "DEEP_LIMIT", limit + 1000)
    node = None
    for i in range(limit + 5000):
        node = [i, node]
    ns = {"node": node, "n": 1}
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert sys.getrecursionlimit() == limit
    assert list(dumped.failed) == ["node"] and "recursion" in dumped.failed["node"]
    assert [r.name for r in dumped.records] == ["n"]


class _AsksTheCellsThread:
    """Pickled as a sqlite3 connection is: by the thread waiting for the pickling one."""

    answered: list = []

    def __reduce__(self):
        self.answered.append(deepstack.on_waiting_thread(threading.current_thread))
        return int, (0,)


def test_the_retry_of_deep_nesting_under_a_raised_limit_still_asks_the_cells_thread():
    """Under a limit the notebook raised (a helper thread pickles), the retry
    runs on a second helper: a sqlite3 connection must still be read by the
    cells' thread, which waits for the first (the second one waited for it)."""
    node = None
    for i in range(30_000):
        node = [i, node]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    try:
        result = deepstack.run(serializer.dump_namespace, {"node": node, "db": _AsksTheCellsThread()}, ["node", "db"])
    finally:
        sys.setrecursionlimit(limit)
    assert result.failed == {} and [r.name for r in result.records] == ["node", "db"]
    assert _AsksTheCellsThread.answered and set(_AsksTheCellsThread.answered) == {threading.main_thread()}
