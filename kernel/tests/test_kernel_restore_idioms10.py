"""Idioms of a twelfth round, checkpointed in one real kernel and restored
in the next."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms10.ipynb"

PARSER = r'''
import argparse
parser = argparse.ArgumentParser(description="train a model")
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--debug-dump", help=argparse.SUPPRESS)
parser.add_argument("files", nargs="*")
args = parser.parse_args(["--lr", "0.5", "a.csv"])
'''
PARSER_PROBE = r'''
import json
print("FACTS" + json.dumps([vars(args), vars(parser.parse_args(["b.csv"])), "debug" in parser.format_help()]))
'''


def test_a_parsers_next_parse_args_gives_the_same_namespace(moved, run_cell):
    """After a move, `parser.parse_args([...])` gave Namespace(help='==SUPPRESS==', ...)
    and the help listed the hidden --debug-dump: argparse tests its SUPPRESS by identity."""
    reply, before, kc = moved(SESSION, PARSER, lambda kc: run_cell.facts(kc, PARSER_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before == [{"lr": 0.5, "debug_dump": None, "files": ["a.csv"]},
                      {"lr": 0.1, "debug_dump": None, "files": ["b.csv"]}, False]
    assert run_cell.facts(kc, PARSER_PROBE) == before


CTYPES = r'''
import ctypes
class Point(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_double)]
    def norm1(self):
        return abs(self.x) + abs(self.y)
class Record(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("tag", ctypes.c_char), ("at", Point)]
class Header(ctypes.BigEndianStructure):
    _fields_ = [("size", ctypes.c_uint16)]
p = Point(1, 2.5)
rec = Record(b"a", Point(-3, 0.5))
counts = (ctypes.c_int * 5)(1, 2, 3, 4, 5)
path = (Point * 2)(Point(0, 0), Point(2, 2))
name = ctypes.create_string_buffer(b"hello", 10)
hdr = Header(258)
PointPtr = ctypes.POINTER(Point)
'''
CTYPES_PROBE = r'''
import json
print("FACTS" + json.dumps([p.x, p.norm1(), rec.at.norm1(), ctypes.sizeof(Record), list(counts), [q.x for q in path],
                            name.raw.decode(), bytes(hdr).hex(), hdr.size, repr(type(counts)), repr(PointPtr),
                            PointPtr is ctypes.POINTER(Point), type(path) is Point * 2]))
'''


def test_ctypes_structures_and_arrays_of_the_notebook_come_back(moved, run_cell):
    """A notebook `ctypes.Structure` class and its objects were 'not restorable'
    (cannot pickle '_ctypes.CField' object), and `(c_int * 5)(...)` or
    `create_string_buffer` failed the restore (PyCArrayType has no attribute '__mul__')."""
    reply, before, kc = moved(SESSION, CTYPES, lambda kc: run_cell.facts(kc, CTYPES_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before[:9] == [1, 3.5, 3.5, 17, [1, 2, 3, 4, 5], [0, 2], "hello\0\0\0\0\0", "0102", 258]
    assert run_cell.facts(kc, CTYPES_PROBE) == before
    out = run_cell(kc, "counts[0] = 9\nrec.at.x = 4\nprint(list(counts)[:2], rec.at.norm1(), Point(5, 0).norm1())")
    assert out["error"] is None and out["stdout"] == "[9, 2] 4.5 5.0\n", out


PROCESSES = r'''
import multiprocessing as mp
counter = mp.Value("i", 0)
scores = mp.Array("d", [0.5, 1.5])
manager = mp.Manager()
results = manager.dict(done=2)
jobs = mp.Queue()
parent_end, child_end = mp.Pipe()
with counter.get_lock():
    counter.value += 3
'''


def test_multiprocessing_objects_come_back_or_are_named_in_plain_words(moved, run_cell):
    """`counter = mp.Value("i", 0)` was 'not restorable' ("Synchronized objects should only be shared
    between processes through inheritance"), a Manager's dict failed the restore (Connection refused:
    a partial restore), and a Pipe end came back as the old kernel's descriptor number."""
    reply, _, kc = moved(SESSION, PROCESSES)
    reasons = {item["name"]: item["reason"] for item in reply["not_restorable"]}
    assert reply["ok"] and set(reasons) == {"manager", "results", "jobs", "parent_end", "child_end"}, reply
    assert "a dict a multiprocessing Manager shares" in reasons["results"], reasons
    assert "a multiprocessing queue" in reasons["jobs"] and "Pipe end" in reasons["child_end"], reasons
    first = run_cell(kc, "with counter.get_lock():\n    counter.value += 1\nprint(counter.value, scores[:])")
    assert first["error"] is None and first["stdout"] == "4 [0.5, 1.5]\n", first
    assert "could not be loaded" not in first["stderr"] and "partial-restore" not in first["stderr"], first


