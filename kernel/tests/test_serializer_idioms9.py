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
