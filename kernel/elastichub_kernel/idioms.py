"""Notebook idioms plain pickling loses, saved from their parts.

Each is a reduce the namespace pickler uses for objects of one type
(`reduce_for`, decided once per type), and the function that rebuilds it:

- a function decorated with ``functools.lru_cache``/``cache``: pickle names
  the wrapper (``__main__.fib``), which a new kernel cannot find, so the
  notebook's function is saved and wrapped again. Its plain results come
  back in its cache (idioms6.py); other results are not carried, and
  when it held results the restore report says so (`load_notes`);
- a ``functools.singledispatch`` function: its dispatch cache holds weak
  references; the base function and its registrations are saved;
- a ``functools.cached_property`` (holds a lock until Python 3.12);
- an exception class of the notebook whose ``__init__`` takes other
  arguments than it passes on: pickle would call it again with ``args``;
  rebuilt without ``__init__``, as pickle rebuilds any other object;
- a ``typing.NewType`` of the notebook (pickled by name, as lru_cache is);
- a numpy array subclass that leaves pickling to ndarray (the numpy docs'
  ``InfoArray``): its instance ``__dict__`` (``info``), which ndarray's
  reduce drops, is carried too;
- a numpy memory map of a file (``np.load(path, mmap_mode="r")``,
  ``np.memmap``): saved as its file, not its data, and mapped again. A copy
  would fill the checkpoint and memory with a dataset kept on disk on
  purpose, and cut writes off from the file. A file gone or changed since
  (size, mtime) fails the variable by name; a copy-on-write map and a view
  of a map are saved as data (no reduce here);
- a file object of ``open()``: closed (what ``with open(...) as f`` leaves)
  it comes back closed; open on a file on disk, it is opened again on the
  same file, in the same mode (never truncating) and with the same
  ``newline=`` (idioms3.py), at the same position,
  after a flush of what the notebook wrote. A file gone, or changed since
  (size, mtime; a file opened to append may grow), fails the variable by
  name; a pipe, a terminal or a deleted file is named as not restorable;
- a dict's ``keys()``, ``values()`` or ``items()``: a live view of the
  restored dict again, not a view of a copy (cloudpickle's: a snapshot);
- the IPython shell (``ip = get_ipython()``): the new kernel's;
- a ``weakref.ref`` (to its target, saved with it: alive again while the
  state holds the target) and a ``WeakValueDictionary``,
  ``WeakKeyDictionary`` or ``WeakSet`` (their live items);
- a ``queue.Queue`` (``LifoQueue``, ``PriorityQueue``, ``SimpleQueue``: a
  breadth-first search stepped through cell by cell): its items, size
  limit and unfinished tasks; its locks are new.

``sqlite3`` connections, cursors and rows: sqlitestate.py.
"""

from __future__ import annotations

import functools
import mmap
import os
import types
import typing

from . import idioms2, idioms3, idioms4, idioms6, idioms7, sqlitestate
from .usermagics import notebook_function

# Notes on values restored different from what was saved (a cache emptied),
# gathered per record by the loader; None outside a load.
load_notes: list | None = None

# Runs a function on the thread the notebook's cells run on, set by the
# kernel: checkpoints are written on the control thread, and a sqlite3
# connection answers only the thread that made it (check_same_thread).
call_on_cells_thread = None


def on_cells_thread(fn):
    """``fn()`` on the thread the notebook's cells run on (in this thread
    outside a kernel): where a sqlite3 object, or scikit-learn's per-thread
    config, is read and made."""
    return fn() if call_on_cells_thread is None else call_on_cells_thread(fn)

_LRU_WRAPPER = type(functools.lru_cache(maxsize=None)(lambda: None))
_SINGLEDISPATCH_ATTRS = ("register", "dispatch", "registry", "_clear_cache", "__wrapped__")


