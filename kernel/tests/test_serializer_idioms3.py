"""The idioms of idioms3.py, through the serializer and the loader directly:
``re.Match`` objects, the ``newline=`` of open text files, weak proxies,
slotted classes with a ``__getattr__``; NaNs found by identity (nans.py);
and a TemporaryDirectory's folder kept when a load starts over."""

import gc
import math
import os
import re
import sys
import tempfile
import types
import weakref

import numpy as np
import pytest

from elastichub_kernel import idioms3, loader, serializer


def _round_trip(ns, names=None):
    dumped = serializer.dump_namespace(ns, names or list(ns), user_ns=ns)
    assert dumped.failed == {}
    return loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {"__name__": "__main__"})


def _facts(m):
    return (m.re.pattern, m.re.flags, m.string, m.pos, m.endpos, m.regs, m.lastindex, m.lastgroup, m.groupdict())


def test_matches_of_match_search_fullmatch_and_finditer_are_found_again_the_same():
    """A re.Match 'cannot be pickled': `m = re.search(...)` was not restored,
    nor any list of finditer's matches."""
    text = "ab 12-34 cd 5-6 x 77-8"
    pat = re.compile(r"(?P<a>\d+)-(?P<b>\d+)|(?P<w>[a-z]+)", re.I)
    ns = {
        "text": text,
        "pat": pat,
        "first": re.search(r"(\d+)-(\d+)", text),
        "at_start": pat.match(text),
        "whole": re.fullmatch(r"\w+", "word"),
        "windowed": pat.search(text, 4, 15),
        "hits": list(pat.finditer(text, 1)),
        "after_lookbehind": list(re.finditer(r"(?<=-)\d", text)),
        "empties": list(re.finditer(r"x*", "axxb")),
        "raw": re.search(rb"\x00(.)", b"ab\x00c"),
    }
    ns["same"] = [ns["first"], ns["first"]]
    values, failed, notes = _round_trip(ns)
    assert failed == {} and notes == {}
    for name in ("first", "at_start", "whole", "windowed", "raw"):
        assert _facts(values[name]) == _facts(ns[name]), name
    for name in ("hits", "after_lookbehind", "empties"):
        assert [_facts(m) for m in values[name]] == [_facts(m) for m in ns[name]], name
    assert len(values["hits"]) == 6 and values["hits"][1].pos == 1
    assert values["first"].string is values["text"] and values["same"][0] is values["same"][1] is values["first"]


def test_a_match_in_a_string_changed_since_fails_by_name():
    data = bytearray(b"key=42")
    ns = {"data": data, "m": re.search(rb"=(\d+)", data)}
    data[4:6] = b"xx"
    values, failed, _notes = _round_trip(ns)
    assert set(failed) == {"m"} and "is not found again in its string" in failed["m"], failed
    assert values == {"data": bytearray(b"key=xx")}


def test_many_matches_of_one_finditer_are_found_in_one_scan(monkeypatch):
    text = "w " * 20_000
    ns = {"words": list(re.finditer(r"w", text))}
    scans = []
    real = re.Pattern.finditer

    class Counting:
        def __init__(self, pattern):
            self.pattern = pattern

        def __getattr__(self, name):
            return getattr(self.pattern, name)

        def finditer(self, *args):
            scans.append(args[1:])
            return real(self.pattern, *args)

        def __eq__(self, other):
            return self.pattern == getattr(other, "pattern", other)

        __hash__ = None

    dumped = serializer.dump_namespace(ns, ["words"], user_ns=ns)
    orig = idioms3._rebuild_match  # the stream names it: the loader looks it up in the module
    monkeypatch.setattr(idioms3, "_rebuild_match", lambda p, *a: orig(Counting(p), *a))
    values, failed, _ = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {})
    assert failed == {} and len(values["words"]) == 20_000
    assert [m.span() for m in values["words"]] == [m.span() for m in ns["words"]]
    assert len(scans) <= 2, len(scans)


