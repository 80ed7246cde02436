"""The idioms of idioms7.py, through the serializer and the loader directly."""

import contextvars
import decimal

import numpy as np

from elastichub_kernel import loader, serializer


def _round_trip(ns):
    dumped = serializer.dump_namespace(ns, list(ns), user_ns=ns)
    assert dumped.failed == {}
    return loader.load_namespace(dumped.stream, dumped.records, list(dumped.buffers), {"__name__": "__main__"})


def test_what_cannot_be_read_back_is_named_in_plain_words_with_what_to_do():
    """An nditer part-way, a decimal.localcontext() kept in a variable and a
    ContextVar's Token were named only by pickle's "cannot pickle 'nditer'
    object": nothing said why, nor what to do."""
    it = np.nditer(np.arange(6))
    next(it)
    request = contextvars.ContextVar("request")
    token = request.set("r-1")
    ns = {"it": it, "ctx": decimal.localcontext(prec=5), "token": token, "kept": decimal.Context(prec=5)}
    failed = serializer.dump_namespace(ns, list(ns)).failed
    assert set(failed) == {"it", "ctx", "token"}  # a Context itself is carried
    assert "a numpy.nditer at iterindex 0" in failed["it"] and "make it again after restore" in failed["it"]
    assert "decimal.localcontext() in a variable" in failed["ctx"] and "keep a decimal.Context" in failed["ctx"]
    assert "a Token of request.set()" in failed["token"] and "request.set(old value)" in failed["token"]
    for why in failed.values():
        assert why.endswith("object))")  # the advice is not cut off by the length limit

