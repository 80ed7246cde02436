"""The idioms of idioms2.py, through the serializer and the loader directly:
objects of notebook classes with a ``__new__`` of their own, dict
iterators, tempfile's objects and ``weakref.finalize``."""

import gc
import os
import shutil
import tempfile

from elastichub_kernel import loader, serializer

OWN_NEW = '''
class Point(tuple):
    def __new__(cls, x, y):
        return super().__new__(cls, (x, y))
    @property
    def x(self):
        return self[0]
class Temp(float):
    def __new__(cls, value, unit):
        obj = super().__new__(cls, value)
        obj.unit = unit
        return obj
class Cents(int):
    def __new__(cls, euros, cents):
        return super().__new__(cls, euros * 100 + cents)
class Impedance(complex):
    def __new__(cls, r, x, unit):
        obj = super().__new__(cls, r, x)
        obj.unit = unit
        return obj
class Word(str):
    def __new__(cls, text, lang):
        obj = super().__new__(cls, text)
        obj.lang = lang
        return obj
class Packet(bytes):
    def __new__(cls, payload, port):
        obj = super().__new__(cls, payload)
        obj.port = port
        return obj
class Tags(frozenset):
    def __new__(cls, *tags):
        return super().__new__(cls, tags)
class Point3(Point):
    def __new__(cls, x, y, z):
        obj = tuple.__new__(cls, (x, y, z))
        return obj
class Counted:
    created = 0
    def __new__(cls, *args):
        cls.created += 1
        return super().__new__(cls)
    def __init__(self, v):
        self.v = v
class City:
    made = 0
    def __new__(cls, name):
        cls.made += 1
        return super().__new__(cls)
    def __init__(self, name):
        self.name, self.roads = name, {}
    def __hash__(self):
        return hash(self.name)
    def __eq__(self, other):
        return self.name == other.name
p = Point(1, 2)
t = Temp(21.5, "C")
price = Cents(3, 5)
z = Impedance(50, -3, "ohm")
w = Word("chat", "fr")
pkt = Packet(b"\\x01\\x02", 8080)
tags = Tags("a", "b")
p3 = Point3(1, 2, 3)
path = [Point(0, 0), Point(3, 4), p]
items = [Counted(1), Counted(2)]
paris, lyon = City("paris"), City("lyon")
paris.roads[lyon] = 465
lyon.roads[paris] = 465
'''


def _round_trip(ns, names):
    dumped = serializer.dump_namespace(ns, names, user_ns=ns)
    assert dumped.failed == {}
    values, failed, notes = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers),
                                                  {"__name__": "__main__"})
    return values, failed, notes


def test_objects_of_notebook_classes_with_their_own_new_are_made_without_calling_it_again():
    """pickle called ``Point.__new__(Point, (1, 2))``: 'missing 1 required
    positional argument: y', for the variable and every container holding
    one; and a __new__ counting its objects counted them again."""
    ns = {"__name__": "__main__"}
    exec(OWN_NEW, ns)
    names = [n for n in ns if not n.startswith("__")]
    values, failed, notes = _round_trip(ns, names)
    assert failed == {} and notes == {}
    for name in ("p", "t", "price", "z", "w", "pkt", "tags", "p3", "path"):
        assert values[name] == ns[name] and type(values[name]).__name__ == type(ns[name]).__name__, name
    assert values["p"].x == 1 and type(values["p"]) is values["Point"] and values["path"][2] is values["p"]
    assert (values["t"].unit, values["z"].unit, values["w"].lang, values["pkt"].port) == ("C", "ohm", "fr", 8080)
    assert values["price"] == 305 and values["p3"] == (1, 2, 3)
    assert values["Counted"].created == 2 and [c.v for c in values["items"]] == [1, 2]
    paris = values["paris"]
    assert values["City"].made == 2 and paris.roads[values["lyon"]] == 465 and values["lyon"].roads[paris] == 465
    assert values["Temp"](3.0, "K").unit == "K" and values["Counted"](5).v == 5  # the classes still work
    assert values["Counted"].created == 3


def test_dict_iterators_go_on_over_the_restored_dict_from_where_they_were():
    """They came back as list iterators over a copy of what was left."""
    d = {"a": 1, "b": 2, "c": 3}
    keys, items, back, vals = iter(d), iter(d.items()), reversed(d), iter(d.values())
    next(keys), next(items), next(back)
    done = iter({"x": 1})
    list(done)
    broken = {"k": 1}
    bad = iter(broken)
    broken["j"] = 2
    ns = {"d": d, "keys": keys, "items": items, "back": back, "vals": vals, "done": done, "bad": bad}
    values, failed, _ = _round_trip(ns, list(ns))
    assert failed == {}
    r = values["d"]
    assert [type(values[n]) for n in ("keys", "items", "back", "vals")] == [type(keys), type(items), type(back),
                                                                             type(vals)]
    r["b"] = 20
    assert next(values["items"]) == ("b", 20) and next(values["back"]) == "b" and next(values["vals"]) == 1
    r["z"] = 26
    for name in ("keys", "bad"):
        try:
            next(values[name])
        except RuntimeError as exc:
            assert "changed size during iteration" in str(exc)
        else:
            raise AssertionError(f"{name} is not tied to a dict")
    assert list(values["done"]) == []


def test_named_temporary_files_and_temporary_directories_and_finalizers(tmp_path):
    """A kept NamedTemporaryFile failed to load (KeyError: 'file'); a
    TemporaryDirectory whose folder is gone came back 'loaded', pointing
    nowhere, and one whose folder is there lost its cleanup."""
    log = []

    class Res:
        pass

    res = Res()
    scratch = tempfile.NamedTemporaryFile("w+", suffix=".csv", delete=False, dir=tmp_path)
    scratch.write("a,b\n1,2\n")
    kept_dir = tempfile.TemporaryDirectory(dir=tmp_path)
    gone_dir = tempfile.TemporaryDirectory(dir=tmp_path)
    ns = {"__name__": "__main__", "log": log, "res": res, "scratch": scratch, "kept_dir": kept_dir,
          "gone_dir": gone_dir, "fin": __import__("weakref").finalize(res, log.append, "cleanup ran")}
    try:
        dumped = serializer.dump_namespace(ns, [n for n in ns if n != "__name__"], user_ns=ns)
        open_deleting = tempfile.NamedTemporaryFile("w+", dir=tmp_path)
        refused = serializer.dump_namespace({"t": open_deleting}, ["t"])
        open_deleting.close()
    finally:
        scratch.close()
    assert dumped.failed == {}
    assert "NamedTemporaryFile (delete=True)" in refused.failed["t"]
    shutil.rmtree(gone_dir.name)
    values, failed, _ = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers),
                                              {"__name__": "__main__"})
    assert list(failed) == ["gone_dir"] and "temporary directory" in failed["gone_dir"] \
        and "is gone" in failed["gone_dir"]
    back = values["scratch"]
    assert back.name == scratch.name and back.tell() == 8 and not back.delete
    back.write("3,4\n")
    back.seek(0)
    assert back.read() == "a,b\n1,2\n3,4\n"
    back.close()
    assert os.path.exists(scratch.name)  # delete=False: kept
    fin, kept = values["fin"], values["kept_dir"]
    # a finalizer runs once, and the old kernel's exit ran this one: spent, never run again here
    assert not fin.alive and kept._finalizer.alive and os.path.isdir(kept.name)
    del values["res"]
    gc.collect()  # (the failed record's traceback held the loader's memo in a cycle)
    assert values["log"] == []
    kept.cleanup()
    assert not os.path.exists(kept.name)
