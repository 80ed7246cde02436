"""The idioms of idioms9.py, through the serializer and the loader directly."""

from elastichub_kernel import loader, serializer


def _round_trip(ns):
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert dumped.failed == {}
    return loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {"__name__": "__main__"})


class Wrapper:
    """A library's wrapper (this module is not the notebook): every other name is the wrapped object's."""

    def __init__(self, wrapped):
        object.__setattr__(self, "_wrapped", wrapped)
        object.__setattr__(self, "calls", 0)

    def __getattr__(self, name):
        return getattr(self._wrapped, name)


class SlottedWrapper:
    __slots__ = ("_inner", "label")

    def __init__(self, inner, label):
        self._inner, self.label = inner, label

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_a_library_wrapper_that_hands_every_name_on_comes_back():
    """pickle asked the blank object for __setstate__; its __getattr__ asked for the wrapped attribute, not set
    yet, and so on: a RecursionError at restore, for an object that saved fine (every tqdm bar holds one)."""
    items = [3, 1, 2]
    values, failed, notes = _round_trip({"w": Wrapper(items), "s": SlottedWrapper({"a": 1}, "x"), "items": items})
    assert failed == {} and notes == {}
    w, s = values["w"], values["s"]
    assert type(w) is Wrapper and w._wrapped is values["items"] and w.calls == 0 and w.count(1) == 1
    assert type(s) is SlottedWrapper and s.label == "x" and s.get("a") == 1


SEEN = []


def _note_value(change):
    SEEN.append(change["new"])


def test_a_widget_loaded_again_beside_itself_gets_an_id_of_its_own():
    """Restored into the process that still has it (%elastic_restore), a widget under the same id would take the
    comm of the live one: the page's messages went to the copy."""
    import ipywidgets

    slider = ipywidgets.IntSlider(value=4)
    slider.observe(_note_value, names="value")
    values, failed, notes = _round_trip({"slider": slider, "sliders": [slider, ipywidgets.IntSlider(value=1)]})
    assert failed == {} and notes == {}
    copy = values["slider"]
    assert copy is values["sliders"][0] and copy.value == 4 and values["sliders"][1].value == 1
    assert copy.model_id != slider.model_id and copy.comm is not None
    from ipywidgets.widgets.widget import _instances
    assert _instances[slider.model_id] is slider and _instances[copy.model_id] is copy
    copy.value = 6
    assert SEEN == [6] and slider.value == 4  # the notebook's callback, carried; the original untouched


def test_a_load_pass_that_is_undone_closes_the_widgets_it_opened():
    import ipywidgets

    slider = ipywidgets.IntSlider(value=2)
    dumped = serializer.dump_namespace({"slider": slider}, ["slider"])
    ns = {"__name__": "__main__"}
    bindings = loader.Bindings(ns)
    loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), ns, bindings)
    restored = ns["slider"]
    assert restored is not slider and restored.comm is not None
    bindings.undo()  # a refused live apply
    assert "slider" not in ns and restored.comm is None and slider.comm is not None


def test_a_second_load_of_the_same_widgets_takes_their_ids_over():
    """A live move restores the pre-copy, then loads its delta (the whole state again) over it: the delta's
    widgets got new ids, and the page's widgets (the old ids) stayed bound to the pre-copy's copies, which no
    variable holds."""
    import ipywidgets
    from ipywidgets.widgets.widget import _instances

    slider = ipywidgets.IntSlider(value=3)
    old_id = slider.model_id
    dumped = serializer.dump_namespace({"slider": slider}, ["slider"])
    slider.close()  # the source kernel is gone

    def load():
        ns = {"__name__": "__main__"}
        bindings = loader.Bindings(ns)
        loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), ns, bindings)
        return ns["slider"], bindings

    precopy, _ = load()
    assert precopy.model_id == old_id and _instances[old_id] is precopy
    delta, bindings = load()
    assert delta.model_id == old_id and _instances[old_id] is delta and precopy.comm is None
    bindings.undo()  # a refused apply: the pre-copy's widget is the page's again
    assert delta.comm is None and precopy.comm is not None and _instances[old_id] is precopy
    assert "application/vnd.jupyter.widget-view+json" in precopy._repr_mimebundle_()  # displayed as a widget
