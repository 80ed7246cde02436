"""Cell analysis: what a cell reads/binds/mutates, and whether it is provably pure."""

from elastichub_kernel.recorder import HistoryRecorder, analyze_cell


def test_reads_binds_imports():
    info = analyze_cell("import numpy as np\nfrom os import path as p\nimport xml.dom\ny = f(x) + np.pi\ndef g(a=z): return q\n")
    assert {"np", "p", "xml", "y", "g"} <= info.binds
    assert {"f", "x", "np", "z"} <= info.reads
    assert "q" not in info.reads and "a" not in info.binds  # other scope
    assert ("np", "numpy", None) in info.imports and ("p", "os", "path") in info.imports
    assert ("xml", "xml", None) in info.imports


def test_mutations_are_detected_from_code():
    info = analyze_cell("a.append(1)\nb[0] = 2\nc.x = 3\nf(d)\ne += [1]\n")
    assert {"a", "b", "c", "d"} <= info.mutates
    assert "e" in info.binds and "e" in info.reads  # `e += [1]` reads e first


def test_pure_cells():
    assert analyze_cell("n = 10\nbig = 'ab' * n\nt = tuple(range(n))").pure
    assert analyze_cell("x = sum(i * i for i in range(100))").pure
    assert analyze_cell("a, b = 1, 2").pure
    assert analyze_cell("n: int = 3\nm: int = n + 1").pure  # annotated assignments too


def test_expressions_outside_the_pure_set_are_never_pure():
    # Not a call at all, yet not provably pure: an attribute may be a
    # property, an f-string calls __format__, := binds, a lambda captures.
    for code in ("v = obj.attr", "v = f'{x}'", "v = (w := 3)", "v = lambda: 1", "v = [1][obj.i]",
                 "n: int", "v = await f()"):
        assert not analyze_cell(code).pure, code


def test_side_effects_and_randomness_are_never_pure():
    for code in (
        "p = 'f.txt'\nfh = open(p, 'w')",
        "with open('f.txt', 'w') as fh: fh.write('x')",
        "import random\nx = random.random()",
        "x = np.random.rand(10)",
        "x = y.copy()",             # attribute access: unknown object
        "x = hash('a')",           # salted per process
        "x = sorted(set([1, 2]))", # set order depends on hashing
        "x[0] = 1",
        "print(1)",
        "x = id(y)",
        "import os",
        "def f(): pass",
        "get_ipython().run_line_magic('time', '1')",
        "",
    ):
        assert not analyze_cell(code).pure, code


def test_comprehension_variables_stay_in_their_scope():
    assert analyze_cell("y = [1 for c in range(3)]").binds == {"y"}
    assert analyze_cell("d = {k: v for (k, *v) in items}").binds == {"d"}
    # an item/attribute target stores into an outer object; := binds outside
    assert "x" in analyze_cell("[0 for x.attr in range(3)]").mutates
    assert "last" in analyze_cell("[last := v for v in data]").binds


def test_unparsable_cell_is_opaque():
    info = analyze_cell("%%bash\necho hi")
    assert not info.parsed and not info.pure


def test_recorder_tracks_producers_and_inputs_without_touching_values():
    class Untouchable:
        """Any per-cell hashing, comparing or pickling of values would fail."""

        def __reduce__(self):
            raise AssertionError("pickled during recording")

        def __eq__(self, other):
            raise AssertionError("compared during recording")

        __hash__ = None

    rec = HistoryRecorder()
    ns = {"data": Untouchable(), "n": 3}
    code = "big = 'ab' * n"
    info = analyze_cell(code)
    prepared = rec.prepare(info, ns)
    ns["big"] = "ab" * 3
    cell = rec.record(1, code, info, prepared, ns, 0.001, True)
    assert cell.info.pure and cell.inputs == {"n": 3}
    assert rec.producer["big"] is cell and "big" in cell.bound

    code2 = "data.update(1)"
    info2 = analyze_cell(code2)
    prepared2 = rec.prepare(info2, ns)
    rec.record(2, code2, info2, prepared2, ns, 0.001, True)
    assert "data" in rec.mutated

    # a pure cell reading a non-plain value is not pure any more
    code3 = "y = data"
    info3 = analyze_cell(code3)
    prepared3 = rec.prepare(info3, ns)
    ns["y"] = ns["data"]
    cell3 = rec.record(3, code3, info3, prepared3, ns, 0.001, True)
    assert not cell3.info.pure

    # rebinding through the namespace (not visible in the AST) is seen by the id diff
    prepared4 = rec.prepare(analyze_cell("pass"), ns)
    ns["n"] = 4
    cell4 = rec.record(4, "pass", analyze_cell("pass"), prepared4, ns, 0.0, True)
    assert rec.producer["n"] is cell4


def _run(recorder, ns, code, number=1):
    info = analyze_cell(code)
    prepared = recorder.prepare(info, ns)
    exec(code, ns)
    recorder.record(number, code, info, prepared, ns, 0.0, True)


def test_names_bound_by_from_imports_are_known_until_rebound():
    recorder, ns = HistoryRecorder(), {}
    _run(recorder, ns, "from os import environ as env, sep\nfrom string import *\nimport json")
    assert recorder.imported["env"] == ("os", "environ") and recorder.imported["sep"] == ("os", "sep")
    assert recorder.imported["Formatter"] == ("string", "Formatter")  # a star import's name
    assert "json" not in recorder.imported  # a module: saved as an import already
    _run(recorder, ns, "env = {}\ndel sep", 2)
    assert "env" not in recorder.imported and "sep" not in recorder.imported


def test_attributes_set_on_modules_and_classes_are_noted_with_their_cell():
    import fractions
    import types

    recorder = HistoryRecorder()
    ns = {"fractions": fractions, "opts": types.SimpleNamespace(display=types.SimpleNamespace(rows=1))}
    try:
        _run(recorder, ns, "fractions.Fraction.shout = 1\nopts.display.rows = 7\nfractions.EXTRA = 2", 4)
    finally:
        del fractions.Fraction.shout, fractions.EXTRA
    assert recorder.module_attr_stores == {"fractions.Fraction.shout": (4, "fractions", "class"),
                                           "fractions.EXTRA": (4, "fractions", "module")}
