"""Notebook idioms of a tenth round: objects that were named 'not
restorable' though their whole state can be read (idioms5.reduce_for asks
here last; same shape: a reduce per type and its rebuild):

- a ``csv.reader`` (and so a ``csv.DictReader``) part-way through its file:
  its source (the file, opened again where it was, idioms.py), dialect and
  ``line_num``; a ``csv.writer`` (``csv.DictWriter``): its file's ``write``
  and dialect. Between rows neither holds anything else. pickle refused
  them ("cannot pickle '_csv.reader' object");
- a ``threading.Lock`` or ``RLock`` no one holds (``self.lock =
  threading.Lock()`` of a class whose threads ended): a new, free lock is
  all it was. A held one is named: its holder, a thread or an acquire()
  of a cell, cannot be carried. Only the notebook's own: a library's
  object holding one (an ORM session's engine, an executor, a scheduler)
  is named as before, its lock guarding the library's state (one of the
  notebook's own helper files, usermodules.py, is the notebook's); so are a
  running thread and a logging handler on a logger (the logging set-up is
  carried with the loggers, logstate.py: a copy would be another handler).
  A ``threading.Event``: set or not; a ``Condition`` (over its lock, as
  shared) and a ``Semaphore`` (its value) no thread waits on. A thread
  not started yet, or finished, is its attributes (typeprobe no longer
  names it), and so is a ``Barrier`` no thread waits at (its Condition).
  A ``threading.local``: idioms7.py;
- a ``contextvars.ContextVar``: its name, default and its value in the
  context the cells run in (noted after each cell, libstate.py), set there
  again before the next cell. One a module holds (a library's, a helper
  file's) is that module's variable again, with its value;
- ``itertools.pairwise`` part-way: its iterator and the item it holds;
- a ufunc of ``numpy.frompyfunc`` (and so a called ``np.vectorize``): made
  again from its function, ``nin``, ``nout`` and identity; pickle looked it
  up by name in numpy;
- a ``unittest.mock`` Mock is named with why (its children, configuration
  and call history cannot all be read back), not "excessively deep
  recursion";
- the results of an ``lru_cache`` or ``cache`` (a memoized recursion) when
  they and their keys are plain values: read from the C wrapper and put in
  the new one's cache, in their order (idioms.py's lru_cache idiom asks);
  they came back empty. Its hit and miss counts cannot be set: said.
"""

from __future__ import annotations

import collections
import gc
import itertools
import sys
import threading

from . import deepstack, idioms, idioms3, idioms7, usermodules

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
    if name in (("_thread", "lock"), ("_thread", "RLock")):
        return _lock
    if idioms._is_class_of(kind, "threading", "Event"):
        return _event
    if idioms._is_class_of(kind, "threading", "Condition"):
        return _condition
    if idioms._is_class_of(kind, "threading", "Semaphore"):
        return _semaphore
    if idioms._is_class_of(kind, "threading", "Thread"):
        return _thread
    if idioms._is_class_of(kind, "logging", "Handler"):
        return _log_handler
    if name == ("_contextvars", "ContextVar"):
        return _context_var
    if name == ("itertools", "pairwise"):
        return _pairwise
    if name == ("numpy", "ufunc"):  # numpy is never imported here
        return _frompyfunc
    if idioms._is_class_of(kind, "unittest.mock", "NonCallableMock"):
        return _mock
    later = idioms7.reduce_for(kind)
    if later is not None:
        return later
    if _library_state_pickled(kind) and not usermodules.is_own(kind.__module__):
        # a class of the notebook's own helper file (bank.Account) is the notebook's code: its free locks are
        # carried as the notebook's classes' are
        return _library_state
    return None


def _referents(obj) -> list:
    """What `obj` holds, in its C type's traverse order, less its own type."""
    held = gc.get_referents(obj)
    return held[1:] if held and held[0] is type(obj) and type(obj).__flags__ & _HEAP_TYPE else held


