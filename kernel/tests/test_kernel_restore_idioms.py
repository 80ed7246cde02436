"""Python idioms of course notebooks, checkpointed in one real kernel and
restored in the next: each value identical, or a note that says how not.

The same probe cell runs before and after; its output must be identical.
The first set holds the standard library's and pandas' less common values
and a dataset opened as a memory map;
the second the idioms plain pickling loses (lru_cache, singledispatch,
cached_property, exceptions with their own __init__, NewType, a nested
class), which the serializer rebuilds from their parts, and a linked list
and a degenerate search tree of 3,000 nodes, too deep for pickle's
recursion, which it saves flat, the queues of a search (their locks
would stop pickle) and weak references.
"""

import json

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms.ipynb"

SETUP = r'''
import collections, dataclasses, datetime, decimal, enum, fractions, functools, typing, zoneinfo, array
import numpy as np, pandas as pd

@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float = 0.0
    tags: tuple = ()

class Color(enum.Enum):
    RED = 1
    GREEN = 2

class Flag(enum.IntFlag):
    A = 1
    B = 2

Pair = collections.namedtuple("Pair", "a b")
class Row(typing.NamedTuple):
    k: str
    v: int = 3

class Slotted:
    __slots__ = ("a", "b")
    def __init__(self, a, b):
        self.a, self.b = a, b
    def __eq__(self, o):
        return (self.a, self.b) == (o.a, o.b)

class Base:
    kind = "base"
    def hello(self):
        return f"hello from {self.kind}"
class Child(Base):
    kind = "child"
    @property
    def twice(self):
        return self.kind * 2
    @classmethod
    def make(cls):
        return cls()
    @staticmethod
    def s():
        return 42

def power(b, e):
    return b ** e

@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def is_even(n):
    return True if n == 0 else is_odd(n - 1)
def is_odd(n):
    return False if n == 0 else is_even(n - 1)

def deco(f):
    @functools.wraps(f)
    def inner(*a):
        return ("wrapped", f(*a))
    return inner
@deco
def shout(x):
    return x.upper()

p1 = Point(1.5, tags=("a",))
c = Color.GREEN
fl = Flag.A | Flag.B
pair = Pair(1, [2])
row = Row("k")
slotted = Slotted(1, [2, 3])
child = Child.make()
square = functools.partial(power, e=2)
fib(30)
dd = collections.defaultdict(list); dd["x"].append(1)
dd_lambda = collections.defaultdict(lambda: 7); dd_lambda["y"]
od = collections.OrderedDict([("b", 1), ("a", 2)]); od.move_to_end("b")
dq = collections.deque(range(10), maxlen=5)
cnt = collections.Counter("mississippi")
chain = collections.ChainMap({"a": 1}, {"b": 2})
when = datetime.datetime(2026, 3, 29, 1, 30, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))
delta = datetime.timedelta(days=2, microseconds=5)
day = datetime.date(2026, 1, 1)
dec = decimal.Decimal("3.14159265358979323846264338327950288")
frac = fractions.Fraction(22, 7)
cplx = complex(1, -2)
ba = bytearray(b"abc")
rng = range(3, 30, 4)
sl = slice(1, None, 2)
fz = frozenset({frozenset({1, 2}), frozenset()})
selfref = [1, 2]; selfref.append(selfref)
arr = array.array("d", [1.0, 2.5])
nan_inf = [float("nan"), float("inf"), -0.0]
dt64 = np.array(["2026-01-01T00:00", "NaT"], dtype="datetime64[m]")
f16 = np.arange(5, dtype=np.float16) / 3
objarr = np.array([p1, None, "s"], dtype=object)
mi = pd.DataFrame({"v": range(4)}, index=pd.MultiIndex.from_product([["a", "b"], [1, 2]], names=["L", "N"]))
per = pd.Series(range(3), index=pd.period_range("2026-01", periods=3, freq="M"))
ivl = pd.interval_range(0, 3)
nullable = pd.array([1, None, 3], dtype="Int64")
strs = pd.Series(["a", None], dtype="string")
td_series = pd.to_timedelta(pd.Series([1, 2]), unit="h")
bigint = 2 ** 200
nested_lambda_in_dict = {"f": lambda v: v + 1}
_private = "underscore name"
import os, tempfile
dataset = os.path.join(tempfile.mkdtemp(), "features.npy")
np.save(dataset, np.arange(100_000, dtype=np.float32).reshape(1000, 100))
features = np.load(dataset, mmap_mode="r")
'''
SETUP2 = r'''
import abc, functools, attr, weakref, itertools, re
class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self): ...
class Sq(Shape):
    def __init__(self, s): self.s = s
    def area(self): return self.s ** 2
class Meta(type):
    def __new__(m, name, bases, ns):
        ns["tag"] = name.lower()
        return super().__new__(m, name, bases, ns)
class Tagged(metaclass=Meta):
    pass
@functools.singledispatch
def describe(x): return "thing"
@describe.register
def _(x: int): return "int"
class MyError(ValueError):
    def __init__(self, msg, code):
        super().__init__(msg); self.code = code
err = MyError("bad", 7)
class Lazy:
    def __init__(self, n): self.n = n
    @functools.cached_property
    def big(self): return self.n * 10
    @functools.lru_cache(maxsize=4)
    def method(self, k): return self.n + k
lz = Lazy(3); lz.big; lz.method(1)
@attr.s(auto_attribs=True)
class AttrP:
    a: int = 1
ap = AttrP(5)
def outer():
    @functools.cache
    def inner(v): return v * 3
    return inner
inner_cached = outer(); inner_cached(2)
sq = Sq(3)
pat = re.compile(r"a+b", re.I)
class Reducing:
    def __init__(self, v): self.v = v
    def __reduce__(self): return (Reducing, (self.v,))
red = Reducing(9)
class Outer:
    class Inner:
        x = 5
oi = Outer.Inner()
from typing import TypeVar, Generic, NewType, Protocol, ParamSpec
T = TypeVar("T", bound=float)
UserId = NewType("UserId", int)
class Box(Generic[T]):
    def __init__(self, v: T): self.v = v
bx = Box[float](2.5)
uid = UserId(5)
class HasLen(Protocol):
    def __len__(self) -> int: ...
import contextlib
@contextlib.contextmanager
def managed(x):
    yield x * 2
sig = __import__("inspect").signature(managed)
class ListNode:
    def __init__(self, val, nxt=None):
        self.val, self.next = val, nxt
linked = None
for i in range(3000):
    linked = ListNode(i, linked)
class BST:
    def __init__(self, key):
        self.key, self.left, self.right = key, None, None
    def insert(self, key):
        node = self
        while True:
            side = "left" if key < node.key else "right"
            if getattr(node, side) is None:
                setattr(node, side, BST(key))
                return
            node = getattr(node, side)
sorted_tree = BST(0)
for k in range(1, 3000):
    sorted_tree.insert(k)
import queue
frontier = queue.Queue()
for node in ["A", "B", "C"]:
    frontier.put(node)
frontier.get()
by_cost = queue.PriorityQueue()
for item in [(4, "d"), (1, "a"), (3, "c")]:
    by_cost.put(item)
stack = queue.LifoQueue(maxsize=8)
stack.put("x"); stack.put("y")
simple = queue.SimpleQueue()
simple.put({"job": 1}); simple.put({"job": 2})
class Frontier(queue.Queue):
    def __init__(self, start):
        super().__init__()
        self.seen = {start}
        self.put(start)
walk = Frontier("S")
import weakref
class Session:
    def __init__(self, name): self.name = name
alice, bob = Session("alice"), Session("bob")
by_name = weakref.WeakValueDictionary({"alice": alice, "bob": bob})
tags = weakref.WeakKeyDictionary({alice: "admin"})
online = weakref.WeakSet([bob])
ref_alice = weakref.ref(alice)
ref_gone = weakref.ref(Session("temporary"))
ip = get_ipython()
'''

