"""Notebook idioms of an eleventh round (idioms6.reduce_for asks here
before its library-state check; same shape: a reduce per type and its
rebuild):

- objects whose state cannot be read back are named in plain words with
  what to do, not pickle's "cannot pickle ... object": a ``numpy.nditer``
  part-way (its flags and buffers), a ``decimal.localcontext()`` kept in a
  variable (its settings), a ``contextvars.Token`` (it resets only in the
  context it was made in, the old kernel's).
"""

from __future__ import annotations

from . import idioms6


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms6.reduce_for asks)."""
    name = (kind.__module__, kind.__name__)
    if name == ("numpy", "nditer"):  # numpy is never imported here
        return _nditer
    if name == ("decimal", "ContextManager"):
        return _decimal_context_manager
    if name == ("_contextvars", "Token"):
        return _context_token
    return None


# -- named with what to do ---------------------------------------------------------------------

def _nditer(it, user_ns):
    place = "finished" if it.finished else f"at iterindex {it.iterindex}"
    raise idioms6.refused(it, f"a numpy.nditer {place} (its flags and buffers cannot be read back): make it "
                          "again after restore")


def _decimal_context_manager(manager, user_ns):
    raise idioms6.refused(manager, "a decimal.localcontext() in a variable (its settings cannot be read back): "
                          "keep a decimal.Context, carried, and use it in `with localcontext(ctx)`")


def _context_token(token, user_ns):
    name = token.var.name
    raise idioms6.refused(token, f"a Token of {name}.set() (reset works only in the old kernel's context): "
                          f"{name}'s value is carried; undo with {name}.set(old value)")
