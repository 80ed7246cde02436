"""SessionContext (context.py) in this process: what is saved, how it is
put back, and what a malformed one does."""

import ast
import gc
import io
import json
import logging
import os
import random
import re
import socket
import sys
import threading
import warnings

import numpy as np
import pytest

from elastichub_kernel.context import SessionContext, checked, merged_path


@pytest.fixture
def process(monkeypatch, tmp_path):
    """This process's sys.path, environment and directory, put back after the test."""
    monkeypatch.setattr(sys, "path", ["/start/a", "/start/b", "/start/c"])
    saved_env = dict(os.environ)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KEEP", "1")
    monkeypatch.setenv("DROP", "1")
    yield tmp_path
    os.environ.clear()
    os.environ.update(saved_env)


def changes(saved: dict) -> dict:
    """A capture without the generators' state (always saved) and the
    libraries' options (this process's other tests set matplotlib's)."""
    return {k: v for k, v in saved.items() if k not in ("random_state", "library_options")}


def test_nothing_changed_saves_nothing(process):
    assert changes(SessionContext.now().capture()) == {}


def test_changes_are_saved_and_put_back_on_another_start(process):
    start = SessionContext.now()
    (process / "data").mkdir()
    os.chdir(process / "data")
    sys.path.insert(0, "../src")
    sys.path.insert(2, "/mine/after-a")
    sys.path.remove("/start/c")
    sys.path.append("/mine/last")
    os.environ["OMP_NUM_THREADS"] = "3"
    os.environ["KEEP"] = "2"
    del os.environ["DROP"]
    os.environ["JUPYTERHUB_API_TOKEN"] = "not the session's"
    saved = changes(start.capture())
    assert saved == {"cwd": str(process / "data"),
                     "path_added": [[None, "../src"], ["/start/a", "/mine/after-a"], ["/start/b", "/mine/last"]],
                     "path_removed": ["/start/c"],
                     "env": {"OMP_NUM_THREADS": "3", "KEEP": "2"}, "env_unset": ["DROP"]}

    # Another pod: its own start context.
    os.chdir(process)
    sys.path[:] = ["/start/a", "/start/b", "/start/c", "/pod-b/only"]
    os.environ.pop("OMP_NUM_THREADS")
    os.environ.update(KEEP="1", DROP="1", JUPYTERHUB_API_TOKEN="pod b's")
    done, problems = SessionContext.now().restore(saved)
    assert problems == []
    assert os.getcwd() == str(process / "data")
    assert sys.path == ["../src", "/start/a", "/mine/after-a", "/start/b", "/mine/last", "/pod-b/only"]
    assert (os.environ["OMP_NUM_THREADS"], os.environ["KEEP"], "DROP" in os.environ) == ("3", "2", False)
    assert os.environ["JUPYTERHUB_API_TOKEN"] == "pod b's"
    assert done == [f"working directory {process / 'data'}", "sys.path entries ../src, /mine/after-a, /mine/last"]


def test_a_newer_context_replaces_an_older_one(process):
    """A live-move destination restores the pre-copy's context, then the
    freeze's: what the session undid in between is undone here too."""
    start = SessionContext.now()
    os.environ["A"] = "1"
    sys.path.append("/mine")
    (process / "sub").mkdir()
    os.chdir(process / "sub")
    older = changes(start.capture())
    os.environ.pop("A")
    sys.path.remove("/mine")
    os.chdir(process)
    newer = changes(start.capture())
    assert newer == {}

    os.environ.pop("A", None)
    here = SessionContext.now()
    here.restore(older)
    assert (os.environ.get("A"), sys.path[-1], os.getcwd()) == ("1", "/mine", str(process / "sub"))
    assert here.restore(newer) == ([], [])
    assert ("A" in os.environ, "/mine" in sys.path, os.getcwd()) == (False, False, str(process))


def test_restoring_nothing_leaves_the_process_as_it_is(process):
    here = SessionContext.now()
    assert here.restore(None) == ([], [])
    assert here.restore({}) == ([], [])
    assert sys.path == ["/start/a", "/start/b", "/start/c"] and os.getcwd() == str(process)


