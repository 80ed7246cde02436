"""Notebook idioms of a fourteenth round: progress bars and widgets
(idioms8.reduce_for asks here last; same shape: a reduce per type and its
rebuild):

- an object of a library class whose ``__getattr__`` hands every name on
  to an attribute (a wrapper or proxy: tqdm's wrapper of the stream a
  progress bar writes to, which every ``tqdm`` bar holds): pickle asks the
  blank object being loaded for ``__setstate__``, its ``__getattr__`` asks
  for the wrapped attribute, which is not set yet, and so on until a
  RecursionError: the bar saved fine and failed at restore. Its state is
  set without asking the object anything, as pickle would set it.
"""

from __future__ import annotations

import copyreg

from . import idioms3

PROTOCOL = 5  # the serializer's


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms8.reduce_for asks last)."""
    if kind.__module__ != "__main__" and _delegates_attributes(kind):  # a notebook's: idioms._state_set_plainly
        return _state_past_getattr
    return None


# -- a library wrapper's __getattr__ -----------------------------------------------------------

def _delegates_attributes(kind: type) -> bool:
    """A __getattr__ of its own, and pickle's default making and state (no say of its own)."""
    return any("__getattr__" in vars(c) for c in kind.__mro__ if c is not object) \
        and kind.__reduce_ex__ is object.__reduce_ex__ and kind.__reduce__ is object.__reduce__ \
        and getattr(kind, "__getstate__", object.__getstate__) is object.__getstate__ \
        and not any(hasattr(kind, a) for a in ("__setstate__", "__getnewargs__", "__getnewargs_ex__"))


def _state_past_getattr(obj, user_ns):
    try:
        reduced = object.__reduce_ex__(obj, PROTOCOL)
    except Exception:
        return None  # the usual path says why
    # Only what pickle makes as `cls.__new__(cls)` and a state: a list or dict base's items are not ours to carry
    if not isinstance(reduced, tuple) or len(reduced) < 3 or reduced[0] is not copyreg.__newobj__ \
            or reduced[1] != (type(obj),) or reduced[2] is None or any(p is not None for p in reduced[3:]):
        return None
    return reduced[0], reduced[1], reduced[2], None, None, _set_state


def _set_state(obj, state):
    """pickle's setting of a default state (a dict, or a dict and the slots' values), never through __getattr__."""
    if isinstance(state, tuple):
        return idioms3.set_attrs_and_slots(obj, state)
    object.__getattribute__(obj, "__dict__").update(state)
    return obj