PROBE = r'''
import json as _json
def _walk(node, link, field):
    values = []
    while node is not None:
        values.append(getattr(node, field))
        node = getattr(node, link)
    return [len(values), sum(values), values[:3]]
def _drained(q):  # a SimpleQueue's items, put back
    items = [q.get_nowait() for _ in range(q.qsize())]
    for item in items:
        q.put(item)
    return items
def _facts():
    return {
        "p1": [repr(p1), dataclasses.is_dataclass(p1), p1 == Point(1.5, tags=("a",)), hash(p1) == hash(Point(1.5, tags=("a",)))],
        "enum": [c is Color.GREEN, repr(fl), fl is (Flag.A | Flag.B) or fl == (Flag.A | Flag.B), type(c).__name__],
        "pair": [repr(pair), isinstance(pair, Pair), row._fields, repr(row), isinstance(row, Row)],
        "slotted": [slotted == Slotted(1, [2, 3]), type(slotted).__slots__],
        "child": [child.hello(), child.twice, Child.s(), isinstance(child, Base), type(child) is Child],
        "partial": [square(7), square.keywords],
        "fib": [fib(31), fib.cache_info().hits >= 0],
        "mutual": [is_even(10), is_odd(7)],
        "wrapped": [shout("x"), shout.__name__, shout.__wrapped__("y")],
        "dd": [repr(dd), dd_lambda["new"], sorted(dd_lambda.items())],
        "od": [list(od.items())],
        "dq": [list(dq), dq.maxlen],
        "cnt": [cnt.most_common(2)],
        "chain": [chain["b"], len(chain.maps)],
        "when": [when.isoformat(), str(when.tzinfo), when.utcoffset().total_seconds(), when.fold],
        "delta": [repr(delta), repr(day)],
        "dec": [str(dec), str(frac), repr(cplx)],
        "ba": [repr(ba), list(rng), repr(sl), sorted(map(sorted, fz))],
        "selfref": [selfref[2] is selfref, len(selfref)],
        "arr": [repr(arr)],
        "nan": [repr(nan_inf)],
        "dt64": [str(dt64.dtype), repr(dt64.tolist())],
        "f16": [str(f16.dtype), f16.tobytes().hex()],
        "objarr": [repr(objarr[0]), objarr[0] is p1],
        "mi": [mi.index.names, mi.index.tolist(), mi["v"].tolist()],
        "per": [str(per.index.dtype), [str(x) for x in per.index]],
        "ivl": [str(ivl)],
        "nullable": [str(nullable.dtype), str(list(nullable))],
        "strs": [str(strs.dtype), str(strs.tolist())],
        "td": [str(td_series.dtype), str(td_series.tolist())],
        "bigint": [bigint % 1000003],
        "lam": [nested_lambda_in_dict["f"](1)],
        "private": [_private],
        "features": [type(features).__name__, str(features.filename) == dataset, features.mode,
                     float(features[999].sum()), features.flags.writeable],
        "abc": [sq.area(), isinstance(sq, Shape), issubclass(Sq, Shape)],
        "meta": [Tagged.tag, type(Tagged).__name__],
        "sd": [describe(1), describe("s")],
        "err": [repr(err), err.code, isinstance(err, ValueError)],
        "lazy": [lz.big, lz.method(1), lz.__dict__.get("big")],
        "attr": [repr(ap)],
        "inner": [inner_cached(2)],
        "pat": [pat.pattern, pat.flags, bool(pat.match("AAb"))],
        "typing": [repr(T), T.__bound__, repr(UserId), UserId(3), bx.v, repr(Box[float]), HasLen.__name__],
        "cm": [managed(4).__enter__()],
        "deep": [_walk(linked, "next", "val"), _walk(sorted_tree, "right", "key")],
        "red": [red.v], "oi": [oi.x, type(oi).__qualname__],
        "queues": [list(frontier.queue), frontier.unfinished_tasks, list(by_cost.queue), list(stack.queue),
                   stack.maxsize, _drained(simple), type(walk).__name__, sorted(walk.seen), list(walk.queue)],
        "weak": [by_name["alice"] is alice, sorted(by_name), tags[alice], bob in online, len(online),
                 ref_alice() is alice, ref_gone() is None, type(by_name).__name__],
        "shell": [ip is get_ipython(), ip.user_ns is globals()],
    }
print("PROBE" + _json.dumps(_facts(), sort_keys=True, default=str))
'''


