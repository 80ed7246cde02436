"""Idioms of a ninth probe round, checkpointed in one real kernel and
restored in the next: what a session switches in IPython between cells
(an alias, %pdb)."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms7.ipynb"

MODES = r'''
ip = get_ipython()
ip.run_line_magic("alias", "greet echo hello from %s")
ip.run_line_magic("unalias", "ls")
ip.run_line_magic("pdb", "on")
'''
MODES_PROBE = r'''
import json
ip = get_ipython()
print("FACTS" + json.dumps([dict(ip.alias_manager.aliases).get("greet"), ip.alias_manager.is_alias("ls"),
                            ip.call_pdb]))
'''


def test_aliases_and_pdb_come_back(moved, run_cell):
    """`%alias greet echo ...` was "not found" after a move, a removed alias
    was back, and `%pdb on` was off, with no word in the restore report."""
    reply, before, kc = moved(SESSION, MODES, lambda kc: run_cell.facts(kc, MODES_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == ["echo hello from %s", False, True]
    assert run_cell.facts(kc, MODES_PROBE) == before
    out = run_cell(kc, "%greet world")
    assert out["error"] is None and "hello from world" in out["stdout"], out
