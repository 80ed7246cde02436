"""A notebook's working directory, sys.path and environment are session
state: a course notebook that ran `sys.path.insert(0, "../src")`, `%cd
../data` and `%env OMP_NUM_THREADS=3` gets them back after a move, so the
variables built with its helper module load and its relative paths still
resolve. Before, the helper's variables were named as lost although the
module was still there."""

import pytest

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

SESSION = "course/week1/lab.ipynb"

CELLS = [
    "import os, sys\nsys.path.insert(0, '../src')",
    "import course_helper\nfrom course_helper import triple, Box\nbox = Box(); box.items = ['x', 'y']",
    "%cd ../data",
    "rows = open('values.csv').read().split()",
    "%env OMP_NUM_THREADS=3",
    "os.environ['COURSE_TOKEN'] = 's3cret'\ndel os.environ['DROP_ME']\n"
    "os.environ['JUPYTERHUB_ACTIVITY_URL'] = 'changed by the session'",
]

DIGEST = ("print(repr((os.getcwd(), sys.path[0], os.environ.get('OMP_NUM_THREADS'), os.environ.get('COURSE_TOKEN'),"
          " 'DROP_ME' in os.environ, triple(2), box.items, rows, open('values.csv').read().split(),"
          " type(box) is course_helper.Box)))")


def course(tmp_path):
    home = tmp_path / "home"
    (home / "course" / "week1").mkdir(parents=True)
    (home / "course" / "src").mkdir()
    (home / "course" / "data").mkdir()
    (home / "course" / "src" / "course_helper.py").write_text(
        "def triple(x):\n    return 3 * x\nclass Box:\n    pass\n")
    (home / "course" / "data" / "values.csv").write_text("1\n2\n3\n")
    return home


def test_the_working_directory_sys_path_and_environment_come_back(tmp_path, start_elastic_kernel,
                                                                  stop_elastic_kernel, run_cell):
    home = course(tmp_path)
    week1 = home / "course" / "week1"
    env = {"DROP_ME": "1", "JUPYTERHUB_ACTIVITY_URL": "http://hub-a/activity"}
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=week1, env=env)
    for cell in CELLS:
        assert run_cell(kc, cell)["error"] is None, cell
    before = run_cell(kc, DIGEST)
    assert before["error"] is None, before
    assert "('" + str(home / "course" / "data") + "', '../src', '3', 's3cret', False, 6" in before["stdout"]
    stop_elastic_kernel(km, kc)

    # The new pod's kernel starts where Jupyter starts it (the notebook's
    # directory), with the platform's variables of the new pod.
    env = {"DROP_ME": "1", "JUPYTERHUB_ACTIVITY_URL": "http://hub-b/activity"}
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=week1, env=env)
    out = run_cell(kc, DIGEST)
    assert out["error"] is None, out
    assert out["stdout"] == before["stdout"]
    report = out["stderr"]
    assert "Not restored" not in report and "%elastic_status shows the details" in report, report
    # What came back is in the details, not in the short note; values never shown.
    details = run_cell(kc, "%elastic_status")["stdout"]
    assert f"working directory {home / 'course' / 'data'}" in details and "working directory" not in report
    assert "sys.path entry ../src" in details
    assert "s3cret" not in report + details and "OMP_NUM_THREADS" not in report + details
    # The platform's own variable is the new pod's, whatever the session did with it.
    url = run_cell(kc, "print(os.environ['JUPYTERHUB_ACTIVITY_URL'])")["stdout"].strip()
    assert url == "http://hub-b/activity"


def test_a_working_directory_that_is_gone_is_said_and_the_rest_comes_back(tmp_path, start_elastic_kernel,
                                                                          stop_elastic_kernel, run_cell):
    home = course(tmp_path)
    week1 = home / "course" / "week1"
    scratch = home / "course" / "scratch"
    scratch.mkdir()
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=week1)
    for cell in [*CELLS[:2], f"%cd {scratch}", "total = sum(range(10))"]:
        assert run_cell(kc, cell)["error"] is None, cell
    stop_elastic_kernel(km, kc)
    scratch.rmdir()

    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=week1)
    out = run_cell(kc, "print(repr((os.getcwd(), total, triple(3))))")
    assert out["error"] is None, out
    # '../src' is relative: from the notebook's directory it is the same one.
    assert out["stdout"].strip() == repr((str(week1), 45, 9))
    assert f"WARNING: the working directory {scratch} cannot be entered here" in out["stderr"]
    assert f"the kernel stays in {week1}" in out["stderr"]


def test_seeded_random_generators_draw_on_from_where_they_were(tmp_path, start_elastic_kernel,
                                                               stop_elastic_kernel, run_cell):
    """`random.seed(1)` / `np.random.seed(2)` at the top, draws in later
    cells: a move in between must not change what the later cells draw."""
    import random

    import numpy as np

    seeded = random.Random(1)
    first = seeded.random()
    expected = repr((seeded.random(), float(np.random.RandomState(2).rand())))
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    out = run_cell(kc, "import random\nimport numpy as np\nrandom.seed(1); np.random.seed(2)\nfirst = random.random()")
    assert out["error"] is None, out
    stop_elastic_kernel(km, kc)

    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    out = run_cell(kc, "print(repr((random.random(), float(np.random.rand()))))")
    assert out["error"] is None, out
    assert out["stdout"].strip() == expected
    assert run_cell(kc, "print(first)")["stdout"].strip() == repr(first)


