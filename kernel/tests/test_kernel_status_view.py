"""%elastic_status, where the note after a restore points a student: a
summary they can read (it printed the kernel's raw JSON), the JSON still
there for the staff with --json."""

import json

import pytest

pytestmark = pytest.mark.timeout(240)

SESSION = "work/status.ipynb"


def test_status_says_what_the_last_checkpoint_and_restore_held_in_words(start_in_work, run_cell,
                                                                        stop_elastic_kernel):
    km, kc = start_in_work(SESSION)
    cell = ("import os, threading\nheld_lock = threading.Lock()\nheld_lock.acquire()\nscores = [1, 2]\n"
            "os.makedirs('data', exist_ok=True)\nos.chdir('data')\n%elastic_checkpoint")
    assert run_cell(kc, cell)["error"] is None
    shown = run_cell(kc, "%elastic_status")["stdout"]
    assert not shown.lstrip().startswith("{") and '"last_checkpoint"' not in shown, shown
    checkpoint = shown.split("Checkpoints are kept")[0]
    assert "scores" in checkpoint and "UTC" in checkpoint and " KB" in checkpoint, shown
    # What was not saved, with its reason, under the words that say so.
    assert "NOT saved" in checkpoint and "held_lock" in checkpoint.split("NOT saved")[1], shown
    assert "thread lock" in checkpoint.split("NOT saved")[1], shown
    assert "%elastic_status --json" in shown
    raw = json.loads(run_cell(kc, "%elastic_status --json")["stdout"])
    assert raw["last_checkpoint"]["ok"] is True and raw["restored"] is None
    stop_elastic_kernel(km, kc)

    km, kc = start_in_work(SESSION)
    shown = run_cell(kc, "%elastic_status")["stdout"]
    restore = shown.split("Last restore")[1]
    assert "working directory" in restore and "data" in restore, shown
    assert "held_lock" in restore.split("NOT restored")[1], shown
    assert "FAILED" not in shown
    assert "takes no" in run_cell(kc, "%elastic_status --bogus")["stdout"]


def test_status_says_when_the_last_checkpoint_write_failed(start_in_work, run_cell):
    """A write that failed left no trace in %elastic_status: it showed the older checkpoint as the last word."""
    km, kc = start_in_work(SESSION)
    assert run_cell(kc, "x = 1\n%elastic_checkpoint")["error"] is None
    # The notebook's checkpoint folder turned into a file: the next write cannot be made.
    cell = ("import shutil\nfolder = get_ipython().kernel.session_dir\nshutil.rmtree(folder)\n"
            "open(folder, 'w').close()\ny = 2\n%elastic_checkpoint")
    assert "checkpoint failed" in run_cell(kc, cell)["stdout"]
    shown = run_cell(kc, "%elastic_status")["stdout"]
    assert "FAILED" in shown and "Last checkpoint:" in shown, shown
    raw = json.loads(run_cell(kc, "%elastic_status --json")["stdout"])
    assert raw["last_checkpoint_failure"]["error"], raw
    run_cell(kc, "import os\nos.remove(folder)\n%elastic_checkpoint")
    assert "FAILED" not in run_cell(kc, "%elastic_status")["stdout"]
