"""The idioms of idioms8.py, through the serializer and the loader directly."""

import argparse
import ctypes
import decimal
import json
import multiprocessing
import xml.etree.ElementTree as ET

from elastichub_kernel import idioms8, loader, serializer


def _round_trip(ns):
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert dumped.failed == {}
    return loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {"__name__": "__main__"})


def test_argparse_constants_tested_by_identity_are_argparses_own_again():
    """A restored parser's parse_args put help='==SUPPRESS==' in every
    Namespace, and printed a hidden option in its help: argparse tests
    `default is not SUPPRESS`, and pickle gave back an equal string."""
    parser = argparse.ArgumentParser(prog="train", usage=argparse.SUPPRESS)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--secret", help=argparse.SUPPRESS)
    group = parser.add_argument_group("extra", argument_default=argparse.SUPPRESS)
    group.add_argument("--seed", type=int)
    values, failed, notes = _round_trip({"parser": parser, "group": group})
    assert failed == {} and notes == {}
    parser = values["parser"]
    assert vars(parser.parse_args(["--lr", "0.5"])) == {"lr": 0.5, "secret": None}
    assert "--secret" not in parser.format_help() and "--seed" in parser.format_help()
    assert parser.usage is argparse.SUPPRESS and values["group"] in parser._action_groups


def test_a_ctypes_structure_class_loaded_again_in_the_same_process_keeps_its_layout():
    """A notebook Structure class loaded a second time in one process (a second %elastic_restore: cloudpickle
    finds the class it made the first time) failed with "_fields_ is final", and its objects with it."""

    class Header(ctypes.BigEndianStructure):  # a class of the test's, so saved by value, as a notebook's
        _pack_ = 1
        _fields_ = [("kind", ctypes.c_char), ("size", ctypes.c_uint16)]

        def total(self):
            return self.size + 1

    for _ in range(2):
        values, failed, notes = _round_trip({"header": Header(b"a", 258), "kind": Header})
        assert failed == {} and notes == {}
    header = values["header"]
    assert bytes(header) == b"a\x01\x02" and header.total() == 259 and ctypes.sizeof(values["kind"]) == 3


def test_ctypes_arrays_and_byte_swapped_fields_come_back_of_ctypes_own_types():
    """An array of `(c_int * 5)(...)` or `create_string_buffer` was saved as
    a class of its own, whose load failed ("type object 'PyCArrayType' has
    no attribute '__mul__'"): a partial restore."""

    arr = (ctypes.c_int * 5)(1, 2, 3, 4, 5)
    ns = {"arr": arr, "buf": ctypes.create_string_buffer(b"hi", 6), "kind": ctypes.c_double * 2,
          "swapped": ctypes.c_uint16.__ctype_be__, "ptr": ctypes.POINTER(ctypes.c_int * 5)}
    values, failed, notes = _round_trip(ns)
    assert failed == {} and notes == {}
    assert type(values["arr"]) is ctypes.c_int * 5 and list(values["arr"]) == [1, 2, 3, 4, 5]
    assert type(values["buf"]) is ctypes.c_char * 6 and values["buf"].raw == b"hi\0\0\0\0"
    assert values["kind"] is ctypes.c_double * 2 and values["swapped"] is ctypes.c_uint16.__ctype_be__
    assert values["ptr"] is ctypes.POINTER(ctypes.c_int * 5) and values["ptr"].__module__ == __name__


def test_a_shared_value_comes_back_in_shared_memory_and_a_pipe_end_is_never_its_descriptor_number():
    """A Pipe end pickled as its file descriptor's number: restored, it read,
    wrote or closed what the new process had opened under that number."""
    counter, text = multiprocessing.Value("i", 3), multiprocessing.Array("c", b"hey")
    ends = multiprocessing.Pipe()
    closed = multiprocessing.Pipe()[0]
    closed.close()
    try:
        ns = {"counter": counter, "text": text, "closed": closed, "end": ends[0], "inside": {"end": ends[1]}}
        failed = serializer.dump_namespace(ns, list(ns), user_ns=ns).failed
        assert set(failed) == {"end", "inside"}
        assert "an open multiprocessing Pipe end" in failed["end"] and "make the Pipe again" in failed["end"]
        assert failed["inside"].endswith("at inside['end'])")
        values, failed, notes = _round_trip({k: ns[k] for k in ("counter", "text", "closed")})
        assert failed == {} and notes == {} and values["closed"].closed
        counter, text = values["counter"], values["text"]
        with counter.get_lock():
            counter.value += 1
        assert (counter.value, text.value, type(counter).__name__) == (4, b"hey", "Synchronized")
    finally:
        for end in ends:
            end.close()


