"""Names a user binds that look like Python's or IPython's are saved.

`__version__`, `__all__`, a `_` the user bound (`quotient, _ = divmod(...)`)
and `___` were in neither the migrated nor the not-restorable list, and
absent after the restore, without a word. IPython's own values of such
names (its module dunders, the output cache, the input history) are not.
"""

import pytest

pytestmark = pytest.mark.timeout(180)

CELLS = [
    "6 * 7",  # an output: IPython's _ and _1 (or whatever its number), not saved
    "__version__ = '2.1'\n__all__ = ['f']\nx: int = 5",
    "quotient, _ = divmod(17, 5)\n___ = 'three underscores'\n____ = 4",
]
PROBE = ("print({n: globals().get(n, 'MISSING') for n in ['__version__', '__all__', 'quotient', '_', '___', "
         "'____', 'x']}, __annotations__)")


def test_user_bound_dunders_and_underscores_are_saved(start_in_work, run_cell, control_request):
    km, kc = start_in_work("work/names.ipynb")
    for cell in CELLS:
        assert run_cell(kc, cell)["error"] is None, cell
    before = run_cell(kc, PROBE)
    assert "MISSING" not in before["stdout"], before
    reply = control_request(kc, "elastichub_checkpoint_request", {}).get("content")
    assert reply["ok"], reply
    assert set(reply["migrated"]) == {"__version__", "__all__", "__annotations__", "x", "quotient", "_", "___",
                                      "____"}, reply["migrated"]
    assert reply["not_restorable"] == []
    km.shutdown_kernel(now=True)

    km, kc = start_in_work("work/names.ipynb")
    after = run_cell(kc, PROBE)
    assert after["error"] is None and after["stdout"] == before["stdout"], (before, after)
    assert "restored 8 variable(s)" in after["stderr"], after
    # IPython keeps the user's `_` as the session did: a new output does not replace it.
    run_cell(kc, "1 + 1")
    assert run_cell(kc, "print(_, ___)")["stdout"].strip() == "2 three underscores"
