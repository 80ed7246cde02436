"""The idioms of idioms7.py, through the serializer and the loader directly."""

import contextlib
import contextvars
import decimal
import functools
import importlib.util
import operator
import re
import sys
import threading
import types

import numpy as np

from elastichub_kernel import loader, serializer


def _round_trip(ns):
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert dumped.failed == {}
    return loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {"__name__": "__main__"})


def test_what_cannot_be_read_back_is_named_in_plain_words_with_what_to_do():
    """An nditer part-way, a decimal.localcontext() kept in a variable and a
    ContextVar's Token were named only by pickle's "cannot pickle 'nditer'
    object": nothing said why, nor what to do."""
    it = np.nditer(np.arange(6))
    next(it)
    request = contextvars.ContextVar("request")
    token = request.set("r-1")
    ns = {"it": it, "ctx": decimal.localcontext(prec=5), "token": token, "kept": decimal.Context(prec=5)}
    failed = serializer.dump_namespace(ns, list(ns)).failed
    assert set(failed) == {"it", "ctx", "token"}  # a Context itself is carried
    assert "a numpy.nditer at iterindex 0" in failed["it"] and "make it again after restore" in failed["it"]
    assert "decimal.localcontext() in a variable" in failed["ctx"] and "keep a decimal.Context" in failed["ctx"]
    assert "a Token of request.set()" in failed["token"] and "request.set(old value)" in failed["token"]
    for why in failed.values():
        assert why.endswith("object))")  # the advice is not cut off by the length limit


def test_a_thread_local_comes_back_with_this_threads_attributes_and_its_init_arguments():
    class Session(threading.local):
        def __init__(self, user, role="student"):
            self.user, self.role = user, role

    session = Session("guest", role="ta")
    session.user = "bob"
    state = threading.local()
    state.items = [1, 2]
    values, failed, notes = _round_trip({"session": session, "state": state, "same": state})
    assert failed == {} and notes == {}
    session, state = values["session"], values["state"]
    assert (session.user, session.role, state.items) == ("bob", "ta", [1, 2]) and values["same"] is state
    seen = []
    worker = threading.Thread(target=lambda: seen.append((session.user, session.role, hasattr(state, "items"))))
    worker.start()
    worker.join()
    assert seen == [("guest", "ta", False)]  # another thread: its own attributes, made by __init__ again


def test_a_barrier_threads_wait_at_is_named_as_a_barrier():
    """It was named as 'a threading.Condition threads wait on ..., at gate._cond'."""
    gate = threading.Barrier(2)

    def wait():
        with contextlib.suppress(threading.BrokenBarrierError):  # the abort below frees it
            gate.wait()

    waiter = threading.Thread(target=wait)
    waiter.start()
    while not gate.n_waiting:
        waiter.join(0.01)
    try:
        failed = serializer.dump_namespace({"gate": gate}, ["gate"]).failed
    finally:
        gate.abort()
        waiter.join()
    assert "a threading.Barrier 1 thread(s) wait at" in failed["gate"] and "Condition" not in failed["gate"]
    values, failed, _ = _round_trip({"broken": gate, "fresh": threading.Barrier(3)})
    assert failed == {} and values["broken"].broken and values["fresh"].parties == 3


def test_a_cmp_to_key_key_comes_back_comparing_as_before():
    """`by = functools.cmp_to_key(compare)` failed its variable: "cannot
    pickle 'functools.KeyWrapper' object"."""
    notebook = {"__name__": "__main__"}
    exec("def compare(a, b):\n    return len(a) - len(b) or (a > b) - (a < b)\n", notebook)
    by = functools.cmp_to_key(notebook["compare"])
    values, failed, notes = _round_trip({"by": by, "mid": by("bb"), "plain": functools.cmp_to_key(operator.sub)})
    assert failed == {} and notes == {}
    assert sorted(["ccc", "a", "bb", "ab"], key=values["by"]) == ["a", "ab", "bb", "ccc"]
    assert values["mid"].obj == "bb" and values["by"]("a") < values["mid"] < values["by"]("ccc")
    assert sorted([3, 1, 2], key=values["plain"]) == [1, 2, 3]


