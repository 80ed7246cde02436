"""The idioms of idioms6.py, through the serializer and the loader directly."""

import contextvars
import csv
import io
import itertools
import logging
import sched
import sys
import threading
import types
import unittest.mock

import numpy as np

from elastichub_kernel import libstate, loader, serializer, typeprobe


def _round_trip(ns):
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert dumped.failed == {}
    return loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {"__name__": "__main__"})


def test_csv_readers_part_way_through_a_file_go_on_from_their_row(tmp_path):
    """`rows = csv.reader(f); header = next(rows)` and a DictReader read
    part-way failed their variable: "cannot pickle '_csv.reader' object"."""
    path = tmp_path / "marks.csv"
    path.write_text('name;mark\n"Ann\nLee";5\nBob;4\nCid;3\n', newline="")
    f = open(path, newline="")
    rows = csv.reader(f, delimiter=";")
    header = next(rows)
    assert next(rows) == ["Ann\nLee", "5"]  # a record over two lines: line_num counts both
    g = open(path, newline="")
    records = csv.DictReader(g, delimiter=";")
    next(records)
    lines = csv.reader(["a,b", "c,'d,e'"], quotechar="'")
    next(lines)
    values, failed, notes = _round_trip({"f": f, "rows": rows, "header": header, "records": records,
                                         "lines": lines, "fresh": csv.reader(io.StringIO("x,y\n"))})
    assert failed == {} and notes == {}
    rows, records = values["rows"], values["records"]
    assert rows.line_num == 3 and rows.dialect.delimiter == ";"
    assert next(rows) == ["Bob", "4"] and rows.line_num == 4
    assert values["f"].readline() == "Cid;3\n"  # the reader reads the restored file itself
    assert records.fieldnames == ["name", "mark"] and records.line_num == 3
    assert list(records) == [{"name": "Bob", "mark": "4"}, {"name": "Cid", "mark": "3"}]
    assert next(values["lines"]) == ["c", "d,e"] and list(values["fresh"]) == [["x", "y"]]
    # a restored reader is saved again as the reader it is
    again, failed, _ = _round_trip({"rows": csv.reader(io.StringIO("p\nq\n"))} | {"back": rows})
    assert failed == {} and again["back"].line_num == 4


def test_csv_writers_write_on_into_their_restored_file(tmp_path):
    path = tmp_path / "out.csv"
    f = open(path, "w", newline="")
    writer = csv.writer(f, delimiter="|", quoting=csv.QUOTE_ALL)
    writer.writerow(["a", 1])
    memory = io.StringIO()
    table = csv.DictWriter(memory, fieldnames=["x", "y"], lineterminator="\n")
    table.writeheader()
    values, failed, notes = _round_trip({"f": f, "writer": writer, "memory": memory, "table": table})
    assert failed == {} and notes == {}
    values["writer"].writerow(["b", 2])
    values["table"].writerow({"x": 1, "y": 2})
    values["f"].close()
    assert path.read_bytes() == b'"a"|"1"\r\n"b"|"2"\r\n'
    assert values["memory"].getvalue() == "x,y\n1,2\n"


def test_free_locks_and_events_come_back_and_a_held_lock_is_named():
    """A class holding `self.lock = threading.Lock()`, a free RLock and an
    Event were 'not restorable' (cannot pickle '_thread.lock' object)."""
    notebook = {"__name__": "__main__"}  # a class of the notebook's: a library's keeps its locks to itself
    exec("import threading\nclass Account:\n    def __init__(self):\n"
         "        self.lock, self.balance = threading.Lock(), 10\n", notebook)
    ready, idle = threading.Event(), threading.Event()
    ready.set()
    rlock = threading.RLock()
    with rlock:  # used, then released
        pass
    ns = {"account": notebook["Account"](), "rlock": rlock, "ready": ready, "idle": idle}
    assert [typeprobe.unrestorable_reason(v) for v in ns.values()] == [None] * 4
    values, failed, notes = _round_trip(ns)
    assert failed == {} and notes == {}
    account = values["account"]
    assert account.balance == 10 and account.lock.acquire(blocking=False)
    assert values["rlock"].acquire(blocking=False) and values["rlock"].acquire(blocking=False)
    assert values["ready"].is_set() and not values["idle"].is_set()

    held = threading.Lock()
    held.acquire()
    owned = threading.RLock()
    owned.acquire()
    assert "held" in typeprobe.unrestorable_reason(held) and "held" in typeprobe.unrestorable_reason(owned)
    dumped = serializer.dump_namespace({"box": {"guard": held}, "n": 1}, ["box", "n"])
    assert "a thread lock that is held" in dumped.failed["box"] and "at box['guard']" in dumped.failed["box"]
    assert [r.name for r in dumped.records] == ["n"]
    # a library's object holding a lock (an executor, an ORM session's engine, a scheduler) is named as before
    dumped = serializer.dump_namespace({"jobs": [sched.scheduler()]}, ["jobs"])
    assert "a sched.scheduler holding a thread lock" in dumped.failed["jobs"] and "at jobs[0]" in \
        dumped.failed["jobs"]


