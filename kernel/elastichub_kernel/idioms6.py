"""Notebook idioms of a tenth round: objects that were named 'not
restorable' though their whole state can be read (idioms5.reduce_for asks
here last; same shape: a reduce per type and its rebuild):

- a ``csv.reader`` (and so a ``csv.DictReader``) part-way through its file:
  its source (the file, opened again where it was, idioms.py), dialect and
  ``line_num``; a ``csv.writer`` (``csv.DictWriter``): its file's ``write``
  and dialect. Between rows neither holds anything else. pickle refused
  them ("cannot pickle '_csv.reader' object").
"""

from __future__ import annotations

import collections
import gc

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: gc.get_referents lists such an object's type first
_DIALECT = ("delimiter", "doublequote", "escapechar", "lineterminator", "quotechar", "quoting", "skipinitialspace",
            "strict")


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms5.reduce_for asks last)."""
    name = (kind.__module__, kind.__name__)
    if name == ("_csv", "reader"):
        return _csv_reader
    if name == ("_csv", "writer"):
        return _csv_writer
    return None


def _referents(obj) -> list:
    """What `obj` holds, in its C type's traverse order, less its own type."""
    held = gc.get_referents(obj)
    return held[1:] if held and held[0] is type(obj) and type(obj).__flags__ & _HEAP_TYPE else held


class _Lead:
    """An iterator giving `lead`'s items, then `it`'s: a rebuilt iterator's
    place (the lines a csv reader had read) is given again
    without reading `it`. Once they are given it pickles as `it` itself."""

    def __init__(self, lead, it):
        self.lead, self.it = collections.deque(lead), it

    def __iter__(self):
        return self

    def __next__(self):
        return self.lead.popleft() if self.lead else next(self.it)

    def __reduce__(self):
        return (_Lead, (list(self.lead), self.it)) if self.lead else (_same, (self.it,))


def _same(obj):
    return obj


# -- csv ------------------------------------------------------------------------------------

def _dialect(d) -> dict:
    return {key: getattr(d, key) for key in _DIALECT}


def _csv_reader(reader, user_ns):
    held = _referents(reader)  # dialect, input iterator, fields being read (none between rows)
    if len(held) < 2 or held[0] is not reader.dialect:
        return None
    source = held[1]
    if isinstance(source, _Lead) and not source.lead:
        source = source.it
    return _made_csv_reader, (source, _dialect(reader.dialect), reader.line_num)


def _made_csv_reader(source, dialect, line_num):
    import csv

    # line_num cannot be set: the reader counts it again over as many empty lines, read before its source's
    reader = csv.reader(_Lead([""] * line_num, source) if line_num else source, **dialect)
    for _ in range(line_num):
        next(reader)
    return reader


def _csv_writer(writer, user_ns):
    held = _referents(writer)  # dialect, its file's write
    if len(held) < 2 or held[0] is not writer.dialect or not callable(held[1]):
        return None
    return _made_csv_writer, (held[1], _dialect(writer.dialect))


def _made_csv_writer(write, dialect):
    import csv
    import types

    return csv.writer(types.SimpleNamespace(write=write), **dialect)  # a writer keeps only its file's write