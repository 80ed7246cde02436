"""Process-wide state a restore brings back beyond the variables: the time
zone a changed TZ selects, the locale, the display of matplotlib figures
kept in variables, and the cell history (numbers and sources).

Each test saves a session in one real kernel and restores it in a new one.
"""

import json
import shutil
import subprocess

import pytest

from elastichub_kernel.storage import CHECKPOINT_NAME, session_key

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/process-state.ipynb"


def _save(tmp_path, start, stop, run_cell, control_request, cells, env=None):
    km, kc = start(tmp_path, session_name=SESSION, env=env)
    for code in cells:
        out = run_cell(kc, code)
        assert out["error"] is None, out
    assert control_request(kc, "elastichub_checkpoint_request")["content"]["ok"] is True
    stop(km, kc)
    assert (tmp_path / session_key(SESSION) / CHECKPOINT_NAME).exists()


def test_a_changed_tz_takes_effect_again(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell,
                                         control_request):
    _save(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell, control_request,
          ["import os, time\nos.environ['TZ'] = 'Asia/Tokyo'\ntime.tzset()"], env={"TZ": "UTC"})
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION, env={"TZ": "UTC"})
    out = run_cell(kc, "print(os.environ['TZ'], time.tzname[0], time.localtime(0).tm_hour)")
    assert out["stdout"].split() == ["Asia/Tokyo", "JST", "9"], out  # not UTC's 0 while TZ says Tokyo


@pytest.fixture(scope="module")
def german_locale(tmp_path_factory):
    """A LOCPATH holding de_DE.UTF-8: a kernel without it lacks that locale."""
    assert shutil.which("localedef"), "localedef is not installed (Debian: libc-bin; scripts/setup.sh)"
    locpath = tmp_path_factory.mktemp("locales")
    done = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(locpath / "de_DE.UTF-8")],
                          capture_output=True, timeout=120)
    # 1: warnings only. Its sources come with Debian's `locales` (scripts/setup.sh installs it).
    assert done.returncode in (0, 1) and (locpath / "de_DE.UTF-8").exists(), done.stderr.decode()[-300:]
    return str(locpath)


@pytest.mark.parametrize("category", ["LC_ALL", "LC_TIME"])
def test_the_locale_is_carried_and_a_missing_one_named(tmp_path, start_elastic_kernel, stop_elastic_kernel,
                                                       run_cell, control_request, german_locale, category):
    with_de = {"LOCPATH": german_locale}
    _save(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell, control_request,
          [f"import locale, time\nlocale.setlocale(locale.{category}, 'de_DE.UTF-8')\nmonth = 1"], env=with_de)
    probe = "print(time.strftime('%B', time.gmtime(0)), locale.setlocale(locale.LC_TIME), month)"

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION, env=with_de)
    out = run_cell(kc, probe)
    assert out["stdout"].split() == ["Januar", "de_DE.UTF-8", "1"], out
    # Nothing lost: not in the short note, but in the details it points at.
    assert "de_DE.UTF-8" not in out["stderr"] and "%elastic_status" in out["stderr"], out["stderr"]
    assert "de_DE.UTF-8" in run_cell(kc, "%elastic_status")["stdout"]
    stop_elastic_kernel(km, kc)

    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)  # a node without that locale
    out = run_cell(kc, probe)
    assert out["error"] is None and out["stdout"].split() == ["January", "C", "1"], out
    assert "de_DE.UTF-8" in out["stderr"] and "not available here" in out["stderr"], out["stderr"]


def _shown(kc, code):
    got = []
    kc.execute_interactive(code, timeout=60, output_hook=lambda m: got.extend(m["content"]["data"]) if m[
        "msg_type"] in ("display_data", "execute_result") else None)
    return got


def test_a_figure_in_a_variable_displays_as_a_plot_after_restore(tmp_path, start_elastic_kernel,
                                                                 stop_elastic_kernel, run_cell, control_request):
    env = {"MPLBACKEND": "module://matplotlib_inline.backend_inline"}  # what ipykernel sets when unset
    _save(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell, control_request,
          ["import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2))\nax.plot([1, 2], [2, 1])"],
          env=env)
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION, env=env)
    assert "image/png" in _shown(kc, "fig")  # before: only text/plain '<Figure size 200x200 with 1 Axes>'


def test_a_backend_the_user_chose_is_kept(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell,
                                          control_request):
    env = {"MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    _save(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell, control_request,
          ["import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\nfig = plt.figure()"],
          env=env)
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION, env=env)
    out = run_cell(kc, "print(matplotlib.get_backend())")
    assert out["stdout"].strip() == "agg", out  # not the kernel's inline default


def test_cell_numbers_and_sources_go_on(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell,
                                        control_request):
    cells = ["x = 41\nx + 1", "%precision 3", "y = 'hello'"]
    _save(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell, control_request, cells)
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = run_cell(kc, "import json\nprint(json.dumps([In[1:4], _i3, _ih[3]]))")
    assert out["reply"]["execution_count"] == 4, out  # the cell numbers go on from the saved session's
    sources, i3, ih3 = json.loads(out["stdout"])
    assert sources[0] == cells[0] and sources[2] == cells[2] and i3 == ih3 == cells[2]
    assert "precision" in sources[1]  # In holds the transformed source, as IPython's does
    out = run_cell(kc, "print(In[-1] == In[5] == _i5 == _ih[5])")
    assert out["stdout"].strip() == "True" and out["reply"]["execution_count"] == 5, out
    out = run_cell(kc, "%history -n 1-2")
    assert "x = 41" in out["stdout"] and "%precision 3" in out["stdout"], out


def test_a_dotted_import_comes_back_with_its_submodule(tmp_path, start_elastic_kernel, stop_elastic_kernel,
                                                       run_cell, control_request):
    """`import email.mime.text` binds `email` alone: a new kernel that imported
    `email` again had no `email.mime` (AttributeError, and no word said)."""
    _save(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell, control_request,
          ["import email.mime.text\nmsg = email.mime.text.MIMEText('hello')['Content-Type']"])
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    out = run_cell(kc, "print(email.mime.text.MIMEText('again')['Content-Type'] == msg)")
    assert out["error"] is None and out["stdout"].strip() == "True", out


def test_a_key_of_globals_that_is_no_name_is_said_and_the_rest_is_saved(tmp_path, start_elastic_kernel,
                                                                      stop_elastic_kernel, run_cell,
                                                                      control_request):
    """`for c in df.columns: globals()[c] = df[c]` with integer columns made
    every checkpoint fail: nothing of the session was saved."""
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(kc, "keep = 'important'\nglobals()[0] = 'a column'")["error"] is None
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"] is True, reply
    assert {"name": "0", "reason": "a key of globals() that is no name (globals()[key] = ...): not saved"} \
        in reply["not_restorable"]
    stop_elastic_kernel(km, kc)
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(kc, "print(keep)")["stdout"].strip() == "important"


def test_a_variable_named_with_a_lone_surrogate_does_not_silence_the_control_channel(
        tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell, control_request):
    """The reply naming it could not be sent as UTF-8: the checkpoint and
    status requests got no answer at all, and their caller waited its
    whole timeout."""
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    assert run_cell(kc, "globals()['x' + chr(0xd800)] = 2\nkeep = 1")["error"] is None
    reply = control_request(kc, "elastichub_checkpoint_request")["content"]
    assert reply["ok"] is True and "x\\ud800" in reply["migrated"] and "keep" in reply["migrated"], reply
    assert control_request(kc, "elastichub_status_request")["content"]["status"] == "ok"
