"""Migrate vs recompute, in process: imports re-imported and verified, pure
cells re-run and verified by fingerprint, everything else migrated or named."""

import json
import os
import sys
import types

from elastichub_kernel import engine
from elastichub_kernel.diskspeed import DiskSpeed
from elastichub_kernel.recorder import HistoryRecorder, analyze_cell
from elastichub_kernel.storage import CHECKPOINT_NAME


def _run(recorder, ns, number, code):
    info = analyze_cell(code)
    prepared = recorder.prepare(info, ns)
    exec(code, ns)
    recorder.record(number, code, info, prepared, ns, 0.0001, True)


def _state(tmp_path):
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    rec = HistoryRecorder()
    for i, code in enumerate([
        "import json as js",
        "n = 3_000_000",
        "big = 'xy' * n",                         # pure, 6 MB: recompute
        "small = 'xy' * 10",                      # pure but tiny: migrate
        "import random\nnoise = str(random.random()) * 1000",  # random: migrate, never re-run
    ]):
        _run(rec, ns, i + 1, code)
    return ns, rec, DiskSpeed(str(tmp_path), 5.0)


def test_cost_model_recomputes_only_large_pure_values_and_imports(tmp_path):
    ns, rec, speed = _state(tmp_path)
    names = engine.user_variable_names(ns, {})
    reply = engine.checkpoint(str(tmp_path / "s"), ns, names, rec, speed, "nb")
    assert sorted(reply["recomputed"]) == ["big", "js", "random"]
    assert {"n", "small", "noise"} <= set(reply["migrated"])
    assert reply["bytes"] < 1_000_000  # the 6 MB `big` was not written

    target = {"__name__": "__main__"}
    report = engine.restore(reply["path"], target)
    assert report["not_restorable"] == [] and report["failed_now"] == []
    for name in ("big", "small", "noise", "n"):
        assert target[name] == ns[name], name
    assert target["js"] is json


def test_recomputed_value_with_other_fingerprint_is_named_not_swapped(tmp_path, monkeypatch):
    ns, rec, speed = _state(tmp_path)
    reply = engine.checkpoint(str(tmp_path / "s"), ns, engine.user_variable_names(ns, {}), rec, speed, "nb")
    real = engine.value_fingerprint
    monkeypatch.setattr(engine, "value_fingerprint", lambda v: "0" * 64 if isinstance(v, str) and len(v) > 10**6 else real(v))
    target = {}
    report, rejected = engine.restore_or_reject(str(tmp_path / "s"), target)
    assert rejected is None
    assert "big" not in target
    [item] = report["not_restorable"]
    assert item["name"] == "big" and "different value" in item["reason"]
    assert target["noise"] == ns["noise"]
    # partial restore: the file is kept aside so a later checkpoint cannot lose `big`
    assert report["kept_as"] and os.path.exists(report["kept_as"])
    assert not os.path.exists(reply["path"])


def _checkpoint_then_restore(tmp_path, ns, rec, speed):
    """(checkpoint reply, restore report, restored namespace)."""
    reply = engine.checkpoint(str(tmp_path / "s"), ns, engine.user_variable_names(ns, {}), rec, speed, "nb")
    target = {}
    report, rejected = engine.restore_or_reject(str(tmp_path / "s"), target)
    assert rejected is None
    return reply, report, target


def test_a_comprehension_variable_does_not_make_a_pure_cell_the_producer(tmp_path):
    ns, rec, speed = _state(tmp_path)
    _run(rec, ns, 6, "import os\nc = os.urandom(3_000_000).hex()")  # random: migrate
    _run(rec, ns, 7, "y = [1 for c in range(3)]")                  # pure, leaves c alone
    reply, report, target = _checkpoint_then_restore(tmp_path, ns, rec, speed)
    assert "c" in reply["migrated"] and "c" not in reply["recomputed"]
    assert report["not_restorable"] == [] and target["c"] == ns["c"]


