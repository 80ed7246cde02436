"""A student's file named like a module the kernel uses never stands in for it.

`queue.py` in a data-structures course's folder, `secrets.py` holding an API
key: the kernel's start (ipykernel's imports) and its own late imports
(cloudpickle, xxhash, pickletools at the first checkpoint) must neither run
them nor fail because of them. Before, `queue.py` stopped the kernel at
start, and `secrets.py` failed every checkpoint (the next start was empty).
"""

import pytest

pytestmark = pytest.mark.timeout(180)

SHADOWS = ("queue", "random", "secrets", "pickletools", "cloudpickle", "xxhash")


def _write_shadows(work):
    for name in SHADOWS:
        marker = work / f"{name}.ran"
        (work / f"{name}.py").write_text(f"MINE = True\nopen({str(marker)!r}, 'w').close()\n")


def _ran(work):
    return sorted(p.stem for p in work.glob("*.ran"))


def test_files_named_like_the_kernels_modules_are_not_run(start_in_work, stop_elastic_kernel, run_cell,
                                                          control_request):
    work = start_in_work.work
    _write_shadows(work)
    km, kc = start_in_work("work/shadows.ipynb")
    out = run_cell(kc, "grades = {'ada': 11}\ndef bump(n):\n    return n + 1")
    assert out["error"] is None
    reply = control_request(kc, "elastichub_checkpoint_request", {}).get("content")
    assert reply["ok"], reply
    assert set(reply["migrated"]) == {"grades", "bump"}
    out = run_cell(kc, "%elastic_checkpoint")  # the magic, on the cells' thread
    assert out["error"] is None and "checkpoint written" in out["stdout"], out
    live = control_request(kc, "elastichub_live_request", {"phase": "precopy"}).get("content")  # xxhash
    assert live["ok"], live
    assert control_request(kc, "elastichub_live_request", {"phase": "thaw"}).get("content")["ok"]
    assert _ran(work) == []
    stop_elastic_kernel(km, kc)

    km, kc = start_in_work("work/shadows.ipynb")
    out = run_cell(kc, "print(grades, bump(1))")
    assert out["error"] is None and out["stdout"].strip() == "{'ada': 11} 2", out
    assert _ran(work) == []


def test_a_users_module_under_a_kernel_dependencys_name_stays_theirs(start_in_work, run_cell, control_request):
    """The user imported their own `cloudpickle.py` before the first
    checkpoint: the kernel pickles with its own, and the user's stays
    `cloudpickle` for the notebook."""
    work = start_in_work.work
    _write_shadows(work)
    km, kc = start_in_work("work/own-cloudpickle.ipynb")
    out = run_cell(kc, "import cloudpickle\nprint(cloudpickle.MINE)\ndef triple(n):\n    return 3 * n")
    assert out["error"] is None and out["stdout"].strip() == "True", out
    reply = control_request(kc, "elastichub_checkpoint_request", {}).get("content")
    assert reply["ok"], reply
    assert "triple" in reply["migrated"]
    out = run_cell(kc, "import sys\nprint(cloudpickle.MINE, sys.modules['cloudpickle'] is cloudpickle)")
    assert out["stdout"].strip() == "True True", out
    km.shutdown_kernel(now=True)

    km, kc = start_in_work("work/own-cloudpickle.ipynb")
    out = run_cell(kc, "print(triple(2), cloudpickle.MINE)")
    assert out["error"] is None and out["stdout"].strip() == "6 True", out