def test_a_re_scanner_comes_back_scanning_as_before():
    """A re.Scanner pickled, but failed at load: "first argument must be
    string or compiled pattern" (its pattern is compiled from parsed parts)."""
    notebook = {"__name__": "__main__"}
    exec("import re\nlexer = re.Scanner([(r'[0-9]+', lambda s, t: int(t)), (r'[a-z]+', lambda s, t: t.upper()),"
         " (r'\\s+', None)], re.IGNORECASE)\nlexer.note = 'mine'\n", notebook)
    values, failed, notes = _round_trip({"lexer": notebook["lexer"],
                                         "raw": re.Scanner([(rb"\d+", lambda s, t: int(t))])})
    assert failed == {} and notes == {}
    assert values["lexer"].scan("ab 12 Cd!") == (["AB", 12, "CD"], "!") and values["lexer"].note == "mine"
    assert values["raw"].scan(b"42x") == ([42], b"x")


def test_a_registration_with_an_abc_whose_module_is_gone_costs_only_the_registration(monkeypatch):
    """A notebook class registered with an ABC of a module missing at restore
    must still come back (its objects with it), the registration said lost."""
    library = types.ModuleType("vanishing_abcs")
    exec("import abc\nclass Shape(abc.ABC):\n    pass\n", vars(library))
    monkeypatch.setitem(sys.modules, "vanishing_abcs", library)
    notebook = {"__name__": "__main__"}
    exec("class Square:\n    side = 2\n", notebook)
    library.Shape.register(notebook["Square"])
    ns = {"sq": notebook["Square"]()}
    dumped = serializer.dump_namespace(ns, ["sq"], user_ns=ns)
    assert dumped.failed == {}
    monkeypatch.delitem(sys.modules, "vanishing_abcs")
    values, failed, notes = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers),
                                                  {"__name__": "__main__"})
    assert failed == {} and values["sq"].side == 2
    assert "Square is no longer registered with vanishing_abcs.Shape" in " ".join(map(str, notes.values())), notes


def test_looking_for_registrations_imports_no_lazily_loaded_module(monkeypatch):
    """The search of the modules' dispatchers, run when a notebook class is
    saved, must not load a module the notebook only imported lazily."""
    spec = importlib.util.find_spec("fractions")
    spec.loader = importlib.util.LazyLoader(spec.loader)
    lazy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lazy)
    monkeypatch.setitem(sys.modules, "elastichub_lazy_fractions", lazy)
    notebook = {"__name__": "__main__"}
    exec("class Point:\n    x = 1\n", notebook)
    ns = {"p": notebook["Point"]()}
    assert serializer.dump_namespace(ns, ["p"], user_ns=ns).failed == {}
    assert type(lazy).__name__ == "_LazyModule"  # still not run


def test_an_implementation_that_cannot_be_saved_costs_only_its_registration(monkeypatch):
    """A notebook class's implementation in a helper file's singledispatch
    function that cannot be saved (it reads a generator of the notebook's)
    must not take the class's objects with it: they were saved before the
    registrations were carried; now only the registration is lost, and said."""
    helper = types.ModuleType("dispatching_helper")
    exec("import functools\n@functools.singledispatch\ndef describe(x):\n    return 'thing'\n", vars(helper))
    monkeypatch.setitem(sys.modules, "dispatching_helper", helper)
    notebook = {"__name__": "__main__", "dispatching_helper": helper}
    exec("class Ring:\n    size = 3\nticks = (i for i in range(3))\n"
         "@dispatching_helper.describe.register\ndef _(r: Ring):\n    return f'ring {next(ticks)}'\n", notebook)
    ns = {"ring": notebook["Ring"]()}
    dumped = serializer.dump_namespace(ns, ["ring"], user_ns=ns)
    assert dumped.failed == {}
    values, failed, notes = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers),
                                                  {"__name__": "__main__"})
    assert failed == {} and values["ring"].size == 3
    assert "Ring is no longer registered with dispatching_helper.describe" in " ".join(map(str, notes.values()))


def test_looking_for_registrations_asks_no_module_for_a_name_it_lacks(monkeypatch):
    """The search walks every loaded ABC and asks its module for it by name.
    A module's __getattr__ (PEP 562) answers names it lacks: a deprecation
    warning printed into the student's output at each checkpoint (as
    cryptography's was), or a submodule imported the notebook never asked for."""
    asked = []
    library = types.ModuleType("answers_by_getattr")

    def module_getattr(name):
        asked.append(name)
        raise AttributeError(name)

    library.__getattr__ = module_getattr
    hidden = type("Hidden", (__import__("abc").ABC,), {"__module__": "answers_by_getattr"})
    monkeypatch.setitem(sys.modules, "answers_by_getattr", library)
    notebook = {"__name__": "__main__"}
    exec("class Point:\n    x = 1\n", notebook)
    ns = {"p": notebook["Point"]()}
    assert serializer.dump_namespace(ns, ["p"], user_ns=ns).failed == {}
    assert hidden and asked == [], asked