def _probe(run_cell, kc):
    out = run_cell(kc, PROBE)
    assert out["error"] is None, out
    line = [ln for ln in out["stdout"].splitlines() if ln.startswith("PROBE")][0]
    return json.loads(line[len("PROBE"):])


def test_idioms_restore_identical_and_an_emptied_cache_is_said(tmp_path, start_elastic_kernel,
                                                               stop_elastic_kernel, run_cell, control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = run_cell(kc, SETUP)
    assert out["error"] is None, out
    out = run_cell(kc, SETUP2)
    assert out["error"] is None, out
    before = _probe(run_cell, kc)
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"] and reply["not_restorable"] == [], reply
    stop_elastic_kernel(km, kc)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    first = run_cell(kc, "print('first cell')")
    assert first["error"] is None, first
    after = _probe(run_cell, kc)
    assert {k: after.get(k) for k in before} == before
    report = first["stderr"]  # the restore report comes with the first cell, on stderr
    assert "Not restored" not in report, report
    assert "Note: fib: fib() is restored with its 32 cached result(s); its hit and miss counts" in report
    assert "Note: inner_cached: outer.<locals>.inner() is restored with its 1 cached result(s)" in report
    # The queues' new locks work: a search goes on where it stopped.
    out = run_cell(kc, "print(frontier.get(timeout=5), by_cost.get_nowait(), stack.get_nowait(), "
                       "simple.get_nowait(), walk.get_nowait()); frontier.task_done(); "
                       "print(frontier.unfinished_tasks, frontier.qsize(), by_cost.qsize())")
    assert out["error"] is None and out["stdout"].splitlines() == ["B (1, 'a') y {'job': 1} S", "2 1 2"], out
