"""Progress bars and widgets a notebook leaves (round 14), checkpointed in one real kernel and restored in
the next."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms12.ipynb"

BARS = r'''
from tqdm import tqdm, trange
total = 0
for i in tqdm(range(100)):
    total += i
half = 0
for i in trange(100):
    if i == 40:
        break
    half += i
bar = tqdm(total=50, desc="epochs")
bar.update(20)
'''


def test_a_progress_bar_kept_in_a_variable_comes_back_usable(moved, run_cell):
    """`bar = tqdm(total=50)` saved fine and failed at restore (RecursionError: the stream wrapper every bar
    holds answers any name, and pickle asked it for __setstate__ before it had a stream)."""
    reply, _, kc = moved(SESSION, BARS)
    assert reply["ok"] and "bar" in reply["migrated"], reply
    first = run_cell(kc, "import json\nprint('FACTS' + json.dumps([total, half, bar.n, bar.total, bar.desc]))")
    assert first["error"] is None and "bar" not in first["stderr"].split("Not restored")[-1], first
    line = [ln for ln in first["stdout"].splitlines() if ln.startswith("FACTS")][0]
    assert line == 'FACTS[4950, 780, 20, 50, "epochs"]'
    assert run_cell.facts(kc, "bar.update(5)\nbar.close()\nprint('FACTS' + json.dumps([bar.n, bar.disable]))") == [
        25, True]
