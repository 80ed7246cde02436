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
  costs only that variable (and those sharing objects with it), by name
  (loader.py reads them back).
- Notebook idioms plain pickling loses (an lru_cache function, a memory
  map of a file, ...) are saved from their parts (idioms.py).
- A structure too deep for pickle's recursion (a linked list or a
  degenerate tree of a few hundred nodes already) is saved flat: its
  objects first, without their attributes, then the attributes in pickles
  of their own, a level at a time, all in the variable's one record.
  Nested lists, tuples and dicts, which cannot be saved flat (a cons list
  ``node = [i, node]`` 4,000 long), are pickled once more under a recursion
  limit of `DEEP_LIMIT`, on a C stack that holds it (deepstack.py).
- A numpy view of an array the state holds (``v = a[10:20]``, ``a.T``, a
  view of a view) is saved as a view of it and restored sharing its memory;
  so is a memoryview over its exporter (views.py).

Importing this module imports cloudpickle (cheap, no user library; through
ownimports.py); the kernel imports it only when a checkpoint or a restore runs.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import sys
import types
from dataclasses import dataclass, field

from . import culprit, deepstack, idioms, idioms7, idioms8, idioms9, nans, views
from .messages import describe_error
from .ownimports import dependency

cloudpickle = dependency("cloudpickle")  # never a cloudpickle.py of the notebook's

PROTOCOL = 5

# The namespace that notebook functions get as __globals__ during a load.
_restore_target: dict | None = None


def _target_namespace() -> dict:
    if _restore_target is None:
        raise pickle.UnpicklingError("notebook function loaded outside a namespace restore")
    return _restore_target


class _UserNamespace:
    """Stands for the notebook's namespace itself (``g = globals()``): the
    restoring kernel's namespace, not a detached copy of the saved one."""

    def __reduce__(self):
        return _target_namespace, ()


_USER_NAMESPACE = _UserNamespace()  # one object: the memo makes every alias of the namespace one GET


def _make_notebook_function(code, name, closure):
    """`closure`: the function's cells, empty until its state fills them
    (shared with the other functions that shared them); an int: as many
    cells of its own (checkpoints of kernels before 2026-12-02)."""
    if isinstance(closure, int):
        closure = tuple(types.CellType() for _ in range(closure))
    return types.FunctionType(code, _target_namespace(), name, None, closure)


def _empty_cell():
    return types.CellType()


class _SharedCell:
    """Stands for one closure cell in a dump: pickled once (the memo), it is
    one empty cell again, whatever functions close over it. Two closures of
    one call (``deposit`` and ``get`` over one ``nonlocal balance``) then
    still see each other's writes. Its contents are in each function's state,
    set after the function exists, so a recursive closure pickles."""

    def __reduce__(self):
        return _empty_cell, ()


def _set_notebook_function_state(func, state):
    attrs, slots, cells = state
    func.__dict__.update(attrs)
    for cell, (filled, value) in zip(func.__closure__ or (), cells):
        if filled:
            cell.cell_contents = value
    for key, value in slots.items():
        setattr(func, key, value)
    return func