def reduce_for(kind: type):
    """The reduce `(obj, user_ns) -> tuple | None` for objects of `kind`, or
    None for a type that has no idiom here (most: one dict lookup each)."""
    if kind is _LRU_WRAPPER:
        return _cached
    if kind is types.FunctionType:
        return _singledispatch
    if kind is functools.cached_property:
        return _cached_property
    if kind is typing.NewType:
        return _newtype
    if issubclass(kind, BaseException) and kind.__module__ == "__main__":
        return _exception
    if issubclass(kind, BaseException) and kind.__reduce__ is BaseException.__reduce__:
        return _library_exception
    if kind.__name__ == "memmap" and kind.__module__ == "numpy":  # numpy is never imported here
        return _file_map
    if _is_class_of(kind, "sqlite3", "Connection"):  # nor sqlite3
        return sqlitestate._sqlite_connection
    if _is_class_of(kind, "sqlite3", "Cursor"):
        return sqlitestate._sqlite_cursor
    if kind.__name__ == "Row" and kind.__module__ == "sqlite3":
        return sqlitestate._sqlite_row
    if kind.__module__ == "_io" and kind.__name__ in FILE_CLASSES:
        return _file_handle
    if kind.__module__ == "weakref" and kind.__name__ == "ReferenceType":  # weakref.ref itself
        return _weak_ref
    if (kind.__module__, kind.__name__) in _WEAK_CONTAINERS:
        return _weak_container
    if kind in _DICT_VIEWS:
        return _dict_view
    if _is_class_of(kind, "IPython.core.interactiveshell", "InteractiveShell"):
        return _shell
    if _is_class_of(kind, "queue", "Queue"):
        return _queue
    if _is_class_of(kind, "_queue", "SimpleQueue"):
        return _simple_queue
    more = idioms2.reduce_for(kind)  # a notebook __new__, tempfile, weakref.finalize, PIL, dict iterators
    if _hashes_by_value(kind):
        return _hashed_by_value if more is None else idioms2.either(_hashed_by_value, more)
    if _answers_any_attribute(kind):
        return _state_set_plainly
    if _ndarray_subclass_pickled_by_numpy(kind):
        return _array_with_attrs
    return more


def _is_class_of(kind: type, module: str, name: str) -> bool:
    return any(c.__module__ == module and c.__name__ == name for c in kind.__mro__)


def _note(text: str) -> None:
    if load_notes is not None:
        load_notes.append(text)


def _set_attrs(obj, attrs):
    obj.__dict__.update(attrs)
    return obj


# -- lru_cache / cache ------------------------------------------------------

def _cached(wrapper, user_ns):
    func = getattr(wrapper, "__wrapped__", None)
    if not notebook_function(func, user_ns):
        return idioms7.module_cached(wrapper)  # a library's or a helper file's: pickled by name
    params = wrapper.cache_parameters()
    attrs = {k: v for k, v in wrapper.__dict__.items() if k != "__wrapped__"}
    return (_rebuild_cached, (func, params["maxsize"], params["typed"], wrapper.cache_info().currsize,
                              idioms6.cache_entries(wrapper)), attrs, None, None, _set_attrs)


def _rebuild_cached(func, maxsize, typed, cached, entries=None):  # no entries: a checkpoint before 2026-12-03
    wrapper = functools.lru_cache(maxsize=maxsize, typed=typed)(func)
    idioms7.refill_or_say(wrapper, entries, cached)
    return wrapper


# -- singledispatch -----------------------------------------------------------

def _singledispatch(func, user_ns):
    if func.__module__ != "__main__" or not isinstance(getattr(func, "registry", None), types.MappingProxyType) \
            or not hasattr(func, "dispatch"):
        return None
    registrations = [(cls, impl) for cls, impl in func.registry.items() if cls is not object]
    attrs = {k: v for k, v in func.__dict__.items() if k not in _SINGLEDISPATCH_ATTRS}
    return _rebuild_singledispatch, (func.registry[object], registrations), attrs, None, None, _set_attrs


def _rebuild_singledispatch(base, registrations):
    dispatcher = functools.singledispatch(base)
    for cls, impl in registrations:
        dispatcher.register(cls, impl)
    return dispatcher


