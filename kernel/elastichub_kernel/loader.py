"""Read a checkpoint's namespace back (serializer.py wrote it).

The records share one memo, and protocol 5 numbers memo entries by the
order they are made (MEMOIZE), so the stream only decodes right when every
record is read in step: skipping one, or stopping one part-way, shifts
every later reference to another object (a list came back with a wrong
element and no word said). So nothing here ever leaves a record half-read:

- a global that cannot be found here (a module missing from this image, a
  class renamed) is read as a stand-in (`_Unloadable`), the record goes to
  its end, and the records whose values reach a stand-in fail, by name;
- a record that fails otherwise (an error inside a library's
  reconstructor) is skipped on a next pass, and the memo entries its bytes
  would have made are made instead (`_memo_fill`): the strings and globals
  it names as they are, what it built as stand-ins, so the records after
  it decode in step and only those sharing its objects fail.
"""

from __future__ import annotations

import gc
import importlib
import io
import pickle
import struct
import sys
import types

from . import idioms, idioms2, idioms9, nans, serializer
from .ownimports import dependency
from .serializer import describe_error

pickletools = dependency("pickletools")  # loaded late: never a pickletools.py of the notebook's


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


def load_namespace(stream, records: list, buffers: list, target_ns: dict, bindings: Bindings | None = None):
    """Unpickle each record; returns (values by name, failures by name,
    notes by name on values restored different from what was saved).

    Notebook functions get ``target_ns`` as globals. A record that cannot be
    restored (a library missing here, a class that changed) is reported by
    name, and so is every record that shares an object with it: nothing is
    ever restored half-built or different from what was saved.

    ``bindings`` (over ``target_ns``): each value is bound as soon as its
    record has loaded, so notebook code run by a later record (a
    ``__setstate__``, a ``__reduce__`` helper, a dict subclass's
    ``__setitem__``) sees it, as it did in the notebook (records are in the
    notebook's order). Only the last pass's values stay bound.
    """
    skipped: dict = {}  # name -> (reason, the memo entries its bytes make)
    start = bindings.mark() if bindings is not None else 0
    while True:
        values, failed, notes, bad = _load_pass(stream, records, buffers, target_ns, skipped, bindings)
        if bad is None:
            return values, {**{name: why for name, (why, _) in skipped.items()}, **failed}, notes
        if bindings is not None:  # a pass that starts over: its values are not the next pass's
            bindings.undo(since=start)
        rec, why = bad
        skipped[rec.name] = (why, _memo_fill(stream, rec))


_ABSENT = object()


class Bindings:
    """Names bound into a namespace while a state loads (see load_namespace),
    each with what it held before its first binding here, so `undo` puts
    the namespace back as it was (a refused live apply, a pass that starts
    over, an error part-way). Names starting with ``skip`` are never bound
    (the engine's recompute recipes: the value is made later)."""

    def __init__(self, ns: dict, skip: str | None = None):
        self.ns = ns
        self.skip = skip
        self.values: dict = {}  # name -> the value bound here, in binding order
        self._before: dict = {}  # name -> its value before (_ABSENT: none), in first-binding order
        self.armed: list = []  # the finalizers the load armed again: never run when it is undone (idioms2)

    def _remember(self, name) -> None:
        if name not in self._before:
            self._before[name] = self.ns.get(name, _ABSENT)

    def bind(self, name: str, value) -> None:
        if self.skip is not None and name.startswith(self.skip):
            return
        self._remember(name)
        self.ns[name] = self.values[name] = value

    def drop(self, name: str) -> None:
        """Unbind `name` (a name of an old state the new one does not hold)."""
        self._remember(name)
        self.ns.pop(name, None)
        self.values.pop(name, None)

    def mark(self) -> int:
        return len(self._before)

    def undo(self, since: int = 0) -> None:
        """Put back what the names first bound or dropped after `mark()` held."""
        if since == 0:  # all undone: the objects they clean up after are dropped (a refused live apply)
            idioms2.disarm(self.armed)
            self.armed = []
        for name in list(self._before)[since:][::-1]:
            before = self._before.pop(name)
            self.values.pop(name, None)
            if before is _ABSENT:
                self.ns.pop(name, None)
            else:
                self.ns[name] = before


class _Unloadable:
    """Stands in for what could not be loaded here: a global (class,
    function, module) or, on a second pass, a skipped record's memo entry.
    It accepts whatever the stream does with it (calls, state, items)."""

    reason = ""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, *state):  # ctypes' _unpickle passes two: (instance dict, memory)
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, item):
        pass

    def extend(self, items):
        pass

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):  # a reconstructor's getattr(module, "f") on a missing module
        if name.startswith("__"):
            raise AttributeError(name)
        return self


