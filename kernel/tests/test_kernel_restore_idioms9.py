"""Idioms of an eleventh round, checkpointed in one real kernel and restored
in the next: objects of the notebook's own helper files, thread objects."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms9.ipynb"

BANK = r'''
with open("bank.py", "w") as out:
    out.write("import threading\n"
              "class Account:\n"
              "    def __init__(self, owner):\n"
              "        self.owner, self.balance, self.lock = owner, 0, threading.Lock()\n"
              "    def deposit(self, n):\n"
              "        with self.lock:\n"
              "            self.balance += n\n")
import bank
acct = bank.Account("ann")
acct.deposit(30)
'''
BANK_PROBE = r'''
import json
print("FACTS" + json.dumps([acct.owner, acct.balance, acct.lock.locked(), type(acct) is bank.Account]))
'''


def test_an_object_of_the_notebooks_own_helper_file_holding_a_lock_comes_back(moved, run_cell):
    """`bank.Account` of a bank.py next to the notebook, holding a free
    threading.Lock, was 'not restorable' as 'a bank.Account holding a thread
    lock (a lock of a library's object ...)': it is the student's own code."""
    reply, before, kc = moved(SESSION, BANK, lambda kc: run_cell.facts(kc, BANK_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == ["ann", 30, False, True]
    assert run_cell.facts(kc, BANK_PROBE) == before
    out = run_cell(kc, "acct.deposit(5)\nprint(acct.balance)")
    assert out["error"] is None and out["stdout"] == "35\n", out


LOCALS = r'''
import threading
class Session(threading.local):
    def __init__(self, user):
        self.user, self.calls = user, 0
state = threading.local()
state.user, state.items = "ann", [1, 2]
session = Session("guest")
session.user = "bob"
gate = threading.Barrier(2)
'''
LOCALS_PROBE = r'''
import json, threading
seen = []
t = threading.Thread(target=lambda: seen.append([hasattr(state, "user"), session.user, session.calls]))
t.start(); t.join()
print("FACTS" + json.dumps([state.user, state.items, session.user, seen[0], gate.parties, gate.n_waiting]))
'''


def test_thread_locals_come_back_with_the_cells_threads_attributes(moved, run_cell):
    """`state = threading.local(); state.user = ...` was 'not restorable'
    (cannot pickle '_thread._local' object). The checkpoint is written on
    the control thread: it must read the cells' thread's attributes."""
    reply, before, kc = moved(SESSION, LOCALS, lambda kc: run_cell.facts(kc, LOCALS_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == ["ann", [1, 2], "bob", [False, "guest", 0], 2, 0]
    assert run_cell.facts(kc, LOCALS_PROBE) == before
    out = run_cell(kc, "t = threading.Thread(target=gate.wait); t.start(); gate.wait(5); t.join(); print('met')")
    assert out["error"] is None and out["stdout"] == "met\n", out


ABCS = r'''
import abc, collections.abc, numbers
class Deck:
    def __init__(self):
        self.cards = [1, 2, 3]
    def __len__(self):
        return len(self.cards)
    def __getitem__(self, i):
        return self.cards[i]
collections.abc.Sequence.register(Deck)
class Money:
    pass
numbers.Number.register(Money)
class Shape(abc.ABC):
    pass
Shape.register(Money)
class Plain:
    pass
deck, wallet = Deck(), Money()
'''
ABCS_PROBE = r'''
import json
print("FACTS" + json.dumps([isinstance(deck, collections.abc.Sequence), isinstance(wallet, numbers.Number),
                            isinstance(wallet, Shape), isinstance(deck, numbers.Number),
                            issubclass(Plain, collections.abc.Sequence), list(reversed(deck))]))
'''


def test_notebook_classes_registered_with_a_librarys_abc_are_registered_again(moved, run_cell):
    """`collections.abc.Sequence.register(Deck)` was lost in a move: the ABC,
    a library's, is imported afresh, and isinstance(deck, Sequence) was False."""
    reply, before, kc = moved(SESSION, ABCS, lambda kc: run_cell.facts(kc, ABCS_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == [True, True, True, False, False, [3, 2, 1]]
    assert run_cell.facts(kc, ABCS_PROBE) == before


CACHED = r'''
with open("loading.py", "w") as out:
    out.write("import functools\n"
              "CALLS = []\n"
              "@functools.cache\n"
              "def load(n):\n"
              "    CALLS.append(n)\n"
              "    return (n,) * n\n"
              "@functools.lru_cache(maxsize=8)\n"
              "def area(w, h=1):\n"
              "    CALLS.append((w, h))\n"
              "    return w * h\n"
              "load(1)\n")
import loading
from loading import load
load(3), load(2), loading.area(2, h=3), loading.area(4)
'''
CACHED_PROBE = r'''
import json
print("FACTS" + json.dumps([loading.load.cache_info().currsize, loading.area.cache_info().currsize, load(3), load(1),
                            loading.area(2, h=3), load is loading.load, loading.CALLS]))
'''


def test_a_cached_function_of_the_notebooks_own_module_keeps_its_results(moved, run_cell):
    """`@functools.cache def load(n)` in a loading.py next to the notebook came
    back with an empty cache while the module's CALLS list was carried: the
    next load(3) ran (and appended) again."""
    reply, before, kc = moved(SESSION, CACHED, lambda kc: run_cell.facts(kc, CACHED_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == [3, 2, [3, 3, 3], [1], 6, True, [1, 3, 2, [2, 3], [4, 1]]]
    assert run_cell.facts(kc, CACHED_PROBE) == before


DISPATCH = r'''
with open("shapes.py", "w") as out:
    out.write("import functools\n"
              "@functools.singledispatch\n"
              "def describe(x):\n"
              "    return 'a thing'\n"
              "@describe.register\n"
              "def _(x: int):\n"
              "    return 'a number'\n")
import shapes, json
class Circle:
    r = 2
@shapes.describe.register
def _(c: Circle):
    return f"a circle of radius {c.r}"
ring = Circle()
'''
DISPATCH_PROBE = r'''
print("FACTS" + json.dumps([shapes.describe(ring), shapes.describe(3), shapes.describe("s"),
                            shapes.describe.dispatch(Circle) is not shapes.describe.dispatch(object)]))
'''


def test_a_notebook_class_registered_with_a_helper_files_singledispatch_function_dispatches_again(moved, run_cell):
    """`@shapes.describe.register def _(c: Circle)` on a singledispatch function
    of a helper file was lost in a move: describe(ring) gave the fallback."""
    reply, before, kc = moved(SESSION, DISPATCH, lambda kc: run_cell.facts(kc, DISPATCH_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == ["a circle of radius 2", "a number", "a thing", True]
    assert run_cell.facts(kc, DISPATCH_PROBE) == before