@pytest.mark.parametrize("saved, field", [
    ("cwd", "not an object"),
    ({"cwd": 3}, "cwd"),
    ({"path_added": [["/a"]]}, "path_added"),
    ({"path_added": [[1, "/a"]]}, "path_added"),
    ({"path_removed": "/a"}, "path_removed"),
    ({"env": {"A": 1}}, "env"),
    ({"env_unset": [None]}, "env_unset"),
    ({"env": {"JPY_SESSION_NAME": "x"}}, "JPY_SESSION_NAME is the platform's"),
    ({"random_state": {"random": [3, [1, "2"], None]}}, "random_state: random"),
    ({"random_state": {"numpy": ["MT19937", [1], 0, 0]}}, "random_state: numpy"),
    ({"recursion_limit": "deep"}, "recursion_limit"),
    ({"process": {"gc_enabled": "no"}}, "process: gc_enabled"),
    ({"warning_filters": [["shout", None, "builtins:Warning", None, 0]]}, "warning_filters"),
    ({"warning_filters": [["ignore", None, "Warning", None, 0]]}, "warning_filters"),
    ({"logging": []}, "logging"),
    ({"logging": {"disable": -1}}, "logging: disable"),
    ({"logging": {"loggers": {"x": {"level": "INFO"}}}}, "logging: logger 'x'"),
    # (a kind this kernel lacks is a newer kernel's: left out and named, test_kernel_context_compat2.py)
    ({"logging": {"loggers": {"x": {"handlers": [{"kind": 3, "level": 0}]}}}}, "logging: logger 'x'"),
    ({"logging": {"loggers": {"": {"handlers": [{"kind": "file", "level": 0, "path": 3, "encoding": None}]}}}},
     "logging: logger ''"),
    ({"precision": 3}, "precision"),
    ({"xmode": 7}, "xmode"),  # (a new mode, "Loud", is a newer kernel's: test_kernel_context_compat3.py)
    ({"config": {"InteractiveShell": ["ast_node_interactivity"]}}, "config"),
    ({"config": {"os.system": {"x": 1}}}, "config"),
    ({"config_unsaved": "InlineBackend.rc"}, "config_unsaved"),
    ({"library_options": {"pandas": {"set": ["display.precision"]}}}, "library_options: pandas"),
])
def test_a_malformed_context_changes_nothing_and_says_what(process, saved, field):
    with pytest.raises(ValueError, match=re.escape(field)):
        checked(saved)
    done, problems = SessionContext.now().restore(saved)
    assert done == [] and len(problems) == 1
    assert "were not restored: the checkpoint's context is malformed" in problems[0] and field in problems[0]
    assert sys.path == ["/start/a", "/start/b", "/start/c"] and os.getcwd() == str(process)


def test_a_newer_kernels_context_restores_what_this_one_knows_and_names_the_rest(process):
    """An image rolled back after a newer kernel saved: its new fields are named, the others still come back."""
    (process / "data").mkdir()
    saved = {"cwd": str(process / "data"), "env": {"OMP_NUM_THREADS": "3"}, "path_added": [[None, "/mine"]],
             "warning_filters": [["ignore", None, "builtins:UserWarning", None, 0]],
             "gpu_memory_fraction": 0.5, "hooks_v2": {"post_run_cell": []}, "process": {"gc_enabled": False,
             "os.system": "ls"}, "random_state": {"torch": []}, "library_options": {"torch": {}}}
    here = SessionContext.now()
    done, problems = here.restore(saved)
    assert os.getcwd() == str(process / "data") and os.environ["OMP_NUM_THREADS"] == "3" and "/mine" in sys.path
    assert not gc.isenabled()
    gc.enable()
    assert len(problems) == 1 and "newer version" in problems[0], problems
    assert "'gpu_memory_fraction', 'hooks_v2', 'process: os.system', 'random_state: torch', " \
        "'library_options: torch'" in problems[0] and "were not restored" in problems[0], problems
    with warnings.catch_warnings():
        assert here.restore_after_load(saved) == []
        assert warnings.filters[0][0] == "ignore" and warnings.filters[0][2] is UserWarning


def test_a_value_the_os_refuses_is_a_problem_not_a_crash(process):
    done, problems = SessionContext.now().restore({"env": {"BAD": "a\x00b", "GOOD": "1"}})
    assert os.environ["GOOD"] == "1" and "BAD" not in os.environ
    assert problems == ["the environment variable 'BAD' cannot be set here (embedded null byte)"]


def test_merged_path_keeps_order_and_anchors():
    start = ["/a", "/b"]
    assert merged_path(start, [], []) == ["/a", "/b"]
    # An anchor this pod lacks: the entry goes first; duplicates once.
    assert merged_path(start, [["/gone", "/x"], [None, "/y"], ["/b", "/a"]], ["/b"]) == ["/x", "/y", "/a"]


