"""Idioms of a seventh probe round, checkpointed in one real kernel and
restored in the next: compressed files and zip archives, closed (what a
`with` block leaves) and open for reading."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms5.ipynb"

ARCHIVES = r'''
import bz2, gzip, io, lzma, zipfile
with gzip.open("rows.csv.gz", "wt") as out:
    out.write("a,b\n1,2\n3,4\n")
with zipfile.ZipFile("data.zip", "w") as archive:
    archive.writestr("x.txt", "x in zip")
with bz2.open("notes.bz2", "wb") as packed:
    packed.write(b"bz2 bytes")
with zipfile.ZipFile("data.zip") as done:
    names = done.namelist()
rows = gzip.open("rows.csv.gz", "rt")
header = rows.readline()
raw = gzip.open("rows.csv.gz")
raw.read(4)
bz = bz2.open("notes.bz2")
bz.read(3)
inner = lzma.LZMAFile(io.BytesIO(lzma.compress(b"lzma in memory")))
inner.read(5)
z = zipfile.ZipFile("data.zip")
'''
PROBE = r'''
import json
print("FACTS" + json.dumps({
    "closed": [out.closed, type(out.buffer).__name__, out.buffer.name, archive.fp is None, done.namelist(),
               packed.closed, type(packed).__name__],
    "open": [rows.readline(), raw.read().decode(), bz.read().decode(), inner.read().decode(), z.read("x.txt").decode(),
             z.namelist(), type(inner).__name__],
}))
'''


def test_compressed_files_and_zip_archives_come_back_closed_or_open_where_they_were(moved, run_cell):
    """`with gzip.open(...) as out` / `with ZipFile(...) as archive` left
    closed objects named 'not restorable' as "an open file handle" at every
    restore, and the ones open for reading were lost too."""
    reply, before, kc = moved(SESSION, ARCHIVES, lambda kc: run_cell.facts(kc, PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    first = run_cell(kc, "pass")
    assert first["error"] is None and "Not restored" not in first["stderr"], first
    assert run_cell.facts(kc, PROBE) == before
    assert before["open"][:5] == ["1,2\n", "1,2\n3,4\n", " bytes", "in memory", "x in zip"], before


WRITING = r'''
import gzip, zipfile
log = gzip.open("log.gz", "wt")
log.write("started\n")
pack = zipfile.ZipFile("out.zip", "w")
pack.writestr("a.txt", "a")
'''


def test_compressed_files_and_zip_archives_open_for_writing_are_named_with_why(moved):
    reply = moved(SESSION, WRITING)[0]
    reasons = {item["name"]: item["reason"] for item in reply["not_restorable"]}
    assert sorted(reasons) == ["log", "pack"], reply
    assert "open for writing" in reasons["log"] and "log.gz" in reasons["log"], reasons
    assert "open for writing" in reasons["pack"] and "out.zip" in reasons["pack"], reasons


NEXT = r'''
with open("scores.csv", "w", newline="") as out:
    out.write("name,score\r\nada,3\r\nbob,5\r\ncy,7\r\n")
f = open("scores.csv")
header = next(f)
for line in f:
    if line.startswith("ada"):
        break
'''


def test_a_text_file_read_with_next_comes_back_where_it_was(moved, run_cell):
    """`header = next(f)` (or a for loop left with break) turns the file's
    tell() off: the file was 'not restorable' ("telling position disabled
    by next() call")."""
    reply, _, kc = moved(SESSION, NEXT)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "print(repr(header), repr(next(f)), list(f))")
    assert out["error"] is None and "Not restored" not in out["stderr"], out
    assert out["stdout"].strip() == r"'name,score\n' 'bob,5\n' ['cy,7\n']", out


NPZ = r'''
import numpy as np
np.savez("assignment.npz", X=np.arange(6).reshape(2, 3), y=np.array([1, 0]))
data = np.load("assignment.npz")
X = data["X"]
with np.load("assignment.npz") as done:
    y = done["y"]
'''