class _Lead:
    """An iterator giving `lead`'s items, then `it`'s: a rebuilt iterator's
    place (pairwise's held item, a csv reader's lines read) is given again
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


# -- locks and events --------------------------------------------------------------------------

def held_lock_reason(obj) -> str | None:
    """Why a thread lock cannot be carried (it is held), or None."""
    name = (type(obj).__module__, type(obj).__name__)
    if name == ("_thread", "lock"):
        held = obj.locked()
    elif name == ("_thread", "RLock"):
        held = obj._is_owned() or not obj.acquire(blocking=False)
        if not held:
            obj.release()
    else:
        return None
    return ("a thread lock that is held (by a cell's acquire() or a thread): its holder cannot be carried over; "
            "release it, or make it again after restore") if held else None


def refused(obj, reason: str) -> TypeError:
    """`reason`, with pickle's words naming `obj`'s type: culprit.py finds it inside its variable by them."""
    return TypeError(f"{reason} (cannot pickle '{type(obj).__name__}' object)")


def _lock(lock, user_ns):
    reason = held_lock_reason(lock)
    if reason is not None:
        raise refused(lock, reason)
    return _new_lock, (type(lock).__name__ == "RLock",)  # free: a new lock is the same


def _new_lock(reentrant):
    return threading.RLock() if reentrant else threading.Lock()


def _event(event, user_ns):
    attrs = {k: v for k, v in vars(event).items() if k not in ("_cond", "_flag")}  # a subclass's own
    return _made_event, (type(event), event.is_set()), attrs or None, None, None, idioms._set_attrs if attrs else None


def _made_event(kind, flag):
    event = kind.__new__(kind)  # a subclass's __init__ may take other arguments
    threading.Event.__init__(event)
    if flag:
        event.set()
    return event


def _own_attrs(obj, known) -> dict | None:
    """A subclass's own attributes, beyond the library's `known` ones."""
    return {k: v for k, v in vars(obj).items() if k not in known} or None


def _not_waited_on(obj, cond):
    if cond._waiters:  # their threads ran in the old kernel
        raise refused(obj, f"a threading.{type(obj).__name__} threads wait on (make it again after restore)")


_CONDITION_ATTRS = ("_lock", "acquire", "release", "_release_save", "_acquire_restore", "_is_owned", "_waiters")


def _condition(cond, user_ns):
    _not_waited_on(cond, cond)
    attrs = _own_attrs(cond, _CONDITION_ATTRS)
    return _made_condition, (type(cond), cond._lock), attrs, None, None, idioms._set_attrs if attrs else None


def _made_condition(kind, lock):
    cond = kind.__new__(kind)  # a subclass's __init__ may take other arguments
    threading.Condition.__init__(cond, lock)
    return cond


def _semaphore(sem, user_ns):
    _not_waited_on(sem, sem._cond)
    attrs = _own_attrs(sem, ("_cond", "_value", "_initial_value"))
    return (_made_semaphore, (type(sem), sem._value, getattr(sem, "_initial_value", None)), attrs, None, None,
            idioms._set_attrs if attrs else None)


def _made_semaphore(kind, value, initial):
    sem = kind.__new__(kind)
    threading.Semaphore.__init__(sem, value)
    if initial is not None:  # a BoundedSemaphore's bound
        sem._initial_value = initial
    return sem


def _thread(thread, user_ns):
    if thread.is_alive():  # a finished one, or one not started, is its attributes
        raise refused(thread, "a running thread (its work runs in the old kernel: start it again after restore)")
    return None


def _library_state_pickled(kind: type) -> bool:
    """A library's class (stdlib too) whose objects pickle as their __dict__ and slots."""
    return (kind.__module__ not in ("__main__", "builtins") and kind.__reduce_ex__ is object.__reduce_ex__
            and kind.__reduce__ is object.__reduce__ and getattr(kind, "__getstate__", None) is object.__getstate__)


_LOCKS = frozenset({("_thread", "lock"), ("_thread", "RLock")})
_SCANNED = 2_000  # items looked at in one object's state, at most: a checkpoint reads every library object


def _holds_lock(state) -> bool:
    """Whether a lock is in `state` or in the dicts, lists, tuples and sets in it."""
    todo, budget = [state], _SCANNED
    while todo and budget > 0:
        value = todo.pop()
        kind = type(value)
        if (kind.__module__, kind.__name__) in _LOCKS:
            return True
        if kind in (dict, list, tuple, set, frozenset):
            items = list(itertools.islice(value.values() if kind is dict else value, budget))
            budget -= len(items) + 1
            todo.extend(items)
    return False


def _library_state(obj, user_ns):
    if isinstance(obj, type):
        return None  # a class: its dict is a mapping proxy, pickled by name or by cloudpickle
    try:
        state = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        state = None
    if _holds_lock([state, idioms3.slot_values(obj)]):
        kind = type(obj)
        raise refused(obj, f"a {kind.__module__}.{kind.__qualname__} holding a thread lock (a lock of a library's "
                      "object guards its state: make it again after restore)")
    return None


def _log_handler(handler, user_ns):
    import logging  # imported already: a handler exists

    loggers = [logging.root, *(lg for lg in list(logging.root.manager.loggerDict.values())
                               if isinstance(lg, logging.Logger))]
    owner = next((lg for lg in loggers if any(h is handler for h in lg.handlers)), None)
    if owner is None:
        return None  # on no logger: its attributes are all it is
    call = "logging.getLogger()" if owner is logging.root else f"logging.getLogger({owner.name!r})"
    raise refused(handler, f"a handler of a logger (the logging set-up is carried with the loggers: take it from "
                  f"{call}.handlers after restore)")