def _stand_in(reason: str, name: str = "Unloadable") -> type:
    return type(name, (_Unloadable,), {"reason": reason})


# cloudpickle's reconstructor of a module it pickled by name (older releases named its module _fast)
_IMPORTERS = {("cloudpickle.cloudpickle", "subimport"), ("cloudpickle.cloudpickle_fast", "subimport")}
_SKIPPED = ("elastichub_kernel.loader", "<skipped>")  # the global a memo fill reads as a stand-in


class _Input:
    """The unpickler's file: the record stream, or for a moment a memo fill."""

    def __init__(self, stream):
        self.stream = io.BytesIO(stream)
        self.current = self.stream

    def read(self, n=-1):
        return self.current.read(n)

    def readinto(self, buffer):
        return self.current.readinto(buffer)

    def readline(self):
        return self.current.readline()


class _Unpickler(pickle.Unpickler):
    """Reads a global that is not found here as a stand-in, so the record
    (and the memo) is read to its end; `stand_ins` says one was made."""

    def __init__(self, source: _Input, buffers, fills: bool):
        # Reading through _Input costs a Python call per read: only a pass that fills does.
        super().__init__(source if fills else source.stream, buffers=buffers)
        self.source = source
        self.stand_ins = 0
        self.stand_in_reason = ""  # the last stand-in's
        self._skipped_reason = ""
        self._nans: dict = {}  # this load's NaNs, by their persistent id's number

    def persistent_load(self, pid):
        """A library object the session held (references.py): that module's
        attribute here, the same object for every holder; or a NaN found by
        identity (nans.py)."""
        if nans.is_nan_pid(pid):
            return nans.load(pid, self._nans)
        if not (isinstance(pid, tuple) and len(pid) == 3 and pid[0] == "ref"
                and isinstance(pid[1], str) and isinstance(pid[2], str)):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        try:
            module = sys.modules.get(pid[1]) or importlib.import_module(pid[1])
            return getattr(module, pid[2])
        except Exception as exc:
            raise pickle.UnpicklingError(f"{pid[1]}.{pid[2]} cannot be found here "
                                         f"({type(exc).__name__}: {exc})") from None

    def fill(self, entries: list, reason: str) -> None:
        """Make a skipped record's memo entries (`_memo_fill`), in order,
        through the unpickler itself: a fill of opcodes that cannot fail."""
        if not entries:
            return
        memo = self.memo.copy()  # reading it is fine; assigning one is broken in CPython's C unpickler
        built = object()  # an entry that is neither a string nor known here
        skipped = _unicode_op(_SKIPPED[0]) + _unicode_op(_SKIPPED[1]) + pickle.STACK_GLOBAL
        out = bytearray(b"\x80\x05")

        def text(part):
            value = part[1] if part[0] == "str" else memo.get(part[1], built)
            return value if isinstance(value, str) else None

        def ops(part) -> bytes | None:
            """The opcodes that push `part` again, or None when it cannot be made without the record."""
            kind = part[0] if part else None
            if kind == "str":
                return _unicode_op(part[1])
            if kind == "get":
                return pickle.LONG_BINGET + part[1].to_bytes(4, "little") if part[1] in memo else None
            if kind == "global":
                module, name = text(part[1]), text(part[2])
                return None if module is None or name is None else (
                    _unicode_op(module) + _unicode_op(name) + pickle.STACK_GLOBAL)
            if kind == "const":
                return _const_op(part[1])
            if kind == "tuple":
                items = [ops(item) for item in part[1:]]
                if None in items:
                    return None
                return b"".join(items) + _TUPLE_OPS[len(items)] if len(items) in _TUPLE_OPS else (
                    pickle.MARK + b"".join(items) + pickle.TUPLE)
            if kind == "call" and part[1][0] == "global" and (text(part[1][1]), text(part[1][2])) in _PURE_CALLS:
                # A lookup by name every later function shares (cloudpickle's _builtin_type("CodeType")):
                # made again, or each of them would fail on the stand-in.
                args = [text(a) for a in part[2][1:]] if part[2][0] == "tuple" else [None]
                if None in args:
                    return None
                try:
                    self.find_class(text(part[1][1]), text(part[1][2]))(*args)
                except Exception:
                    return None
                return ops(part[1]) + ops(part[2]) + pickle.REDUCE
            return None

        for entry in entries:
            made = ops(entry)
            out += skipped if made is None else made
            if entry[0] == "str":
                memo[len(memo)] = entry[1]
            else:
                memo[len(memo)] = memo[entry[1]] if entry[0] == "get" and made is not None else built
            out += pickle.MEMOIZE + pickle.POP
        self._skipped_reason = reason
        self.source.current = io.BytesIO(bytes(out + pickle.NONE + pickle.STOP))
        try:
            self.load()
        finally:
            self.source.current = self.source.stream

    def find_class(self, module, name):
        if (module, name) == _SKIPPED:
            return self._stand_in(self._skipped_reason)
        try:
            found = super().find_class(module, name)
        except Exception as exc:
            return self._stand_in(f"{module}.{name}: {describe_error(exc)}",
                                  name if name.isidentifier() else "Unloadable")
        if (module, name) in _IMPORTERS:
            return self._safe_import(found)
        return found

    def _safe_import(self, importer):
        def load_module(module_name, *args):
            try:
                return importer(module_name, *args)
            except Exception as exc:
                return self._stand_in(f"import {module_name}: {describe_error(exc)}")()
        return load_module

    def _stand_in(self, reason: str, name: str = "Unloadable") -> type:
        self.stand_ins += 1
        self.stand_in_reason = reason
        return _stand_in(reason, name)


