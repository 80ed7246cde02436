"""numpy views come back as views: a write through the base shows in them.

Plain pickle restores ``view = a[10:20]`` as an independent copy: equal
values, yet after the move a write through ``a`` no longer shows in
``view``. Through a real checkpoint file, in process.
"""

import numpy as np

from elastichub_kernel import engine
from elastichub_kernel.diskspeed import DiskSpeed
from elastichub_kernel.recorder import HistoryRecorder


def _round_trip(tmp_path, ns, name="s"):
    reply = engine.checkpoint(str(tmp_path / name), ns, list(ns), HistoryRecorder(), DiskSpeed(str(tmp_path), 100),
                              "nb")
    assert reply["not_restorable"] == [], reply
    out = {}
    report = engine.restore(reply["path"], out)
    assert report["failed_now"] == [], report
    return out, reply


def _views_of(a):
    view = a[10:20]
    return {
        "view": view,                      # listed before its base: order must not matter
        "a": a,
        "view_of_view": view[2:5],
        "transposed": a.reshape(10, 10).T,
        "reversed": a[::-1],
        "strided": a[1::7],
        "as_int": a[:8].view(np.int64),
    }


def _check_shared(out, original):
    a = out["a"]
    for name, value in out.items():
        assert np.array_equal(value, original[name]), name
        assert value.dtype == original[name].dtype and value.strides == original[name].strides, name
        assert np.shares_memory(a, value), name
    a[12] = -1.0
    assert out["view"][2] == -1.0 and out["view_of_view"][0] == -1.0
    assert out["transposed"][2, 1] == -1.0 and out["reversed"][87] == -1.0
    out["strided"][0] = -2.0      # and the other way: through a view into a
    assert a[1] == -2.0


def test_views_restored_sharing_memory_with_their_base(tmp_path):
    original = _views_of(np.arange(100.0))
    out, _ = _round_trip(tmp_path, original)
    _check_shared(out, original)
    for value in out.values():
        assert value.flags.writeable


def test_views_still_shared_after_a_second_move(tmp_path):
    # After a restore `a` is itself a view (of the flat array read from the
    # file): its views must still be saved as views at the next checkpoint.
    original = _views_of(np.arange(100.0))
    once, _ = _round_trip(tmp_path, original, "first")
    twice, reply = _round_trip(tmp_path, once, "second")
    _check_shared(twice, original)
    assert reply["bytes"] < 2 * original["a"].nbytes + 4096  # the data once, not once per view


def test_read_only_view_and_fortran_base(tmp_path):
    f = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    frozen = f[1:, ::2]
    frozen.flags.writeable = False
    out, _ = _round_trip(tmp_path, {"f": f, "frozen": frozen, "col": f[:, 1]})
    assert np.shares_memory(out["f"], out["frozen"]) and np.shares_memory(out["f"], out["col"])
    assert not out["frozen"].flags.writeable and out["f"].flags.writeable
    out["f"][2, 2] = 99.0
    assert out["frozen"][1, 1] == 99.0 and out["col"].tolist() == [1.0, 5.0, 9.0]


def test_view_of_an_unsaved_base_is_a_copy_of_the_view_only(tmp_path):
    big = np.arange(1_000_000.0)
    out, reply = _round_trip(tmp_path, {"head": big[:3], "also": big[5:6]})
    assert out["head"].tolist() == [0.0, 1.0, 2.0] and out["also"].tolist() == [5.0]
    assert reply["bytes"] < 100_000  # big's 8 MB were not written


def test_views_inside_a_dict_share_with_a_saved_base(tmp_path):
    a = np.arange(50.0)
    out, _ = _round_trip(tmp_path, {"a": a, "parts": {"head": a[:5], "tail": [a[-5:]]}})
    out["a"][0] = 7.0
    out["a"][-1] = 8.0
    assert out["parts"]["head"][0] == 7.0 and out["parts"]["tail"][0][-1] == 8.0


def test_a_sliding_window_is_a_view_of_its_signal_again_never_its_windows_copied(tmp_path):
    """sliding_window_view's base chain goes through an as_strided helper:
    the windows were saved as a copy of every window (500x the signal's
    bytes) and came back sharing nothing."""
    sig = np.random.rand(100_000)
    win = np.lib.stride_tricks.sliding_window_view(sig, 500)
    out, reply = _round_trip(tmp_path, {"sig": sig, "win": win})
    assert reply["bytes"] < 1.1 * sig.nbytes, reply["bytes"]  # was 399,617,511
    assert np.array_equal(out["win"], win) and out["win"].strides == win.strides
    assert np.shares_memory(out["win"], out["sig"]) and not out["win"].flags.writeable
    out["sig"][3] = -1.0
    assert out["win"][0, 3] == out["win"][3, 0] == -1.0
    # its signal not held: the memory the windows cover, not 500 copies of it
    alone, reply = _round_trip(tmp_path, {"win": win[1000:2000]}, "alone")
    assert reply["bytes"] < 2 * 1500 * 8 + 4096, reply["bytes"]
    assert np.array_equal(alone["win"], win[1000:2000]) and alone["win"].strides == win.strides
    assert not alone["win"].flags.writeable and alone["win"].base is not None


def test_a_broadcast_array_whose_base_is_gone_is_saved_as_its_base(tmp_path):
    wide = np.broadcast_to(np.arange(1000.0), (1000, 1000))
    out, reply = _round_trip(tmp_path, {"wide": wide})
    assert reply["bytes"] < 8000 + 4096, reply["bytes"]
    assert np.array_equal(out["wide"], wide) and out["wide"].strides == (0, 8)