# -- cached_property ------------------------------------------------------------

def _cached_property(prop, user_ns):
    return _rebuild_cached_property, (prop.func, prop.attrname, prop.__doc__)


def _rebuild_cached_property(func, attrname, doc):
    prop = functools.cached_property(func)
    prop.attrname = attrname  # set by __set_name__ at class creation, which a rebuilt class skips
    prop.__doc__ = doc
    return prop


# -- exceptions -----------------------------------------------------------------

# Plain pickle keeps an exception's args and __dict__ only: `err.__cause__`
# (raise ... from e) and `__context__` came back None without a word. They
# are carried; a traceback cannot be (its frames are gone), and is named.

def _exception(exc, user_ns):
    return _rebuild_exception, (type(exc), exc.args, dict(exc.__dict__)), *_chain(exc)


def _rebuild_exception(cls, args, attrs):
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(attrs)
    return exc


def _library_exception(exc, user_ns):
    chain = _chain(exc)
    if not chain:
        return None  # nothing plain pickle loses
    return (type(exc), exc.args, *chain) if not exc.__dict__ else (
        _rebuild_library_exception, (type(exc), exc.args, dict(exc.__dict__)), *chain)


def _rebuild_library_exception(cls, args, attrs):
    exc = cls(*args)  # as plain pickle makes it
    exc.__dict__.update(attrs)
    return exc


def _chain(exc) -> tuple:
    """(state, None, None, setter) that sets the exception's cause, context
    and traceback note; () when it has none of them."""
    if exc.__cause__ is None and exc.__context__ is None and exc.__traceback__ is None:
        return ()
    state = (exc.__cause__, exc.__context__, exc.__suppress_context__, exc.__traceback__ is not None)
    return state, None, None, _set_chain


def _set_chain(exc, state):
    cause, context, suppress, had_traceback = state
    exc.__cause__, exc.__context__ = cause, context
    exc.__suppress_context__ = suppress
    if had_traceback:
        _note(f"the traceback of {type(exc).__name__}({', '.join(map(repr, exc.args))[:80]}) is not carried "
              "(its frames ended with the old kernel)")
    return exc


# -- notebook classes that hash by value --------------------------------------------
#
# A graph of such objects (a city hashed by its name, each holding a dict of
# its roads keyed by the other cities) is a cycle: plain pickle makes each
# object and sets its state last, so a dict reached first puts a city in as a
# key before its name is set, and the restore fails in __hash__ after the
# checkpoint said it was saved. Made with its plain values (str, numbers,
# tuples of them) at once, and the rest set afterwards, it hashes in time.

_SCALARS = frozenset({str, int, float, complex, bool, bytes, type(None)})


def _pickled_by_default(kind: type, slots: bool = False) -> bool:
    """A notebook class (no library base) with pickle's default handling of
    its instance __dict__ (no __slots__, no
    __reduce__/__getstate__/__setstate__/__getnewargs__ of its own)."""
    return (kind.__module__ == "__main__" and all(c is object or c.__module__ == "__main__" for c in kind.__mro__)
            and kind.__reduce_ex__ is object.__reduce_ex__ and kind.__reduce__ is object.__reduce__
            and getattr(kind, "__getstate__", object.__getstate__) is object.__getstate__
            and not any(hasattr(kind, a) for a in ("__setstate__", "__getnewargs__", "__getnewargs_ex__"))
            and (slots or not any("__slots__" in vars(c) for c in kind.__mro__)))


def _hashes_by_value(kind: type) -> bool:
    return kind.__hash__ is not None and kind.__hash__ is not object.__hash__ and _pickled_by_default(kind)


def _answers_any_attribute(kind: type) -> bool:
    """Its __getattr__ answers any name (an RPC client, a proxy): plain
    pickle asks the *instance* for __setstate__ and called what it got with
    the state, running the notebook's code and losing every attribute."""
    return any("__getattr__" in vars(c) for c in kind.__mro__ if c is not object) and _pickled_by_default(
        kind, slots=True)