def _const_op(value) -> bytes | None:
    """Push `value` (None, a bool, an int, a float, bytes) without memoizing it."""
    if value is None:
        return pickle.NONE
    if isinstance(value, bool):
        return pickle.NEWTRUE if value else pickle.NEWFALSE
    if isinstance(value, int):
        if -2 ** 31 <= value < 2 ** 31:
            return pickle.BININT + struct.pack("<i", value)
        data = pickle.encode_long(value)
        return pickle.LONG4 + struct.pack("<i", len(data)) + data
    if isinstance(value, float):
        return pickle.BINFLOAT + struct.pack(">d", value)
    if isinstance(value, (bytes, bytearray)):
        return pickle.BINBYTES8 + struct.pack("<Q", len(value)) + bytes(value)
    return None


def _unicode_op(text: str) -> bytes:
    data = text.encode("utf-8", "surrogatepass")
    return pickle.BINUNICODE + len(data).to_bytes(4, "little") + data


_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"}
_CONST_OPS = {"BININT", "BININT1", "BININT2", "LONG1", "LONG4", "INT", "LONG", "BINFLOAT", "FLOAT",
              "SHORT_BINBYTES", "BINBYTES", "BINBYTES8"}
_MARK = object()
_TUPLE_OPS = {0: pickle.EMPTY_TUPLE, 1: pickle.TUPLE1, 2: pickle.TUPLE2, 3: pickle.TUPLE3}
# Reconstructors that only look a name up: a skipped record's memo entry made by one is made again.
_PURE_CALLS = {(module, name) for module in ("cloudpickle.cloudpickle", "cloudpickle.cloudpickle_fast")
               for name in ("_builtin_type", "subimport")}


def _memo_fill(stream, rec) -> list | None:
    """The memo entries a record's bytes make, in order, described so that
    a fill can make them without running the record: ("str", text),
    ("const", value) for None, a bool, an int, a float or bytes, ("get",
    index) for an entry made before, ("global", module, name),
    ("tuple", part...), ("call", global, tuple) of a REDUCE, or
    ("skipped",) for anything else the record built. Follows the stack with
    each opcode's declared effect (pickletools). None when its bytes cannot
    be read as a pickle."""
    entries: list = []
    stack: list = []  # descriptions of what is on the stack (None: something built; _MARK: a mark)
    data = io.BytesIO(memoryview(stream)[rec.start:rec.end])
    try:
        for op, arg, _ in _all_ops(data):
            name = op.name
            if name == "MEMOIZE":
                entries.append((stack[-1] if stack and stack[-1] is not _MARK else None) or ("skipped",))
                continue
            before = op.stack_before
            sliced = None
            if pickletools.markobject in before:
                at = len(stack) - 1 - stack[::-1].index(_MARK)
                sliced, stack[at:] = stack[at + 1:], []
                below_count = before.index(pickletools.markobject)
            else:
                below_count = len(before)
            below = stack[len(stack) - below_count:] if below_count else []
            del stack[len(stack) - below_count:]
            if name in _STRING_OPS:
                made = [("str", arg)]
            elif name in _CONST_OPS:
                made = [("const", arg)]
            elif name == "NONE":
                made = [("const", None)]
            elif name in ("NEWTRUE", "NEWFALSE"):
                made = [("const", name == "NEWTRUE")]
            elif name in ("BINGET", "LONG_BINGET", "GET"):
                made = [("get", int(arg))]
            elif name == "GLOBAL":
                module, qual = arg.split(" ", 1)
                made = [("global", ("str", module), ("str", qual))]
            elif name == "MARK":
                made = [_MARK]
            else:
                parts = sliced if name == "TUPLE" else below
                known = parts is not None and None not in parts and _MARK not in parts
                if name == "STACK_GLOBAL":
                    made = [("global", *parts) if known else None]
                elif name in ("TUPLE", "EMPTY_TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"):
                    made = [("tuple", *(parts or ())) if known or name == "EMPTY_TUPLE" else None]
                elif name == "REDUCE":
                    made = [("call", *parts) if known else None]
                else:
                    made = [None] * len(op.stack_after)
            stack.extend(made)
    except Exception:  # damaged bytes (the file's checksums make this unreachable in practice)
        return None  # entries unknown: nothing after this record can be read in step
    return entries


