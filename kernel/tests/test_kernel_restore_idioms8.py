"""Idioms of a tenth round, checkpointed in one real kernel and restored in
the next: what was named 'not restorable' though its state can be read
(a ContextVar's value in the cells' context, csv readers, free locks)."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms8.ipynb"

CONTEXT = r'''
import contextvars
request_id = contextvars.ContextVar("request_id", default="none")
unit = contextvars.ContextVar("unit")
scale = contextvars.ContextVar("scale", default=1.0)
request_id.set("r-42")
unit.set(["kg"])
def tagged(x):
    return f"{request_id.get()}:{x}{unit.get()[0]}"
'''
CONTEXT_PROBE = r'''
import json
print("FACTS" + json.dumps([request_id.get(), unit.get(), scale.get(), tagged(3), request_id.name]))
'''


def test_context_variables_come_back_with_their_value_in_the_cells(moved, run_cell):
    """`request_id = ContextVar(...); request_id.set("r-42")` was 'not
    restorable' (cannot pickle '_contextvars.ContextVar' object), and every
    function reading it failed after a move."""
    reply, before, kc = moved(SESSION, CONTEXT, lambda kc: run_cell.facts(kc, CONTEXT_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == ["r-42", ["kg"], 1.0, "r-42:3kg", "request_id"]
    assert run_cell.facts(kc, CONTEXT_PROBE) == before
    assert run_cell.facts(kc, "request_id.set('r-43')\n" + CONTEXT_PROBE)[0] == "r-43"  # a cell's set holds
    assert run_cell.facts(kc, CONTEXT_PROBE)[0] == "r-43"


THREADS = r'''
import csv, threading
with open("marks.csv", "w", newline="") as out:
    out.write("name,mark\nAnn,5\nBob,4\nCid,3\n")
f = open("marks.csv", newline="")
marks = csv.DictReader(f)
first = next(marks)
class Account:
    def __init__(self):
        self.lock, self.balance = threading.Lock(), 0
    def deposit(self, n):
        with self.lock:
            self.balance += n
acct = Account()
workers = [threading.Thread(target=acct.deposit, args=(10,)) for _ in range(4)]
for w in workers:
    w.start()
for w in workers:
    w.join()
done = threading.Event()
done.set()
del workers, w
'''
THREADS_PROBE = r'''
import json
print("FACTS" + json.dumps([first, marks.line_num, acct.balance, acct.lock.locked(), done.is_set()]))
'''


def test_a_threads_lesson_with_a_csv_reader_and_locks_comes_back(moved, run_cell):
    """A DictReader read part-way, an account whose deposits took its lock,
    an Event set: each was 'not restorable' (cannot pickle '_csv.reader',
    '_thread.lock' object; a thread synchronisation object)."""
    reply, before, kc = moved(SESSION, THREADS, lambda kc: run_cell.facts(kc, THREADS_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == [{"name": "Ann", "mark": "5"}, 2, 40, False, True]
    assert run_cell.facts(kc, THREADS_PROBE) == before
    out = run_cell(kc, "acct.deposit(5)\nprint([row['name'] for row in marks], acct.balance)")
    assert out["error"] is None and out["stdout"] == "['Bob', 'Cid'] 45\n", out


THREADS_TO_START = r'''
import threading
results = []
def work(n):
    results.append(n * 2)
later = threading.Thread(target=work, args=(21,), name="worker", daemon=True)
jobs = {"next": threading.Thread(target=work, args=(1,))}
done = threading.Thread(target=work, args=(0,), name="first")
done.start()
done.join()
'''


def test_threads_not_started_yet_or_finished_come_back(moved, run_cell):
    """`later = threading.Thread(target=work)`, started in a later cell, was
    'not restorable' ("a thread not started yet"), and a finished one ("a
    thread that has finished"): their locks could not be carried. They
    come back as they were: one to start, one that ran."""
    reply, _, kc = moved(SESSION, THREADS_TO_START)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "print(done.is_alive(), done.name, results)\nlater.start(); later.join()\n"
                       "jobs['next'].start(); jobs['next'].join()\nprint(results, later.name, later.daemon)")
    assert out["error"] is None and out["stdout"] == "False first [0]\n[0, 42, 2] worker True\n", out
    out = run_cell(kc, "done.start()")
    assert "threads can only be started once" in out["error"], out