def _state_set_plainly(obj, user_ns):
    try:  # never through its __getattr__ (a __slots__ class's `return self._d[k]` raised KeyError)
        state = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        state = None
    slots = idioms3.slot_values(obj)
    if slots:  # its __getattr__ ran at restore for every lookup pickle makes: RecursionError
        return _new_with, (type(obj), {}), (dict(state or {}), slots), None, None, idioms3.set_attrs_and_slots
    if not isinstance(state, dict):
        return None
    return _new_with, (type(obj), {}), dict(state) or None, None, None, _set_attrs if state else None


def _plain(value, depth: int = 0) -> bool:
    kind = type(value)
    if kind in _SCALARS:
        return True
    return kind in (tuple, frozenset) and depth < 4 and all(_plain(v, depth + 1) for v in value)


def _hashed_by_value(obj, user_ns):
    state = getattr(obj, "__dict__", None)
    if not isinstance(state, dict) or not state:
        return None
    plain = {k: _plain(v) for k, v in state.items()}
    if not any(plain.values()):
        return None  # nothing a hash could read early
    early = {k: v if plain[k] else None for k, v in state.items()}  # every key, in order: the rest replaces
    rest = {k: v for k, v in state.items() if not plain[k]}
    return _new_with, (type(obj), early), rest or None, None, None, _set_attrs if rest else None


def _new_with(cls, attrs):
    obj = idioms2.new_past_notebook(cls)  # a notebook __new__ ran when the object was made
    if attrs:  # a __slots__ object has no __dict__ to ask for
        obj.__dict__.update(attrs)
    return obj


# -- numpy array subclasses ----------------------------------------------------------

def _ndarray_subclass_pickled_by_numpy(kind: type) -> bool:
    """A subclass of numpy.ndarray (numpy is never imported here) that leaves
    pickling to ndarray's: its __reduce__ drops the instance __dict__ (the
    numpy docs' InfoArray lost its ``info``, silently)."""
    base = next((c for c in kind.__mro__[1:] if c.__module__ == "numpy" and c.__name__ == "ndarray"), None)
    return base is not None and all(getattr(kind, name, None) is getattr(base, name)
                                    for name in ("__reduce__", "__reduce_ex__", "__setstate__"))


def _array_with_attrs(array, user_ns):
    attrs = getattr(array, "__dict__", None)
    if not attrs:
        return None  # numpy's own reduce loses nothing
    make, args, state = array.__reduce__()
    return make, args, (state, dict(attrs)), None, None, _set_array_state


def _set_array_state(array, state):
    state, attrs = state
    array.__setstate__(state)
    array.__dict__.update(attrs)
    return array


# -- NewType ----------------------------------------------------------------------

def _newtype(new, user_ns):
    if new.__module__ != "__main__":
        return None
    return _rebuild_newtype, (new.__name__, new.__supertype__)


def _rebuild_newtype(name, supertype):
    new = typing.NewType(name, supertype)
    new.__module__ = "__main__"  # NewType takes its module from the caller: this one
    return new


# -- memory maps --------------------------------------------------------------------

def _file_map(array, user_ns):
    # only a map of its file itself (a view's base is the map it slices),
    # read or written through (copy-on-write changes are the process's own)
    if not isinstance(array.base, mmap.mmap) or not array.filename or array.mode not in ("r", "r+", "w+"):
        return None
    if array.mode != "r":
        array.flush()  # what the notebook wrote is in the file the restore maps
    stat = os.stat(array.filename)
    order = "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"
    mode = "r" if array.mode == "r" else "r+"  # never w+ again: it would empty the file
    return _remap, (array.filename, array.dtype, mode, array.offset, array.shape, order,
                    stat.st_size, stat.st_mtime_ns)


def _as_saved(what: str, path: str, size: int, mtime_ns: int, may_grow: bool = False) -> None:
    """ValueError naming `what` unless the file is as the checkpoint saw it
    (a file opened to append may have grown)."""
    try:
        now = os.stat(path)
    except OSError as exc:
        raise ValueError(f"{what}: the file cannot be read ({exc.strerror})") from None
    if (now.st_size, now.st_mtime_ns) != (size, mtime_ns) and not (may_grow and now.st_size >= size):
        raise ValueError(f"{what}: the file changed since the checkpoint (its size or modification time)")


