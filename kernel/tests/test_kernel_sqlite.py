"""A SQL course's notebook: sqlite3 connections, cursors and rows,
checkpointed by one real kernel (on its control thread, as at every
shutdown) and restored in the next.

A database in memory comes back with its tables and rows; a database file
is opened again, never created; what cannot come back (uncommitted changes
of a file, temporary tables, functions set on the connection) is said in
the first cell's output, and a file gone fails its variable by name.
"""

import json

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "sql/lesson.ipynb"

SETUP = r'''
import sqlite3, json
import pandas as pd
db = sqlite3.connect(":memory:")
db.row_factory = sqlite3.Row
db.execute("create table students(id integer primary key, name text not null, year int)")
db.executemany("insert into students(name, year) values (?, ?)", [("ann", 1), ("bob", 2), ("cy", 2)])
db.commit()
db.execute("attach database 'courses.db' as c")
db.execute("create table c.courses(code text, title text)")
db.execute("insert into c.courses values ('SQL1', 'Databases')")
db.commit()
db.execute("create temp table scratch(v)")
db.execute("insert into students(name, year) values ('dee', 3)")  # not committed
cur = db.cursor()
cur.execute("select name from students order by id")
first = cur.fetchone()
top = db.execute('select name, year * 10 as "score x" from students where id = 2').fetchone()

class Gradebook:
    def __init__(self, path):
        self.conn = sqlite3.connect(path)
        self.conn.execute("create table if not exists grades(name, grade)")
        self.conn.commit()
    def add(self, name, grade):
        self.conn.execute("insert into grades values (?, ?)", (name, grade))
        self.conn.commit()
    def count(self):
        return self.conn.execute("select count(*) from grades").fetchone()[0]

book = Gradebook("grades.db")
book.add("ann", "A")
closed = sqlite3.connect(":memory:")
closed.close()
'''

PROBE = r'''
try:
    closed.execute("select 1")
    closed_state = "open"
except sqlite3.ProgrammingError as exc:
    closed_state = str(exc)
print(json.dumps({
    "students": [tuple(r) for r in db.execute("select * from students order by id")],
    "row_factory": db.row_factory is sqlite3.Row,
    "courses": [tuple(r) for r in db.execute("select * from c.courses")],
    "cursor_on_db": cur.connection is db, "cursor_rows": cur.row_factory is None,
    "first": list(first) if first is not None else None,
    "top": [list(top), top.keys(), top["score x"]],
    "book": book.count(), "closed": closed_state,
    "pandas": pd.read_sql("select count(*) as n from students", db)["n"].tolist(),
}, sort_keys=True))
'''


def _state(run_cell, kc):
    out = run_cell(kc, PROBE)
    assert out["error"] is None, out
    return json.loads(out["stdout"])


def test_a_sql_lesson_restores_its_databases_and_says_what_it_cannot(
        start_in_work, stop_elastic_kernel, run_cell):
    work = start_in_work.work
    km, kc = start_in_work(SESSION)
    assert run_cell(kc, SETUP)["error"] is None
    before = _state(run_cell, kc)
    assert before["students"][-1] == [4, "dee", 3] and before["book"] == 1
    stop_elastic_kernel(km, kc)

    km, kc = start_in_work(SESSION)
    first = run_cell(kc, "1")
    assert first["error"] is None
    report = first["stderr"] + first["stdout"]
    assert "Not restored" not in report, report
    after = _state(run_cell, kc)
    assert after == before
    # The notes: the in-memory transaction came back committed, the temporary
    # table and the cursor's unread rows did not come back.
    assert f"Note: db: the sqlite3 connection is open again (in memory, {work / 'courses.db'})" in report
    assert "its open transaction in memory comes back committed" in report
    assert "its 1 temporary table(s) are not carried" in report
    assert "Note: cur: a new cursor on the same connection" in report
    assert f"Note: book: the sqlite3 connection is open again ({work / 'grades.db'})" in report
    # Cells use the restored connections (made on the cells' thread) and
    # write through to the files.
    out = run_cell(kc, "book.add('bob', 'B'); db.execute(\"insert into c.courses values ('SQL2', 'More')\"); "
                       "db.commit(); print(book.count(), sqlite3.connect('courses.db').execute("
                       "'select count(*) from courses').fetchone()[0])")
    assert out["error"] is None and out["stdout"].split() == ["2", "2"], out
    stop_elastic_kernel(km, kc)


def test_uncommitted_changes_to_a_file_are_said_and_a_file_gone_fails_by_name(
        start_in_work, stop_elastic_kernel, run_cell):
    work = start_in_work.work
    km, kc = start_in_work(SESSION)
    setup = ("import sqlite3\n"
             "shop = sqlite3.connect('shop.db')\n"
             "shop.execute('create table items(x)'); shop.commit()\n"
             "shop.execute('insert into items values (1)')\n"  # never committed
             "scratch = sqlite3.connect('scratch.db')\n"
             "kept = 42\n")
    assert run_cell(kc, setup)["error"] is None
    stop_elastic_kernel(km, kc)
    (work / "scratch.db").unlink()

    km, kc = start_in_work(SESSION)
    first = run_cell(kc, "print(kept, shop.execute('select count(*) from items').fetchone()[0])")
    assert first["error"] is None and first["stdout"].split() == ["42", "0"], first
    report = first["stderr"]
    assert "shop: the sqlite3 connection is open again" in report
    assert "changes it had not committed to a file are lost" in report
    assert (f"scratch: could not be loaded (ValueError: sqlite3 database {work / 'scratch.db'}: "
            "the file cannot be opened") in report, report
    # opened again, never created
    assert not (work / "scratch.db").exists()
    stop_elastic_kernel(km, kc)