def _all_ops(data: io.BytesIO):
    """The opcodes of every pickle in `data`: a record saved flat holds several."""
    end = len(data.getbuffer())
    while data.tell() < end:
        yield from pickletools.genops(data)


def _unloadable_in(value, target_ns: dict) -> _Unloadable | type | None:
    """A stand-in `value` reaches (itself, or through what it refers to), or
    None. Globals found here (modules, library classes and functions) and
    the namespace notebook functions live in hold none: not walked."""
    seen, todo = {id(target_ns)}, [value]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, _Unloadable) or (isinstance(obj, type) and issubclass(obj, _Unloadable)):
            return obj
        if isinstance(obj, types.ModuleType) or (
                isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType))
                and getattr(obj, "__module__", None) != "__main__"):
            continue
        todo.extend(gc.get_referents(obj))
    return None


def _load_pass(stream, records, buffers, target_ns, skipped, bindings=None):
    source = _Input(stream)
    cursor = _BufferCursor(buffers)
    unpickler = _Unpickler(source, cursor, fills=bool(skipped))
    values, failed, notes = {}, {}, {}
    serializer._restore_target = target_ns
    # The finalizers this pass arms again (a TemporaryDirectory's cleanup): the objects of a pass that
    # starts over, or of a record that fails, are dropped, and their cleanup deleted the folder, files
    # and all, that the next pass's TemporaryDirectory names.
    armed = idioms2.armed = []
    try:
        for rec in records:
            first_armed = len(armed)
            if rec.name in skipped:
                why, entries = skipped[rec.name]
                if entries is None:  # never guess: the records after it fail, by name
                    for later in records[records.index(rec) + 1:]:
                        if later.name not in skipped:
                            failed[later.name] = f"could not be loaded (after {rec.name}, whose bytes are damaged)"
                    break
                unpickler.fill(entries, f"shares objects with {rec.name}, which could not be loaded")
                continue
            source.stream.seek(rec.start)
            cursor.pos, cursor.end = rec.buf_start, rec.buf_end
            idioms.load_notes = []
            idioms9.forget_loaded()
            stand_ins = unpickler.stand_ins
            try:
                value = unpickler.load()
                if type(value) is serializer._FlatHead:  # saved flat: the states follow, then the end
                    value = value.value
                    while unpickler.load() is not serializer._FlatEnd:
                        pass
                if source.stream.tell() != rec.end or cursor.pos != rec.buf_end:
                    raise pickle.UnpicklingError("record length does not match the index")
            except Exception as exc:
                # A reconstructor that met a stand-in fails in its own words
                # (about a loader class): the stand-in's reason is the cause.
                met = unpickler.stand_ins > stand_ins or (unpickler.stand_ins and __name__ + "." in str(exc))
                why = unpickler.stand_in_reason if met else describe_error(exc)
                idioms2.disarm(armed)
                return values, failed, notes, (rec, f"could not be loaded ({why})")
            stand_in = _unloadable_in(value, target_ns) if unpickler.stand_ins else None
            if stand_in is not None:
                idioms2.disarm(armed[first_armed:])
                failed[rec.name] = f"could not be loaded ({stand_in.reason})"
                continue
            values[rec.name] = value
            idioms9.open_loaded()  # the widgets it made, now that their children are whole
            if bindings is not None:
                bindings.bind(rec.name, value)
            if idioms.load_notes:
                notes[rec.name] = "; ".join(idioms.load_notes)
    finally:
        serializer._restore_target = None
        idioms.load_notes = None
        idioms2.armed = None
        idioms9.forget_loaded()
    if bindings is not None:
        bindings.armed += armed
    return values, failed, notes, None