def test_an_npz_file_loaded_with_np_load_comes_back_open_on_its_file(moved, run_cell):
    """`data = np.load("assignment.npz")` (an assignment's arrays) was 'not
    restorable' (can't pickle 'BagObj' object)."""
    reply, _, kc = moved(SESSION, NPZ)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "print(data.files, data['y'].tolist(), data.f.X.sum(), done.f, done.zip, y.tolist())")
    assert out["error"] is None and "Not restored" not in out["stderr"], out
    assert out["stdout"].strip() == "['X', 'y'] [1, 0] 15 None None [1, 0]", out


ENGINE = r'''
import sqlalchemy as sa
import pandas as pd
engine = sa.create_engine("sqlite:///school.db")
pd.DataFrame({"name": ["ada", "bob"], "grade": [5, 4]}).to_sql("grades", engine, index=False)
auto = engine.execution_options(isolation_level="AUTOCOMMIT")
memory = sa.create_engine("sqlite://")
'''


def test_an_sqlalchemy_engine_comes_back_on_its_database(moved, run_cell):
    """`engine = create_engine("sqlite:///school.db")`, which every later
    `pd.read_sql(query, engine)` cell uses, was 'not restorable' (cannot
    pickle '_thread.RLock' object); one of a database in memory is named
    with why."""
    reply, _, kc = moved(SESSION, ENGINE)
    reasons = {item["name"]: item["reason"] for item in reply["not_restorable"]}
    assert list(reasons) == ["memory"] and "in memory" in reasons["memory"], reply
    out = run_cell(kc, "print(pd.read_sql('select grade from grades', engine).grade.sum(), engine.url, "
                       "auto.get_execution_options()['isolation_level'], auto.pool is engine.pool)")
    assert out["error"] is None, out
    assert out["stdout"].split() == ["9", "sqlite:///school.db", "AUTOCOMMIT", "True"], out


GZIP_NEXT = r'''
import gzip
with gzip.open("rows.csv.gz", "wt") as out:
    out.write("h1,h2\n1,2\n3,4\n")
rows = gzip.open("rows.csv.gz", "rt")
header = next(rows)
'''


def test_a_compressed_text_file_read_with_next_comes_back_where_it_was(moved, run_cell):
    """`header = next(rows)` over `gzip.open(path, "rt")` failed the
    checkpoint of `rows` (OSError: telling position disabled by next() call)."""
    reply, _, kc = moved(SESSION, GZIP_NEXT)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "print(repr(header), list(rows))")
    assert out["error"] is None and out["stdout"].strip() == r"'h1,h2\n' ['1,2\n', '3,4\n']", out


CLOSED_BUFFERS = r'''
import io
import pandas as pd
with io.StringIO() as info:
    pd.DataFrame({"a": [1]}).info(buf=info)
    text = info.getvalue()
with io.BytesIO() as raw:
    raw.write(b"png bytes")
'''


def test_in_memory_files_a_with_block_closed_come_back_closed(moved, run_cell):
    """`with io.StringIO() as info:` left a closed buffer that failed at
    every checkpoint ('not restorable': I/O operation on closed file)."""
    reply, _, kc = moved(SESSION, CLOSED_BUFFERS)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "print(type(info).__name__, info.closed, type(raw).__name__, raw.closed, 'RangeIndex' in text)")
    assert out["error"] is None and out["stdout"].split() == ["StringIO", "True", "BytesIO", "True", "True"], out


FUTURES = r'''
import concurrent.futures, threading
def slow_square(v):
    if v < 0:
        raise ValueError(f"negative: {v}")
    return v * v
with concurrent.futures.ThreadPoolExecutor(2) as pool:
    futures = [pool.submit(slow_square, v) for v in (2, 3, -1)]
gate = threading.Event()
waiting = concurrent.futures.ThreadPoolExecutor(1).submit(gate.wait)
skipped = concurrent.futures.Future()
skipped.cancel()
'''


def test_finished_futures_come_back_with_their_results_and_a_pending_one_is_named(moved, run_cell):
    """`futures = [pool.submit(f, v) ...]`, read with `f.result()` in later
    cells, failed as a whole list (cannot pickle '_thread.RLock' object)."""
    reply, _, kc = moved(SESSION, FUTURES, lambda kc: run_cell(kc, "gate.set()"))
    reasons = {item["name"]: item["reason"] for item in reply["not_restorable"]}
    assert "futures" not in reasons and "skipped" not in reasons, reply
    assert "not done" in reasons["waiting"], reasons
    out = run_cell(kc, "print([f.result() for f in futures[:2]], repr(futures[2].exception()), futures[0].done(), "
                       "skipped.cancelled())")
    assert out["error"] is None, out
    assert out["stdout"].strip() == "[4, 9] ValueError('negative: -1') True True", out