DRAWING = r'''
from PIL import Image, ImageDraw, ImageFont
canvas = Image.new("RGB", (80, 40), "white")
pen = ImageDraw.Draw(canvas)
pen.rectangle([0, 0, 9, 9], fill="blue")
title = ImageFont.load_default(size=18)
pen.text((12, 2), "hi", fill="black", font=title)
'''
DRAWING_PROBE = r'''
import json
pen.ellipse([50, 20, 60, 30], fill="red")
pen.text((12, 20), "ok", fill="black")
print("FACTS" + json.dumps([canvas.getpixel((55, 25)), canvas.getpixel((5, 5)), title.size,
                            pen.textbbox((0, 0), "score", font=title), canvas.getbbox()]))
'''


def test_a_drawing_kept_in_a_variable_draws_on_its_image_after_a_move(moved, run_cell):
    """`pen = ImageDraw.Draw(canvas)` was 'not restorable' (cannot pickle 'ImagingCore'), and
    `ImageFont.load_default(size=18)` failed the restore ("cannot open resource"): a partial restore."""
    reply, before, kc = moved(SESSION, DRAWING, lambda kc: run_cell.facts(kc, DRAWING_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before[:3] == [[255, 0, 0], [0, 0, 255], 18]
    assert run_cell.facts(kc, DRAWING_PROBE) == before


DECODER = r'''
import json
class Records(json.JSONDecoder):
    def __init__(self, **kw):
        super().__init__(object_hook=self.record, **kw)
        self.seen = 0
    def record(self, d):
        self.seen += 1
        return {k.lower(): v for k, v in d.items()}
reader = Records()
first = reader.decode('{"Name": "ann", "Score": 3}')
'''


def test_a_notebook_json_decoder_decodes_on_after_a_move(moved, run_cell):
    """`reader = Records()` (a JSONDecoder subclass with an object_hook) was 'not restorable'
    (cannot pickle '_json.Scanner' object, at reader.scan_once)."""
    reply, _, kc = moved(SESSION, DECODER)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, 'print(first, reader.decode(\'[{"ID": 2}]\'), reader.seen)')
    assert out["error"] is None and out["stdout"] == "{'name': 'ann', 'score': 3} [{'id': 2}] 2\n", out


ITERPARSE = r'''
import xml.etree.ElementTree as ET
with open("catalog.xml", "w") as out:
    out.write("<lib>" + "".join(f"<book id='{i}'/>" for i in range(4)) + "</lib>")
books = ET.iterparse("catalog.xml", events=("start",))
seen = [next(books)[1].tag for _ in range(2)]
'''


def test_an_iterparse_part_way_is_named_with_what_to_do(moved, run_cell):
    """`books = ET.iterparse(...)` read part-way was named by pickle's
    "cannot pickle 'generator' object", with nothing to say what to do."""
    reply, _, kc = moved(SESSION, ITERPARSE)
    [refused] = reply["not_restorable"]
    assert refused["name"] == "books" and "ElementTree.iterparse part-way" in refused["reason"], reply
    first = run_cell(kc, "print(seen)")
    assert first["stdout"] == "['lib', 'book']\n" and "make it again after restore" in first["stderr"], first


def _run_and_move(start_in_work, run_cell, control_request, cells, kernel=None):
    """Runs `cells` in `kernel` (km, kc) or a new one, checkpoints, kills it; the next one restores."""
    km, kc = kernel or start_in_work(SESSION)
    for cell in cells:
        run_cell(kc, cell)
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["ok"]
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return start_in_work(SESSION)


def test_the_last_cells_error_is_named_since_its_traceback_is_not_carried(start_in_work, run_cell, control_request):
    """After a move, %debug on the cell that had just failed said "No traceback has been produced":
    the error and its frames were the old kernel's, and nothing said so. An earlier cell's error is not
    named (every notebook has one)."""
    km, kc = _run_and_move(start_in_work, run_cell, control_request, ["def ratio(x):\n    return 1 / x", "ratio(0)"])
    first = run_cell(kc, "print(ratio(4))")
    assert first["stdout"] == "0.25\n", first
    assert "the last cell failed (ZeroDivisionError: division by zero)" in first["stderr"], first
    assert "%debug and %tb have none to show" in first["stderr"], first
    km, kc = _run_and_move(start_in_work, run_cell, control_request, ["1 / 0", "x = 2"], kernel=(km, kc))
    first = run_cell(kc, "print(x)")
    assert first["stdout"] == "2\n" and "ElasticHub: restored" in first["stderr"], first
    assert "last cell failed" not in first["stderr"], first


TASKS = r'''
import asyncio
async def fetch(n):
    await asyncio.sleep(0)
    return n * 2
done = asyncio.create_task(fetch(3))
await done
waiting = asyncio.create_task(asyncio.sleep(60))
await asyncio.sleep(0)
'''


def test_asyncio_tasks_are_named_with_what_to_do(moved, run_cell):
    """`done = asyncio.create_task(...)` kept for a later `await` was named by pickle's
    "cannot pickle '_asyncio.Task' object", with nothing to say what to do."""
    reply, _, kc = moved(SESSION, TASKS)
    reasons = {item["name"]: item["reason"] for item in reply["not_restorable"]}
    assert set(reasons) == {"done", "waiting"}, reply
    assert "a done asyncio Task" in reasons["done"] and "keep its result" in reasons["done"], reasons
    assert "an asyncio Task not done (it runs in the old kernel's event loop)" in reasons["waiting"], reasons


COUNTED = r'''
import argparse, json
class Parser(argparse.ArgumentParser):
    made = []
    def __new__(cls, *args, **kwargs):
        Parser.made.append(kwargs.get("prog"))
        return super().__new__(cls)
class Records(json.JSONDecoder):
    made = 0
    def __new__(cls, *args, **kwargs):
        Records.made += 1
        return super().__new__(cls)
parser = Parser(prog="train")
parser.add_argument("--lr", type=float, default=0.1)
reader = Records()
'''


def test_a_notebook_subclass_new_is_not_run_again_by_a_restore(moved, run_cell):
    """The rebuilds of this round's idioms (an argparse parser holding SUPPRESS, a JSONDecoder) called the
    class's own __new__: a notebook subclass's code ran again at restore (Parser.made got a second entry)."""
    reply, _, kc = moved(SESSION, COUNTED)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "print(Parser.made, Records.made, vars(parser.parse_args([])), reader.decode('[1]'))")
    assert out["error"] is None and out["stdout"] == "['train'] 1 {'lr': 0.1} [1]\n", out


