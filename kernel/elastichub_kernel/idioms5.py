"""Notebook idioms of an eighth probe round (idioms4.reduce_for asks here
last; same shape: a reduce per type and its rebuild):

- a ``struct.Struct`` (``header = struct.Struct("<IHf")``, kept to pack and
  unpack records in later cells of a course on binary files or networks):
  made again from its format (a subclass's attributes too); pickle refused
  it ("cannot pickle '_struct.Struct' object");
- a ``random.SystemRandom`` (``secrets.SystemRandom()``, a course's dice or
  password examples): it draws from the operating system and has no state
  to save, so it is made again with its attributes (the ``gauss()`` value it
  keeps for the next call, a subclass's own); pickle refused it ("System
  entropy source does not have state").
"""

from __future__ import annotations

from . import idioms


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms4.reduce_for asks last)."""
    if idioms._is_class_of(kind, "_struct", "Struct"):  # struct.Struct's module is _struct
        return _struct
    if idioms._is_class_of(kind, "random", "SystemRandom"):
        return _system_random
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


def _system_random(r, user_ns):
    # Random.__reduce__ asks getstate(), which SystemRandom refuses: its draws are the OS's, its state the attributes.
    return _made_system_random, (type(r), dict(r.__dict__))


def _made_system_random(kind, attrs):
    r = kind.__new__(kind)
    r.__dict__.update(attrs)
    return r
