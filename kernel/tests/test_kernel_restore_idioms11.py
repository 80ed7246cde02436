"""The IPython session around a notebook's values (round 13), checkpointed
in one real kernel and restored in the next."""

import json
import time

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms11.ipynb"


@pytest.mark.parametrize("saved, field", [
    ({"hooks": [["events:post_run_cell", -1, "log_cell", ""]]}, "hooks"),
    ({"hooks": [["sys.settrace", 0, "log_cell", ""]]}, "hooks"),
    ({"hooks": [["ast_transformers", 0, "doubler"]]}, "hooks"),
    ({"hooks_lost": [3]}, "hooks_lost"),
    ({"aimport": "helper"}, "aimport"),
    ({"aimport_skip": [3]}, "aimport_skip"),
    ({"dir_history": "/home"}, "dir_history"),
    ({"dir_stack": [None]}, "dir_stack"),
    ({"log": {"path": "session_log.py", "output": False, "raw": False, "timestamp": False, "active": True}}, "log"),
])
def test_a_malformed_shell_state_field_in_a_checkpoint_is_named(saved, field):
    from elastichub_kernel.context import checked

    with pytest.raises(ValueError, match=f"^{field}$"):
        checked(saved)


def _ran_and_moved(start_in_work, run_cell, control_request, cells):
    """Each cell run as its own cell (its output is Out[n]), checkpointed; the notebook's next kernel."""
    km, kc = start_in_work(SESSION)
    for cell in cells:
        out = run_cell(kc, cell)
        assert out["error"] is None, (cell, out)
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"], reply
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return start_in_work(SESSION)[1]


FLOAT_CELLS = ["import numpy as np\nimport math\nxs = np.array([1.0, 2.0, 4.5])", "xs.mean()", "0.1 + 0.2",
               "math.inf", "np.float32(1) / 3", "np.int64(7) * 6", "len(xs) > 2"]
FLOAT_PROBE = r'''
import json
print("FACTS" + json.dumps([repr(Out.get(n)) for n in range(2, 8)] + [repr(_), repr(__), repr(___)]))
'''


def test_number_outputs_a_data_notebook_shows_come_back(start_in_work, run_cell, control_request):
    """`xs.mean()` (a numpy float64), `0.1 + 0.2` (a float): Out[n] and `_` of these were 'not carried'
    after a move, in a warning that said they were no number; `_ * 100` went on with ''."""
    kc = _ran_and_moved(start_in_work, run_cell, control_request, FLOAT_CELLS)
    first = run_cell(kc, FLOAT_PROBE)
    assert "not carried (Out[" not in first["stderr"], first["stderr"]
    line = [ln for ln in first["stdout"].splitlines() if ln.startswith("FACTS")][0]
    assert json.loads(line[len("FACTS"):]) == [
        "np.float64(2.5)", "0.30000000000000004", "inf", "np.float32(0.33333334)", "np.int64(42)", "True",
        "True", "np.int64(42)", "np.float32(0.33333334)"]
    assert run_cell.facts(kc, "import json\nprint('FACTS' + json.dumps([repr(_2 * 2), type(_5).__name__]))") == [
        "np.float64(5.0)", "float32"]


HOOKS = r'''
import ast, time
ip = get_ipython()
ran = []
def log_cell(result):
    ran.append(result.info.raw_cell.strip()[:20])
ip.events.register("post_run_cell", log_cell)
class CellTimer:
    def __init__(self):
        self.started = 0
    def start(self, info):
        self.started += 1
timer = CellTimer()
ip.events.register("pre_run_cell", timer.start)
def shout(lines):
    return [line.replace("SHOUT ", "print(") + ")" * line.startswith("SHOUT ") for line in lines]
ip.input_transformers_cleanup.append(shout)
class Doubler(ast.NodeTransformer):
    def visit_Constant(self, node):
        return ast.Constant(node.value * 2) if type(node.value) is int else node
doubler = Doubler()
ip.ast_transformers.append(doubler)
ip.events.register("post_execute", lambda: None)
'''
HOOKS_PROBE = r'''
import json
print("FACTS" + json.dumps([ran[::-1][0], timer.started, 21]))  # -1 would read -2: doubled
'''