def test_the_warning_filters_a_notebook_set_still_hold(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell):
    """`warnings.filterwarnings("ignore", ...)` at the top of a course
    notebook: after a move its later cells stay as quiet as before."""
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    cell = "import warnings\nwarnings.filterwarnings('ignore', category=FutureWarning)\nx = 1"
    assert run_cell(kc, cell)["error"] is None
    warn = "warnings.warn('this API will change', FutureWarning)"
    assert "FutureWarning" not in run_cell(kc, warn)["stderr"]
    stop_elastic_kernel(km, kc)

    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    run_cell(kc, "x")  # the first cell's output carries the restore report
    out = run_cell(kc, warn)
    assert out["error"] is None and "FutureWarning" not in out["stderr"], out


def test_autoreload_still_picks_up_an_edited_helper_after_a_move(tmp_path, start_elastic_kernel,
                                                                 stop_elastic_kernel, run_cell):
    """`%load_ext autoreload` + `%autoreload 2`, then the student edits the
    course helper: the next cell must use the edit, after a move as before."""
    import os

    home = course(tmp_path)
    helper = home / "course" / "src" / "course_helper.py"
    week1 = home / "course" / "week1"
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=week1)
    for cell in ["%load_ext autoreload", "%autoreload 2", CELLS[0], "import course_helper"]:
        assert run_cell(kc, cell)["error"] is None, cell
    stop_elastic_kernel(km, kc)

    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=week1)
    assert run_cell(kc, "print(course_helper.triple(2))")["stdout"].strip() == "6"
    helper.write_text("def triple(x):\n    return 3 * x + 100\n")
    later = helper.stat().st_mtime + 5
    os.utime(helper, (later, later))
    out = run_cell(kc, "print(course_helper.triple(2))")
    assert out["error"] is None and out["stdout"].strip() == "106", out


def test_a_raised_recursion_limit_holds_after_a_move(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell):
    """An algorithms course raises the limit for a deep recursion; after a
    move the same call must not hit a RecursionError."""
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    cell = "import sys\nsys.setrecursionlimit(20000)\ndef depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)"
    assert run_cell(kc, cell)["error"] is None
    stop_elastic_kernel(km, kc)
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    out = run_cell(kc, "print(sys.getrecursionlimit(), depth(5000))")
    assert out["error"] is None and out["stdout"].strip() == "20000 5000", out


def test_the_logging_a_notebook_set_up_still_logs_after_a_move(tmp_path, start_elastic_kernel, stop_elastic_kernel,
                                                               run_cell):
    """`logging.basicConfig(level=logging.INFO)`, a training log file and a
    quieted library: after a move `log.info` printed nothing and the log
    file stopped growing, without a word."""
    setup = ("import logging\n"
             "from logging.handlers import RotatingFileHandler\n"
             "logging.basicConfig(level=logging.INFO, format='%(levelname)s|%(name)s|%(message)s')\n"
             "log = logging.getLogger('train')\n"
             "log.addHandler(logging.FileHandler('train.log'))\n"
             "logging.getLogger('chatty.lib').setLevel(logging.ERROR)\n"
             "logging.getLogger('rotated').addHandler(RotatingFileHandler('rotated.log'))\n"
             "log.info('epoch 1')\n")
    probe = "log.info('epoch 2'); logging.getLogger('chatty.lib').warning('noise')"
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    assert run_cell(kc, setup)["error"] is None
    stop_elastic_kernel(km, kc)

    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    first = run_cell(kc, "x = 1")
    assert "WARNING: logging: RotatingFileHandler, a handler of logger 'rotated', is not carried (set it up " \
           "again)." in first["stderr"], first
    out = run_cell(kc, probe)
    assert out["error"] is None and out["stderr"] == "INFO|train|epoch 2\n", out
    # the file handler appends (the log so far stays), once: not doubled by a second restore
    assert (tmp_path / "train.log").read_text() == "epoch 1\nepoch 2\n"
    assert run_cell(kc, "%elastic_restore")["error"] is None
    run_cell(kc, "log.info('epoch 3')")
    assert (tmp_path / "train.log").read_text() == "epoch 1\nepoch 2\nepoch 3\n"