SHARED = r'''
from multiprocessing import shared_memory
import numpy as np
block = shared_memory.SharedMemory(create=True, size=32)
grid = np.ndarray((4,), dtype=np.int64, buffer=block.buf)
grid[:] = [1, 2, 3, 4]
scores = shared_memory.ShareableList([1, "ann", 2.5])
'''
GONE = "block.close(); block.unlink(); scores.shm.close(); scores.shm.unlink(); del grid"


def test_shared_memory_comes_back_with_its_bytes_on_a_node_without_its_segment(moved, run_cell):
    """A SharedMemory (and a ShareableList) was saved as its segment's name, which another node does not
    have: the restore failed (FileNotFoundError), a partial restore, and its bytes were lost. (The old
    kernel unlinks its segments here, as a move to another node leaves them behind.)"""
    reply, gone, kc = moved(SESSION, SHARED, lambda kc: run_cell(kc, GONE))
    assert reply["ok"] and reply["not_restorable"] == [] and gone["error"] is None, (reply, gone)
    out = run_cell(kc, "print(bytes(block.buf[:8]), block.size, list(scores))\n"
                       "view = np.ndarray((4,), dtype=np.int64, buffer=block.buf)\nprint(view.tolist())")
    assert out["error"] is None, out
    assert out["stdout"] == "b'\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00' 32 [1, 'ann', 2.5]\n[1, 2, 3, 4]\n", out
    assert "could not be loaded" not in out["stderr"], out


TRACING = r'''
import tracemalloc
tracemalloc.start(5)
blocks = [bytearray(1000) for _ in range(100)]
'''