def test_the_notebooks_event_callbacks_and_transformers_run_after_a_move(moved, run_cell):
    """A cell timer, a cell log, a cell syntax of the notebook's own and an AST transformer: after a move none
    ran any more (the cell in its syntax failed with a NameError) and nothing said so. They are registered
    again; a lambda no variable holds is named."""
    reply, before, kc = moved(SESSION, HOOKS, lambda kc: run_cell.facts(kc, HOOKS_PROBE))
    assert reply["ok"], reply
    assert before[1:] == [1, 42], before
    first = run_cell(kc, HOOKS_PROBE)
    assert first["error"] is None, first
    assert "the notebook's hook(s) <lambda> (post_execute callback) are not carried" in first["stderr"]
    after = [json.loads(ln[5:]) for ln in first["stdout"].splitlines() if ln.startswith("FACTS")][0]
    # log_cell saw the setup cell; the timer (saved at 0: the checkpoint came before the probe) counted this cell
    assert after == ["import ast, time\nip ", 1, 42], after
    assert "WARNING" not in first["stderr"].replace("WARNING: the notebook's hook(s) <lambda>", ""), first
    out = run_cell(kc, "SHOUT 'loud'")
    assert (out["error"], out["stdout"]) == (None, "loud\n"), out
    assert run_cell(kc, "print(ran[::-1][0])")["stdout"] == "SHOUT 'loud'\n"


ALARM = r'''
import signal, time
class TookTooLong(Exception):
    pass
def on_alarm(signum, frame):
    raise TookTooLong(f"signal {signum}")
signal.signal(signal.SIGALRM, on_alarm)
signal.signal(signal.SIGUSR1, lambda signum, frame: None)
def limited(seconds):
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        time.sleep(30)
        return "finished"
    except TookTooLong as exc:
        return f"stopped: {exc}"
'''
ALARM_PROBE = r'''
import json
handled = signal.getsignal(signal.SIGALRM) is on_alarm
print("FACTS" + json.dumps([handled, limited(0.05) if handled else "not tried: SIGALRM would stop the kernel"]))
'''


def test_a_time_limit_set_with_signal_alarm_still_stops_a_cell_after_a_move(moved, run_cell):
    """The SIGALRM time-limit idiom: after a move the handler was the default, and the next alarm killed the
    kernel (SIGALRM's default action) without a word at the restore. A handler a variable holds is set again;
    one no variable holds is named."""
    reply, before, kc = moved(SESSION, ALARM, lambda kc: run_cell.facts(kc, ALARM_PROBE))
    assert reply["ok"], reply
    assert before == [True, "stopped: signal 14"]
    first = run_cell(kc, ALARM_PROBE)
    assert first["error"] is None, first
    assert "<lambda> (the SIGUSR1 handler) are not carried" in first["stderr"], first["stderr"]
    assert "SIGALRM, SIGUSR1 stop the kernel" in first["stderr"]
    assert json.loads(first["stdout"].split("FACTS", 1)[1]) == before


REDIRECTED = r'''
import contextlib, io, sys
saved_stdout = sys.stdout
buf = io.StringIO()
sys.stdout = buf
print("into buf")
ctx = contextlib.redirect_stderr(io.StringIO())
ctx.__enter__()
'''


def test_the_notebooks_own_stream_put_aside_during_a_redirect_comes_back(moved, run_cell):
    """`saved_stdout = sys.stdout; sys.stdout = buf`: at a move, saved_stdout (the kernel's stream) was "an open
    file handle (reopen the file after restore)", a redirect_stderr left open failed with "cannot pickle
    '_hashlib.HMAC' object", and `sys.stdout = saved_stdout` raised NameError. Both come back as the next
    kernel's streams."""
    reply, _, kc = moved(SESSION, REDIRECTED)
    assert reply["ok"] and reply["not_restorable"] == [], reply
    out = run_cell(kc, "sys.stdout = saved_stdout\nprint('back', buf.getvalue().strip())")
    assert (out["error"], out["stdout"]) == (None, "back into buf\n"), out
    out = run_cell(kc, "ctx.__exit__(None, None, None)\nprint('error stream', file=sys.stderr)")
    assert out["error"] is None and out["stderr"] == "error stream\n", out


def test_faulthandler_the_notebook_enabled_stays_enabled_after_a_move(moved, run_cell):
    """`faulthandler.enable()` (a notebook chasing a crash in a C extension): after a move it was off again, and
    the crash it waited for printed no traceback; nothing said so."""
    reply, _, kc = moved(SESSION, "import faulthandler\nfaulthandler.enable()")
    assert reply["ok"], reply
    assert run_cell.facts(kc, "import json\nprint('FACTS' + json.dumps(faulthandler.is_enabled()))") is True