POOLS = r'''
import concurrent.futures
with concurrent.futures.ThreadPoolExecutor(3) as pool:
    squares = list(pool.map(abs, [-1, -2]))
with concurrent.futures.ProcessPoolExecutor(2) as procs:
    pass
running = concurrent.futures.ThreadPoolExecutor(1)
'''


def test_executors_a_with_block_shut_down_come_back_shut_down(moved, run_cell):
    """`with ThreadPoolExecutor() as pool:` left a shut-down pool named 'a
    pool of workers' at every restore; one still running is named."""
    reply, _, kc = moved(SESSION, POOLS)
    assert [item["name"] for item in reply["not_restorable"]] == ["running"], reply
    out = run_cell(kc, "print(type(pool).__name__, pool._max_workers, type(procs).__name__)\n"
                       "try:\n    pool.submit(abs, 1)\nexcept RuntimeError as e:\n    print(e)")
    assert out["error"] is None, out
    assert out["stdout"].splitlines() == ["ThreadPoolExecutor 3 ProcessPoolExecutor",
                                          "cannot schedule new futures after shutdown"], out


CONNECTION = r'''
import sqlalchemy as sa
engine = sa.create_engine("sqlite:///school.db")
with engine.begin() as setup:
    setup.execute(sa.text("create table marks (m int)"))
    setup.execute(sa.text("insert into marks values (1)"))
conn = engine.connect()
conn.execute(sa.text("insert into marks values (2)"))
idle = engine.connect()
'''


def test_an_open_sqlalchemy_connection_is_open_again_and_its_lost_transaction_said(moved, run_cell):
    """`conn = engine.connect()`, used by every later query cell, was 'not
    restorable' (cannot pickle '_thread.RLock' object)."""
    reply, _, kc = moved(SESSION, CONNECTION)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "print(conn.closed, idle.closed, conn.engine is engine, setup.closed, "
                       "conn.execute(sa.text('select count(*) from marks')).scalar())")
    assert out["error"] is None and out["stdout"].split() == ["False", "False", "True", "True", "1"], out
    assert "conn: " in out["stderr"] and "rolled back" in out["stderr"] and "idle: " not in out["stderr"], out


ZIP_MEMBER = r'''
import zipfile
import pandas as pd
with zipfile.ZipFile("data.zip", "w") as archive:
    archive.writestr("marks.csv", "m\n1\n2\n")
with zipfile.ZipFile("data.zip") as archive, archive.open("marks.csv") as member:
    marks = pd.read_csv(member)
'''


def test_a_zip_member_a_with_block_closed_comes_back_closed(moved, run_cell):
    """`with archive.open("marks.csv") as member: pd.read_csv(member)` left
    a closed member named 'an open file handle' at every restore."""
    reply, _, kc = moved(SESSION, ZIP_MEMBER)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "print(type(member).__name__, member.closed, member.name, int(marks.m.sum()))\n"
                       "try:\n    member.read()\nexcept ValueError as e:\n    print(e)")
    assert out["error"] is None, out
    assert out["stdout"].splitlines() == ["ZipExtFile True marks.csv 3", "read from closed file."], out


ENGINE_ARGUMENTS = r'''
import sqlite3
import sqlalchemy as sa
dated = sa.create_engine("sqlite:///dates.db", connect_args={"detect_types": sqlite3.PARSE_DECLTYPES},
                         pool_size=3, pool_pre_ping=True)
with dated.begin() as setup:
    setup.execute(sa.text("create table days (d date)"))
    setup.execute(sa.text("insert into days values ('2024-03-31')"))
'''


