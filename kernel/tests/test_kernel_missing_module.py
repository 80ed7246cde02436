"""A notebook used a module this kernel cannot import when it restores (a
package missing from the new image, a helper directory gone): the variables
built with it are named, and every other variable comes back identical,
however many there are and whatever they share. Before the loader read the
records in step, a list of repeated strings came back with a wrong element
and no word said."""

import shutil

import pytest

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

SESSION = "work/uses_helper.ipynb"


def test_what_a_missing_module_built_is_named_and_the_rest_is_identical(tmp_path, start_elastic_kernel,
                                                                       stop_elastic_kernel, run_cell):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "course_helper.py").write_text("def triple(x):\n    return 3 * x\nclass Box:\n    pass\n")
    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION)
    cells = [
        f"import sys; sys.path.insert(0, {str(lib)!r})",
        "import course_helper\nfrom course_helper import triple, Box\nbox = Box(); box.items = ['x', 'y']\n"
        "tools = {'helper': course_helper, 'n': 1}",
        "words = [f's{i}' for i in range(50)]\nletters = ['x', 'y', 'z', 'w', 'v', 'x', 'y']",
        "import numpy as np, pandas as pd\narr = np.arange(12.0).reshape(3, 4)\n"
        "df = pd.DataFrame({'name': ['x', 'y', 'x'], 'v': [1, 2, 3]})\nrows = {'x': letters, 'first': words[0]}",
    ]
    for cell in cells:
        assert run_cell(kc, cell)["error"] is None, cell
    digest = "print(repr((words, letters, arr.tolist(), df.to_dict(), rows, rows['x'] is letters)))"
    before = run_cell(kc, digest)["stdout"]
    stop_elastic_kernel(km, kc)
    shutil.rmtree(lib)

    km, kc = start_elastic_kernel(tmp_path / "ckpt", session_name=SESSION)
    out = run_cell(kc, digest)
    assert out["error"] is None and out["stdout"] == before
    report = out["stderr"]
    for name in ("course_helper", "triple", "Box", "box", "tools"):
        assert f"  - {name}: " in report, report
    assert "No module named 'course_helper'" in report
    for name in ("words", "letters", "arr", "df", "rows"):
        assert f"  - {name}: " not in report, report