def test_tracemalloc_traces_again_after_a_move_and_says_what_it_lost(moved, run_cell):
    """`tracemalloc.start()` in a memory-profiling notebook was not carried: after a move
    take_snapshot() raised "the tracemalloc module must be tracing", get_traced_memory() read (0, 0)."""
    reply, _, kc = moved(SESSION, TRACING)
    assert reply["ok"], reply
    out = run_cell(kc, "more = [bytearray(1000) for _ in range(100)]\n"
                       "print(tracemalloc.is_tracing(), tracemalloc.get_traceback_limit(),\n"
                       "      tracemalloc.get_traced_memory()[0] > 100_000,\n"
                       "      len(tracemalloc.take_snapshot().traces) > 0)")
    assert out["error"] is None and out["stdout"] == "True 5 True True\n", out
    assert "tracemalloc traces memory again from the restore" in out["stderr"], out


TYPED = r'''
import typing
Movie = typing.TypedDict("Movie", {"title": str, "year": int}, total=False)
Point = typing.NamedTuple("Point", [("x", int), ("y", int)])
class Rated(Movie):
    stars: int
best: Movie = {"title": "Up"}
'''
TYPED_PROBE = r'''
import json
print("FACTS" + json.dumps([Movie.__total__, sorted(Movie.__optional_keys__), sorted(Rated.__required_keys__),
                            Movie(title="Heat", year=1995), best, Point(1, 2)._asdict(), Rated.__name__]))
'''


def test_a_typed_dict_made_by_a_call_comes_back(moved, run_cell):
    """`Movie = TypedDict("Movie", {...})` (the call form) failed the restore: "cannot inherit from both a
    TypedDict type and a non-TypedDict base class" (pickle made it over dict), a partial restore."""
    reply, before, kc = moved(SESSION, TYPED, lambda kc: run_cell.facts(kc, TYPED_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before[:3] == [False, ["title", "year"], ["stars"]]
    assert run_cell.facts(kc, TYPED_PROBE) == before


PARAMS = r'''
from typing import Callable, ParamSpec, TypeVar, TypeVarTuple, Generic
P = ParamSpec("P")
R = TypeVar("R")
Shape = TypeVarTuple("Shape")
def logged(f: Callable[P, R]) -> Callable[P, R]:
    def inner(*args: P.args, **kwargs: P.kwargs) -> R:
        return f(*args, **kwargs)
    return inner
class Array(Generic[*Shape]):
    pass
@logged
def add(a: int, b: int) -> int:
    return a + b
'''
PARAMS_PROBE = r'''
import json, typing
print("FACTS" + json.dumps([repr(P), P.__module__, repr(Shape), add(2, 3), repr(typing.get_type_hints(logged)["f"]),
                            Array.__parameters__[0] is Shape, repr(Array[int, str])]))
'''


def test_a_notebooks_param_spec_and_type_var_tuple_come_back(moved, run_cell):
    """`P = ParamSpec("P")` failed the restore: typing pickles it by its name, which was looked up in the
    namespace being loaded ("Can't get attribute 'P' on <module '__main__'>"), a partial restore."""
    reply, before, kc = moved(SESSION, PARAMS, lambda kc: run_cell.facts(kc, PARAMS_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert before[:4] == ["~P", "__main__", "Shape", 5]
    assert run_cell.facts(kc, PARAMS_PROBE) == before


SENTINEL = r'''
class _Missing:
    __slots__ = ("why",)
    def __init__(self, why):
        self.why = why
    def __repr__(self):
        return "MISSING"
    def __reduce__(self):  # a singleton, pickled by name as Python's own sentinels are
        return "MISSING"
MISSING = _Missing("unset")
config = {"lr": MISSING, "epochs": 3}
def get(key, default=MISSING):
    value = config.get(key, default)
    return "unset" if value is MISSING else value
'''


def test_a_notebook_sentinel_pickled_by_name_comes_back_one_object(moved, run_cell):
    """`MISSING = _Missing()` whose __reduce__ returns "MISSING" failed the restore, and with it every
    variable holding it (a config dict, a function's default): its name was looked up in the namespace
    being loaded ("Can't get attribute 'MISSING' on <module '__main__'>"), a partial restore."""
    reply, _, kc = moved(SESSION, SENTINEL)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, 'print(config, get("lr"), get("epochs"), get("x"), config["lr"] is MISSING, MISSING.why)')
    assert out["error"] is None and out["stdout"] == "{'lr': MISSING, 'epochs': 3} unset 3 unset True unset\n", out
