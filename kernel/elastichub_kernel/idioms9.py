"""Notebook idioms of a fourteenth round: progress bars and widgets
(idioms8.reduce_for asks here last; same shape: a reduce per type and its
rebuild):

- an object of a library class whose ``__getattr__`` hands every name on
  to an attribute (a wrapper or proxy: tqdm's wrapper of the stream a
  progress bar writes to, which every ``tqdm`` bar holds): pickle asks the
  blank object being loaded for ``__setstate__``, its ``__getattr__`` asks
  for the wrapped attribute, which is not set yet, and so on until a
  RecursionError: the bar saved fine and failed at restore. Its state is
  set without asking the object anything, as pickle would set it;
- an ipywidgets widget (a slider, a dropdown, a button, an ``interactive``
  of a notebook function, a ``jslink``, an ``Output``, a tqdm notebook
  bar's row): its connection to the page (a comm) cannot move, so every
  variable holding one, and every list or dict, was "not restored". It
  comes back with its values and the callbacks the notebook attached
  (``observe``, ``on_click``, a ``link``; traitlets' own pickling drops
  them) and a new comm under its old id: the page's widget manager asks
  the new kernel for its widgets when it connects. A load pass that is
  undone closes the comms it opened;
- any other object holding a comm is named in plain words.
"""

from __future__ import annotations

import copyreg
import sys

from . import idioms, idioms2, idioms3, idioms6

PROTOCOL = 5  # the serializer's


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms8.reduce_for asks last)."""
    if idioms._is_class_of(kind, "ipywidgets.widgets.widget", "Widget"):  # never imported here
        return _widget
    if idioms._is_class_of(kind, "comm.base_comm", "BaseComm"):
        return _comm
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


# -- widgets and comms ---------------------------------------------------------------------------

def _comm(comm, user_ns):
    raise idioms6.refused(comm, "a connection to the notebook's page (a Jupyter comm, which widgets and interactive "
                          "plots use) cannot move with the kernel: run the cell that made it again")


def _event_handler(handler) -> bool:
    """traitlets' own handlers (@observe, @validate of the class): the class sets them on every new object."""
    return idioms._is_class_of(type(handler), "traitlets.traitlets", "EventHandler")


def _widget(widget, user_ns):
    attrs = dict(object.__getattribute__(widget, "__dict__"))
    values = dict(attrs.pop("_trait_values", {}))
    opened = values.pop("comm", None) is not None  # a closed widget stays closed
    notifiers = attrs.pop("_trait_notifiers", {})
    for fresh in ("_trait_validators", "_cross_validation_lock"):  # only the class's (@validate): made anew
        attrs.pop(fresh, None)
    observers = [(name, kind, handler) for name, by_kind in notifiers.items() for kind, handlers in by_kind.items()
                 for handler in handlers if not _event_handler(handler)]
    return _new_widget, (type(widget),), (attrs, values, observers, opened), None, None, _set_widget_state


def _new_widget(cls):
    return cls.__new__(cls)  # traitlets' setup: default values and the class's own handlers, no comm yet


def _set_widget_state(widget, state):
    attrs, values, observers, opened = state
    own = object.__getattribute__(widget, "__dict__")
    own.update(attrs)
    own["_trait_values"].update(values)
    for name, kind, handler in observers:
        widget.observe(handler, names=name, type=kind)
    if opened:
        live = sys.modules["ipywidgets.widgets.widget"]._instances
        if widget._model_id in live:  # restored again into the kernel that has it (%elastic_restore): a new id
            widget._model_id = None
        widget.open()
        if idioms2.armed is not None:
            idioms2.armed.append(_Closing(widget))
    return widget


class _Closing:
    """A widget a load pass opened: closed if the pass is undone (idioms2.disarm calls `detach`)."""

    def __init__(self, widget):
        self.widget = widget

    def detach(self):
        self.widget.close()