# -- contextvars ------------------------------------------------------------------------------

_UNSET = object()
_noted = None  # the cells' context as the last cell left it (a copy); None outside a kernel
_pending: dict = {}  # restored variables -> their value, to set in the cells' context before the next cell


def note_cells_context() -> None:
    """After a cell, in its context (the kernel calls this through libstate):
    what it left is where values are read, and what a restore queued during
    the cell was set in it already."""
    global _noted
    import contextvars

    _noted = contextvars.copy_context()  # O(1): a context is an immutable mapping underneath
    _pending.clear()


def apply_to_cells_context() -> None:
    """Before a cell, in its context: the restored variables get their value."""
    pending = list(_pending.items())
    _pending.clear()
    for var, value in pending:
        var.set(value)


def _cells_context():
    main = threading.main_thread()
    if _noted is None or threading.current_thread() is main or deepstack.waiting_thread() is main:
        import contextvars

        return idioms.on_cells_thread(contextvars.copy_context)  # a cell runs (%elastic_checkpoint), or no kernel
    return _noted  # the control thread's context is not the cells': no cell runs, the last one's


def _context_var(var, user_ns):
    import contextvars

    try:
        default = contextvars.Context().run(var.get)  # in an empty context: its default
    except LookupError:
        default = _UNSET
    value = _pending.get(var, _UNSET)
    if value is _UNSET:
        value = _cells_context().get(var, _UNSET)
    owner = _module_holding(var)
    if owner is not None:  # a module's own (a library's, a helper's): that variable again, not a new one
        return _module_context_var, (*owner, value is not _UNSET, None if value is _UNSET else value)
    return _made_context_var, (var.name, default is not _UNSET, None if default is _UNSET else default,
                               value is not _UNSET, None if value is _UNSET else value)


def _module_holding(var):
    """(module, name) of a loaded module, not the notebook's, that has `var` as a global; or None."""
    for module_name, module in list(sys.modules.items()):
        if module_name == "__main__":
            continue
        try:
            found = next((name for name, value in list(vars(module).items()) if value is var), None)
        except Exception:  # a stand-in in sys.modules without a plain namespace
            continue
        if found is not None:
            return module_name, found
    return None


def _made_context_var(name, has_default, default, has_value, value):
    import contextvars

    var = contextvars.ContextVar(name, default=default) if has_default else contextvars.ContextVar(name)
    return _with_value(var, has_value, value)


def _module_context_var(module_name, name, has_value, value):
    import contextvars
    import importlib

    var = getattr(importlib.import_module(module_name), name, None)
    if not isinstance(var, contextvars.ContextVar):
        raise ValueError(f"{module_name}.{name} is no longer a ContextVar once its module is imported again")
    return _with_value(var, has_value, value)


def _with_value(var, has_value, value):
    if has_value:
        _pending[var] = value
        idioms.on_cells_thread(lambda: var.set(value))  # a restore inside a cell (%elastic_restore): now
    return var


# -- itertools.pairwise -----------------------------------------------------------------------

def _pairwise(pairs, user_ns):
    held = _referents(pairs)  # its iterator, then the item it holds once started; nothing once ended
    if not held:
        return _made_pairwise, (iter(()), False, None)
    source = held[0]
    if isinstance(source, _Lead) and not source.lead:
        source = source.it
    return _made_pairwise, (source, len(held) > 1, held[1] if len(held) > 1 else None)


def _made_pairwise(source, started, item):
    import itertools

    return itertools.pairwise(_Lead([item], source) if started else source)


# -- numpy.frompyfunc -------------------------------------------------------------------------

def _frompyfunc(ufunc, user_ns):
    held = _referents(ufunc)  # a frompyfunc ufunc's: its function, its identity if given, its __dict__
    if not held or not callable(held[0]) or isinstance(held[0], dict) or not isinstance(held[-1], dict) \
            or not ufunc.__name__.endswith(" (vectorized)"):
        return None  # numpy's own: pickled by name
    identity = (held[1],) if len(held) == 3 else ()
    return _made_frompyfunc, (held[0], ufunc.nin, ufunc.nout, identity)


def _made_frompyfunc(func, nin, nout, identity):
    import numpy

    return numpy.frompyfunc(func, nin, nout, **({"identity": identity[0]} if identity else {}))


# -- unittest.mock ----------------------------------------------------------------------------

