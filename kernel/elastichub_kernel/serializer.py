"""Serialize a notebook namespace: pickle protocol 5, buffers out of band.

- Array and frame data leave the pickler as ``PickleBuffer`` views
  (``buffer_callback``): they are written to disk straight from the user's
  memory and read back into writable buffers, never copied in between.
- Functions, classes, lambdas and closures defined in the notebook
  (``__module__ == "__main__"``) are pickled by value (cloudpickle); a
  function whose globals are the notebook namespace is rebuilt with the
  *live* namespace of the restoring kernel as its globals, so it sees later
  changes to global variables exactly as before the checkpoint.
- Every variable is one record of one pickler whose memo spans all records:
  ``b = a`` stays ``b is a`` after restore, yet a record that fails to load
  costs only that variable (and those sharing objects with it), by name.

Importing this module imports cloudpickle (cheap, no user library); the
kernel imports it only when a checkpoint or a restore runs.
"""

from __future__ import annotations

import io
import pickle
import types
from dataclasses import dataclass, field

import cloudpickle

PROTOCOL = 5

# The namespace that notebook functions get as __globals__ during a load.
_restore_target: dict | None = None


def _target_namespace() -> dict:
    if _restore_target is None:
        raise pickle.UnpicklingError("notebook function loaded outside a namespace restore")
    return _restore_target


def _make_notebook_function(code, name, ncells):
    closure = None if ncells is None else tuple(types.CellType() for _ in range(ncells))
    return types.FunctionType(code, _target_namespace(), name, None, closure)


def _set_notebook_function_state(func, state):
    attrs, slots, cells = state
    func.__dict__.update(attrs)
    for cell, (filled, value) in zip(func.__closure__ or (), cells):
        if filled:
            cell.cell_contents = value
    for key, value in slots.items():
        setattr(func, key, value)
    return func


class NamespacePickler(cloudpickle.Pickler):
    def __init__(self, file, user_ns: dict, buffer_callback):
        super().__init__(file, protocol=PROTOCOL, buffer_callback=buffer_callback)
        self._user_ns = user_ns

    def _dynamic_function_reduce(self, func):
        if func.__globals__ is not self._user_ns:
            return super()._dynamic_function_reduce(func)
        # Globals are not pickled: names resolve in the live namespace, as
        # they did before (and an unpicklable global does not sink f).
        cells = []
        for cell in func.__closure__ or ():
            try:
                cells.append((True, cell.cell_contents))
            except ValueError:  # empty cell
                cells.append((False, None))
        slots = {
            "__qualname__": func.__qualname__,
            "__module__": func.__module__,
            "__doc__": func.__doc__,
            "__defaults__": func.__defaults__,
            "__kwdefaults__": func.__kwdefaults__,
            "__annotations__": func.__annotations__,
        }
        ncells = None if func.__closure__ is None else len(func.__closure__)
        return (
            _make_notebook_function,
            (func.__code__, func.__name__, ncells),
            (dict(func.__dict__), slots, cells),
            None,
            None,
            _set_notebook_function_state,
        )


@dataclass
class Record:
    name: str
    start: int        # byte range in the record stream
    end: int
    buf_start: int    # range in the out-of-band buffer list
    buf_end: int


@dataclass
class DumpResult:
    stream: memoryview
    records: list
    buffers: list                                 # contiguous memoryviews
    failed: dict = field(default_factory=dict)    # name -> reason


class _RecordFailed(Exception):
    def __init__(self, name, exc):
        self.name = name
        self.exc = exc


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def dump_namespace(ns: dict, names: list, user_ns: dict | None = None) -> DumpResult:
    """Pickle ``ns[name]`` for each name (``user_ns``: the notebook globals,
    default ``ns``); a name that fails is reported and
    left out, and the rest are pickled again (memo shared across records must
    not reference a half-written record). The save never stops part-way."""
    failed: dict = {}
    while True:
        try:
            result = _dump_once(ns, [n for n in names if n not in failed], ns if user_ns is None else user_ns)
        except _RecordFailed as bad:
            failed[bad.name] = "cannot be pickled (" + describe_error(bad.exc) + ")"
            continue
        result.failed = failed
        return result


def _dump_once(ns: dict, names: list, user_ns: dict) -> DumpResult:
    out = io.BytesIO()
    buffers: list = []

    def keep_buffer(pb: pickle.PickleBuffer):
        try:
            buffers.append(pb.raw())
        except BufferError:  # non-contiguous: let pickle copy it in band
            return True
        return False

    pickler = NamespacePickler(out, user_ns, keep_buffer)
    records = []
    for name in names:
        start, first = out.tell(), len(buffers)
        try:
            pickler.dump(ns[name])
        except Exception as exc:
            raise _RecordFailed(name, exc) from None
        records.append(Record(name, start, out.tell(), first, len(buffers)))
    # getbuffer(): a view, not a copy, of what may be a large in-band stream
    return DumpResult(out.getbuffer(), records, buffers)


class _BufferCursor:
    """Out-of-band buffers for the unpickler, positioned per record."""

    def __init__(self, buffers):
        self.buffers = buffers
        self.pos = 0
        self.end = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.pos >= self.end:
            raise pickle.UnpicklingError("record asks for more buffers than it wrote")
        buf = self.buffers[self.pos]
        self.pos += 1
        return buf


def load_namespace(stream, records: list, buffers: list, target_ns: dict):
    """Unpickle each record; returns (values by name, failures by name).

    Notebook functions get ``target_ns`` as globals. A record that fails
    (a library missing here, a class that changed) is reported by name. The
    unpickler's state after an error is not trustworthy (its memo may hold
    half-built objects), so loading starts over without the failed record;
    records sharing objects with it then fail too, by name, never half-built.
    """
    failed: dict = {}
    while True:
        values, bad = _load_pass(stream, records, buffers, target_ns, failed)
        if bad is None:
            return values, failed
        failed[bad[0]] = bad[1]


def _load_pass(stream, records, buffers, target_ns, skip):
    global _restore_target
    source = io.BytesIO(stream)
    cursor = _BufferCursor(buffers)
    unpickler = pickle.Unpickler(source, buffers=cursor)
    values = {}
    _restore_target = target_ns
    try:
        for rec in records:
            if rec.name in skip:
                continue
            source.seek(rec.start)
            cursor.pos, cursor.end = rec.buf_start, rec.buf_end
            try:
                value = unpickler.load()
                if source.tell() != rec.end or cursor.pos != rec.buf_end:
                    raise pickle.UnpicklingError("record length does not match the index")
            except Exception as exc:
                return values, (rec.name, "could not be loaded (" + describe_error(exc) + ")")
            values[rec.name] = value
    finally:
        _restore_target = None
    return values, None
