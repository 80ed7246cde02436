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


EDITED = r'''
import importlib, os, sys
os.makedirs("course", exist_ok=True)
sys.path.append(os.path.abspath("course"))
def write(area):
    with open("course/shapes.py", "w") as f:
        f.write(f"class Square:\n    def __init__(self, side):\n        self.side = side\n"
                f"    def area(self):\n        return {area}\n")
    st = os.stat("course/shapes.py")
    os.utime("course/shapes.py", ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))  # a later edit
write("self.side ** 2")
import shapes
square = shapes.Square(3)
'''
EDIT_AFTER_IMPORT = "write('-1')  # edited in the editor, not imported again"
EDIT_AND_RELOAD = "write('self.side * 4'); importlib.reload(shapes)"


def _moved_after(start_in_work, run_cell, control_request, cells):
    """Runs `cells` one by one (as a student does), checkpoints, kills the kernel; the next one restores."""
    km, kc = start_in_work(SESSION)
    for cell in cells:
        assert run_cell(kc, cell)["error"] is None
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return reply, start_in_work(SESSION)[1]


def test_a_module_edited_after_its_import_is_named_at_restore(start_in_work, run_cell, control_request):
    """`import shapes`, then `shapes.py` edited on disk (not reloaded) before
    the move: the session's `square.area()` was 9, the restore loaded the
    edited file and it gave -1, without a word (the checkpoint stamped the
    file as it was at the checkpoint, so nothing looked changed)."""
    reply, kc = _moved_after(start_in_work, run_cell, control_request,
                             [EDITED, "assert square.area() == 9", EDIT_AFTER_IMPORT, "assert square.area() == 9"])
    assert reply["ok"], reply
    first = run_cell(kc, "print(square.area())")
    assert "WARNING: module shapes: its file" in first["stderr"] and "square" in first["stderr"], first


def test_a_module_reloaded_after_an_edit_is_not_named(start_in_work, run_cell, control_request):
    """The same edit followed by importlib.reload: the session runs the
    file's code, so the restore says nothing of a change."""
    reply, kc = _moved_after(start_in_work, run_cell, control_request,
                             [EDITED, EDIT_AND_RELOAD, "assert shapes.Square(3).area() == 12"])
    assert reply["ok"], reply
    first = run_cell(kc, "print(shapes.Square(3).area())")
    assert first["stdout"] == "12\n" and "WARNING: module shapes" not in first["stderr"], first


MAIN = r'''
import __main__, sys
me = sys.modules["__main__"]
__main__.course = "week3"
'''
MAIN_PROBE = r'''
import json
print("FACTS" + json.dumps([__main__ is me, vars(me) is globals(), me.course]))
'''


def test_the_notebooks_own_module_comes_back_as_itself(moved, run_cell):
    """`import __main__` (or `sys.modules["__main__"]`), the module whose
    namespace the cells run in, was 'not restorable' ("a module that cannot
    be imported by name"): the next cell's `__main__.course` was a NameError."""
    reply, before, kc = moved(SESSION, MAIN, lambda kc: run_cell.facts(kc, MAIN_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == [True, True, "week3"], before
    assert run_cell.facts(kc, MAIN_PROBE) == before
