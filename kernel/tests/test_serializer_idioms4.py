"""Idioms of a sixth probe round, through the serializer and the loader
directly: memoryview slices of a memoryview over a buffer no variable holds."""

from elastichub_kernel import loader, serializer


def _round_trip(ns):
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert dumped.failed == {}
    return loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {"__name__": "__main__"})


def test_slices_of_a_memoryview_over_an_unnamed_bytearray_still_write_into_it():
    """`buf = memoryview(bytearray(8)); head = buf[:4]`: the zero-copy idiom.
    head came back over a copy of its bytes, silently: a write through it no
    longer showed in buf."""
    buf = memoryview(bytearray(b"abcdefgh"))
    ns = {"head": buf[:4], "tail": buf[4:], "buf": buf}
    values, failed, notes = _round_trip(ns)
    assert failed == {} and notes == {}
    assert bytes(values["buf"]) == b"abcdefgh" and bytes(values["tail"]) == b"efgh"
    assert values["head"].obj is values["buf"].obj is values["tail"].obj
    values["head"][0] = ord("z")
    values["tail"][-1] = ord("q")
    assert bytes(values["buf"]) == b"zbcdefgq"


def test_a_partial_memoryview_alone_is_still_a_copy_of_what_it_covers():
    big = bytearray(1000)
    ns = {"small": memoryview(big)[:4], "part": memoryview(big)[10:20]}
    values, failed, notes = _round_trip(ns)
    assert failed == {} and notes == {}
    assert len(values["small"].obj) == 4 and len(values["part"].obj) == 10
