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
