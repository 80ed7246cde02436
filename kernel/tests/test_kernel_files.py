"""File objects of open() across a checkpoint and a restore, in real kernels.

What `with open(...) as f` leaves is a closed file: it comes back closed,
not named as lost. A file the notebook keeps open (a reader half-way
through, a log it appends to, a results file it writes) is opened again on
the same file at the same place, never truncated; a file gone or changed
since, a deleted file and a pipe are named.
"""

import json

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "files/reading.ipynb"

SETUP = r'''
import os, json
os.makedirs("data", exist_ok=True)
with open("data/poem.txt", "w") as f:
    f.write("one\ntwo\nthree\nfour\n")
with open("data/poem.txt") as done:
    words = done.read().split()
reader = open("data/poem.txt")
first = reader.readline()
log = open("run.log", "a")
log.write("epoch 1\n")
results = open("results.csv", "w")
results.write("x,y\n1,2\n")            # not flushed yet: the checkpoint flushes it
raw = open("data/poem.txt", "rb")
raw.read(4)
both = open("data/poem.txt", "r+")
both.seek(4)
latin = open("latin.txt", "w", encoding="latin-1", errors="replace")
latin.write("café €")
unbuffered = open("data/poem.txt", "rb", buffering=0)
os.chdir("data")                       # their names stay relative to where they were opened
'''

PROBE = r'''
print(json.dumps({n: [repr(v), v.closed, None if v.closed else v.tell()] for n, v in
                  [("f", f), ("done", done), ("reader", reader), ("log", log), ("results", results),
                   ("raw", raw), ("both", both), ("latin", latin), ("unbuffered", unbuffered)]}, sort_keys=True))
'''


def test_closed_and_open_files_come_back_where_they_were(
        start_in_work, stop_elastic_kernel, run_cell):
    work = start_in_work.work
    km, kc = start_in_work(SESSION)
    assert run_cell(kc, SETUP)["error"] is None
    before = run_cell(kc, PROBE)
    assert before["error"] is None, before
    stop_elastic_kernel(km, kc)

    km, kc = start_in_work(SESSION)
    first = run_cell(kc, "print(os.getcwd())")
    assert "Not restored" not in first["stderr"], first
    assert first["stdout"].strip() == str(work / "data")
    assert json.loads(run_cell(kc, PROBE)["stdout"]) == json.loads(before["stdout"])
    out = run_cell(kc, "print(repr(reader.readline()), raw.read(4), unbuffered.read(3)); both.write('TWO'); "
                       "log.write('epoch 2\\n'); results.write('3,4\\n'); latin.write(' ok'); "
                       "[h.close() for h in (log, results, both, latin)]")
    assert out["error"] is None and out["stdout"].strip() == "'two\\n' b'two\\n' b'one'", out
    assert (work / "run.log").read_text() == "epoch 1\nepoch 2\n"
    assert (work / "results.csv").read_text() == "x,y\n1,2\n3,4\n"
    assert (work / "data" / "poem.txt").read_text() == "one\nTWO\nthree\nfour\n"
    assert (work / "latin.txt").read_bytes() == "café ? ok".encode("latin-1")
    stop_elastic_kernel(km, kc)


def test_a_file_changed_gone_or_deleted_while_open_and_a_pipe_are_named(
        start_in_work, stop_elastic_kernel, run_cell):
    work = start_in_work.work
    km, kc = start_in_work(SESSION)
    setup = ("import os\n"
             "for name in ('changed.txt', 'gone.txt', 'deleted.txt', 'grows.log'):\n"
             "    open(name, 'w').write('data\\n')\n"
             "changed, gone, grows = open('changed.txt'), open('gone.txt'), open('grows.log', 'a')\n"
             "deleted = open('deleted.txt'); os.remove('deleted.txt')\n"
             "r, w = os.pipe(); pipe = open(r)\n"
             "kept = 'still here'\n")
    assert run_cell(kc, setup)["error"] is None
    stop_elastic_kernel(km, kc)
    (work / "changed.txt").write_text("other data\n")
    (work / "gone.txt").unlink()
    with open(work / "grows.log", "a") as more:  # a file opened to append may grow
        more.write("more\n")

    km, kc = start_in_work(SESSION)
    first = run_cell(kc, "print(kept); grows.write('mine\\n'); grows.close()")
    assert first["error"] is None and first["stdout"].strip() == "still here", first
    report = first["stderr"]
    assert f"changed: could not be loaded (ValueError: open file {work / 'changed.txt'}: the file changed" in report
    assert f"gone: could not be loaded (ValueError: open file {work / 'gone.txt'}: the file cannot be read" in report
    assert "deleted: _io.TextIOWrapper cannot be pickled (TypeError: an open handle of deleted.txt, which was " \
           "deleted" in report, report
    assert "pipe: _io.TextIOWrapper cannot be pickled (TypeError: an open file handle of descriptor" in report
    assert (work / "grows.log").read_text() == "data\nmore\nmine\n"
    stop_elastic_kernel(km, kc)
