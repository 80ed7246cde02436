"""What a notebook's cells leave in the process and the shell, round 16: checkpointed in one real kernel and
restored in the next (or in the session itself)."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms14.ipynb"


def _killed_and_restarted(km, kc, start_in_work):
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return start_in_work(SESSION)


def test_a_checkpoint_inside_a_cells_own_capture_names_no_redirect(start_in_work, run_cell):
    """`%%capture` + `%elastic_checkpoint` (or a checkpoint under `with redirect_stdout(buf):`): the cell's own
    capture, over when the cell ends, was named at the restore as a redirect the session had; one entered in an
    earlier cell and not left still is."""
    km, kc = start_in_work(SESSION)
    assert run_cell(kc, "%%capture cap\nanswer = 42\n%elastic_checkpoint")["error"] is None
    km, kc = _killed_and_restarted(km, kc, start_in_work)
    out = run_cell(kc, "print(answer)")
    assert out["stdout"] == "42\n" and "did NOT restore" not in out["stderr"], out
    assert "sys.stdout" not in out["stderr"] and "redirect" not in out["stderr"], out["stderr"]

    cell = ("import contextlib, io\nbuf = io.StringIO()\nwith contextlib.redirect_stdout(buf), "
            "contextlib.redirect_stderr(io.StringIO()):\n    get_ipython().run_line_magic('elastic_checkpoint', '')")
    assert run_cell(kc, cell)["error"] is None
    km, kc = _killed_and_restarted(km, kc, start_in_work)
    out = run_cell(kc, "print(type(buf).__name__)")
    assert out["stdout"] == "StringIO\n", out
    assert "sys.stdout" not in out["stderr"] and "sys.stderr" not in out["stderr"], out["stderr"]

    # One that outlives its cell is the session's: still named, also from a checkpoint under a capture.
    assert run_cell(kc, "log = io.StringIO()\nctx = contextlib.redirect_stdout(log)\nctx.__enter__()")["error"] is None
    assert run_cell(kc, "%%capture cap\n%elastic_checkpoint")["error"] is None
    km, kc = _killed_and_restarted(km, kc, start_in_work)
    out = run_cell(kc, "pass")
    assert "sys.stdout wrote to log" in out["stderr"] and "capture" not in out["stderr"], out["stderr"]

    # ...and one the cell left before its checkpoint is not the session's after the cell.
    cell = "log = io.StringIO()\nctx = contextlib.redirect_stdout(log)\nctx.__enter__()"
    assert run_cell(kc, cell)["error"] is None
    assert run_cell(kc, "ctx.__exit__(None, None, None)\n%elastic_checkpoint")["error"] is None
    km, kc = _killed_and_restarted(km, kc, start_in_work)
    out = run_cell(kc, "pass")
    assert "sys.stdout" not in out["stderr"], out["stderr"]


TWO_OF_ONE_FACTORY = r'''
import atexit
ran = []
def make(tag):
    def on_cell(result):
        ran.append(tag)
    return on_cell
first, second = make("a"), make("b")
ip = get_ipython()
ip.events.register("post_run_cell", first)
ip.events.register("post_run_cell", second)
def make_bye(tag):
    def bye():
        print("bye", tag)
    return bye
bye_a, bye_b = make_bye("a"), make_bye("b")
atexit.register(bye_a)
atexit.register(bye_b)
%elastic_checkpoint
'''


def test_elastic_restore_keeps_two_registered_functions_of_one_name_apart(start_in_work, run_cell):
    """%elastic_restore in the session that registered them: the session's older registration was matched by
    qualified name, so two functions one factory made (same name, same place) were reduced to one."""
    km, kc = start_in_work(SESSION)
    assert run_cell(kc, TWO_OF_ONE_FACTORY)["error"] is None
    assert run_cell(kc, "%elastic_restore")["error"] is None
    run_cell(kc, "ran.clear()")  # then the callbacks
    probe = ("import json\nfrom elastichub_kernel import userhooks\nnames = [getattr(c, '__name__', '') for c in "
             "get_ipython().events.callbacks['post_run_cell']]\nprint('FACTS' + json.dumps([sorted(ran), "
             "names.count('on_cell'), [entry[0].__name__ for entry in userhooks._atexit]]))")
    ran, callbacks, registered = run_cell.facts(kc, probe)
    assert ran == ["a", "b"] and callbacks == 2, (ran, callbacks)
    assert registered == ["bye", "bye"], registered
    kc.stop_channels()
    km.shutdown_kernel(now=False)


HELPERS = r'''
import atexit

def top_bye():
    pass

atexit.register(top_bye)  # at import: the restore imports this file again, which registers it again

def start_log(path):
    def flush_log():
        open(path, "w").close()
    atexit.register(flush_log)  # when a cell calls it: nothing registers it again
    return flush_log
'''


def test_atexit_functions_the_notebooks_own_module_registered_for_a_cell_are_named(start_in_work, run_cell,
                                                                                     control_request):
    """helpers.start_log() (a module next to the notebook) registering a function with atexit when a cell calls
    it counted as a library's registration: the restore imports helpers again, which does not call start_log,
    so the function did not run at the end after a move, unsaid. One the module registers as it is imported is
    registered again by that import, and not named."""
    (start_in_work.work / "helpers.py").write_text(HELPERS)
    km, kc = start_in_work(SESSION)
    cell = "import helpers\nhelpers.start_log('a.log')\nkept = helpers.start_log('b.log')"
    assert run_cell(kc, cell)["error"] is None
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["ok"]
    km, kc = _killed_and_restarted(km, kc, start_in_work)
    note = run_cell(kc, "import atexit")["stderr"]
    assert "helpers.start_log.<locals>.flush_log (registered with atexit" in note, note
    assert note.count("flush_log") == 1 and "top_bye" not in note, note  # the held one carried, the other named
    probe = ("import json\nfrom elastichub_kernel import userhooks\nprint('FACTS' + json.dumps("
             "[entry[0] is kept for entry in userhooks._atexit]))")
    assert run_cell.facts(kc, probe) == [True], note
