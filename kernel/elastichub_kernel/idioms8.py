"""Notebook idioms of a twelfth round (idioms7.reduce_for asks here last;
same shape: a reduce per type and its rebuild):

- an ``argparse`` parser, group or action holding one of argparse's string
  constants (``SUPPRESS``: the help action's default, a hidden option's
  help, ``argument_default=SUPPRESS``): argparse tests them by identity
  (``default is not SUPPRESS``), and pickle gave back an equal string of its
  own, so the restored parser's ``parse_args`` put ``help='==SUPPRESS=='``
  in every Namespace and printed hidden options in its help. They are saved
  by name and are argparse's own again.
"""

from __future__ import annotations

import importlib
import sys

# Libraries that test their own string constants by identity: their objects' attributes holding one are saved
# by the constant's name.
_SENTINEL_MODULES = ("argparse",)


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms7.reduce_for asks last)."""
    if any(c.__module__ in _SENTINEL_MODULES for c in kind.__mro__) and _plain_state(kind):
        return _with_sentinels
    return None


def _plain_state(kind: type) -> bool:
    """Whether pickle saves `kind`'s objects as their class and instance dict (so a reduce of its dict may
    stand for it)."""
    return kind.__reduce_ex__ is object.__reduce_ex__ and kind.__reduce__ is object.__reduce__ \
        and getattr(kind, "__getstate__", object.__getstate__) is object.__getstate__ \
        and getattr(kind, "__setstate__", None) is None and "__slots__" not in vars(kind)


# -- a library's string constants tested by identity -------------------------------------------

def _with_sentinels(obj, user_ns):
    state = getattr(obj, "__dict__", None)
    if not isinstance(state, dict):
        return None
    owner = next(c.__module__ for c in type(obj).__mro__ if c.__module__ in _SENTINEL_MODULES)
    constants = _constants(owner)
    marked = {key: constants[id(value)] for key, value in state.items() if id(value) in constants}
    if not marked:
        return None  # pickled as usual
    plain = {key: value for key, value in state.items() if key not in marked}
    return _bare, (type(obj),), (plain, owner, marked), None, None, _set_with_sentinels


def _constants(module: str) -> dict:
    """{id(constant): name} of `module`'s own string constants (SUPPRESS, OPTIONAL...)."""
    namespace = vars(sys.modules[module])
    return {id(value): name for name, value in namespace.items() if type(value) is str and name.isupper()}


def _bare(kind):
    return kind.__new__(kind)


def _set_with_sentinels(obj, state):
    plain, owner, marked = state
    module = importlib.import_module(owner)  # imported already: the class's own load did
    obj.__dict__.update(plain)
    obj.__dict__.update({key: getattr(module, name) for key, name in marked.items()})
    return obj

