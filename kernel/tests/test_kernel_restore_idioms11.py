"""The IPython session around a notebook's values (round 13), checkpointed
in one real kernel and restored in the next."""

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms11.ipynb"


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
    assert __import__("json").loads(line[len("FACTS"):]) == [
        "np.float64(2.5)", "0.30000000000000004", "inf", "np.float32(0.33333334)", "np.int64(42)", "True",
        "True", "np.int64(42)", "np.float32(0.33333334)"]
    assert run_cell.facts(kc, "import json\nprint('FACTS' + json.dumps([repr(_2 * 2), type(_5).__name__]))") == [
        "np.float64(5.0)", "float32"]