def test_an_image_draw_draws_on_its_restored_image_and_a_font_from_bytes_loads():
    """`draw = ImageDraw.Draw(img)` was 'not restorable' (cannot pickle 'ImagingCore'), and a font loaded
    from bytes (`ImageFont.load_default(size=20)`, the one `draw.text` keeps) failed the restore
    ("cannot open resource"): Pillow saved its stream read to the end."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (60, 30), "white")
    draw = ImageDraw.Draw(img)
    draw.text((0, 0), "hi", fill="black")
    draw.fontmode = "1"
    big = ImageFont.load_default(size=20)
    values, failed, notes = _round_trip({"img": img, "draw": draw, "big": big})
    assert failed == {} and notes == {}
    img, draw, big = values["img"], values["draw"], values["big"]
    draw.rectangle([40, 0, 42, 2], fill="green")
    assert img.getpixel((41, 1)) == (0, 128, 0) and draw.fontmode == "1"
    assert big.size == 20 and big.getbbox("hello") == ImageFont.load_default(size=20).getbbox("hello")
    assert draw.font.getbbox("hi") == ImageFont.load_default().getbbox("hi")


class _Upper(json.JSONDecoder):
    def __init__(self, **kw):
        super().__init__(object_hook=self.hook, **kw)

    def hook(self, d):
        return {k.upper(): v for k, v in d.items()}


def test_a_json_decoder_decodes_with_its_settings_after_a_round_trip():
    """A JSONDecoder kept in a variable was 'not restorable': cannot pickle '_json.Scanner' object."""
    values, failed, notes = _round_trip({"upper": _Upper(), "exact": json.JSONDecoder(parse_float=decimal.Decimal)})
    assert failed == {} and notes == {}
    assert values["upper"].decode('{"a": {"b": 1}}') == {"A": {"B": 1}}
    assert values["exact"].decode("[1.10]") == [decimal.Decimal("1.10")]


def test_an_iterparse_is_named_in_plain_words(tmp_path):
    """An ElementTree.iterparse kept in a variable was named by pickle's
    "cannot pickle 'generator' object": nothing said what it was, nor what to do."""
    path = tmp_path / "data.xml"
    path.write_text("<r>" + "".join(f"<item n='{i}'/>" for i in range(5)) + "</r>")
    midway, done = ET.iterparse(path), ET.iterparse(path)
    next(midway)
    events = list(done)
    ns = {"midway": midway, "done": done, "events": events, "root": done.root}
    failed = serializer.dump_namespace(ns, list(ns), user_ns=ns).failed
    assert set(failed) == {"midway", "done"}
    assert "an ElementTree.iterparse part-way" in failed["midway"] and "make it again" in failed["midway"]
    assert "read to its end: keep its root (root = it.root)" in failed["done"]


def test_a_ctypes_object_whose_class_failed_to_load_is_named_by_it(monkeypatch):
    """A ctypes object whose class's record failed to load failed with "_Unloadable.__setstate__() takes
    2 positional arguments but 3 were given": the loader's stand-in for the class refused ctypes' two-part
    state (instance dict, memory), and nothing named the class."""

    class Header(ctypes.Structure):  # a class of the test's, so saved by value, as a notebook's
        _fields_ = [("size", ctypes.c_uint16)]

    ns = {"Header": Header, "header": Header(258)}
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert dumped.failed == {}

    def broken(cls, state):  # what any failure inside the class's own load does
        raise RuntimeError("the class could not be made")

    monkeypatch.setattr(idioms8, "_set_ctypes_class_state", broken)
    values, failed, notes = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers),
                                                  {"__name__": "__main__"})
    assert values == {} and "the class could not be made" in failed["Header"], failed
    assert "shares objects with Header" in failed["header"] and "positional" not in failed["header"], failed


def test_a_raw_shared_value_or_array_comes_back_in_shared_memory():
    """`mp.RawArray("d", ...)`, `mp.RawValue` and `mp.Value(..., lock=False)` were 'not restorable':
    cannot pickle 'mmap.mmap' object, at ra._wrapper._state[0][0].buffer."""
    ns = {"ra": multiprocessing.RawArray("d", [1.0, 2.0]), "rv": multiprocessing.RawValue("i", 4),
          "free": multiprocessing.Value("i", 3, lock=False)}
    values, failed, notes = _round_trip(ns)
    assert failed == {} and notes == {}
    assert (values["ra"][:], values["rv"].value, values["free"].value) == ([1.0, 2.0], 4, 3)
    for name, value in values.items():
        assert type(value) is type(ns[name]) and "_wrapper" in vars(value)  # in shared memory again
