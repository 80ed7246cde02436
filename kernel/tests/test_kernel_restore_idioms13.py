"""What a notebook registers with the process or the shell beyond its
variables (round 15), checkpointed in one real kernel and restored in the
next: carried when it is the notebook's own and a variable holds it, else
named at the restore."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms13.ipynb"

REALTIME = r'''
import signal, os
got = []
def on_rt(signum, frame):
    got.append(signum - signal.SIGRTMIN)
signal.signal(signal.SIGRTMIN + 3, on_rt)
signal.signal(signal.SIGRTMIN + 4, lambda signum, frame: None)
'''


def test_a_realtime_signal_handler_is_carried_like_the_others_and_an_unheld_one_named(moved, run_cell):
    """`signal.signal(signal.SIGRTMIN + 3, handler)`: signal.Signals has no name for it, and the handler was
    skipped without a word; after a move the next such signal killed the kernel (its default action)."""
    reply, _, kc = moved(SESSION, REALTIME)
    assert reply["ok"], reply
    out = run_cell(kc, "print(signal.getsignal(signal.SIGRTMIN + 3) is on_rt)")
    assert out["stdout"] == "True\n", out
    assert "<lambda> (the SIGRTMIN+4 handler) are not carried" in out["stderr"], out["stderr"]
    out = run_cell(kc, "import threading\nsignal.pthread_kill(threading.get_ident(), signal.SIGRTMIN + 3)\nprint(got)")
    assert (out["error"], out["stdout"]) == (None, "[3]\n"), out


CUSTOM_EXC = r'''
class GradingError(Exception):
    pass
def friendly(shell, etype, value, tb, tb_offset=None):
    print("friendly:", etype.__name__, value)
    return []
get_ipython().set_custom_exc((GradingError, ZeroDivisionError), friendly)
'''


def test_a_custom_exception_handler_the_notebook_set_is_set_again(moved, run_cell):
    """`get_ipython().set_custom_exc((GradingError,), friendly)` (a course's friendlier errors): after a move
    the errors showed IPython's traceback again, without a word."""
    reply, _, kc = moved(SESSION, CUSTOM_EXC)
    assert reply["ok"], reply
    out = run_cell(kc, "1 / 0")
    assert "friendly: ZeroDivisionError division by zero" in out["stdout"], out
    assert "set_custom_exc" not in out["stderr"], out["stderr"]
    out = run_cell(kc, "raise GradingError('wrong answer')")
    assert "friendly: GradingError wrong answer" in out["stdout"], out


def test_a_custom_exception_handler_no_variable_holds_is_named(moved, run_cell):
    setup = "get_ipython().set_custom_exc((ZeroDivisionError,), lambda shell, *args, **kwargs: [])"
    reply, _, kc = moved(SESSION, setup)
    assert reply["ok"], reply
    out = run_cell(kc, "pass")
    assert "<lambda> (set_custom_exc's handler of builtins.ZeroDivisionError)" in out["stderr"], out["stderr"]


ATEXIT = r'''
import atexit, os
def save_log():
    with open("atexit.log", "a") as f:
        f.write("saved\n")
class Run:
    def close(self):
        with open("atexit.log", "a") as f:
            f.write("closed\n")
run = Run()
atexit.register(save_log)
atexit.register(run.close)
atexit.register(lambda: None)
atexit.register(print, "goodbye");
'''


def test_functions_the_notebook_registered_with_atexit_run_at_the_next_kernels_end(start_in_work, run_cell,
                                                                                 control_request,
                                                                                 stop_elastic_kernel):
    """`atexit.register(save_log)` (write the results when the kernel stops): after a move nothing ran at the
    end, and nothing said so. Those a variable holds are registered again, in order; the others named."""
    km, kc = start_in_work(SESSION)
    assert run_cell(kc, ATEXIT)["error"] is None
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["ok"]
    kc.stop_channels()
    km.shutdown_kernel(now=True)  # killed: nothing of the old kernel runs at its end

    km, kc = start_in_work(SESSION)
    out = run_cell(kc, "pass")
    assert out["error"] is None, out
    lost = out["stderr"]
    assert "<lambda> (registered with atexit" in lost and "print (registered with atexit" in lost, lost
    assert "save_log" not in lost and "close" not in lost, lost
    stop_elastic_kernel(km, kc)
    # atexit runs the last registered first, as it would have in the old kernel
    assert (start_in_work.work / "atexit.log").read_text() == "closed\nsaved\n"


def test_doctest_mode_stays_on_and_turns_off_as_before_after_a_move(moved, run_cell):
    """`%doctest_mode` (copying a session into a doctest): its prompts, printing and tracebacks came back (they are
    settings), but not that it was on: the next `%doctest_mode` turned it on again instead of off, and took the
    doctest values for the ones to go back to."""
    reply, _, kc = moved(SESSION, "%doctest_mode")
    assert reply["ok"], reply
    probe = ("ip = get_ipython()\nimport json\nprint('FACTS' + json.dumps([ip.display_formatter.formatters["
             "'text/plain'].pprint, ip.InteractiveTB.mode, ip.display_formatter.active_types]))")
    assert run_cell.facts(kc, probe) == [False, "Plain", ["text/plain"]]
    out = run_cell(kc, "%doctest_mode")
    assert "Doctest mode is: OFF" in out["stdout"], out
    pprint, xmode, types = run_cell.facts(kc, probe)
    assert (pprint, xmode) == (True, "Context") and "text/html" in types


REDIRECT = r'''
import contextlib, io, sys
buf = io.StringIO()
ctx = contextlib.redirect_stdout(buf)
ctx.__enter__()
sys.stderr = io.StringIO()
'''


def test_a_redirect_entered_and_not_left_is_named_at_the_restore(moved, run_cell):
    """`ctx = redirect_stdout(buf); ctx.__enter__()` (or `sys.stdout = buf`): in the old kernel print wrote into
    buf; after a move it wrote to the notebook again, without a word."""
    reply, _, kc = moved(SESSION, REDIRECT)
    assert reply["ok"], reply
    out = run_cell(kc, "print('shown')")
    assert out["stdout"] == "shown\n", out
    assert "sys.stdout wrote to buf" in out["stderr"] and "writes to the notebook again" in out["stderr"], out
    assert "sys.stderr wrote to a StringIO no variable holds" in out["stderr"], out
    assert out["stderr"].count("sys.stderr") == 2, out  # once, in that line: not as a library's attribute too


def test_elastic_restore_into_the_session_that_registered_its_hooks_registers_each_once(start_in_work, run_cell):
    """%elastic_restore in the session itself: the checkpoint's callback and atexit function (new objects) were
    registered beside the session's own, so the callback ran twice a cell and the function twice at the end."""
    km, kc = start_in_work(SESSION)
    setup = ("import atexit\nran = []\ndef log_cell(result):\n    ran.append(1)\n"
             "get_ipython().events.register('post_run_cell', log_cell)\ndef bye():\n    pass\natexit.register(bye)\n"
             "%elastic_checkpoint")
    assert run_cell(kc, setup)["error"] is None
    assert run_cell(kc, "%elastic_restore")["error"] is None
    run_cell(kc, "ran.clear()")  # then its own callback(s)
    probe = ("import json\nfrom elastichub_kernel import userhooks\nprint('FACTS' + json.dumps([len(ran), "
             "[getattr(c, '__name__', '') for c in get_ipython().events.callbacks['post_run_cell']].count('log_cell'),"
             " [f.__name__ for f, *_ in userhooks._atexit]]))")
    assert run_cell.facts(kc, probe) == [1, 1, ["bye"]]


def test_the_new_kinds_of_hooks_are_saved_where_an_older_kernel_skips_them(start_in_work, run_cell,
                                                                          control_request):
    """A kernel from before this one rejects a hook of a kind it does not know inside "hooks", and with it the
    whole context (directory, environment, every setting): should the image be rolled back, the atexit and
    set_custom_exc hooks must be in a field of their own, which it skips by name."""
    from elastichub_kernel.storage import read_index

    km, kc = start_in_work(SESSION)
    on_cell = "def on_cell(result):\n    pass\nget_ipython().events.register('post_run_cell', on_cell)"
    setup = ATEXIT + CUSTOM_EXC + on_cell
    assert run_cell(kc, setup)["error"] is None
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    saved = read_index(reply["path"])["context"]
    older = ("events:", "signal:", "printer:", "input_transformers_cleanup", "input_transformers_post",
             "ast_transformers")
    assert saved["hooks"] and all(place.startswith(older) for place, *_ in saved["hooks"]), saved["hooks"]
    assert sorted(place.split(":")[0] for place, *_ in saved["hooks_more"]) == ["atexit", "atexit", "custom_exc"]
