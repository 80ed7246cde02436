"""A data-science course's notebook (seaborn, plotly, polars, statsmodels, xarray), round 15: checkpointed in one
real kernel and restored in the next."""

import json

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SESSION = "work/idioms15.ipynb"

LIBRARY_SETTINGS = r'''
import plotly.io as pio, plotly.graph_objects as go, polars as pl, xarray as xr
pio.templates.default = "plotly_dark+presentation"
pio.renderers.default = "json"
pl.Config.set_float_precision(2)
pl.Config.set_thousands_separator(",")
xr.set_options(keep_attrs=True, display_max_rows=5)
df = pl.DataFrame({"a": [1234.5678, 2.5]})
da = xr.DataArray([1.0, 2.0], dims="x", attrs={"units": "m"})
'''

SEEN = r'''
import json
print(json.dumps([pio.templates.default, pio.renderers.default, go.Figure().layout.template.layout.paper_bgcolor,
                  str(df), (da + 1).attrs, xr.get_options()["display_max_rows"]]))
'''


def test_plotly_polars_and_xarray_settings_move_with_the_notebook(moved, run_cell):
    """`pio.templates.default = "plotly_dark"`, `pl.Config.set_float_precision(2)`, `xr.set_options(keep_attrs=True)`
    live in the library: the moved notebook's next figure was white again, its tables printed in full precision and
    `da + 1` lost its units, without a word."""
    reply, before, kc = moved(SESSION, LIBRARY_SETTINGS, after=lambda kc: run_cell(kc, SEEN))
    assert reply["ok"] and before["error"] is None, (reply, before)
    expected = json.loads(before["stdout"])
    assert expected[0] == "plotly_dark+presentation" and expected[4] == {"units": "m"} and "1,234.57" in expected[3]
    out = run_cell(kc, SEEN)
    assert out["error"] is None, out
    assert json.loads(out["stdout"]) == expected, out
    assert "not set again" not in out["stderr"] and "not carried" not in out["stderr"], out["stderr"]


OWN_TEMPLATE = r'''
import plotly.io as pio, plotly.graph_objects as go
pio.templates["course"] = go.layout.Template(layout={"font": {"size": 21}})
pio.templates.default = "plotly_white+course"
'''


def test_a_plotly_template_the_notebook_registered_moves_with_it(moved, run_cell):
    """`pio.templates["course"] = go.layout.Template(...)` then `pio.templates.default = "plotly_white+course"`: the
    registration lives in plotly, so the moved notebook had no "course" template, its default was plotly's again and
    the restore said so in plotly's forty-line validation message."""
    reply, _, kc = moved(SESSION, OWN_TEMPLATE)
    assert reply["ok"], reply
    out = run_cell(kc, 'print(pio.templates.default, pio.templates["course"].layout.font.size, '
                       'go.Figure().layout.template.layout.font.size)')
    assert out["error"] is None and out["stdout"] == "plotly_white+course 21 21\n", out
    assert "not set again" not in out["stderr"], out["stderr"]