def test_an_array_over_a_bytearray_the_state_holds_is_over_it_again(tmp_path):
    """np.frombuffer(buf) came back as a copy: writes no longer reached buf."""
    buf = bytearray(b"abcdefgh" * 2)
    out, _ = _round_trip(tmp_path, {"words": np.frombuffer(buf, dtype=np.uint16)[1:5], "buf": buf})
    out["words"][0] = 0x4141
    assert out["buf"] == bytearray(b"abAAefghabcdefgh") and out["words"].flags.writeable
    out["buf"][4] = ord("Z")
    assert out["words"][1] == np.frombuffer(b"Zf", dtype=np.uint16)[0]


def test_a_slice_of_a_masked_array_shares_its_data_and_mask_again(tmp_path):
    a = np.arange(10.0)
    m = np.ma.masked_array(a, mask=[0, 1] * 5, fill_value=-9.0)
    held = np.ma.array([1.0, 2, 3, 4], mask=[0, 1, 0, 0])
    out, _ = _round_trip(tmp_path, {"a": a, "m": m, "part": m[2:6], "held": held, "tail": held[1:]})
    for name, value in {"m": m, "part": m[2:6], "tail": held[1:]}.items():
        assert type(out[name]) is type(value) and out[name].fill_value == value.fill_value
        assert out[name].tolist() == value.tolist(), name
    out["m"][3] = 99.0
    out["m"][2] = np.ma.masked
    assert out["part"].tolist() == [None, 99.0, 4.0, None] and out["a"][3] == 99.0
    out["tail"][0] = 5.0  # as in the notebook: unmasked and written in both
    assert out["held"].tolist() == [1.0, 5.0, 3.0, 4.0]


def test_a_view_that_cannot_be_made_over_its_base_again_is_said(tmp_path):
    base = np.zeros(8)
    odd = np.lib.stride_tricks.as_strided(base[:4], shape=(2, 2), strides=(16, 8))  # fine: inside base
    out, _ = _round_trip(tmp_path, {"base": base, "odd": odd})
    assert np.shares_memory(out["odd"], out["base"])
    # an array with gaps over a buffer the state does not hold: its views cannot be made over it
    gappy = np.ndarray((4,), float, buffer=bytearray(64), strides=(16,))
    reply = engine.checkpoint(str(tmp_path / "b"), {"gappy": gappy, "tail": gappy[1:]}, ["gappy", "tail"],
                              HistoryRecorder(), DiskSpeed(str(tmp_path), 100), "nb")
    report = engine.restore(reply["path"], {})
    assert [d["name"] for d in report["differs"]] == ["tail"], report
    assert "writes through one no longer show in the other" in report["differs"][0]["reason"]


def test_a_memoryview_comes_back_a_memoryview_over_what_it_viewed(tmp_path):
    """cloudpickle saves a memoryview as bytes: `mview[0] = 65` raised
    TypeError, writes no longer reached the buffer, and one of an int32
    array had len 24, not 6."""
    import array

    buf, ints, numbers = bytearray(b"abcdef"), np.arange(6, dtype=np.int32), array.array("i", [1, 2, 3, 4])
    grid = np.arange(12.0).reshape(3, 4)
    ns = {"mview": memoryview(buf)[1:4], "buf": buf, "amv": memoryview(ints), "ints": ints,
          "every_other": memoryview(b"xyz123")[::2], "backwards": memoryview(numbers)[::-1], "numbers": numbers,
          "columns": memoryview(grid.T), "rows": memoryview(grid)[1:], "grid": grid,
          "alone": memoryview(bytearray(b"0123456789"))[2:8:3], "frozen": memoryview(bytearray(b"ro")).toreadonly()}
    out, _ = _round_trip(tmp_path, dict(ns))
    for name, view in ns.items():
        if type(view) is not memoryview:
            continue
        got = out[name]
        assert type(got) is memoryview, name
        assert (got.format, got.shape, got.strides, got.readonly, got.tolist()) == \
               (view.format, view.shape, view.strides, view.readonly, view.tolist()), name
    assert len(out["amv"]) == 6 and out["mview"].obj is out["buf"] and out["amv"].obj is out["ints"]
    out["mview"][0] = 65
    assert out["buf"] == bytearray(b"aAcdef")
    out["ints"][1] = 7
    out["numbers"][0] = 9
    out["grid"][0, 1] = -1.0
    assert out["amv"][1] == 7 and out["backwards"][3] == 9 and out["columns"][1, 0] == -1.0
    out["rows"][0, 0] = -2.0
    assert out["grid"][1, 0] == -2.0
    assert out["alone"].tolist() == [ord("2"), ord("5")] and out["alone"].obj is not None


def test_a_memoryview_that_cannot_be_made_again_is_named(tmp_path):
    grid = np.arange(12.0).reshape(3, 4)
    reply = engine.checkpoint(str(tmp_path / "s"), {"grid": grid, "every_other_row": memoryview(grid)[::2]},
                              ["grid", "every_other_row"], HistoryRecorder(), DiskSpeed(str(tmp_path), 100), "nb")
    assert [d["name"] for d in reply["not_restorable"]] == ["every_other_row"], reply
    assert "cannot be made again" in reply["not_restorable"][0]["reason"]