def test_what_locks_kept_from_a_copy_is_named_when_a_copy_would_differ(tmp_path):
    """Locks made a logging handler and a thread fail pickling; now a
    handler on a logger (carried with the logging set-up) and a running
    thread are named, and a handler on no logger comes back."""
    log = logging.getLogger("elastichub-test-train")
    used = logging.FileHandler(tmp_path / "run.log")
    log.addHandler(used)
    gate = threading.Event()
    running = threading.Thread(target=gate.wait)
    running.start()
    loose = logging.StreamHandler(io.StringIO())  # (pytest holds sys.stderr)
    loose.setLevel(logging.WARNING)
    try:
        ns = {"used": [used], "running": [running], "loose": loose}
        dumped = serializer.dump_namespace(ns, list(ns))
    finally:
        gate.set()
        log.removeHandler(used)
        used.close()
    assert "a handler of a logger" in dumped.failed["used"] and "getLogger('elastichub-test-train')" in \
        dumped.failed["used"] and "at used[0]" in dumped.failed["used"]
    assert "a running thread" in dumped.failed["running"] and "at running[0]" in dumped.failed["running"]
    values, failed, _ = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {})
    assert failed == {} and values["loose"].level == logging.WARNING


def test_pairwise_part_way_goes_on_from_its_pair():
    """`pairs = itertools.pairwise(stops); next(pairs)` failed: "cannot
    pickle 'itertools.pairwise' object"."""
    stops = iter(["A", "B", "C", "D"])
    pairs = itertools.pairwise(stops)
    assert next(pairs) == ("A", "B")
    done = itertools.pairwise("ab")
    list(done)
    values, failed, notes = _round_trip({"stops": stops, "pairs": pairs, "fresh": itertools.pairwise([1, 2, 3]),
                                         "done": done})
    assert failed == {} and notes == {}
    assert next(values["pairs"]) == ("B", "C")
    again, failed, _ = _round_trip({"pairs": values["pairs"]})  # restored part-way, saved part-way again
    assert failed == {} and list(again["pairs"]) == [("C", "D")]
    assert list(values["fresh"]) == [(1, 2), (2, 3)] and list(values["done"]) == []


def test_frompyfunc_ufuncs_and_a_called_vectorize_come_back():
    """`add = np.frompyfunc(lambda a, b: a + b, 2, 1)` failed: pickle looked
    it up by name in numpy ('<lambda> (vectorized)')."""
    add = np.frompyfunc(lambda a, b: a + b, 2, 1)
    mul = np.frompyfunc(lambda a, b: a * b, 2, 1, identity=1)
    divmod_ = np.frompyfunc(divmod, 2, 2)
    square = np.vectorize(lambda x: x * x)
    square(np.arange(3))
    values, failed, notes = _round_trip({"add": add, "mul": mul, "divmod_": divmod_, "square": square,
                                         "plain": np.add})
    assert failed == {} and notes == {}
    assert list(values["add"](np.arange(3), 10)) == [10, 11, 12] and values["add"].identity is None
    assert values["mul"].reduce(np.array([], dtype=object)) == 1
    assert [list(a) for a in values["divmod_"]([7, 9], 2)] == [[3, 4], [1, 1]]
    assert list(values["square"](np.arange(3))) == [0, 1, 4] and values["plain"] is np.add