class _Move:
    """One notebook session moved again and again: each `probed(setup,
    probe)` runs setup and probe in the running kernel (the first one made
    here), stops it, starts it again from its checkpoint and runs probe
    there first. Returns (probe's stdout before, probe's reply after)."""

    def __init__(self, tmp_path, start, stop, run_cell):
        self.start = lambda: start(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
        self.stop, self.run_cell = stop, run_cell
        self.km, self.kc = self.start()

    def probed(self, setup: str, probe: str):
        assert self.run_cell(self.kc, setup)["error"] is None
        before = self.run_cell(self.kc, probe)["stdout"]
        self.stop(self.km, self.kc)
        self.km, self.kc = self.start()
        return before, self.run_cell(self.kc, probe)


def test_pandas_display_options_and_the_plot_style_hold_after_a_move(tmp_path, start_elastic_kernel,
                                                                     stop_elastic_kernel, run_cell):
    """`pd.set_option("display.max_columns", None)` and a plot style at the
    top of a notebook: after a move its tables were cut short and its plots
    small and plain again."""
    setup = ("import pandas as pd, matplotlib.pyplot as plt\n"
             "pd.set_option('display.max_columns', None)\n"
             "pd.set_option('display.float_format', '{:.1f}'.format)\n"
             "plt.rcParams['figure.figsize'] = (12, 6)\n"
             "plt.style.use('ggplot')\n")
    probe = ("print(pd.get_option('display.max_columns'), list(plt.rcParams['figure.figsize']), "
             "plt.rcParams['axes.facecolor'], plt.rcParams['axes.prop_cycle'].by_key()['color'][0], "
             "pd.get_option('display.float_format')(2.25))")
    move = _Move(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell)
    before, first = move.probed(setup, probe)
    assert before.split()[0] == "None" and before.split()[-1] == "2.2"
    assert first["error"] is None and first["stdout"] == before, first
    assert "not carried" not in first["stderr"].lower(), first


def test_numpys_print_and_error_options_and_decimals_precision_hold_after_a_move(tmp_path, start_elastic_kernel,
                                                                                stop_elastic_kernel, run_cell):
    """`np.set_printoptions(precision=3, suppress=True)`, `np.seterr(...)` and
    `getcontext().prec = 50` at the top of a numerics notebook: they live in
    the cells' execution context, which the checkpoint's thread cannot see.
    After a move arrays printed to eight digits, 0/0 warned instead of
    raising and decimals were computed to 28 digits, without a word."""
    setup = ("import decimal, numpy as np\n"
             "np.set_printoptions(precision=3, suppress=True)\n"
             "np.seterr(invalid='raise')\n"
             "decimal.getcontext().prec = 50\n"
             "a = np.array([1 / 3, 1e-9, 12345.678901])\n")
    probe = ("print(repr(a), decimal.Decimal(1) / decimal.Decimal(7))\n"
             "try:\n    np.array([0.0]) / 0\nexcept FloatingPointError as exc:\n    print('raised:', exc)\n")
    move = _Move(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell)
    before, first = move.probed(setup, probe)
    assert "0.333" in before and "raised: invalid value" in before and "0." + "142857" * 8 + "14" in before, before
    assert first["error"] is None and first["stdout"] == before, first
    # and again after a cell, from the checkpoint this kernel writes
    assert move.probed("b = 2", probe)[1]["stdout"] == before


def test_what_config_set_holds_after_a_move(tmp_path, start_elastic_kernel, stop_elastic_kernel, run_cell):
    """`%config InteractiveShell.ast_node_interactivity = "all"` (every
    expression of a cell shows) and `%config InlineBackend.figure_format =
    "retina"` before the first plot, at the top of a course notebook: after
    a move a cell showed only its last value and the plots were blurred."""
    setup = ("%config InteractiveShell.ast_node_interactivity = 'all'\n"
             "%config InlineBackend.figure_format = 'retina'\n")
    probe = "1 + 1\n2 + 2\n"
    formats = ("from matplotlib_inline.backend_inline import InlineBackend\n"
               "print(sorted(InlineBackend.instance(parent=get_ipython()).figure_formats))")
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    assert run_cell(kc, setup)["error"] is None
    stop_elastic_kernel(km, kc)

    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    results = []

    def shown(msg):
        if msg["msg_type"] == "execute_result":
            results.append(msg["content"]["data"]["text/plain"])

    kc.execute_interactive(probe, timeout=60, output_hook=shown)
    assert results == ["2", "4"]
    assert run_cell(kc, formats)["stdout"] == "['retina']\n"


def test_scikit_learns_config_and_ipythons_print_modes_hold_after_a_move(tmp_path, start_elastic_kernel,
                                                                         stop_elastic_kernel, run_cell):
    """`set_config(transform_output="pandas")` (kept per thread by
    scikit-learn: read on the cells' thread), `%precision 3`, `%xmode Minimal`:
    after a move pipelines returned arrays again and floats printed long."""
    setup = "import math, sklearn\nsklearn.set_config(transform_output='pandas')\n%precision 3\n%xmode Minimal\n"
    probe = "print(sklearn.get_config()['transform_output'], get_ipython().InteractiveTB.mode); math.pi"
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    assert run_cell(kc, setup)["error"] is None
    stop_elastic_kernel(km, kc)
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION, cwd=tmp_path)
    out = {"stdout": "", "result": None}

    def hook(msg):
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            out["stdout"] += msg["content"]["text"]
        elif msg["msg_type"] == "execute_result":
            out["result"] = msg["content"]["data"]["text/plain"]

    kc.execute_interactive(probe, output_hook=hook, timeout=60)
    assert out == {"stdout": "pandas Minimal\n", "result": "3.142"}, out
