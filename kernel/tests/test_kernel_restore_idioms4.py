"""Idioms of a sixth probe round, checkpointed in one real kernel and
restored in the next: a cons list deeper than the recursion limit, and
slices of a memoryview over a buffer no variable names."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms4.ipynb"

SETUP = r'''
node = None
for i in range(6000):
    node = (i, node)
buf = memoryview(bytearray(8))
head, tail = buf[:4], buf[4:]
'''
PROBE = r'''
import json, sys
cell, seen = node, 0
while cell is not None:
    seen, cell = seen + 1, cell[1]
head[0] = 7
tail[3] = 9
print("FACTS" + json.dumps({"node": [node[0], seen], "buf": list(buf), "limit": sys.getrecursionlimit()}))
'''


def test_a_cons_list_deeper_than_the_recursion_limit_and_memoryview_slices(moved, run_cell):
    """`node = (i, node)` 6,000 long was 'not restorable' (excessively deep
    recursion); `head = buf[:4]` came back over a copy, no longer writing
    into `buf`."""
    reply, before, kc = moved(SESSION, SETUP, lambda kc: run_cell.facts(kc, PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    first = run_cell(kc, "buf[0] = buf[7] = 0")
    assert first["error"] is None and "Not restored" not in first["stderr"], first
    assert run_cell.facts(kc, PROBE) == before
    assert before["node"] == [5999, 6000] and before["buf"] == [7, 0, 0, 0, 0, 0, 0, 9]
