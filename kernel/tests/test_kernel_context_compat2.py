"""What a student reads when the kernel cannot tell its notebook, and a
newer kernel's checkpoint context restored by an older one."""

import logging
import os

import pytest

from elastichub_kernel.context import SessionContext

pytestmark = pytest.mark.timeout(240)


def test_the_note_of_a_kernel_without_a_notebook_says_what_to_do_in_plain_words(start_in_work, run_cell,
                                                                                stop_elastic_kernel):
    """The note named an environment variable (JPY_SESSION_NAME) a student never set nor heard of."""
    km, kc = start_in_work(None)
    assert run_cell(kc, "answer = 42")["error"] is None
    stop_elastic_kernel(km, kc)

    km, kc = start_in_work(None)
    note = run_cell(kc, "pass")["stderr"]
    assert "did NOT restore" in note, note
    assert "JPY_SESSION_NAME" not in note and "$" not in note, note
    assert "JupyterLab" in note and "%elastic_restore" in note, note


@pytest.fixture
def process(kept_process):
    """This process's directory, environment and the test's logger, put back after the test."""
    yield kept_process
    logger = logging.getLogger("compat_app")
    logger.setLevel(logging.NOTSET)
    logger.handlers.clear()


def test_a_newer_kernels_keys_inside_known_fields_are_named_and_the_rest_restored(process):
    """A key a newer kernel added inside a field this one knows (a logger's, a library's, the history's, the
    session log's), or an entry of a kind it added (a hook's place, a magic's kind, a handler's kind), rejected
    the whole context: the working directory, the environment and every setting were lost with it."""
    (process / "data").mkdir()
    saved = {"cwd": str(process / "data"), "env": {"COMPAT_MODE": "1"},
             "logging": {"loggers": {"compat_app": {"level": 10, "colour": "red", "handlers": [
                 {"kind": "rotating", "level": 0}, {"kind": "null", "level": 0, "filters": []}]}}},
             "library_options": {"pandas": {"set": {}, "future": 1}},
             "history": {"count": 2, "in": ["", "x = 1"], "raw": [None, None], "pages": 3},
             "log": {"path": None, "output": False, "raw": False, "timestamp": False, "active": True, "rotate": 1},
             "hooks": [["audit_hook:", 0, "on_audit", ""], ["events:post_run_cell", 0, "timer", ""]],
             "magics": [["block", "sql", "run_sql"], ["line", "hi", "say_hi"]]}
    here = SessionContext.now()
    done, problems = here.restore(saved)
    assert os.getcwd() == str(process / "data") and os.environ["COMPAT_MODE"] == "1", problems
    assert len(problems) == 1 and "newer version" in problems[0], problems
    for name in ("logging: loggers: 'compat_app': colour", "handlers: rotating", "handlers: filters",
                 "library_options: pandas: future", "history: pages", "log: rotate", "hooks: audit_hook:",
                 "magics: block"):
        assert name in problems[0], (name, problems)
    assert "malformed" not in problems[0]
    assert here.restore_after_load(saved) == []
    logger = logging.getLogger("compat_app")
    assert logger.level == 10 and [type(h).__name__ for h in logger.handlers] == ["NullHandler"]

    # A value of the wrong type is not a newer kernel's: still rejected, named.
    os.chdir(process)
    done, problems = here.restore({"cwd": str(process / "data"), "logging": {"loggers": {"compat_app": {
        "level": "loud"}}}})
    assert os.getcwd() == str(process) and len(problems) == 1, problems
    assert "malformed" in problems[0] and "logging: logger 'compat_app'" in problems[0], problems