def test_faulthandler_enabled_to_a_file_writes_there_again_after_a_move(moved, run_cell, start_in_work):
    """`faulthandler.enable(file=open("crash.log", "w"))`: after a move a crash wrote to stderr, unsaid."""
    reply, _, kc = moved(SESSION, "import faulthandler\nfaulthandler.enable(file=open('crash.log', 'w'))")
    assert reply["ok"], reply
    out = run_cell(kc, "print(faulthandler.is_enabled())")
    assert out["stdout"] == "True\n" and "faulthandler" not in out["stderr"], out
    kc.execute("faulthandler._sigsegv()")  # the crash it waits for: the kernel dies, its traceback in the file
    log = start_in_work.work / "crash.log"
    for _ in range(200):
        if "Fatal Python error" in log.read_text():
            break
        time.sleep(0.05)
    assert "Fatal Python error: Segmentation fault" in log.read_text()


def test_faulthandler_to_a_file_that_cannot_be_opened_again_is_named(moved, run_cell):
    reply, _, kc = moved(SESSION, "import faulthandler, os\nos.mkdir('logs')\n"
                                  "faulthandler.enable(file=open('logs/crash.log', 'w'))",
                         after=lambda kc: run_cell(kc, "import shutil\nshutil.rmtree('logs')"))
    assert reply["ok"], reply
    out = run_cell(kc, "print(faulthandler.is_enabled())")
    assert out["stdout"] == "True\n", out
    assert "faulthandler writes crash tracebacks to the kernel's error output now, not to " in out["stderr"], out
    assert "logs/crash.log" in out["stderr"] and "faulthandler.enable(file=...) again" in out["stderr"], out


AIMPORT = r'''
open("helper.py", "w").write("def f():\n    return 1\n")
open("loader.py", "w").write("print('LOADING the data')\ndef g():\n    return 1\n")
%load_ext autoreload
%autoreload 1
%aimport helper
%aimport -loader
import loader
'''
EDIT = r'''
import os
for name in ("helper.py", "loader.py"):
    code = open(name).read()
    open(name, "w").write(code.replace("return 1", "return 2"))
    stamp = os.stat(name).st_mtime + 5  # newer for autoreload, whatever the clock's resolution
    os.utime(name, (stamp, stamp))
'''


def test_the_modules_aimport_marked_are_reloaded_or_left_after_a_move(moved, run_cell):
    """`%autoreload 1` + `%aimport helper`: after a move, editing helper.py took no effect (the mark was lost);
    `%aimport -loader` (a module whose top-level code must not run again): the mark was lost too, so under
    `%autoreload 2` it was reloaded, running its code again. Neither was said. The marks are carried."""
    reply, _, kc = moved(SESSION, AIMPORT)
    assert reply["ok"], reply
    assert run_cell(kc, EDIT)["error"] is None
    out = run_cell(kc, "print(helper.f(), loader.g())")  # %autoreload 1: the %aimport-ed module only
    assert (out["error"], out["stdout"]) == (None, "2 1\n"), out
    assert run_cell(kc, "%autoreload 2")["error"] is None
    out = run_cell(kc, "print(loader.g())")  # %autoreload 2: all but the %aimport -loader one
    assert (out["error"], out["stdout"]) == (None, "1\n"), out


FORMATTERS = r'''
import matplotlib.pyplot as plt
plt.plot([1, 2])
plt.show()
%config InlineBackend.figure_format = "svg"
%pprint
formatters = get_ipython().display_formatter.formatters
formatters["text/plain"].max_seq_length = 5
formatters["text/html"].enabled = False
'''
FORMATTERS_PROBE = r'''
import json
formatters = get_ipython().display_formatter.formatters
print("FACTS" + json.dumps([formatters["text/plain"].pprint, formatters["text/plain"].max_seq_length,
                            formatters["text/html"].enabled]))
'''


def test_how_the_notebook_set_outputs_to_print_stays_after_a_move(moved, run_cell):
    """`%pprint` (pretty printing off), the plain formatter's max_seq_length, the HTML one turned off (a
    DataFrame shown as text): after a move each was back as at start, without a word (the display formatters
    are not among the parts %config lists)."""
    reply, before, kc = moved(SESSION, FORMATTERS, lambda kc: run_cell.facts(kc, FORMATTERS_PROBE))
    assert reply["ok"] and before == [False, 5, False], (reply, before)
    first = run_cell(kc, FORMATTERS_PROBE)
    # the printers the inline backend set up for figures are its own, set up again: nothing to say about them
    assert first["error"] is None and "WARNING" not in first["stderr"], first
    assert json.loads(first["stdout"].split("FACTS", 1)[1]) == before