def test_a_module_whose_entry_no_longer_leads_to_it_keeps_its_directory(process, monkeypatch):
    """`sys.path.append('lib')`, `import`, then `%cd` elsewhere: 'lib' now
    points nowhere, yet the loaded module's variables must load again."""
    (process / "lib").mkdir()
    (process / "lib" / "ctx_stranded_helper.py").write_text("X = 1\n")
    (process / "data").mkdir()
    monkeypatch.delitem(sys.modules, "ctx_stranded_helper", raising=False)
    start = SessionContext.now()
    sys.path.append("lib")
    import ctx_stranded_helper  # noqa: F401
    os.chdir(process / "data")
    saved = start.capture()
    assert saved["import_roots"] == [str(process / "lib")]
    assert saved["path_added"] == [["/start/c", "lib"]]
    del sys.modules["ctx_stranded_helper"]

    os.chdir(process)
    sys.path[:] = ["/start/a", "/start/b", "/start/c"]
    SessionContext.now().restore(saved)
    assert sys.path == ["/start/a", "/start/b", "/start/c", "lib", str(process / "lib")]
    import ctx_stranded_helper as again
    assert again.__file__ == str(process / "lib" / "ctx_stranded_helper.py")
    # Modules loaded before the start are the kernel's own: never a root to keep.
    assert SessionContext.now().capture().get("import_roots") is None


def test_the_global_generators_go_on_from_where_they_were():
    start = SessionContext.now()
    random.seed(7)
    np.random.seed(8)
    random.random(), np.random.standard_normal()  # a cached gaussian is state too
    saved = start.capture()
    expected = (random.random(), np.random.standard_normal(), np.random.rand())
    random.seed(99)
    np.random.seed(99)
    assert start.restore_after_load(saved) == []
    assert (random.random(), np.random.standard_normal(), np.random.rand()) == expected


def test_a_generator_state_the_library_refuses_is_a_problem_not_a_crash():
    bad = {"random_state": {"random": [99, [1, 2, 3], None]}}
    problems = SessionContext.now().restore_after_load(bad)
    assert len(problems) == 1 and problems[0].startswith("the state of the random module was not restored")


def test_the_warning_filters_the_session_added_hold_again_ahead_of_the_modules():
    import warnings

    with warnings.catch_warnings():
        start = SessionContext.now()
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("error", message="boom", module="course_helper")
        saved = start.capture()
        # Both first, in the session's order (an equal one at start was further back: its place counts).
        assert saved["warning_filters"][:2] == [["error", "boom", "builtins:Warning", "course_helper", 0],
                                                ["ignore", None, "builtins:DeprecationWarning", None, 0]]
        warnings.filters[:] = start.filters  # a new kernel's own filters
        warnings.simplefilter("always", DeprecationWarning)  # and one a module adds as it is imported
        assert start.restore_after_load(saved) == []
        assert warnings.filters[:2] == [("error", re.compile("boom", re.I), Warning, re.compile("course_helper"), 0),
                                        ("ignore", None, DeprecationWarning, None, 0)]
        with warnings.catch_warnings(record=True) as seen:
            warnings.warn("old", DeprecationWarning)
        assert seen == []


def test_a_warning_category_that_cannot_be_found_here_is_a_problem():
    import warnings

    with warnings.catch_warnings():
        problems = SessionContext.now().restore_after_load(
            {"warning_filters": [["ignore", None, "gone_library.errors:OddWarning", None, 0]]})
    assert len(problems) == 1
    assert problems[0].startswith("the warning filter (ignore, gone_library.errors:OddWarning) was not restored")


def test_ipythons_extensions_and_autoreload_mode_are_set_again():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    start = SessionContext.now(shell)
    shell.run_line_magic("load_ext", "autoreload")
    shell.run_line_magic("autoreload", "2")
    saved = start.capture()
    assert saved["extensions"] == ["IPython.extensions.autoreload"] and saved["autoreload"] == "2"
    shell.run_line_magic("autoreload", "0")
    assert start.capture()["autoreload"] == "0"
    assert start.restore_after_load(saved) == []
    assert start.capture()["autoreload"] == "2"
    bad = start.restore_after_load({"extensions": ["no_such_extension_here"]})
    assert len(bad) == 1 and bad[0].startswith("the IPython extension no_such_extension_here was not loaded again")