MOCK_REASON = ("a unittest.mock Mock (its children, settings and call history cannot all be read back): make it "
               "again after restore")


def _mock(mock, user_ns):
    raise refused(mock, MOCK_REASON)


# -- functools.lru_cache: its results ----------------------------------------------------------

def cache_entries(wrapper) -> list | None:
    """The results an lru_cache holds, oldest first, as (key, place of the
    keyword marker in it or -1, result), when they and their keys are all
    plain values (numbers, strings, tuples of them: a memoized
    recursion's), which always pickle; None otherwise."""
    parts = _cache_parts(wrapper)
    if parts is None:
        return None
    cache, mark, links = parts
    entries = []
    for key, result in (list(cache.items()) if wrapper.cache_parameters()["maxsize"] is None else links):
        at = next((i for i, part in enumerate(key) if part is mark), -1) if type(key) is tuple else -1
        parts = [key] if type(key) is not tuple else [p for i, p in enumerate(key) if i != at]
        if not idioms._plain(result) or not all(idioms._plain(p) or _builtin_type(p) for p in parts):
            return None
        entries.append((key if at < 0 else tuple(parts), at, result))
    return entries


def _builtin_type(value) -> bool:
    return type(value) is type and value.__module__ == "builtins"  # a typed=True cache's keys end with types


def _cache_parts(wrapper):
    """(its cache dict, its keyword marker, its (key, result) links oldest
    first: a bounded cache's), read from what the C wrapper holds (the
    links' key, result and type, then its cache, function, marker...), or None."""
    held = _referents(wrapper)
    func = vars(wrapper).get("__wrapped__")
    at = next((i for i, obj in enumerate(held) if obj is func), None)
    if at is None or at == 0 or at + 1 >= len(held) or type(held[at - 1]) is not dict \
            or type(held[at + 1]) is not object:
        return None
    cache, links = held[at - 1], held[:at - 1]
    if wrapper.cache_parameters()["maxsize"] is not None:
        kinds = {type(link) for link in cache.values()}
        if len(links) != 3 * len(cache) or any(links[i] not in kinds for i in range(2, len(links), 3)):
            return None
        links = list(zip(links[0::3], links[1::3]))
    return cache, held[at + 1], links


def refill_cache(wrapper, entries) -> bool:
    """Put saved `entries` (cache_entries) in `wrapper`'s new cache; False
    when there are none, or they cannot be put back here (said by the caller)."""
    parts = None if entries is None else _cache_parts(wrapper)
    if parts is None:
        return False
    cache, mark, _ = parts
    if wrapper.cache_parameters()["maxsize"] is None:
        for key, at, result in entries:
            cache[key if at < 0 else key[:at] + (mark,) + key[at:]] = result
    elif not _replay(wrapper, entries):
        return False
    idioms._note(f"{wrapper.__wrapped__.__qualname__}() is restored with its {len(entries)} cached result(s); "
                 "its hit and miss counts (cache_info) are not carried")
    return True


def _replay(wrapper, entries) -> bool:
    """A bounded cache's results put back by calling it with each one's
    arguments, oldest first (its links can only be made so), while its
    function, made by this load and run by nothing else yet, only returns
    the saved result."""
    func, typed = wrapper.__wrapped__, wrapper.cache_parameters()["typed"]
    if func.__closure__ is not None:
        return False  # its code cannot be swapped for one without its cells
    results = collections.deque(result for _, _, result in entries)
    code, kwdefaults = func.__code__, func.__kwdefaults__
    func.__code__, func.__kwdefaults__ = _saved_result.__code__, {"_elastichub_next": results.popleft}
    try:
        for key, at, _ in entries:
            args, kwargs = _call_of(key, at, typed)
            wrapper(*args, **kwargs)
    except Exception:  # arguments this Python's lru_cache does not take as read: empty, said
        pass
    finally:
        func.__code__, func.__kwdefaults__ = code, kwdefaults
    if results or wrapper.cache_info().currsize != len(entries):
        wrapper.cache_clear()
        return False
    return True


def _saved_result(*args, _elastichub_next=None, **kwargs):
    return _elastichub_next()


def _call_of(key, at, typed):
    """The arguments lru_cache made `key` of (CPython's key: the arguments,
    then the marker and keyword pairs, then with typed=True their types)."""
    if type(key) is not tuple:
        return (key,), {}
    if at < 0:
        return (key[:len(key) // 2] if typed else key), {}
    args, rest = key[:at], key[at:]
    pairs = (len(rest) - at) // 3 if typed else len(rest) // 2
    return args, dict(zip(rest[0:2 * pairs:2], rest[1:2 * pairs:2]))
