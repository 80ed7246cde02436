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
