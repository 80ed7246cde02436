"""Round 15 (a data-science course's widgets), through the serializer and the loader directly."""

import pytest

from elastichub_kernel import loader, serializer


def _load(dumped):
    ns = {"__name__": "__main__"}
    bindings = loader.Bindings(ns)
    values, failed, notes = loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), ns, bindings)
    return ns, failed, notes


def test_an_unhashable_widget_comes_back_connected_and_a_second_load_takes_its_id_over():
    """A widget class with an __eq__ of its own and so no hash (plotly's FigureWidget): noting it as restored
    failed after its comm was opened, so the restore said it came back without its connection to the page (a
    TypeError), and a live move's delta left the page bound to the pre-copy's copy."""
    ipywidgets = pytest.importorskip("ipywidgets")
    from ipywidgets.widgets.widget import _instances

    class Compared(ipywidgets.IntSlider):
        def __eq__(self, other):  # as plotly's figures compare: by their contents, which makes them unhashable
            return isinstance(other, Compared) and other.value == self.value

    slider = Compared(value=3)
    old_id = slider.model_id
    dumped = serializer.dump_namespace({"slider": slider}, ["slider"])
    assert dumped.failed == {}
    slider.close()  # the source kernel is gone
    ns, failed, notes = _load(dumped)
    precopy = ns["slider"]
    assert failed == {} and notes == {}, notes
    assert precopy.value == 3 and precopy.comm is not None and _instances[old_id] is precopy
    ns, failed, notes = _load(dumped)
    assert failed == {} and notes == {}, notes
    assert ns["slider"].model_id == old_id and _instances[old_id] is ns["slider"] and precopy.comm is None


class Recorder:
    """A notebook's callback: notes what it is called with."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(args)


def test_a_plotly_figure_widget_comes_back_whole_with_its_callbacks():
    """`fw = go.FigureWidget(...)`, `fw.data[0].on_click(f)`: its traces, pickled by plotly as their JSON, came back
    orphaned (`fw.data[0].y = ...` no longer reached the figure or the page) and without the notebook's callbacks,
    without a word."""
    go = pytest.importorskip("plotly.graph_objects")
    pytest.importorskip("anywidget")  # plotly's FigureWidget needs it
    from ipywidgets.widgets.widget import _instances

    seen = Recorder()
    fw = go.FigureWidget(go.Figure(go.Bar(x=[1, 2], y=[3, 4])))
    fw.data[0].on_click(seen)
    fw.layout.on_change(seen, "title")
    old_id = fw.model_id
    dumped = serializer.dump_namespace({"fw": fw, "seen": seen}, ["fw", "seen"])
    assert dumped.failed == {}
    fw.close()  # the source kernel is gone
    ns, failed, notes = _load(dumped)
    assert failed == {} and notes == {}, notes
    copy = ns["fw"]
    assert [c for c in type(copy).__mro__ if c.__name__ == "FigureWidget"][-1] is go.FigureWidget  # not a copy
    assert isinstance(copy, go.FigureWidget) and copy.model_id == old_id and _instances[old_id] is copy
    assert copy.data[0]._parent is copy and list(copy.data[0].y) == [3, 4]
    copy.data[0].y = (7, 8)
    assert list(copy.to_dict()["data"][0]["y"]) == [7, 8]  # the edit reaches the figure (and so the page)
    assert copy.data[0]._click_callbacks == [ns["seen"]]
    copy.layout.title = "after the move"
    calls = ns["seen"].calls
    assert len(calls) == 1 and calls[0][0] is copy.layout  # the notebook's on_change, carried, on the new layout


def test_a_library_option_a_library_refuses_is_named_in_one_line():
    """A saved option this node's library refuses (a plotly default naming a template it lacks): the restore's
    line carried plotly's forty-line validation message into the notebook."""
    pytest.importorskip("plotly.io")
    from elastichub_kernel import libstate

    problems = libstate.restore({"library_options": {"plotly.io": {"set": {"templates.default": "no_such_look"}}}})
    assert len(problems) == 1 and "\n" not in problems[0] and len(problems[0]) < 400, problems
    assert problems[0].startswith("the plotly.io option templates.default = 'no_such_look' was not set again "
                                  "(ValueError: "), problems


