"""Kernels that share a checkpoint key never hand each other's work over, nor
lose it, without a word.

- Without JPY_SESSION_NAME (jupyter nbconvert --execute, papermill,
  nbgrader, a console) the working directory keys the checkpoint: hw2.ipynb
  started with hw1.ipynb's `student_answer`, said only as "restored 1
  variable(s)". Such a kernel restores nothing by itself now, says so once,
  and %elastic_restore still loads the folder's checkpoint.
- Two live kernels on one key (two kernels of one notebook path, two
  consoles in one folder): the last writer won, the other's variables were
  gone. Each is told at its checkpoint, and the other's file is kept.
"""

import os

import pytest

pytestmark = pytest.mark.timeout(240)


def test_a_kernel_without_a_notebook_path_does_not_restore_its_folders_checkpoint(start_in_work, run_cell,
                                                                                  stop_elastic_kernel):
    km, kc = start_in_work(None)  # hw1.ipynb, run headless
    assert run_cell(kc, "student_answer = 42")["error"] is None
    stop_elastic_kernel(km, kc)

    km, kc = start_in_work(None)  # hw2.ipynb, same folder
    out = run_cell(kc, "print('student_answer' in globals())")
    assert out["stdout"].strip() == "False", out
    assert "without a notebook path" in out["stderr"] and "did NOT restore" in out["stderr"], out
    assert "%elastic_restore" in out["stderr"] and "restored 1" not in out["stderr"]
    assert run_cell(kc, "print(1)")["stderr"] == ""  # said once

    # A console user still gets the folder's checkpoint back when asking for it.
    out = run_cell(kc, "%elastic_restore")
    assert "restored 1 variable(s)" in out["stdout"], out
    assert run_cell(kc, "print(student_answer)")["stdout"].strip() == "42"


def test_two_kernels_of_one_notebook_are_told_and_keep_each_others_work(start_in_work, run_cell,
                                                                        stop_elastic_kernel):
    km1, kc1 = start_in_work("work/shared.ipynb")
    km2, kc2 = start_in_work("work/shared.ipynb")
    pid1 = run_cell(kc1, "import os\nx_from_k1 = 1\nprint(os.getpid())")["stdout"].strip()
    pid2 = run_cell(kc2, "import os\ny_from_k2 = 2\nprint(os.getpid())")["stdout"].strip()

    out = run_cell(kc1, "%elastic_checkpoint")
    assert "checkpoint written" in out["stdout"] and "WARNING" not in out["stdout"], out
    out = run_cell(kc2, "%elastic_checkpoint")  # replaces kernel 1's: said, kernel 1 is named running
    assert f"another kernel of this notebook is running (pid {pid1})" in out["stdout"], out
    assert "x_from_k1" in out["stdout"] and "kept as" in out["stdout"]
    run_cell(kc1, "x_from_k1 = 10")
    out = run_cell(kc1, "%elastic_checkpoint")  # and kernel 1 is told too, at its next checkpoint
    assert f"another kernel of this notebook is running (pid {pid2})" in out["stdout"], out
    assert "y_from_k2" in out["stdout"]

    stop_elastic_kernel(km1, kc1)
    stop_elastic_kernel(km2, kc2)  # the last writer: kernel 1's last checkpoint is kept, not lost

    km3, kc3 = start_in_work("work/shared.ipynb")
    out = run_cell(kc3, "print(sorted(k for k in ('x_from_k1', 'y_from_k2') if k in globals()))")
    assert out["stdout"].strip() == "['y_from_k2']", out
    report = out["stderr"]
    assert f"another kernel of this notebook (pid {pid1})" in report and "x_from_k1" in report, report
    kept = report.split("kept as ", 1)[1].split(" ", 1)[0]
    assert os.path.exists(kept)
    # What the message says to do brings kernel 1's work back.
    checkpoint = os.path.join(os.path.dirname(kept), "checkpoint.ehk")
    out = run_cell(kc3, f"import os\nos.replace({kept!r}, {checkpoint!r})\n%elastic_restore")
    assert out["error"] is None, out
    assert run_cell(kc3, "print(x_from_k1, y_from_k2)")["stdout"].strip() == "10 2"


def test_a_kernel_without_a_notebook_path_told_its_path_leaves_the_folders_checkpoint(start_in_work, run_cell,
                                                                                     control_request,
                                                                                     stop_elastic_kernel):
    """Told its notebook's path later (the server extension does, before a checkpoint), such a kernel
    took its folder's checkpoint, another notebook's, along as that notebook's own."""
    km, kc = start_in_work(None)
    assert run_cell(kc, "student_answer = 42")["error"] is None
    stop_elastic_kernel(km, kc)

    km, kc = start_in_work(None)
    reply = control_request(kc, "elastichub_session_request", {"session_name": "work/hw2.ipynb"})["content"]
    assert reply["ok"] and not reply["moved"], reply
    assert run_cell(kc, "mine = 1")["error"] is None
    stop_elastic_kernel(km, kc)

    km, kc = start_in_work("work/hw2.ipynb")
    out = run_cell(kc, "print(sorted(k for k in ('student_answer', 'mine') if k in globals()))")
    assert out["stdout"].strip() == "['mine']", out