def test_a_value_rebound_outside_the_cells_code_is_migrated(tmp_path):
    ns, rec, speed = _state(tmp_path)
    info = analyze_cell("m = 1")
    prepared = rec.prepare(info, ns)
    exec("m = 1", ns)
    ns["w"] = os.urandom(1_500_000).hex()  # a thread rebinds w while the pure cell runs
    rec.record(6, "m = 1", info, prepared, ns, 0.0001, True)
    reply, report, target = _checkpoint_then_restore(tmp_path, ns, rec, speed)
    assert "w" in reply["migrated"] and "w" not in reply["recomputed"]
    assert report["not_restorable"] == [] and target["w"] == ns["w"]


def test_an_augmented_assignment_is_recomputed_from_its_own_input(tmp_path):
    ns, rec, speed = _state(tmp_path)
    _run(rec, ns, 6, "import os\nr = os.urandom(1_500_000).hex()")  # random: migrate
    _run(rec, ns, 7, "r += 'c'")            # reads a 3 MB value it cannot keep: not pure
    _run(rec, ns, 8, "tail = 'q' * 10")
    _run(rec, ns, 9, "tail += 'z' * n")     # pure: re-run on the small `tail` it read
    reply, report, target = _checkpoint_then_restore(tmp_path, ns, rec, speed)
    assert "r" in reply["migrated"] and "tail" in reply["recomputed"]
    assert report["not_restorable"] == []
    assert target["r"] == ns["r"] and target["tail"] == ns["tail"]


def test_missing_module_is_named_and_changed_module_is_noted(tmp_path):
    fake = types.ModuleType("ehk_fake_mod")
    fake.__version__ = "1.0"
    sys.modules["ehk_fake_mod"] = fake
    try:
        ns = {"fm": fake, "os_mod": os, "v": 1, "adhoc": types.ModuleType("adhoc_not_in_sys_modules")}
        reply = engine.checkpoint(str(tmp_path / "s"), ns, list(ns), HistoryRecorder(), DiskSpeed(str(tmp_path), 5.0), "nb")
    finally:
        del sys.modules["ehk_fake_mod"]
    assert [i["name"] for i in reply["not_restorable"]] == ["adhoc"]
    target = {}
    report = engine.restore(reply["path"], target)
    names = {i["name"]: i["reason"] for i in report["not_restorable"]}
    assert "ehk_fake_mod" in names["fm"] and "adhoc" in names
    assert target["os_mod"] is os and target["v"] == 1



def test_module_changed_since_checkpoint_is_restored_and_noted(tmp_path):
    fake = types.ModuleType("ehk_fake_mod2")
    fake.__version__ = "1.0"
    sys.modules["ehk_fake_mod2"] = fake
    try:
        ns = {"fm": fake}
        reply = engine.checkpoint(str(tmp_path / "s"), ns, list(ns), HistoryRecorder(), DiskSpeed(str(tmp_path), 5.0), "nb")
        fake.__version__ = "2.0"
        target = {}
        report = engine.restore(reply["path"], target)
    finally:
        del sys.modules["ehk_fake_mod2"]
    assert target["fm"] is fake and report["recomputed"] == ["fm"]
    [note] = report["differs"]
    assert note["name"] == "fm" and "2.0" in note["reason"] and "1.0" in note["reason"]


def test_user_variable_names_skip_ipython_history():
    ns = {"_": 1, "__": 2, "_i3": "x", "_5": 5, "In": [], "Out": {5: 5}, "_oh": {5: 5}, "__name__": "__main__",
          "exit": object(), "data": 1, "_private": 2}
    hidden = {"exit": ns["exit"], "In": ns["In"], "Out": ns["Out"], "_oh": ns["_oh"]}
    assert engine.user_variable_names(ns, hidden) == ["data", "_private"]


def test_a_user_variable_named_like_ipython_history_is_kept():
    ipython_out = {}
    ns = {"Out": "the user's own", "In": [1, 2], "_oh": ipython_out, "data": 1}
    hidden = {"Out": ipython_out, "In": [], "_oh": ipython_out}
    assert engine.user_variable_names(ns, hidden) == ["Out", "In", "data"]