@pytest.mark.parametrize("newline", [None, "", "\n", "\r", "\r\n"])
@pytest.mark.parametrize("mode", ["r", "r+", "w", "a", "a+"])
def test_an_open_text_file_comes_back_with_its_newline(tmp_path, newline, mode):
    """open(path, newline='') (the csv module's way) came back with open()'s
    default: '"x\\r\\n' was read as '"x\\n'."""
    path = tmp_path / "rows.csv"
    path.write_bytes(b'a,b\r\n"x\r\ny",2\r\n3,4\n5\r6\r\n')
    f = open(path, mode, newline=newline)
    if f.readable():
        f.readline()
    values, failed, notes = _round_trip({"f": f})
    g = values["f"]
    try:
        assert failed == {} and notes == {}
        assert idioms3._read_newline(g) == newline
        if f.readable():
            assert [g.readline() for _ in range(4)] == [f.readline() for _ in range(4)]
        else:
            g.write("z\n")
            g.flush()
            assert path.read_bytes().endswith({None: b"z\n", "": b"z\n", "\n": b"z\n", "\r": b"z\r",
                                               "\r\n": b"z\r\n"}[newline])
    finally:
        f.close()
        g.close()


def test_a_python_whose_files_do_not_tell_their_newline_says_so(tmp_path, monkeypatch):
    path = tmp_path / "rows.csv"
    path.write_text("a\n")
    monkeypatch.setattr(idioms3, "_works", [False])
    with open(path, newline="") as f:
        values, failed, notes = _round_trip({"f": f})
    values["f"].close()
    assert failed == {} and "could not be read on that Python" in notes["f"], notes


NANS = '''
import math
import os
import numpy as np
x = np.nan
counts = {np.nan: 3, 1.0: 2}
y = float("nan")
ys = [y, y, 1.0]
seen = {y}
class Cell:
    def __init__(self, v):
        self.v = v
grid = [Cell(y), Cell(math.nan)]
by_cell = {"a": {"b": (y,)}}
alone = float("nan")
'''


def test_nans_found_by_identity_are_one_nan_again():
    """pickle saves floats by value: `counts.get(np.nan)` answered None
    after a restore, `x is np.nan` and `y in ys` were False."""
    ns = {"__name__": "__main__"}
    exec(NANS, ns)
    values, failed, notes = _round_trip(ns, [n for n in ns if n not in ("__name__", "__builtins__", "np", "math")])
    assert failed == {} and notes == {}
    assert values["x"] is np.nan and values["counts"][np.nan] == 3
    y = values["y"]
    assert y != y and values["ys"][0] is y and values["ys"][1] is y and y in values["seen"]
    assert values["grid"][0].v is y and values["grid"][1].v is math.nan and values["by_cell"]["a"]["b"][0] is y
    assert values["alone"] != values["alone"]


def test_a_state_without_shared_nans_is_pickled_without_persistent_ids(monkeypatch):
    calls = []
    monkeypatch.setattr(serializer._ReferencePickler, "persistent_id",
                        lambda self, obj: calls.append(obj) or self._refs.get(id(obj)))
    ns = {"a": [float("nan"), 1.0], "b": {"k": float("nan")}}
    values, failed, _ = _round_trip(ns)
    assert failed == {} and calls == [] and values["a"][0] != values["a"][0]


PROXIES = '''
import weakref
class Node:
    def __init__(self, name, parent=None):
        self.name, self.kids = name, []
        self.parent = None if parent is None else weakref.proxy(parent)
        if parent is not None:
            parent.kids.append(self)
def shout(s):
    return s.upper()
root = Node("root")
leaf = Node("leaf", root)
call = weakref.proxy(shout)
dead = weakref.proxy(Node("temporary"))
dead_call = weakref.proxy(lambda: 1)
'''