def _remap(filename, dtype, mode, offset, shape, order, size, mtime_ns):
    import numpy  # the saved state had it loaded

    _as_saved(f"memory map of {filename}", filename, size, mtime_ns)
    return numpy.memmap(filename, dtype=dtype, mode=mode, offset=offset, shape=shape, order=order)


# -- file objects ------------------------------------------------------------------

FILE_CLASSES = frozenset({"TextIOWrapper", "BufferedReader", "BufferedWriter", "BufferedRandom", "FileIO"})
_UNKNOWN_NEWLINE = "unknown"  # the newline= of a text file its Python could not tell (idioms3.text_newline)


def _file_handle(f, user_ns):
    stream = idioms3.standard_stream_reduce(f, user_ns)  # sys.__stdout__: this process's fd 1, the next one's
    if stream is not None:
        return stream
    text = f if type(f).__name__ == "TextIOWrapper" else None
    raw = f
    while type(raw).__name__ != "FileIO":  # open()'s layers: text, buffer, raw file
        raw = getattr(raw, "buffer", None) or getattr(raw, "raw", None)
        if raw is None or type(raw).__module__ != "_io":
            return idioms4.text_over_no_file(f)  # gzip.open(path, "rt"): saved as such, or refused with why
    layers = "text" if text is not None else "raw" if raw is f else "buffered"
    text_args = None if text is None else (getattr(text, "mode", None), text.encoding, text.errors,
                                           text.line_buffering, text.write_through)
    if f.closed:
        return _closed_file, (layers, raw.name, raw.mode, text_args)
    if not isinstance(raw.name, str):
        raise TypeError(f"an open file handle of descriptor {raw.name} (open it again after restore)")
    path = _open_path(raw)
    if f.writable():
        f.flush()  # what the notebook wrote is in the file the restore opens
    try:
        position = f.tell()
    except OSError as exc:  # next(f) turns tell() off: found by reading (idioms4), or refused with why
        position = idioms4.position_after_next(f, exc, path)
    if text is not None:  # open() keeps no newline=: read from the file object
        try:
            text_args += (idioms3.text_newline(text),)
        except LookupError:
            text_args += (_UNKNOWN_NEWLINE,)
    stat = os.stat(path)
    return _reopen, (layers, path, raw.name, raw.mode, text_args, position, stat.st_size, stat.st_mtime_ns)


def _open_path(raw) -> str:
    import stat

    info = os.fstat(raw.fileno())
    if not stat.S_ISREG(info.st_mode):
        raise TypeError(f"an open handle of {raw.name}, which is not a file on disk (a pipe, a device; open it "
                        "again after restore)")
    if info.st_nlink == 0:
        raise TypeError(f"an open handle of {raw.name}, which was deleted (its data lives only in this process)")
    try:  # where the file is now (its name may be relative to an old working directory)
        return os.readlink(f"/proc/self/fd/{raw.fileno()}")
    except OSError:
        return os.path.abspath(raw.name)