def test_a_mock_is_named_with_why():
    """A Mock was 'excessively deep recursion required'."""
    mock = unittest.mock.MagicMock(return_value=3)
    mock(1)
    assert "unittest.mock Mock" in typeprobe.unrestorable_reason(mock)
    dumped = serializer.dump_namespace({"doubles": [mock]}, ["doubles"])
    assert "unittest.mock Mock" in dumped.failed["doubles"] and "at doubles[0]" in dumped.failed["doubles"]


def test_a_context_variable_restored_off_the_cells_thread_gets_its_value_before_the_next_cell():
    """A live move's delta is loaded on the control thread, whose context is
    not the cells': the value is set in the cells' context before the next
    cell (libstate), and a checkpoint before that cell saves it still."""
    var = contextvars.ContextVar("request_id", default="none")
    token = var.set("r-42")
    ns = {"var": var}
    dumped = serializer.dump_namespace(ns, ["var"], user_ns=ns)
    var.reset(token)
    box = {}

    def load():  # on another thread, in its own context
        box["values"] = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers),
                                              {"__name__": "__main__"})[0]

    thread = threading.Thread(target=load)
    thread.start()
    thread.join()
    restored = box["values"]["var"]
    cells = contextvars.Context()
    assert cells.run(restored.get) == "none"  # no cell ran yet
    again, failed, _ = _round_trip({"var": restored})  # a checkpoint before the next cell: saved with its value
    assert failed == {} and again["var"].get() == "r-42"
    cells.run(libstate.apply_to_cells_context)
    assert cells.run(restored.get) == "r-42" and restored.name == "request_id"


CACHED = '''
import functools
@functools.cache
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(40)
@functools.lru_cache(maxsize=None, typed=True)
def shape(a, b=1, *, c=2):
    return (a, b, c)
shape(1); shape(1.0); shape(2, b=3); shape("x", c=(1, 2)); shape((1, 2))
@functools.cache
def rows(n):
    return [n]
rows(1)
'''


def _notebook_round_trip(source, names):
    """`source` run as a notebook's cells, `names` saved and loaded: (values, notes)."""
    ns = {"__name__": "__main__"}
    exec(source, ns)
    dumped = serializer.dump_namespace(ns, names, user_ns=ns)
    assert dumped.failed == {}
    target = {"__name__": "__main__"}
    values, failed, notes = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), target)
    target.update(values)  # the functions' globals
    assert failed == {}
    return values, notes


def test_an_unbounded_cache_comes_back_with_its_plain_results():
    """`@functools.cache def fib(n)` came back with an empty cache: a
    memoized recursion (or a table of costly results) was computed again."""
    values, notes = _notebook_round_trip(CACHED, ["fib", "shape", "rows"])
    fib, shape = values["fib"], values["shape"]
    assert fib.cache_info().currsize == 41 and shape.cache_info().currsize == 5
    assert notes["fib"] == ("fib() is restored with its 41 cached result(s); its hit and miss counts (cache_info) "
                            "are not carried")
    assert fib(40) == 102334155 and fib.cache_info().misses == 0
    assert [shape(1), shape(1.0), shape(2, b=3), shape("x", c=(1, 2)), shape((1, 2))] == [
        (1, 1, 2), (1.0, 1, 2), (2, 3, 2), ("x", 1, (1, 2)), ((1, 2), 1, 2)]
    assert shape.cache_info().misses == 0 and type(shape(1.0)[0]) is float  # typed: 1 and 1.0 apart
    assert values["rows"].cache_info().currsize == 0 and "empty cache" in notes["rows"]  # a list: not carried


BOUNDED = '''
import functools
@functools.lru_cache
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(60)
@functools.lru_cache(maxsize=3, typed=True)
def shape(a, b=1, *, c=2):
    return (a, b, c)
shape(1); shape(2, b=3); shape(1.0); shape("x", c=(1, 2))
def outer():
    k = 2
    @functools.lru_cache(maxsize=2)
    def twice(v):
        return v * k
    return twice
twice = outer(); twice(3)
'''


