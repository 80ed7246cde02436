"""Idioms of an eighth probe round, checkpointed in one real kernel and
restored in the next: a struct.Struct, a random.SystemRandom."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms6.ipynb"

STRUCTS = r'''
import struct
header = struct.Struct("<IHf")
class Record(struct.Struct):
    def __init__(self, fields):
        super().__init__("<" + fields)
        self.fields = fields
rec = Record("2d")
same = [header, header]
'''
STRUCTS_PROBE = r'''
import json
print("FACTS" + json.dumps([header.format, header.size, header.pack(7, 2, 1.5).hex(),
    header.unpack(header.pack(7, 2, 1.5)),
    type(rec).__name__, rec.fields, rec.unpack(rec.pack(1.0, 2.0)), same[0] is same[1] is header]))
'''


def test_a_struct_comes_back_with_its_format(moved, run_cell):
    """`header = struct.Struct("<IHf")`, kept to pack records, was 'not
    restorable' (pickle: "cannot pickle '_struct.Struct' object")."""
    reply, before, kc = moved(SESSION, STRUCTS, lambda kc: run_cell.facts(kc, STRUCTS_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert run_cell.facts(kc, STRUCTS_PROBE) == before
    assert before[:2] == ["<IHf", 10] and before[4:6] == ["Record", "2d"], before


RANDOMS = r'''
import random, secrets
dice = random.SystemRandom()
dice.gauss()
class Dealer(random.SystemRandom):
    def __init__(self, deck):
        super().__init__()
        self.deck = deck
dealer = Dealer(list("AKQJ"))
token_rng = secrets.SystemRandom()
'''
RANDOMS_PROBE = r'''
import json
print("FACTS" + json.dumps([type(dice).__name__, dice.gauss_next, type(dealer).__name__, dealer.deck,
    type(token_rng).__name__,
    0 <= dice.random() < 1, dealer.choice(dealer.deck) in dealer.deck, token_rng.randint(1, 6) in range(1, 7)]))
'''


def test_a_system_random_comes_back_with_its_attributes(moved, run_cell):
    """`dice = random.SystemRandom()` was 'not restorable' (pickle: "System
    entropy source does not have state"), so was a subclass of it."""
    reply, before, kc = moved(SESSION, RANDOMS, lambda kc: run_cell.facts(kc, RANDOMS_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    after = run_cell.facts(kc, RANDOMS_PROBE)
    assert after == before and isinstance(before[1], float), (before, after)
    assert before[2:5] == ["Dealer", list("AKQJ"), "SystemRandom"] and all(before[5:]), before


IN_PROGRESS = r'''
import bz2, hashlib, hmac, re, zlib
h = hashlib.sha256()
for chunk in (b"lecture ", b"notes"):
    h.update(chunk)
blake = hashlib.blake2b(b"x")
mac = hmac.new(b"key", b"msg", "sha256")
packer = zlib.compressobj()
head = packer.compress(b"abc" * 100)
unbz = bz2.BZ2Decompressor()
words = re.finditer(r"\w+", "to be or not")
first = next(words)
done = re.finditer(r"\w+", "read to its end")
all_words = [m.group() for m in done]
digest = h.hexdigest()
'''


def test_what_no_python_can_read_back_is_named_with_what_it_is_and_what_to_do(moved, run_cell):
    """A hash being fed, a compression stream, a finditer part-way through
    were named with pickle's words ("cannot pickle '_hashlib.HASH' object")."""
    reply, _, kc = moved(SESSION, IN_PROGRESS)
    reasons = {item["name"]: item["reason"] for item in reply["not_restorable"]}
    assert sorted(reasons) == ["blake", "h", "mac", "packer", "unbz", "words"], reply
    for name in ("h", "blake", "mac"):
        assert "hash being computed" in reasons[name] and "hash the data again" in reasons[name], reasons
    assert "sha256" in reasons["h"] and "hmac-sha256" in reasons["mac"], reasons
    for name in ("packer", "unbz"):
        assert "compression stream" in reasons[name], reasons
    assert "finditer" in reasons["words"] and "call finditer again" in reasons["words"], reasons
    out = run_cell(kc, "print(digest, first.group(), all_words)")
    assert out["stdout"].split()[1:] == ["to", "['read',", "'to',", "'its',", "'end']"], out


FLAT = r'''
import numpy as np
grid = np.arange(12).reshape(3, 4)
cells = grid.flat
next(cells); next(cells); next(cells)
cols = grid[:, ::2].flat
next(cols)
fresh = grid.flat
'''
FLAT_PROBE = r'''
import json
print("FACTS" + json.dumps([cells.index, list(cells.coords), int(next(cells)), cells.base is grid, int(next(cols)),
    cols.index, fresh.index, int(next(fresh))]))
'''


def test_a_flat_iterator_comes_back_over_its_array_where_it_was(moved, run_cell):
    """`cells = grid.flat` read with next() was 'not restorable' (pickle:
    "cannot pickle 'numpy.flatiter' object")."""
    reply, before, kc = moved(SESSION, FLAT, lambda kc: run_cell.facts(kc, FLAT_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    assert run_cell.facts(kc, FLAT_PROBE) == before
    assert before == [3, [0, 3], 3, True, 2, 2, 0, 0], before
    grid_shared = run_cell(kc, "grid[1, 0] = 40\nprint(next(cells))")
    assert grid_shared["stdout"].strip() == "40", grid_shared


RANDOM_CLASSES = r'''
import random
class Dice(random.Random):
    def __init__(self, sides, seed=None):
        super().__init__(seed)
        self.sides = sides
    def roll(self):
        return self.randint(1, self.sides)
d6 = Dice(6, seed=1)
d6.roll()
class Coin(random.Random):
    pass
coin = Coin(3)
coin.flips = 2
plain = random.Random(5)
plain.label = "lab 3"
plain.random()
'''
RANDOM_CLASSES_PROBE = r'''
import json
print("FACTS" + json.dumps([type(d6).__name__, d6.sides, [d6.roll() for _ in range(5)], coin.flips, coin.random(),
    plain.label, plain.random()]))
'''


def test_a_random_of_a_notebook_class_comes_back_with_its_state_and_attributes(moved, run_cell):
    """`d6 = Dice(6, seed=1)` of `class Dice(random.Random)` with an
    `__init__(self, sides, ...)` failed at every restore ("missing 1
    required positional argument: 'sides'"), though its checkpoint said
    nothing; `coin.flips` set on a Random came back lost."""
    reply, before, kc = moved(SESSION, RANDOM_CLASSES, lambda kc: run_cell.facts(kc, RANDOM_CLASSES_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    first = run_cell(kc, "pass")
    assert "Not restored" not in first["stderr"], first
    assert run_cell.facts(kc, RANDOM_CLASSES_PROBE) == before
    assert before[:2] == ["Dice", 6] and before[3] == 2 and before[5] == "lab 3", before


LIBRARY_SUBCLASSES = r'''
from collections import Counter, OrderedDict, deque
class LRU(OrderedDict):
    def __init__(self, cap):
        super().__init__()
        self.cap = cap
    def put(self, k, v):
        self[k] = v
        self.move_to_end(k)
        if len(self) > self.cap:
            self.popitem(last=False)
lru = LRU(2)
lru.put("a", 1); lru.put("b", 2)
class Stack(deque):
    def __init__(self, limit):
        super().__init__(maxlen=limit)
        self.limit = limit
st = Stack(3)
st.extend([1, 2])
class Bag(Counter):
    def __init__(self, owner, items=()):
        super().__init__(items)
        self.owner = owner
bag = Bag("ana")
bag.update("aab")
shared = [st, st]
'''
LIBRARY_SUBCLASSES_PROBE = r'''
import json
lru.put("c", 3)
st.append(3); st.append(4)
print("FACTS" + json.dumps([type(lru).__name__, lru.cap, list(lru.items()), type(st).__name__, st.limit, st.maxlen,
    list(st), bag.owner, dict(bag), shared[0] is shared[1] is st]))
'''


def test_an_object_of_a_notebook_class_over_ordereddict_deque_counter_comes_back(moved, run_cell):
    """`lru = LRU(2)` of `class LRU(OrderedDict)` with `__init__(self, cap)`
    checkpointed without a word and failed at every restore ("missing 1
    required positional argument: 'cap'"): pickle calls the class with
    OrderedDict's arguments; a deque's, a Counter's likewise."""
    reply, before, kc = moved(SESSION, LIBRARY_SUBCLASSES, lambda kc: run_cell.facts(kc, LIBRARY_SUBCLASSES_PROBE))
    assert reply["ok"] and reply["not_restorable"] == [], reply
    first = run_cell(kc, "pass")
    assert "Not restored" not in first["stderr"], first
    assert run_cell.facts(kc, LIBRARY_SUBCLASSES_PROBE) == before
    assert before[:3] == ["LRU", 2, [["b", 2], ["c", 3]]] and before[4:7] == [3, 3, [2, 3, 4]], before
    assert before[7:] == ["ana", {"a": 2, "b": 1}, True], before
