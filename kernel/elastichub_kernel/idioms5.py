"""Notebook idioms of an eighth probe round (idioms4.reduce_for asks here
last; same shape: a reduce per type and its rebuild):

- a ``struct.Struct`` (``header = struct.Struct("<IHf")``, kept to pack and
  unpack records in later cells of a course on binary files or networks):
  made again from its format (a subclass's attributes too); pickle refused
  it ("cannot pickle '_struct.Struct' object").
"""

from __future__ import annotations

from . import idioms


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms4.reduce_for asks last)."""
    if idioms._is_class_of(kind, "_struct", "Struct"):  # struct.Struct's module is _struct
        return _struct
    return None


def _struct(s, user_ns):
    return _made_struct, (type(s), s.format, dict(getattr(s, "__dict__", None) or {}))


def _made_struct(kind, fmt, attrs):
    # By Struct's own __new__ and __init__: a subclass's __init__ may take other arguments.
    base = next(c for c in kind.__mro__ if c.__module__ == "_struct")
    s = base.__new__(kind, fmt)
    base.__init__(s, fmt)
    if attrs:
        s.__dict__.update(attrs)
    return s