def test_weak_proxies_are_proxies_of_their_objects_again_and_a_dead_one_is_dead():
    """A proxy was saved as a strong copy of its object (changes to the
    object no longer showed through it); a dead one failed the whole dump."""
    ns = {"__name__": "__main__"}
    exec(PROXIES, ns)
    values, failed, notes = _round_trip(ns, ["Node", "shout", "root", "leaf", "call", "dead", "dead_call"])
    assert failed == {} and notes == {}
    root, leaf = values["root"], values["leaf"]
    assert type(leaf.parent) is weakref.ProxyType and leaf.parent.kids[0] is leaf
    root.name = "renamed"
    assert leaf.parent.name == "renamed"
    assert type(values["call"]) is weakref.CallableProxyType and values["call"]("a") == "A"
    for name, kind in (("dead", weakref.ProxyType), ("dead_call", weakref.CallableProxyType)):
        assert type(values[name]) is kind
        with pytest.raises(ReferenceError):
            values[name].anything


SLOTTED_GETATTR = '''
class Config:
    __slots__ = ("_d", "name")
    def __init__(self, name, **values):
        self._d, self.name = values, name
    def __getattr__(self, key):
        return self._d[key]
class Loose(Config):
    pass
cfg = Config("run", lr=0.1, epochs=3)
loose = Loose("other", lr=0.5)
loose.extra = [1]
'''


def test_a_slotted_class_whose_getattr_reads_a_slot_is_scanned_saved_and_loaded():
    """Its `__getattr__` raised KeyError('__dict__') in the array scan (every
    checkpoint failed), and RecursionError at restore (pickle asked the new
    object, no slot set yet, for __setstate__)."""
    ns = {"__name__": "__main__"}
    exec(SLOTTED_GETATTR, ns)
    values, failed, notes = _round_trip(ns, ["Config", "Loose", "cfg", "loose"])
    assert failed == {} and notes == {}
    cfg, loose = values["cfg"], values["loose"]
    assert (cfg.name, cfg.lr, cfg.epochs, type(cfg) is values["Config"]) == ("run", 0.1, 3, True)
    assert (loose.name, loose.lr, loose.extra) == ("other", 0.5, [1])


def test_a_temporary_directory_in_a_record_that_fails_keeps_its_folder(tmp_path):
    """A record that fails (a class whose module is gone here) or a pass
    that starts over dropped the TemporaryDirectory it had built with its
    cleanup armed again: its folder, files and all, was deleted."""
    mod = types.ModuleType("ehk_gone_for_tmp")
    exec("class Thing:\n    pass\n", mod.__dict__)
    sys.modules["ehk_gone_for_tmp"] = mod
    kept = tempfile.TemporaryDirectory(dir=tmp_path)
    inside = tempfile.TemporaryDirectory(dir=tmp_path)
    (tmp_path / kept.name / "a.csv").write_text("x")
    (tmp_path / inside.name / "b.csv").write_text("y")
    ns = {"kept": kept, "box": {"dir": inside, "thing": mod.Thing()}}
    try:
        dumped = serializer.dump_namespace(ns, list(ns))
    finally:
        del sys.modules["ehk_gone_for_tmp"]
    values, failed, _ = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {})
    gc.collect()
    assert set(failed) == {"box"} and os.listdir(values["kept"].name) == ["a.csv"]
    assert os.listdir(inside.name) == ["b.csv"]
    for t in (kept, inside):
        t._finalizer.detach()  # the originals stand for the old kernel's, gone with it


def test_a_load_undone_whole_keeps_the_temporary_directorys_folder(tmp_path):
    """A refused live apply undoes every binding: the TemporaryDirectory it
    had loaded was dropped with its cleanup armed, and deleted the folder."""
    kept = tempfile.TemporaryDirectory(dir=tmp_path)
    (tmp_path / kept.name / "a.csv").write_text("x")
    dumped = serializer.dump_namespace({"kept": kept}, ["kept"])
    target: dict = {}
    bindings = loader.Bindings(target)
    values, failed, _ = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), target,
                                              bindings)
    assert failed == {} and target["kept"] is values["kept"]
    bindings.undo()
    del values
    gc.collect()
    assert target == {} and os.listdir(kept.name) == ["a.csv"]
    kept._finalizer.detach()