def _reopen(layers, path, name, raw_mode, text_args, position, size, mtime_ns):
    import io

    appending = "a" in raw_mode
    _as_saved(f"open file {path}", path, size, mtime_ns, may_grow=appending)
    # Opened by descriptor, so "w" and "x" keep the file's content
    access = os.O_RDWR if "+" in raw_mode else os.O_RDONLY if "r" in raw_mode else os.O_WRONLY
    fd = os.open(path, access | (os.O_APPEND if appending else 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if layers == "raw":
            f = io.FileIO(fd, raw_mode)
        elif layers == "buffered":
            f = open(fd, raw_mode)
        else:
            # a checkpoint of an older kernel has no newline=: open()'s default, as it did
            mode, encoding, errors, line_buffering, write_through, *newline = text_args
            newline = newline[0] if newline else None
            if newline == _UNKNOWN_NEWLINE:
                _note(f"{name} is opened again with open()'s newline handling: the newline= it was opened with "
                      "could not be read on that Python (lines ending in \\r\\n may read as \\n)")
                newline = None
            f = open(fd, raw_mode.replace("b", ""), encoding=encoding, errors=errors, newline=newline)
            f.reconfigure(line_buffering=line_buffering, write_through=write_through)
            if mode is not None:
                f.mode = mode
    except BaseException:
        os.close(fd)
        raise
    (f if layers == "raw" else f.buffer.raw if layers == "text" else f.raw).name = name
    if not appending:
        f.seek(position)
    return f


def _closed_file(layers, name, raw_mode, text_args):
    import io

    mode = raw_mode.replace("x", "w")  # the null device exists
    f = io.FileIO(os.devnull, mode) if layers == "raw" else open(os.devnull, mode if layers == "buffered" else
                                                                   mode.replace("b", ""))
    (f if layers == "raw" else f.buffer.raw if layers == "text" else f.raw).name = name
    if layers == "text" and text_args[0] is not None:
        f.mode = text_args[0]
    f.close()
    return f


# -- dict views -----------------------------------------------------------------------------

_DICT_VIEWS = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}


def _dict_view(view, user_ns):
    import gc

    (mapping,) = gc.get_referents(view)  # the dict it is a view of (CPython)
    return _rebuild_dict_view, (mapping, _DICT_VIEWS[type(view)])


def _rebuild_dict_view(mapping, which):
    return getattr(mapping, which)()


# -- the IPython shell ---------------------------------------------------------------------

def _shell(shell, user_ns):
    return _current_shell, ()


def _current_shell():
    from IPython import get_ipython  # the kernel runs in IPython

    return get_ipython()


# -- weak references -------------------------------------------------------------------

_WEAK_CONTAINERS = {("weakref", "WeakValueDictionary"), ("weakref", "WeakKeyDictionary"), ("_weakrefset", "WeakSet")}


class _Dead:
    """A target that is gone at once: a reference dead when saved is dead again."""


def _weak_ref(ref, user_ns):
    return _rebuild_weak_ref, (ref(), ref.__callback__)


def _rebuild_weak_ref(target, callback):
    import weakref

    return weakref.ref(_Dead() if target is None else target, None if target is None else callback)


def _weak_container(container, user_ns):
    items = list(container.items()) if hasattr(container, "items") else list(container)
    return _rebuild_weak_container, (type(container), items)


def _rebuild_weak_container(kind, items):
    return kind(items)


# -- queues ----------------------------------------------------------------------------

_QUEUE_LOCKS = ("mutex", "not_empty", "not_full", "all_tasks_done")


def _queue(q, user_ns):
    with q.mutex:  # a thread of the notebook's may be putting
        state = {k: v for k, v in vars(q).items() if k not in _QUEUE_LOCKS}
        state["queue"] = type(q.queue)(q.queue)
    return _rebuild_queue, (type(q), q.maxsize), state, None, None, _set_attrs


def _rebuild_queue(kind, maxsize):
    base = next(c for c in kind.__mro__ if c.__module__ == "queue" and c.__name__ == "Queue")
    q = kind.__new__(kind)
    base.__init__(q, maxsize)  # new locks; a subclass's own __init__ may take other arguments
    return q


def _simple_queue(q, user_ns):
    # Its items cannot be read in place: taken out and put back, in order.
    items = [q.get_nowait() for _ in range(q.qsize())]
    for item in items:
        q.put(item)
    return _rebuild_simple_queue, (type(q), items)


def _rebuild_simple_queue(kind, items):
    q = kind()
    for item in items:
        q.put(item)
    return q


# Checkpoints written before sqlitestate.py was split out (2026-12-03) name these rebuilds here.
_reconnect, _new_cursor, _rebuild_row = sqlitestate._reconnect, sqlitestate._new_cursor, sqlitestate._rebuild_row
