"""More idioms of course notebooks (idioms3.py), checkpointed in one real
kernel and restored in the next: regular expression matches, and a text
file opened with ``newline=""`` as the csv module asks."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms3.ipynb"


def _saved_and_restarted(start_in_work, run_cell, control_request, setup, probe):
    """Runs `setup`, checkpoints, probes the old kernel (what the restored
    one must answer), kills it (no checkpoint at exit) and starts the next."""
    km, kc = start_in_work(SESSION)
    out = run_cell(kc, setup)
    assert out["error"] is None, out
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"], reply
    before = run_cell.facts(kc, probe)
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    km, kc = start_in_work(SESSION)
    first = run_cell(kc, "print('first cell')")
    assert first["error"] is None, first
    return kc, reply, first["stderr"], before


MATCHES = r'''
import re
log = "2026-03-01 ERROR disk full\n2026-03-02 INFO ok\n2026-03-03 ERROR fan\n"
m = re.search(r"(?P<day>\d{4}-\d\d-\d\d) ERROR (?P<what>.*)", log)
errors = list(re.finditer(r"^(\S+) ERROR (.*)$", log, re.M))
by_day = {e.group(1): e for e in errors}
'''
MATCHES_PROBE = r'''
import json
print("FACTS" + json.dumps({"m": [m.groupdict(), m.span(), m.string is log],
                            "errors": [[e.groups(), e.span(), e.pos] for e in errors],
                            "by_day": by_day["2026-03-03"] is errors[1]}))
'''


def test_regular_expression_matches_are_restored(start_in_work, run_cell, control_request):
    """`m = re.search(...)` and `list(re.finditer(...))` were 'Not restored'
    (re.Match cannot be pickled)."""
    kc, reply, report, before = _saved_and_restarted(start_in_work, run_cell, control_request, MATCHES,
                                                     MATCHES_PROBE)
    assert reply["not_restorable"] == [] and {"m", "errors", "by_day"} <= set(reply["migrated"]), reply
    assert "Not restored" not in report, report
    assert run_cell.facts(kc, MATCHES_PROBE) == before
    assert before["m"] == [{"day": "2026-03-01", "what": "disk full"}, [0, 26], True]


CSV_FILE = r'''
import csv
with open("grades.csv", "w", newline="") as w:
    csv.writer(w).writerows([["name", "note"], ["ada", "line one\r\nline two"], ["bob", "ok"]])
rows = open("grades.csv", newline="")
header = rows.readline()
'''
CSV_PROBE = r'''
import csv, json
print("FACTS" + json.dumps({"rest": list(csv.reader(rows)), "header": header}))
rows.seek(0)
'''


def test_a_csv_file_opened_with_newline_empty_reads_the_same_after_restore(start_in_work, run_cell,
                                                                           control_request):
    """Opened again without newline='', the quoted field's '\\r\\n' was read
    as '\\n': a different value, and nothing said."""
    kc, _, report, before = _saved_and_restarted(start_in_work, run_cell, control_request, CSV_FILE, CSV_PROBE)
    assert "Not restored" not in report and "rows" not in report, report
    assert before["rest"] == [["ada", "line one\r\nline two"], ["bob", "ok"]]
    assert run_cell.facts(kc, CSV_PROBE) == before


NANS = r'''
import numpy as np
x = np.nan
counts = {np.nan: 3, 1.0: 2}
y = float("nan")
ys = [y, y]
'''
NANS_PROBE = r'''
import json
print("FACTS" + json.dumps([x is np.nan, counts.get(np.nan), y in ys, ys[0] is ys[1] is y]))
'''


def test_nans_a_notebook_finds_by_identity_are_found_again(start_in_work, run_cell, control_request):
    """`counts.get(np.nan)` answered None after the restore, `x is np.nan`
    and `y in ys` were False: pickle saves a float by value."""
    kc, _, report, before = _saved_and_restarted(start_in_work, run_cell, control_request, NANS, NANS_PROBE)
    assert before == [True, 3, True, True]
    assert run_cell.facts(kc, NANS_PROBE) == before


def test_cell_outputs_come_back_or_are_named(start_in_work, run_cell, control_request):
    """`_` read '' after a restore (`_ * 2` went on with ''), Out was empty:
    nothing said. Outputs that are a variable's object or a number or a
    short text come back; the others are named."""
    km, kc = start_in_work(SESSION)
    for cell in ("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})", "df", "3 + 4", "df.describe()",
                 "'hello'"):
        assert run_cell(kc, cell)["error"] is None
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["ok"]
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    km, kc = start_in_work(SESSION)
    first = run_cell(kc, "print(repr(_), _2 is df is Out[2], _3, sorted(Out), repr(__), ___)")
    assert first["error"] is None, first
    assert first["stdout"].split() == ["'hello'", "True", "7", "[2,", "3,", "5]", "''", "7"], first
    assert "WARNING: the outputs of 1 cell(s) are not carried (Out[4]: " in first["stderr"], first["stderr"]
    assert "__ reads ''" in first["stderr"]
    out = run_cell(kc, "_ * 2")
    assert out["error"] is None and run_cell(kc, "print(_)")["stdout"].strip() == "hellohello"


STREAMS = r'''
import functools, sys, threading
eprint = functools.partial(print, file=sys.stderr)
out = sys.stdout
sinks = {"log": sys.stderr, "raw": sys.__stderr__}
done = threading.Thread(target=lambda: None)
done.start()
done.join()
later = threading.Thread(target=lambda: None)
'''


def test_the_standard_streams_held_in_variables_are_the_next_kernels(start_in_work, run_cell, control_request):
    """`out = sys.stdout` was not restored ("an open file handle"), and
    `partial(print, file=sys.stderr)` failed as "cannot pickle
    '_hashlib.HMAC' object"; a finished thread was called "a running
    thread" (it comes back finished now, and one not started yet comes
    back to be started: test_kernel_restore_idioms8)."""
    kc, reply, report, _ = _saved_and_restarted(start_in_work, run_cell, control_request, STREAMS,
                                                "print('FACTS[]')")
    assert reply["not_restorable"] == [], reply
    out = run_cell(kc, "eprint('to the notebook')\nprint(out is sys.stdout, sinks['log'] is sys.stderr, "
                       "sinks['raw'] is sys.__stderr__)\nout.write('via out\\n')")
    assert out["error"] is None, out
    assert out["stdout"] == "True True True\nvia out\n" and out["stderr"] == "to the notebook\n", out


MAGICS = r'''
from IPython.core.magic import register_line_magic, register_cell_magic, Magics, magics_class, line_magic
@register_line_magic
def hello(line):
    return "hi " + line
@register_cell_magic("upper")
def to_upper(line, cell):
    return cell.upper()
get_ipython().register_magic_function(lambda line: 42, "line", "anon")
@magics_class
class Mine(Magics):
    @line_magic
    def mine(self, line):
        return "mine"
get_ipython().register_magics(Mine)
'''


def test_the_notebooks_own_magics_are_registered_again_or_named(start_in_work, run_cell, control_request):
    """`%hello` was 'not found' after the restore, though `hello` came back."""
    kc, _, report, _ = _saved_and_restarted(start_in_work, run_cell, control_request, MAGICS, "print('FACTS[]')")
    out = run_cell(kc, "said = %hello you\nprint(said)")
    assert out["error"] is None and out["stdout"] == "hi you\n", out
    out = run_cell(kc, "%%upper\nshout")
    assert out["error"] is None, out
    assert "WARNING: the notebook's magic(s) %anon, %mine are not carried" in report, report


PROXIES = r'''
import weakref
class Node:
    def __init__(self, name, parent=None):
        self.name = name
        self.parent = None if parent is None else weakref.proxy(parent)
root = Node("root")
leaf = Node("leaf", root)
dead = weakref.proxy(Node("temporary"))
'''


def test_a_dead_weak_proxy_no_longer_fails_every_checkpoint_and_a_live_one_stays_a_proxy(
        start_in_work, run_cell, control_request):
    """A dead weakref.proxy in the namespace failed every checkpoint
    (ReferenceError: ok false, nothing saved); a live one came back as a
    separate copy of its object."""
    kc, reply, report, _ = _saved_and_restarted(start_in_work, run_cell, control_request, PROXIES,
                                                "print('FACTS[]')")
    assert reply["not_restorable"] == [] and {"root", "leaf", "dead"} <= set(reply["migrated"]), reply
    out = run_cell(kc, "root.name = 'renamed'\nprint(type(leaf.parent).__name__, leaf.parent.name)\n"
                       "try:\n    dead.name\nexcept ReferenceError:\n    print('dead')")
    assert out["error"] is None and out["stdout"].split() == ["ProxyType", "renamed", "dead"], out


SLOTTED_GETATTR = r'''
class Config:
    __slots__ = ("_d",)
    def __init__(self, **values):
        self._d = values
    def __getattr__(self, key):
        return self._d[key]
cfg = Config(lr=0.1)
x = 1
'''


def test_a_slotted_class_whose_getattr_raises_key_error_no_longer_fails_every_checkpoint(
        start_in_work, run_cell, control_request):
    """KeyError: '__dict__' from the notebook's __getattr__, in the kernel's
    scan for arrays: every checkpoint failed (ok false, nothing saved)."""
    kc, reply, report, _ = _saved_and_restarted(start_in_work, run_cell, control_request, SLOTTED_GETATTR,
                                                "print('FACTS[]')")
    assert reply["not_restorable"] == [] and "Not restored" not in report, (reply, report)
    out = run_cell(kc, "print(cfg.lr, x)")
    assert out["error"] is None and out["stdout"] == "0.1 1\n", out


TEMP_DIR_AND_A_FILE = r'''
import tempfile, os
td = tempfile.TemporaryDirectory()
with open(os.path.join(td.name, "results.csv"), "w") as w:
    w.write("epoch,loss\n1,0.5\n")
with open("notes.txt", "w") as w:
    w.write("a\n")
notes = open("notes.txt")
'''


def test_a_restore_that_meets_a_variable_it_cannot_load_does_not_delete_a_temporary_directory(
        start_in_work, run_cell, control_request):
    """The loader starts a pass over when a record fails: the first pass's
    TemporaryDirectory, its cleanup armed again, was dropped, and its
    cleanup deleted the folder (results.csv with it) that the restored `td`
    names."""
    km, kc = start_in_work(SESSION)
    assert run_cell(kc, TEMP_DIR_AND_A_FILE)["error"] is None
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["ok"]
    kc.stop_channels()
    km.shutdown_kernel(now=True)  # a node lost: no exit, the folder stays
    with open(start_in_work.work / "notes.txt", "a") as changed:
        changed.write("changed since\n")
    km, kc = start_in_work(SESSION)
    out = run_cell(kc, "import gc\ngc.collect()\nprint(os.listdir(td.name))")
    assert out["error"] is None and out["stdout"] == "['results.csv']\n", out
    assert "  - notes: could not be loaded (ValueError: open file " in out["stderr"], out["stderr"]


GENERATORS = r'''
data = [3, 1, 2]
squares = (x * x for x in data if x > 1)
next(squares)
upper = (c.upper() for c in "abc")
def countdown(n, *, step=1):
    while n > 0:
        yield n
        n -= step
later = countdown(5, step=2)
done = (x for x in range(2))
list(done)
midway = countdown(3)
next(midway)
'''


def test_generators_whose_state_is_known_come_back_and_the_others_are_named(start_in_work, run_cell,
                                                                             control_request):
    """Every generator was 'not restored', even one run to its end, a
    generator expression (its state: where its iterator is) or one not
    started yet (its arguments)."""
    kc, reply, report, before = _saved_and_restarted(
        start_in_work, run_cell, control_request, GENERATORS,
        "print('FACTS' + __import__('json').dumps([list(squares), list(upper), list(later), list(done)]))")
    assert [item["name"] for item in reply["not_restorable"]] == ["midway"], reply
    assert before == [[4], ["A", "B", "C"], [5, 3, 1], []]
    out = run_cell(kc, "print(list(squares), list(upper), list(later), list(done), type(done).__name__)")
    assert out["error"] is None and out["stdout"] == "[4] ['A', 'B', 'C'] [5, 3, 1] [] generator\n", out
    assert "  - midway: generator: a generator (its paused execution state cannot be saved)" in report, report