def test_rejected_file_binds_nothing_not_even_imports(tmp_path):
    ns = {"js": json, "x": list(range(1000))}
    reply = engine.checkpoint(str(tmp_path / "s"), ns, list(ns), HistoryRecorder(), DiskSpeed(str(tmp_path), 5.0), "nb")
    with open(reply["path"], "r+b") as f:
        f.seek(40)
        f.write(b"\xff\xfe\xfd")
    target = {}
    report, rejected = engine.restore_or_reject(str(tmp_path / "s"), target)
    assert report is None and target == {}
    assert "checksum" in rejected["reason"] and os.path.exists(rejected["kept_as"])
    assert not os.path.exists(os.path.join(str(tmp_path / "s"), CHECKPOINT_NAME))


def test_array_writability_is_preserved(tmp_path):
    import numpy as np

    ns = {"ro": np.frombuffer(bytes(range(256)) * 8192, dtype=np.uint8),  # read-only, 2 MiB
          "rw": np.arange(300_000, dtype=np.float64)}
    reply = engine.checkpoint(str(tmp_path / "s"), ns, list(ns), HistoryRecorder(), DiskSpeed(str(tmp_path), 5.0), "nb")
    target = {}
    engine.restore(reply["path"], target)
    assert np.array_equal(target["ro"], ns["ro"]) and not target["ro"].flags.writeable
    assert np.array_equal(target["rw"], ns["rw"]) and target["rw"].flags.writeable


def test_fingerprint_depends_on_the_value_not_only_its_type():
    # The net behind every recomputed value: equal values match, any other
    # value of the same type and size does not.
    fp = engine.value_fingerprint
    assert fp("ab" * 1000) == fp("".join(["ab"] * 1000))
    assert fp("ab" * 1000) != fp("ba" * 1000)
    assert fp(b"\x00" * 64) != fp(b"\x00" * 63 + b"\x01")
    assert fp((1, 2.0, "x")) != fp((1, 2.0, "y")) and fp(1) != fp(2)
    assert fp(1) != fp(1.0) and fp(0) != fp(False)


def test_recompute_that_gives_another_value_is_named_not_swapped(tmp_path):
    # No stub: the recorded inputs of a pure cell are changed behind the
    # recorder's back, so re-running it gives a string of the same type and
    # length but other content. Only a fingerprint of the value sees it.
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    rec = HistoryRecorder()
    _run(rec, ns, 1, "unit = 'xy'")
    _run(rec, ns, 2, "big = unit * 2_000_000")
    rec.producer["big"].inputs["unit"] = "yx"
    speed = DiskSpeed(str(tmp_path), 5.0)
    reply = engine.checkpoint(str(tmp_path / "s"), ns, engine.user_variable_names(ns, {}), rec, speed, "nb")
    assert "big" in reply["recomputed"]
    target = {}
    report, rejected = engine.restore_or_reject(str(tmp_path / "s"), target)
    assert rejected is None and "big" not in target and target["unit"] == "xy"
    [entry] = [e for e in report["failed_now"] if e["name"] == "big"]
    assert "fingerprint mismatch" in entry["reason"]


def test_a_recompute_recipe_that_is_not_pure_is_never_run(tmp_path):
    # The recipe comes from the file: even a checksummed one is re-checked
    # before anything is executed.
    marker = tmp_path / "ran"
    spec = {"name": "v", "cell": 3, "code": f"v = open({str(marker)!r}, 'w')", "inputs": {}, "fingerprint": "0"}
    ns = {}
    problem = engine._recompute_pure("v", spec, ns)
    assert "not provably pure" in problem and not marker.exists() and "v" not in ns
    assert "not provably pure" in engine._recompute_pure("v", dict(spec, code=None), ns)


def test_a_recompute_that_raises_is_named(tmp_path):
    spec = {"name": "v", "cell": 4, "code": "v = 1 // zero", "inputs": {"zero": 0},
            "fingerprint": engine.value_fingerprint(1)}
    ns = {}
    problem = engine._recompute_pure("v", spec, ns)
    assert problem.startswith("recomputing cell [4] failed (ZeroDivisionError") and "v" not in ns