def test_attributes_set_on_a_pandas_frame_are_carried_or_named():
    """patsy's `X.design_info` on the frames `dmatrices` returns, a notebook's `df.source = "survey.csv"`: pandas
    pickles a frame's data, `attrs` and its class's _metadata only, so they came back missing, without a word."""
    import threading

    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1.0, 2.0]})
    object.__setattr__(frame, "source", "survey.csv")  # as patsy sets its design_info (pandas warns on df.x = ...)
    object.__setattr__(frame, "guard", threading.Lock())  # as patsy's DesignInfo, it refuses to be pickled
    series = pd.Series([3, 4], name="s")
    object.__setattr__(series, "units", "cm")
    dumped = serializer.dump_namespace({"X": frame, "s": series}, ["X", "s"])
    assert dumped.failed == {}
    ns, failed, notes = _load(dumped)
    assert failed == {}
    assert ns["X"].equals(frame) and ns["X"].source == "survey.csv" and not hasattr(ns["X"], "guard")
    assert ns["s"].equals(series) and ns["s"].units == "cm" and "s" not in notes
    assert "guard" in notes["X"] and "_thread.lock" in notes["X"] and "cannot be saved" in notes["X"], notes


def test_a_part_of_a_plotly_figure_kept_in_a_variable_is_still_the_figures():
    """`bar = fig.data[0]`, `lay = fig.layout`, `note = fig.layout.annotations[0]`: plotly pickles each as a copy of
    its JSON, so after the move `bar.marker.color = "red"` no longer changed `fig`, without a word."""
    go = pytest.importorskip("plotly.graph_objects")

    fig = go.Figure(go.Bar(x=[1, 2], y=[3, 4]))
    fig.update_layout(annotations=[{"text": "peak"}], xaxis_title="day")
    parts = {"bar": fig.data[0], "lay": fig.layout, "note": fig.layout.annotations[0], "title": fig.layout.xaxis.title}
    alone = go.Scatter(y=[1])  # a part of no figure: a copy, as plotly makes it
    dumped = serializer.dump_namespace({"fig": fig, **parts, "alone": alone}, ["fig", *parts, "alone"])
    assert dumped.failed == {}
    ns, failed, notes = _load(dumped)
    assert failed == {} and notes == {}, notes
    copy = ns["fig"]
    assert ns["bar"] is copy.data[0] and ns["lay"] is copy.layout and ns["note"] is copy.layout.annotations[0]
    assert ns["title"] is copy.layout.xaxis.title and ns["title"].text == "day"
    ns["bar"].marker.color = "red"
    assert copy.to_dict()["data"][0]["marker"]["color"] == "red"
    assert list(ns["alone"].y) == [1] and ns["alone"].to_plotly_json() == alone.to_plotly_json()


def test_a_trace_of_a_figure_widget_kept_in_a_variable_is_still_the_widgets():
    go = pytest.importorskip("plotly.graph_objects")
    pytest.importorskip("anywidget")

    fw = go.FigureWidget(go.Figure(go.Bar(x=[1, 2], y=[3, 4])))
    dumped = serializer.dump_namespace({"fw": fw, "bar": fw.data[0]}, ["fw", "bar"])
    fw.close()
    ns, failed, notes = _load(dumped)
    assert failed == {} and notes == {}, notes
    assert ns["bar"] is ns["fw"].data[0]


def test_a_statsmodels_formula_result_moves_without_a_note_of_patsys_frames():
    """statsmodels keeps patsy's frames (each with a design_info patsy will not pickle) inside a formula model and
    makes its own design info again when it loads: naming theirs told the student of a loss that is not one."""
    pd = pytest.importorskip("pandas")
    smf = pytest.importorskip("statsmodels.formula.api")
    x = [float(i) for i in range(24)]
    offsets = {"a": 0.0, "b": 3.0, "c": -2.0}
    data = pd.DataFrame({"x": x, "g": list("abc" * 8)})
    data["y"] = [2 * v + offsets[g] + (0.3 if i % 2 else -0.4) for i, (v, g) in enumerate(zip(x, data.g))]
    mixed = smf.mixedlm("y ~ x", data, groups=data["g"]).fit()
    dumped = serializer.dump_namespace({"mixed": mixed}, ["mixed"])
    assert dumped.failed == {}
    ns, failed, notes = _load(dumped)
    assert failed == {} and notes == {}, notes
    assert ns["mixed"].params.round(6).tolist() == mixed.params.round(6).tolist()
    assert ns["mixed"].predict(data.head(2)).round(6).tolist() == mixed.predict(data.head(2)).round(6).tolist()
