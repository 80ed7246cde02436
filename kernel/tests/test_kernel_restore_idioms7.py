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


FORMATS = r'''
import numpy as np, pandas as pd
pd.options.display.float_format = "{:,.2f}".format
def short(x):
    return f"{x:.1f}"
np.set_printoptions(formatter={"float": short})
table = pd.DataFrame({"price": [1234.5678, 2.0]})
'''
FORMATS_PROBE = r'''
import json
print("FACTS" + json.dumps([repr(table), repr(np.array([1.2345, 2.0]))]))
'''


def test_display_formatters_come_back(moved, run_cell):
    """`pd.options.display.float_format = "{:,.2f}".format` and a numpy
    `formatter` of a notebook function were "not carried": the next cell
    printed the table and the array in full precision again."""
    reply, before, kc = moved(SESSION, FORMATS, lambda kc: run_cell.facts(kc, FORMATS_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert "1,234.57" in before[0] and before[1] == "array([1.2, 2.0])", before
    out = run_cell(kc, FORMATS_PROBE)
    assert "not carried" not in out["stderr"], out
    assert run_cell.facts(kc, FORMATS_PROBE) == before