def test_an_sqlalchemy_engine_keeps_its_connect_args_and_pool_settings(moved, run_cell):
    """An engine made with connect_args (detect_types: dates read as dates)
    came back without them, without a word: dates read as text."""
    probe = ("with dated.connect() as c:\n    day = c.execute(sa.text('select d from days')).scalar()\n"
             "print(type(day).__name__, dated.pool.size(), dated.pool._pre_ping)")
    reply, before, kc = moved(SESSION, ENGINE_ARGUMENTS, lambda kc: run_cell(kc, probe))
    assert reply["ok"] and before["stdout"].split() == ["date", "3", "True"], before
    after = run_cell(kc, probe)
    assert after["error"] is None and after["stdout"] == before["stdout"], after


HOLDERS = r'''
import threading
def held(lock):
    lock.acquire()  # a free one is made again
    return lock
class Experiment:
    def __init__(self):
        self.name = "run 1"
        self.results = {"trials": [1.5, 2.5], "guard": held(threading.Lock())}
exp = Experiment()
config = {"paths": ["a", "b"], "workers": [held(threading.RLock())]}
'''


def test_a_value_that_cannot_be_pickled_names_where_inside_it_the_culprit_is(moved):
    """`exp` was 'cannot be pickled (TypeError: cannot pickle
    '_thread.lock' object)': nothing said which of its attributes, among
    many, held the lock."""
    reply = moved(SESSION, HOLDERS)[0]
    reasons = {item["name"]: item["reason"] for item in reply["not_restorable"]}
    assert "exp.results['guard']" in reasons["exp"], reasons
    assert "config['workers'][0]" in reasons["config"], reasons


CSV_CHUNKS = r'''
import pandas as pd
pd.DataFrame({"id": range(10), "city": list("abcdeabcde")}).to_csv("trips.csv", index=False)
reader = pd.read_csv("trips.csv", chunksize=4, dtype={"id": "int32"})
first = next(reader)
'''


def test_a_chunked_csv_reader_comes_back_at_its_next_chunk(moved, run_cell):
    """`reader = pd.read_csv(path, chunksize=4)`, stepped through cell by
    cell, was 'not restorable' (no default __reduce__ due to non-trivial
    __cinit__)."""
    probe = "print([c.id.tolist() for c in reader], str(first.id.dtype))"
    reply, before, kc = moved(SESSION, CSV_CHUNKS, lambda kc: run_cell(kc, probe))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    after = run_cell(kc, probe)
    assert after["error"] is None and after["stdout"] == before["stdout"], after
    assert before["stdout"].strip() == "[[4, 5, 6, 7], [8, 9]] int32", before


SOUP = r'''
from bs4 import BeautifulSoup
soup = BeautifulSoup("<html><body><table><tr><td>ada</td><td>5</td></tr>"
                     "<tr><td>bob</td><td>4</td></tr></table><p>end</p></body></html>", "html.parser")
table = soup.find("table")
rows = table.find_all("tr")
name = rows[1].td.string
'''


def test_parts_of_a_parsed_page_are_parts_of_the_restored_page(moved, run_cell):
    """`table = soup.find("table")` came back a copy hanging apart from
    `soup` (BeautifulSoup saves the page as its markup, parsed again):
    `table.decompose()` no longer removed it from `soup`."""
    reply, _, kc = moved(SESSION, SOUP)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "print(soup.find('table') is table, rows[0].parent is table, name.parent is rows[1].td)\n"
                       "table.decompose()\nprint(soup.find('td'), soup.body.p.string)")
    assert out["error"] is None and out["stdout"].split() == ["True", "True", "True", "None", "end"], out


TEXT_OVER_BYTES = r'''
import io
payload = "name;grade\nada;5\nbob;4\n".encode("utf-8")
lines = io.TextIOWrapper(io.BytesIO(payload), encoding="utf-8")
header = lines.readline()
with io.TextIOWrapper(io.BytesIO(payload), encoding="utf-8") as done:
    count = len(done.readlines())
'''


def test_a_text_file_over_bytes_in_memory_comes_back_where_it_was(moved, run_cell):
    """`io.TextIOWrapper(io.BytesIO(downloaded), encoding=...)` (decoding a
    download line by line) was 'not restorable' ("an open file handle over
    something other than a file"), closed by a with block too."""
    reply, _, kc = moved(SESSION, TEXT_OVER_BYTES)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "print(repr(header), lines.readlines(), done.closed, count)")
    assert out["error"] is None, out
    assert out["stdout"].strip() == r"'name;grade\n' ['ada;5\n', 'bob;4\n'] True 3", out