CODE_RUN_AT_LOAD = '''
import numpy as np
SCALE = 10
class Cached:
    def __init__(self, v):
        self.v = v
        self.cache = np.arange(3) * SCALE
    def __getstate__(self):
        return {"v": self.v}
    def __setstate__(self, state):
        self.__dict__.update(state)
        self.cache = np.arange(3) * SCALE
cached = Cached(5)
def norm(k):
    return k.lower()
class CIDict(dict):
    def __setitem__(self, k, v):
        super().__setitem__(norm(k), v)
cid = CIDict()
cid["Apple"] = 1
REGISTRY = {}
class Plugin:
    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        REGISTRY[cls.__name__] = cls
class CSVPlugin(Plugin):
    pass
plug = CSVPlugin()
class Temp:
    def __init__(self, c):
        self.c = c
    def __reduce__(self):
        return (make_temp, (self.c,))
def make_temp(c):
    return Temp(c)
tmp = Temp(21)
FAIL_ON_LOAD = True
class Picky:
    def __setstate__(self, state):
        if FAIL_ON_LOAD:
            raise ValueError("refuses to load")
Out = Picky()
Out.x = 1
uses_out = [Out, "x"]
after = [1, 2]
'''


def test_notebook_code_run_while_loading_sees_the_variables_loaded_before_it(tmp_path):
    """__setstate__, a __reduce__ helper, a dict subclass's __setitem__ and
    __init_subclass__ ran before any variable was bound: NameError on np,
    SCALE, REGISTRY... and 8 variables lost. Now modules are bound first and
    each variable as soon as it has loaded; one that fails is not bound (a
    name the new kernel had keeps its value)."""
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(CODE_RUN_AT_LOAD, ns)
    reply = engine.checkpoint(str(tmp_path / "s"), ns, engine.user_variable_names(ns, {}), HistoryRecorder(),
                              DiskSpeed(str(tmp_path), 5.0), "nb")
    assert reply["not_restorable"] == []
    target = {"__name__": "__main__", "Out": "the new kernel's"}
    report, rejected = engine.restore_or_reject(str(tmp_path / "s"), target)
    assert rejected is None
    assert {i["name"]: i["reason"] for i in report["failed_now"]} == {
        "Out": "could not be loaded (ValueError: refuses to load)",
        "uses_out": "could not be loaded (shares objects with Out, which could not be loaded)"}
    assert target["Out"] == "the new kernel's" and "uses_out" not in target and target["after"] == [1, 2]
    assert target["cached"].cache.tolist() == [0, 10, 20] and target["cid"] == {"apple": 1}
    assert type(target["cid"]) is target["CIDict"] and target["tmp"].c == 21
    assert type(target["tmp"]) is target["Temp"] and target["make_temp"].__globals__ is target
    # Rebuilding the class did not run the notebook's __init_subclass__ again: the registry is as saved.
    assert target["REGISTRY"] == {"CSVPlugin": target["CSVPlugin"]} and type(target["plug"]) is target["CSVPlugin"]
    assert issubclass(target["CSVPlugin"], target["Plugin"])
    exec("class JSONPlugin(Plugin):\n    pass\n", target)  # a new subclass still registers
    assert sorted(target["REGISTRY"]) == ["CSVPlugin", "JSONPlugin"]


def test_a_users_own_variable_named_like_an_output_is_saved_ipythons_are_not():
    """`_2 = weights` was dropped as if it were IPython's output cache."""
    outputs = {1: "the output of cell 1"}
    ns = {"_oh": outputs, "Out": outputs, "_1": outputs[1], "_2": [0.5, 0.25], "_": outputs[1], "x": 1}
    names = engine.user_variable_names(ns, {"_oh": outputs, "Out": outputs})
    assert names == ["_2", "x"]


def test_a_live_destination_that_could_not_load_everything_says_the_file_is_left_alone(tmp_path):
    """It sets nothing aside (the source's files are not its own to move):
    "could not be set aside" read like a failure that had not happened."""
    from elastichub_kernel.messages import format_restore

    report = {"migrated": ["a"], "recomputed": [], "not_restorable": [{"name": "b", "reason": "gone"}],
              "failed_now": [{"name": "b", "reason": "gone"}], "seconds": 0.1, "created": 0,
              "path": "/ckpt/live-base.ehk", "kept_as": None, "left_in_place": True}
    text = format_restore(report)
    assert "The checkpoint file /ckpt/live-base.ehk is left as it is." in text and "could not" not in text