def test_what_config_set_is_set_again_as_config_sets_it():
    """`%config Class.setting = value`: the shell's parts' settings that
    differ from their start, and those kept for a part not made yet."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    start = SessionContext.now(shell)
    assert "config" not in start.capture()  # nothing set: nothing saved
    try:
        shell.run_line_magic("config", "InteractiveShell.ast_node_interactivity = 'all'")
        shell.run_line_magic("config", "IPCompleter.use_jedi = False")
        shell.run_line_magic("config", "NotMadeYet.dpi = 144")  # as InlineBackend before a plot
        shell.ast_transformers.append(ast.NodeTransformer())  # an object: cannot be saved, named
        shell.config.NotMadeEither.kinds = {1, "a"}  # a set JSON cannot hold as a sorted list: named
        saved = json.loads(json.dumps(start.capture()))
        assert saved["config"][type(shell).__name__] == {"ast_node_interactivity": "all"}
        assert saved["config"]["IPCompleter"] == {"use_jedi": False}
        assert saved["config"]["NotMadeYet"] == {"dpi": 144}
        assert saved["config_unsaved"] == sorted(["NotMadeEither.kinds", f"{type(shell).__name__}.ast_transformers"])
        checked(saved)

        shell.ast_node_interactivity, shell.Completer.use_jedi = "last_expr", True
        shell.ast_transformers.clear()
        del shell.config["NotMadeYet"]
        problems = start.restore_after_load(saved)
        assert problems == [f"%config {setting} is not carried (its value cannot be saved): set it again"
                            for setting in saved["config_unsaved"]]
        assert shell.ast_node_interactivity == "all" and shell.Completer.use_jedi is False
        assert shell.config["NotMadeYet"]["dpi"] == 144  # what a part made later reads
        bad = {"config": {type(shell).__name__: {"ast_node_interactivity": "everything"}}}
        assert start.restore_after_load(bad)[0].startswith(
            f"%config {type(shell).__name__} {{'ast_node_interactivity': 'everything'}} was not set again (TraitError")
    finally:
        shell.ast_node_interactivity, shell.Completer.use_jedi = "last_expr", True
        shell.ast_transformers.clear()
        for name in ("NotMadeYet", "NotMadeEither", "InteractiveShell", "IPCompleter"):
            shell.config.pop(name, None)


def test_a_raised_recursion_limit_is_set_again_before_the_variables(process):
    start = SessionContext.now()
    try:
        sys.setrecursionlimit(start.recursion_limit + 4000)
        saved = start.capture()
        assert saved["recursion_limit"] == start.recursion_limit + 4000
        sys.setrecursionlimit(start.recursion_limit)
        assert start.restore(saved) == ([], [])
        assert sys.getrecursionlimit() == start.recursion_limit + 4000
        start.restore({})  # a newer context without it: back to the start's
        assert sys.getrecursionlimit() == start.recursion_limit
    finally:
        sys.setrecursionlimit(start.recursion_limit)


def test_process_settings_are_set_again_before_the_variables(process):
    # sys.set_int_max_str_digits(0): str() of a big int raised ValueError after a move.
    start = SessionContext.now()
    try:
        sys.set_int_max_str_digits(0)
        socket.setdefaulttimeout(5.0)
        gc.disable()
        sys.setswitchinterval(0.002)
        saved = start.capture()
        assert saved["process"] == {"int_max_str_digits": 0, "socket_timeout": 5.0, "gc_enabled": False,
                                    "switch_interval": 0.002}
        start.restore({})  # a context without them: the start's again
        assert (sys.get_int_max_str_digits(), socket.getdefaulttimeout(), gc.isenabled()) == (
            start.process["int_max_str_digits"], None, True)
        assert start.restore(saved) == ([], [])
        assert (sys.get_int_max_str_digits(), socket.getdefaulttimeout(), gc.isenabled(),
                sys.getswitchinterval()) == (0, 5.0, False, 0.002)
    finally:
        start.restore({})
    assert gc.isenabled() and socket.getdefaulttimeout() is None


@pytest.fixture
def fresh_logging():
    """The logging set-up of this process, put back after the test."""
    root = logging.getLogger()
    saved = (root.level, list(root.handlers), logging.root.manager.disable)
    yield
    for name in ("course", "course.quiet", "course.other"):
        logger = logging.getLogger(name)
        for handler in logger.handlers:
            handler.close()
        logger.handlers.clear()
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
    root.setLevel(saved[0])
    root.handlers[:] = saved[1]
    logging.disable(saved[2])


def test_the_logging_set_up_is_saved_as_its_changes_and_made_again(fresh_logging, tmp_path):
    start = SessionContext.now()
    logging.getLogger().setLevel(logging.DEBUG)
    course = logging.getLogger("course")
    course.addHandler(logging.FileHandler(tmp_path / "course.log", encoding="utf-8"))
    stream = logging.StreamHandler(sys.stdout)
    stream.setFormatter(logging.Formatter("{levelname}: {message}", "%H:%M", style="{"))
    stream.setLevel(logging.INFO)
    course.addHandler(stream)
    course.propagate = False
    logging.getLogger("course.quiet").setLevel(logging.ERROR)
    other = logging.StreamHandler(io.StringIO())  # not the notebook's output: named, not carried
    logging.getLogger("course.other").addHandler(other)
    saved = start.capture()["logging"]
    assert saved["loggers"]["course"]["propagate"] is False and saved["loggers"]["course.quiet"] == {"level": 40}
    assert [h.get("kind") for h in saved["loggers"]["course"]["handlers"]] == ["file", "stream"]
    assert saved["loggers"]["course.other"] == {"handlers": [{"unsupported": "StreamHandler to another stream",
                                                              "type": "StreamHandler"}]}
    checked({"logging": json.loads(json.dumps(saved))})

    for handler in course.handlers:
        handler.close()
    course.handlers.clear()
    logging.getLogger("course.other").handlers.clear()
    course.propagate = True
    logging.getLogger("course.quiet").setLevel(logging.NOTSET)
    problems = start.restore_after_load({"logging": saved})
    assert problems == ["logging: StreamHandler to another stream, a handler of logger 'course.other', is not "
                        "carried (set it up again)"]
    assert course.propagate is False and logging.getLogger("course.quiet").level == logging.ERROR
    kinds = [(type(h).__name__, h.level) for h in course.handlers]
    assert kinds == [("FileHandler", 0), ("StreamHandler", 20)]
    assert course.handlers[1].formatter.format(logging.LogRecord("course", 20, "", 0, "hi", (), None)) == "INFO: hi"
    assert start.restore_after_load({"logging": saved}) == problems and len(course.handlers) == 2  # not twice
    # a handler of a kind the library set up again as it was imported: nothing to say
    logging.getLogger("course.other").addHandler(logging.StreamHandler(io.StringIO()))
    assert start.restore_after_load({"logging": saved}) == []


def test_pandas_and_matplotlib_options_are_saved_as_their_changes_and_set_again():
    import matplotlib
    import pandas as pd

    from elastichub_kernel import libstate

    keys = ("display.max_columns", "display.precision", "display.float_format")
    rc = dict(matplotlib.rcParams)
    try:
        pd.set_option("display.max_columns", None)
        pd.set_option("display.precision", 2)
        pd.set_option("display.float_format", "{:.1f}".format)  # a function: pickled
        matplotlib.rcParams["figure.figsize"] = (12, 6)
        matplotlib.rcParams["axes.prop_cycle"] = matplotlib.cycler(color=["#E24A33", "#348ABD"])
        saved = json.loads(json.dumps(SessionContext.now().capture()))
        options = saved["library_options"]
        assert options["pandas"]["set"] == {"display.max_columns": None, "display.precision": 2}
        assert list(options["pandas"]["pickled"]) == ["display.float_format"] and "unsaved" not in options["pandas"]
        assert options["matplotlib"]["set"]["figure.figsize"] == [12.0, 6.0]
        assert options["matplotlib"]["set"]["axes.prop_cycle"].startswith("cycler(")  # its rc text
        checked(saved)

        for key in keys:
            pd.reset_option(key)
        matplotlib.rcParams.update(matplotlib.rcParamsDefault)
        left = libstate.capture().get("library_options", {})
        assert not set(keys) & set(left.get("pandas", {}).get("set", {})) and "matplotlib" not in left  # defaults
        assert SessionContext.now().restore_after_load(saved) == []
        assert pd.get_option("display.float_format")(2.25) == "2.2"
        assert pd.get_option("display.max_columns") is None and pd.get_option("display.precision") == 2
        assert list(matplotlib.rcParams["figure.figsize"]) == [12.0, 6.0]
        assert matplotlib.rcParams["axes.prop_cycle"].by_key()["color"] == ["#E24A33", "#348ABD"]
        bad = {"library_options": {"matplotlib": {"set": {"figure.figsize": "huge"}}}}
        assert SessionContext.now().restore_after_load(bad)[0].startswith(
            "the matplotlib option figure.figsize = 'huge' was not set again (ValueError")
    finally:
        for key in keys:
            pd.reset_option(key)
        dict.update(matplotlib.rcParams, rc)


def test_numpys_print_and_error_options_and_decimals_context_are_saved_and_set_again():
    import contextvars
    import decimal

    import numpy as np

    from elastichub_kernel import libstate

    def session():  # what a numerics notebook sets at its top
        np.set_printoptions(precision=3, suppress=True)
        np.seterr(divide="ignore", invalid="raise")
        context = decimal.getcontext()
        context.prec, context.rounding = 50, decimal.ROUND_DOWN
        context.traps[decimal.Inexact] = True

    def probe():
        return (np.get_printoptions()["precision"], np.get_printoptions()["suppress"], np.geterr()["invalid"],
                str(decimal.Decimal(1) / decimal.Decimal(8)), decimal.getcontext().traps[decimal.Inexact])

    saved = contextvars.Context().run(lambda: (session(), json.loads(json.dumps(SessionContext.now().capture())))[1])
    assert saved["library_options"]["numpy"] == {"set": {"precision": 3, "suppress": True, "err.divide": "ignore",
                                                         "err.invalid": "raise"}}
    assert saved["library_options"]["decimal"] == {"set": {"prec": 50, "rounding": "ROUND_DOWN",
                                                           "traps": ["DivisionByZero", "Inexact",
                                                                     "InvalidOperation", "Overflow"]}}
    checked(saved)
    # only these two: what earlier tests in this process left in other libraries is not this test's
    saved = {"library_options": {name: saved["library_options"][name] for name in ("numpy", "decimal")}}

    def restored():
        assert probe() == (8, False, "warn", "0.125", False)  # a fresh context: the defaults
        assert SessionContext.now().restore_after_load(saved) == []
        return probe()

    assert contextvars.Context().run(restored) == (3, True, "raise", "0.125", True)
    # set again, as the kernel does before the next cell, in another context
    assert contextvars.Context().run(lambda: (libstate.apply_to_cells_context(), probe())[1]) == (
        3, True, "raise", "0.125", True)
    assert contextvars.Context().run(lambda: (libstate.apply_to_cells_context(), probe())[1])[0] == 8  # once only
    # restored inside a cell (%elastic_restore), which then sets its own: the next cell keeps the cell's
    try:
        def cell():
            SessionContext.now().restore_after_load(saved)
            np.set_printoptions(precision=5)
            libstate.note_cells_context()  # the kernel, after the cell
            libstate.apply_to_cells_context()  # the kernel, before the next
            return probe()[0]

        assert contextvars.Context().run(cell) == 5
    finally:
        libstate._seen_in_cells = None  # outside a kernel again

    formatter = {"library_options": {"numpy": {"set": {"precision": "three"}, "unsaved": ["formatter"]}}}
    assert contextvars.Context().run(SessionContext.now().restore_after_load, formatter) == [
        "the numpy options {'precision': 'three'} were not set again (TypeError: precision must be an integer)",
        "the numpy option formatter is not carried (its value cannot be saved): set it again"]
    lock = threading.Lock()  # a formatter holding one held cannot be pickled: named, not carried
    lock.acquire()
    assert contextvars.Context().run(lambda: (
        np.set_printoptions(formatter={"float": lambda x, lock=lock: str(x)}), libstate.capture())[1])[
        "library_options"]["numpy"] == {"unsaved": ["formatter"]}
    kept = contextvars.Context().run(lambda: (
        np.set_printoptions(formatter={"float": "{:.2f}".format}), libstate.capture())[1])["library_options"]
    assert list(kept["numpy"]["pickled"]) == ["formatter"]
    assert contextvars.Context().run(lambda: (SessionContext.now().restore_after_load({"library_options": kept}),
                                              repr(np.array([1.005, 2.0])))) == ([], "array([1.00, 2.00])")
    damaged = {"library_options": {"numpy": {"pickled": {"formatter": "bm90IGEgcGlja2xl"}}}}
    assert contextvars.Context().run(SessionContext.now().restore_after_load, damaged)[0].startswith(
        "the numpy option formatter was not set again (its saved value does not load: ")
    bad = {"library_options": {"decimal": {"set": {"traps": ["getcontext"]}}}}
    assert contextvars.Context().run(SessionContext.now().restore_after_load, bad) == [
        "the decimal options {'traps': ['getcontext']} were not set again (ValueError: traps: not a decimal signal: "
        "getcontext)"]