def _notebook_class_reduce(cls, reduced):
    """cloudpickle's reduce of a notebook class, with what it leaves out."""
    make, args, (state, slotstate), *rest = reduced
    if cls.__qualname__ != cls.__name__:
        # a class defined in a class: cloudpickle rebuilds it as `Inner`,
        # and reprs (a dataclass's) would no longer say `Outer.Inner`
        state["__qualname__"] = cls.__qualname__
    slots = cls.__dict__.get("__slots__")
    if make is cloudpickle.cloudpickle._make_skeleton_class and slots and "_fields" not in cls.__dict__:
        # made without them, the class gave its objects a __dict__: an
        # attribute assigned by mistake (a typo) no longer raised. (A named
        # tuple's empty slots are its factory's to make.)
        args = (*args[:3], {**args[3], "__slots__": slots}, *args[4:])
    if make is cloudpickle.cloudpickle._make_skeleton_class:
        state, rest = idioms8.ctypes_class_state(cls, state, rest)  # a ctypes Structure's fields: made by _fields_
        state, rest = idioms9.traitlets_class_state(cls, state, rest)  # a widget class: traitlets makes its lists
        args = idioms8.typed_dict_args(cls, args)  # TypedDict("Movie", {...}): over TypedDict, not dict
    if make is cloudpickle.cloudpickle._make_skeleton_class and type(cls).__module__ == "__main__":
        # a metaclass of the notebook's: its __new__/__init__ are the
        # notebook's code, run when the class was defined (a registry it
        # appends to is saved as it is); the class's dict comes from its state
        make = _make_class_past_notebook_metaclass
    elif make is cloudpickle.cloudpickle._make_skeleton_class and _notebook_init_subclass(cls.__mro__[1:]):
        # likewise a base's __init_subclass__ of the notebook's: run again it
        # registered the class twice, or failed on a registry still loading
        make = _make_class_past_notebook_init_subclass
    if make is cloudpickle.cloudpickle._make_skeleton_enum:
        # cloudpickle lists the members by iterating the class, which skips
        # aliases (CRIMSON = 1 after RED = 1; a Flag's RW = R | W): they came
        # back missing, Perm.RW named 'R|W'. Given in definition order, an
        # alias is made an alias again; its class attribute would reassign it.
        members = {name: member._value_ for name, member in cls.__members__.items()}
        for alias in members.keys() - args[3].keys():
            state.pop(alias, None)
        args = (*args[:3], members, *args[4:])
        # members are made from their values alone: what the class's
        # __init__ set on them (Planet.EARTH.mass), or a cell after, is kept here
        members = {name: {k: v for k, v in vars(member).items() if not (k.startswith("_") and k.endswith("_"))}
                   for name, member in cls.__members__.items()}
        members = {name: attrs for name, attrs in members.items() if attrs}
        if members:
            return (make, args, ((state, slotstate), members), rest[0], rest[1], _set_enum_state)
    return (make, args, (state, slotstate), *rest)


def _make_class_past_notebook_metaclass(metaclass, name, bases, type_kwargs, class_tracker_id, extra):
    """cloudpickle's skeleton class, made by the first metaclass up the MRO
    that is not the notebook's (type, ABCMeta...), without running the
    notebook's metaclass code again: a registry it appends to got every
    class twice."""
    maker = next(m for m in metaclass.__mro__ if m.__module__ != "__main__")
    with _notebook_init_subclass_skipped(bases):
        skeleton = maker.__new__(metaclass, name, bases, {sys.intern(k): v for k, v in type_kwargs.items()})
    return cloudpickle.cloudpickle._lookup_class_or_track(class_tracker_id, skeleton)


def _make_class_past_notebook_init_subclass(metaclass, name, bases, type_kwargs, class_tracker_id, extra):
    """cloudpickle's skeleton class, made without running its bases'
    ``__init_subclass__`` of the notebook's (a library's still runs)."""
    with _notebook_init_subclass_skipped(bases):
        return cloudpickle.cloudpickle._make_skeleton_class(metaclass, name, bases, type_kwargs,
                                                            class_tracker_id, extra)


def _notebook_init_subclass(classes) -> list:
    """The notebook's classes among `classes` that define ``__init_subclass__``."""
    return [c for c in classes if c.__module__ == "__main__" and "__init_subclass__" in vars(c)]


@contextlib.contextmanager
def _notebook_init_subclass_skipped(bases):
    """While a class is made: each notebook ``__init_subclass__`` of its bases
    only passes the call on up the MRO."""
    hooks = {c: vars(c)["__init_subclass__"]
             for c in _notebook_init_subclass(dict.fromkeys(c for b in bases for c in b.__mro__))}
    for owner in hooks:
        type.__setattr__(owner, "__init_subclass__", classmethod(_passing_on(owner)))
    try:
        yield
    finally:
        for owner, hook in hooks.items():
            type.__setattr__(owner, "__init_subclass__", hook)


def _passing_on(owner):
    def init_subclass(cls, **kwargs):
        super(owner, cls).__init_subclass__(**kwargs)
    return init_subclass


def _set_enum_state(cls, state):
    state, members = state
    cloudpickle.cloudpickle._class_setstate(cls, state)
    for name, attrs in members.items():
        vars(cls[name]).update(attrs)
    return cls


# Old checkpoints name these here.
_rebuild_view, _read_only = views._rebuild_view, views.read_only


def _same(obj):
    return obj