DIRECTORIES = r'''
import os
os.makedirs("data/raw", exist_ok=True)
%cd -q data
%pushd -q raw
'''


def test_cd_minus_and_popd_go_back_where_they_did_before_the_move(moved, run_cell):
    """`%cd data`, `%pushd raw`: after a move the working directory came back, but `%popd` said "popd on empty
    stack" and `%cd -` "No previous directory", and `_dh` had lost the session's directories."""
    reply, _, kc = moved(SESSION, DIRECTORIES)
    assert reply["ok"], reply
    out = run_cell(kc, "%popd\nimport os\nprint(os.path.basename(os.getcwd()))\n%cd -q -\nprint(os.path.basename("
                   "os.getcwd()), [os.path.basename(d) for d in _dh])")
    assert out["error"] is None, out
    assert out["stdout"].splitlines()[-2:] == ["data", "raw ['work', 'data', 'raw', 'data', 'raw']"], out


PRINTERS = r'''
from fractions import Fraction
class Money:
    def __init__(self, cents):
        self.cents = cents
def as_ratio(value, p, cycle):
    p.text(f"{value.numerator}/{value.denominator}")
def as_euros(value, p, cycle):
    p.text(f"EUR {value.cents / 100:.2f}")
formatters = get_ipython().display_formatter.formatters
formatters["text/plain"].for_type(Fraction, as_ratio)
formatters["text/plain"].for_type(Money, as_euros)
formatters["text/plain"].for_type_by_name("decimal", "Decimal", lambda value, p, cycle: p.text("D"))
price = Money(1250)
'''
PRINTERS_PROBE = r'''
import json
plain = get_ipython().display_formatter.formatters["text/plain"]
print("FACTS" + json.dumps([plain(Fraction(1, 3)), plain(price), plain(Money(5))]))
'''


def test_the_notebooks_display_printers_show_its_values_after_a_move(moved, run_cell):
    """`formatters["text/plain"].for_type(Fraction, as_ratio)`, and one for a class of the notebook's: after a
    move, values were shown as IPython's default again (`Fraction(1, 3)`, `<__main__.Money at 0x...>`),
    without a word. Printers a variable holds are set again; a lambda's is named."""
    reply, before, kc = moved(SESSION, PRINTERS, lambda kc: run_cell.facts(kc, PRINTERS_PROBE))
    assert reply["ok"] and before == ["1/3", "EUR 12.50", "EUR 0.05"], (reply, before)
    first = run_cell(kc, PRINTERS_PROBE)
    assert first["error"] is None, first
    assert "<lambda> (the text/plain printer of decimal.Decimal) are not carried" in first["stderr"], first
    assert json.loads(first["stdout"].split("FACTS", 1)[1]) == before


def test_the_session_log_logstart_keeps_goes_on_after_a_move(moved, run_cell):
    """`%logstart -o session_log.py append` (a course's "log your session"): after a move the log recorded no
    more cells and `%logstate` said "Logging has not been activated", without a word. It goes on, appended to."""
    reply, _, kc = moved(SESSION, "%logstart -q -o session_log.py over",
                         lambda kc: run_cell(kc, "before_the_move = 41 + 1"))  # logged by the old kernel
    assert reply["ok"], reply
    assert run_cell(kc, "after_the_move = 7")["error"] is None
    out = run_cell(kc, "print(open('session_log.py').read())")
    assert out["error"] is None, out
    # the log so far is kept (never %logstart's "over" again), the cell after the move is in it
    assert "before_the_move = 41 + 1" in out["stdout"] and "after_the_move = 7" in out["stdout"], out


ODD_HOOK = r'''
import ast
class Lenient(ast.NodeTransformer):
    def __getattr__(self, name):  # a notebook class that answers every attribute its own way
        raise RuntimeError(f"no {name} here")
get_ipython().ast_transformers.append(Lenient())
kept = 1
'''


def test_a_hook_whose_attributes_fail_is_named_never_a_failed_checkpoint(moved, run_cell):
    """A transformer of a notebook class whose __getattr__ raises: looking at it must never cost the
    checkpoint; it is named as not carried."""
    reply, _, kc = moved(SESSION, ODD_HOOK)
    assert reply["ok"], reply
    first = run_cell(kc, "print(kept)")
    assert first["error"] is None and first["stdout"] == "1\n", first
    assert "a Lenient (ast_transformers)" in first["stderr"], first