def test_a_bounded_cache_comes_back_with_its_plain_results_in_their_order():
    """`@functools.lru_cache` (maxsize 128) came back empty: its results sit
    in a linked list, put back by calls whose function only gives them."""
    values, notes = _notebook_round_trip(BOUNDED, ["fib", "shape", "twice"])
    fib, shape = values["fib"], values["shape"]
    assert fib.cache_info().currsize == 61 and "its 61 cached result(s)" in notes["fib"]
    misses = fib.cache_info().misses
    assert fib(60) == 1548008755920 and fib.cache_info().misses == misses
    assert fib.__wrapped__.__code__.co_name == "fib" and fib.__wrapped__.__kwdefaults__ is None
    # the least recently used is still the first to go: shape(2, b=3)
    assert shape.cache_info().currsize == 3
    assert shape("y") == ("y", 1, 2)
    hits = shape.cache_info().hits
    assert [shape(1.0), shape("x", c=(1, 2))] == [(1.0, 1, 2), ("x", 1, (1, 2))]
    assert shape.cache_info().hits == hits + 2
    assert shape(2, b=3) == (2, 3, 2) and shape.cache_info().hits == hits + 2  # evicted: computed again
    # a closure's function cannot be given other code: its cache comes back empty, said
    assert values["twice"](3) == 6 and "empty cache (1 result(s)" in notes["twice"]


def test_conditions_and_semaphores_no_thread_waits_on_come_back():
    """A producer/consumer's `cv = threading.Condition(lock)` and a
    `BoundedSemaphore(3)` were 'a thread synchronisation object'."""
    lock = threading.Lock()
    ready = threading.Condition(lock)
    slots = threading.BoundedSemaphore(3)
    slots.acquire()
    plain = threading.Semaphore(0)
    ns = {"lock": lock, "ready": ready, "slots": slots, "plain": plain, "again": threading.Condition()}
    assert [typeprobe.unrestorable_reason(v) for v in ns.values()] == [None] * 5
    values, failed, notes = _round_trip(ns)
    assert failed == {} and notes == {}
    ready, slots = values["ready"], values["slots"]
    assert ready._lock is values["lock"]  # the lock it was made over, shared
    with ready:
        assert not values["lock"].acquire(blocking=False)
        assert not ready.wait(timeout=0)
    assert values["lock"].acquire(blocking=False)
    assert slots.acquire(blocking=False) and slots.acquire(blocking=False) and not slots.acquire(blocking=False)
    slots.release()
    slots.release()
    slots.release()
    try:
        slots.release()  # bounded: past its 3
        raise AssertionError("released past its bound")
    except ValueError:
        pass
    assert not values["plain"].acquire(blocking=False)
    with values["again"]:
        values["again"].notify_all()

    waiting = threading.Condition()

    def wait_once():
        with waiting:
            waiting.wait(5)

    waiter = threading.Thread(target=wait_once)
    waiter.start()
    while not waiting._waiters:
        threading.Event().wait(0.01)
    try:
        dumped = serializer.dump_namespace({"box": [waiting]}, ["box"])
    finally:
        with waiting:
            waiting.notify_all()
        waiter.join()
    assert "a threading.Condition threads wait on" in dumped.failed["box"] and "at box[0]" in dumped.failed["box"]


def test_a_context_variable_of_a_module_is_that_modules_again(monkeypatch):
    """A library's ContextVar held by a variable (`var = lib.request_var`,
    or in a library's object) came back as a new variable the library
    never reads: the library's own is given again, with the value."""
    lib = types.ModuleType("elastichub_test_lib")
    lib.request_var = contextvars.ContextVar("request", default="-")
    monkeypatch.setitem(sys.modules, lib.__name__, lib)
    token = lib.request_var.set("r-7")
    try:
        values, failed, notes = _round_trip({"held": {"var": lib.request_var}})
    finally:
        lib.request_var.reset(token)
    assert failed == {} and notes == {}
    assert values["held"]["var"] is lib.request_var
    assert contextvars.Context().run(lambda: (libstate.apply_to_cells_context(), lib.request_var.get())[1]) == "r-7"