class _FlatHead:
    """The first pickle of a record saved flat: its value, whose objects'
    states follow in pickles of their own (`_Deferred` lists), then
    `_FlatEnd` (the class itself, pickled by name, ends the record)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __reduce__(self):
        return _FlatHead, (self.value,)


class _FlatEnd:
    pass


class _Deferred:
    """An object's state saved after the object: loaded, the unpickler's
    own BUILD sets it on the object made before."""

    __slots__ = ("obj", "state")

    def __init__(self, obj, state):
        self.obj, self.state = obj, state

    def __reduce__(self):
        return _same, (self.obj,), self.state


def _deep_recursion(exc: BaseException) -> bool:
    # cloudpickle turns the RecursionError into a PicklingError
    return isinstance(exc, RecursionError) or isinstance(exc.__cause__, RecursionError) or (
        isinstance(exc, pickle.PicklingError) and "recursion" in str(exc))


class NamespacePickler(cloudpickle.Pickler):
    def __init__(self, file, user_ns: dict, buffer_callback, array_roots: set = frozenset(),
                 watch: frozenset = frozenset(), refs: dict | None = None):
        super().__init__(file, protocol=PROTOCOL, buffer_callback=buffer_callback)
        self._refs = refs or {}  # id(library object) -> ("ref", module, attr)
        self._user_ns = user_ns
        self._array_roots = array_roots
        # the notebook's own modules (usermodules.py): which a record's objects come from
        self._watch = watch
        self.uses: set = set()
        self._deferred: list | None = None  # saving flat: states still to save
        self._idioms: dict = {}  # type -> the reduce of its idiom, or None: decided once per type
        self._cells: dict = {}  # id(closure cell) -> (its _SharedCell, the cell, kept so its id stays its own)
        self._registrations: dict | None = None  # idioms7.registrations(), once a notebook class is met

    def dump_flat(self, value) -> None:
        """Save `value` without deep recursion: objects of plain classes are
        saved without their state, which follows a level at a time."""
        self._deferred = []
        try:
            self.dump(_FlatHead(value))
            while self._deferred:
                batch, self._deferred = self._deferred, []
                self.dump(batch)
            self.dump(_FlatEnd)
        finally:
            self._deferred = None

    def _flat_reduce(self, obj, kind):
        # Only objects pickle would rebuild as class + state (no reduce of
        # their own), and only hashed by identity, or not at all: one used
        # as a dict key or set member before its state is set must hash as
        # it will after.
        if isinstance(obj, (type, types.FunctionType, types.ModuleType)) \
                or kind.__reduce_ex__ is not object.__reduce_ex__ or kind.__reduce__ is not object.__reduce__ \
                or kind in self.dispatch_table:
            return None
        if kind.__hash__ is not None and kind.__hash__ is not object.__hash__:
            return None
        try:
            reduced = obj.__reduce_ex__(PROTOCOL)
        except Exception:
            return None  # the usual path says why
        if not isinstance(reduced, tuple) or len(reduced) < 3 or reduced[2] is None \
                or any(part is not None for part in reduced[3:]):
            return None
        self._deferred.append(_Deferred(obj, reduced[2]))
        return reduced[:2]

    def reducer_override(self, obj):
        if self._watch:
            # A variable built with a module of the notebook's: named if that file changes.
            # (Objects met in an earlier record are in the memo and not seen again here.)
            owner = getattr(obj, "__module__", None) if isinstance(obj, (type, types.FunctionType)) \
                else type(obj).__module__
            if isinstance(owner, str) and owner in self._watch:
                self.uses.add(owner)
        # A numpy view (``v = a[10:20]``, ``a.T``, a sliding window) whose
        # base the state holds is saved as (base, offset, shape, strides,
        # dtype): restored, it is a view of the restored base again, so writes
        # through one still show in the other. Plain pickle would give an
        # independent copy: equal values, silently different behaviour. A view
        # whose base is not saved stays a copy of its own elements (saving a
        # base the user no longer holds could cost far more than the view),
        # unless they overlap: then it is the memory they cover (views.py).
        kind = type(obj)
        if views.is_ndarray(obj):
            reduced = views.array_reduce(obj, self._array_roots)
            if reduced is not None:
                return reduced
            if not obj.flags.writeable and not (obj.flags.c_contiguous or obj.flags.f_contiguous) \
                    and not obj.dtype.hasobject:
                # numpy saves a strided array's elements in-band and drops the flag: a read-only one
                # (ro[::3], a copy-on-write pandas row) came back writeable. A contiguous copy goes
                # out of band, and the flag is set again.
                return views.read_only, (obj.copy(order="K"),)
        elif kind is memoryview:  # cloudpickle's is bytes
            return views.memoryview_reduce(obj, self._array_roots)
        elif views.is_masked_array(kind):
            return views.masked_reduce(obj)
        try:
            idiom = self._idioms[kind]
        except KeyError:
            idiom = self._idioms[kind] = idioms.reduce_for(kind)
        if idiom is not None:
            reduced = idiom(obj, self._user_ns)
            if reduced is not None:
                return reduced
        if self._deferred is not None:
            reduced = self._flat_reduce(obj, kind)
            if reduced is not None:
                return reduced
        reduced = super().reducer_override(obj)
        if isinstance(obj, type) and isinstance(reduced, tuple) and len(reduced) == 6 \
                and isinstance(reduced[2], tuple) and isinstance(reduced[2][0], dict):
            if self._registrations is None:
                self._registrations = idioms7.registrations()
            entries = self._registrations.get(id(obj))
            if entries:
                entries = [e if e[2] is None or self._savable(e[2]) else (*e[:2], idioms7.NOT_SAVED) for e in entries]
            reduced = _notebook_class_reduce(obj, reduced)
            return idioms7.registering(reduced, entries) if entries else reduced
        return reduced

    def _savable(self, impl) -> bool:
        """Can a registered implementation be saved? Inside its class's record, one that cannot would
        fail the class and every object of it, for the sake of one registration."""
        try:
            NamespacePickler(io.BytesIO(), self._user_ns, lambda _: None).dump(impl)
        except Exception:
            return False
        return True

    def _shared_cell(self, cell) -> _SharedCell:
        entry = self._cells.get(id(cell))
        if entry is None:
            entry = self._cells[id(cell)] = (_SharedCell(), cell)
        return entry[0]

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
        closure = None if func.__closure__ is None else tuple(self._shared_cell(c) for c in func.__closure__)
        return (
            _make_notebook_function,
            (func.__code__, func.__name__, closure),
            (dict(func.__dict__), slots, cells),
            None,
            None,
            _set_notebook_function_state,
        )


class _ReferencePickler(NamespacePickler):
    """Used when variables reference library objects (references.py): each
    such object, wherever it is held, is a persistent id naming its module
    attribute, and every holder gets the same library object back. (pickle
    asks no reducer about a plain dict; it asks persistent_id about every
    object, so only a dump with references pays for it.)"""

    def persistent_id(self, obj):
        return self._refs.get(id(obj))


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
    uses: dict = field(default_factory=dict)      # name -> the watched modules its objects come from


class _RecordFailed(Exception):
    def __init__(self, name, exc):
        self.name = name
        self.exc = exc


def dump_namespace(ns: dict, names: list, user_ns: dict | None = None, watch: frozenset = frozenset(),
                   refs: dict | None = None) -> DumpResult:
    """Pickle ``ns[name]`` for each name (``user_ns``: the notebook globals,
    default ``ns``; ``watch``: module names whose use each record reports
    in ``uses``; ``refs``: id -> persistent id of the library objects saved
    as references); a name that fails is reported and
    left out, and the rest are pickled again (memo shared across records must
    not reference a half-written record). The save never stops part-way."""
    failed: dict = {}
    flat: set = set()  # too deep for pickle's recursion: saved flat
    deep: set = set()  # too deep even flat (nested lists): pickled under DEEP_LIMIT
    raced: dict = {}  # name -> times a thread of the notebook's changed it while it was read
    # A thread of the notebook's (a data logger, a poller) may change a dict
    # while it is pickled: other threads wait a whole switch interval for the
    # GIL, instead of 5 ms, while the state is read; a record read mid-change
    # anyway is read again.
    switch = sys.getswitchinterval()
    sys.setswitchinterval(max(switch, HOLD_GIL_S))
    user_ns = ns if user_ns is None else user_ns
    # NaNs a notebook finds by identity (nans.py): one NaN again for all their holders
    nan_pids, _kept_alive = nans.shared_nans(ns[name] for name in names)
    if nan_pids:
        refs = {**nan_pids, **(refs or {})}
    tried_alone = False
    try:
        while True:
            try:
                dump = _dump_deep if deep else _dump_once
                result = dump(ns, [n for n in names if n not in failed], user_ns, flat, watch, refs)
            except _RecordFailed as bad:
                if bad.name not in flat and _deep_recursion(bad.exc):
                    flat.add(bad.name)
                elif bad.name not in deep and _deep_recursion(bad.exc) and sys.getrecursionlimit() < DEEP_LIMIT:
                    deep.add(bad.name)
                elif _changed_while_read(bad.exc) and raced.get(bad.name, 0) < RACE_RETRIES:
                    raced[bad.name] = raced.get(bad.name, 0) + 1
                else:
                    failed[bad.name] = _refused(ns, bad)
                    if not tried_alone:
                        # Each failure costs a whole dump again: find the others that fail in one pass
                        # (60 variables holding locks took 9 s, the live pre-copy's lock with them).
                        tried_alone = True
                        later = names[names.index(bad.name) + 1:]
                        failed.update(_failing_alone(ns, [n for n in later if n not in flat], user_ns, refs))
                continue
            result.failed = failed
            return result
    finally:
        sys.setswitchinterval(switch)


def _refused(ns: dict, bad) -> str:
    """Why `bad.name` failed, and where inside it the refused object is."""
    inside = culprit.where(bad.name, ns[bad.name], bad.exc)
    return f"cannot be pickled ({describe_error(bad.exc)}{f', at {inside}' if inside else ''})"


def _failing_alone(ns: dict, names: list, user_ns: dict, refs=None) -> dict:
    """The names whose value cannot be pickled on its own (what a race or a
    depth limit costs is left to the full dump, which handles them)."""
    failing = {}
    for name in names:
        try:
            _dump_once(ns, [name], user_ns, frozenset(), frozenset(), refs)
        except _RecordFailed as bad:
            if not (_deep_recursion(bad.exc) or _changed_while_read(bad.exc)):
                failing[name] = _refused(ns, bad)
    return failing


HOLD_GIL_S = 1.0
# The recursion limit nested builtin containers are pickled under when the notebook's is too low (pickle's C
# code recurses once per level; unpickling does not): 2 KiB a level of address space, touched as deep as used.
DEEP_LIMIT = 200_000


def _dump_deep(*args) -> DumpResult:
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, DEEP_LIMIT))
    try:
        return deepstack.run(_dump_once, *args)
    finally:
        if sys.getrecursionlimit() == max(before, DEEP_LIMIT):
            sys.setrecursionlimit(before)
RACE_RETRIES = 5


def _changed_while_read(exc: BaseException) -> bool:
    # dict, set, deque, OrderedDict: "... changed size / mutated during iteration"
    return isinstance(exc, RuntimeError) and "during iteration" in str(exc)


def _dump_once(ns: dict, names: list, user_ns: dict, flat: set = frozenset(), watch=frozenset(),
               refs=None) -> DumpResult:
    out = io.BytesIO()
    buffers: list = []

    def keep_buffer(pb: pickle.PickleBuffer):
        try:
            buffers.append(pb.raw())
        except BufferError:  # non-contiguous: let pickle copy it in band
            return True
        return False

    kind = _ReferencePickler if refs else NamespacePickler
    pickler = kind(out, user_ns, keep_buffer, views.saved_array_roots(ns[name] for name in names), watch, refs)
    records, uses = [], {}
    for name in names:
        start, first = out.tell(), len(buffers)
        pickler.uses = set()
        try:
            if ns[name] is user_ns:  # `g = globals()`: pickle never asks a reducer about a plain dict
                pickler.dump(_USER_NAMESPACE)
            elif name in flat:
                pickler.dump_flat(ns[name])
            else:
                pickler.dump(ns[name])
        except Exception as exc:
            raise _RecordFailed(name, exc) from None
        records.append(Record(name, start, out.tell(), first, len(buffers)))
        if pickler.uses:
            uses[name] = sorted(pickler.uses)
    # getbuffer(): a view, not a copy, of what may be a large in-band stream
    return DumpResult(out.getbuffer(), records, buffers, uses=uses)
