"""Notebook idioms of an eleventh round (idioms6.reduce_for asks here
before its library-state check, and this asks idioms8.py last; same
shape: a reduce per type and its rebuild):

- a ``threading.local`` (``state = threading.local(); state.user = ...``):
  the attributes the cells' thread (the main thread) gave it, read on that
  thread (a checkpoint is written on the control thread, whose attributes
  it would otherwise read) and set there again; a subclass's ``__init__``
  arguments too, for the threads that use it next. Other threads'
  attributes belong to threads the next kernel does not have. A
  ``threading.Barrier`` threads wait at is named as one, not as the
  Condition inside it (one no thread waits at is its attributes);
- a notebook class registered with a library's ABC
  (``collections.abc.Sequence.register(Deck)``, ``numbers.Number.register(Money)``): the library is imported
  afresh, its registry empty, so ``isinstance(deck, Sequence)`` turned False. The ABCs pickled by name a
  notebook class is registered with are found at checkpoint time (a walk of the loaded classes, a few ms)
  and saved with the class, which is registered with them again as it is made; so is its implementation
  in a helper file's (or library's) ``functools.singledispatch`` function (``@shop.render.register``),
  which dispatched it to the fallback after a move;
- an ``lru_cache`` (``cache``) function of the notebook's own module (``@functools.cache def load(n)`` in a
  ``helpers.py``): pickled by name it is the module's again, loaded from its file, its cache empty though the
  module's other values (a list of calls it appended to) are carried. Its plain results are put back in that
  function's cache, as a notebook's are (idioms6.py);
- a ``functools.cmp_to_key`` key (``by = cmp_to_key(compare)``; one made of a value, ``by(3)``, too): its
  comparison function (and value), read from the C object; pickle refused it;
- a ``re.Scanner`` (a tokenizer's lexicon): it pickled, but its pattern, compiled from parsed parts, not
  text, failed at load ("first argument must be string or compiled pattern"); it is made again from its
  lexicon and flags;
- objects whose state cannot be read back are named in plain words with
  what to do, not pickle's "cannot pickle ... object": a ``numpy.nditer``
  part-way (its flags and buffers), a ``decimal.localcontext()`` kept in a
  variable (its settings), a ``contextvars.Token`` (it resets only in the
  context it was made in, the old kernel's).
"""

from __future__ import annotations

import abc
import gc
import importlib
import sys
import types

from . import idioms, idioms6, idioms8, usermodules


def reduce_for(kind: type):
    """The reduce for `kind`, or None (idioms6.reduce_for asks)."""
    name = (kind.__module__, kind.__name__)
    if idioms._is_class_of(kind, "_thread", "_local"):
        return _thread_local
    if name == ("functools", "KeyWrapper"):
        return _cmp_key
    if idioms._is_class_of(kind, "re", "Scanner"):
        return _scanner
    if idioms._is_class_of(kind, "threading", "Barrier"):
        return _barrier
    if name == ("numpy", "nditer"):  # numpy is never imported here
        return _nditer
    if name == ("decimal", "ContextManager"):
        return _decimal_context_manager
    if name == ("_contextvars", "Token"):
        return _context_token
    return idioms8.reduce_for(kind)


# -- threading.local ----------------------------------------------------------------------------

def _thread_local(local, user_ns):
    import threading  # imported already: a threading.local exists

    # a subclass's slots, instance dict and its type come first, then local's own: its __init__ arguments
    # (kw only when given) and its threads' dicts
    held = gc.get_referents(local)
    at = next((i + 1 for i, v in enumerate(held) if v is type(local)), len(held))
    args, kw = (held[at], held[at + 1] if len(held) - at == 3 else {}) if at < len(held) else (None, None)
    if type(local).__init__ is not threading.local.__init__ and not (isinstance(args, tuple)
                                                                     and isinstance(kw, dict)):
        raise idioms6.refused(local, "a threading.local whose __init__ arguments cannot be read back: make it "
                              "again after restore")
    if type(local).__init__ is threading.local.__init__:
        args, kw = (), {}
    attrs = idioms.on_cells_thread(lambda: dict(vars(local)))
    return _made_thread_local, (type(local), args, kw), attrs, None, None, _set_on_cells_thread


def _made_thread_local(kind, args, kw):
    return kind.__new__(kind, *args, **kw)  # __init__ runs in each thread that uses it first, with these


def _set_on_cells_thread(local, attrs):
    idioms.on_cells_thread(lambda: vars(local).update(attrs))
    return local


def _barrier(barrier, user_ns):
    if barrier._cond._waiters or barrier._count:  # else it is its attributes, its Condition free
        raise idioms6.refused(barrier, f"a threading.Barrier {barrier._count} thread(s) wait at (they ran in "
                              "the old kernel): make it again after restore")
    return None


# -- functools.cmp_to_key ------------------------------------------------------------------------

def _cmp_key(key, user_ns):
    held = idioms6._referents(key)  # its comparison function, then the value it wraps, if any
    if not 1 <= len(held) <= 2 or not callable(held[0]):
        return None  # another Python's layout: pickle says why
    return _made_cmp_key, tuple(held)


def _made_cmp_key(compare, *value):
    import functools

    key = functools.cmp_to_key(compare)
    return key(*value) if value else key


# -- re.Scanner ----------------------------------------------------------------------------------

def _scanner(scanner, user_ns):
    attrs = idioms6._own_attrs(scanner, ("lexicon", "scanner"))
    return (_made_scanner, (type(scanner), scanner.lexicon, scanner.scanner.flags), attrs, None, None,
            idioms._set_attrs if attrs else None)


def _made_scanner(kind, lexicon, flags):
    import re

    scanner = kind.__new__(kind)  # a subclass's __init__ may take other arguments
    re.Scanner.__init__(scanner, lexicon, flags)
    return scanner


# -- an lru_cache of the notebook's own module -----------------------------------------------------

def module_cached(wrapper):
    """The reduce of an lru_cache function of the notebook's own module holding results, or None (a library's,
    pickled by name and found again by import, as this one is)."""
    func = wrapper.__wrapped__
    module, qualname = func.__module__, func.__qualname__
    if not usermodules.is_own(module) or _lookup(module, qualname) is not wrapper:
        return None
    cached = wrapper.cache_info().currsize
    return (_refilled, (module, qualname, idioms6.cache_entries(wrapper), cached)) if cached else None


def _lookup(module: str, qualname: str):
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


def _refilled(module, qualname, entries, cached):
    wrapper = _lookup(module, qualname)  # its module is loaded again from its file before the variables
    if not callable(getattr(wrapper, "cache_clear", None)):
        raise TypeError(f"{module}.{qualname} is no longer a cached function of its module")
    wrapper.cache_clear()  # what its import cached is among the saved results
    refill_or_say(wrapper, entries, cached)
    return wrapper


def refill_or_say(wrapper, entries, cached: int) -> None:
    """Put the saved results back in `wrapper`'s cache, or say that it is empty."""
    if cached and not idioms6.refill_cache(wrapper, entries):
        idioms._note(f"{wrapper.__wrapped__.__qualname__}() is restored with an empty cache ({cached} result(s) "
                     "were cached; they are computed again when asked for)")


# -- registrations in a library's (or helper file's) ABC or singledispatch function --------------------

def registrations() -> dict:
    """{id(notebook class): [(module, qualname, implementation or None)]}: the ABCs pickled by name it is
    registered with, and the singledispatch functions, pickled by name, it has an implementation in (a
    notebook ABC or dispatcher carries its own registry by value)."""
    found, seen, todo = {}, set(), [object]

    def add(cls, owner, impl=None):
        if isinstance(cls, type) and cls.__module__ == "__main__":
            found.setdefault(id(cls), []).append((owner.__module__, owner.__qualname__, impl))

    while todo:
        for sub in type.__subclasses__(todo.pop()):
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            todo.append(sub)
            if isinstance(sub, abc.ABCMeta) and sub.__module__ != "__main__" and _by_name(sub):
                for cls in _registered(sub):
                    add(cls, sub)
    for module in list(sys.modules.values()):  # a dispatcher is a module's global (a few ms for them all)
        try:  # past a lazy module's __getattribute__, which would import it
            namespace = object.__getattribute__(module, "__dict__")
        except Exception:  # a stand-in in sys.modules without a namespace
            continue
        for value in list(namespace.values()) if isinstance(namespace, dict) else ():
            if type(value) is types.FunctionType and id(value) not in seen \
                    and isinstance(vars(value).get("registry"), types.MappingProxyType) \
                    and value.__module__ != "__main__" and _by_name(value):
                seen.add(id(value))
                for cls, impl in list(value.registry.items()):
                    add(cls, value, impl)
    return found


def _registered(kind) -> list:
    try:
        return [ref() for ref in abc._get_dump(kind)[0]]
    except (AttributeError, TypeError):  # the pure-Python ABCMeta (_py_abc)
        return list(getattr(kind, "_abc_registry", ()))


def _by_name(kind) -> bool:
    """Whether pickle finds `kind` by its module and name (not one made inside a function). Asked of
    every loaded ABC and dispatcher, so only the module's own namespace is read: its __getattr__ would
    answer a name it lacks with a deprecation warning in the student's output, or an import."""
    head, _, rest = kind.__qualname__.partition(".")
    try:
        found = object.__getattribute__(sys.modules.get(kind.__module__), "__dict__").get(head)
    except Exception:  # no such module, or a stand-in without a namespace
        return False
    for part in rest.split(".") if rest else ():
        found = getattr(found, part, None)
    return found is kind


NOT_SAVED = "elastichub: implementation not saved"  # in place of a registered implementation pickle refused


def registering(reduced: tuple, entries: list) -> tuple:
    """A notebook class's reduce whose rebuild also registers it again (`registrations`), the ABCs and
    dispatchers by name: one whose library is missing at restore costs only the registration, said, not
    the class and its objects."""
    make, args, state, items, pairs, setter = reduced
    return make, args, (setter, state, entries), items, pairs, _set_and_register


def _set_and_register(cls, state):
    setter, state, entries = state
    cls = setter(cls, state)
    for module, qualname, impl in entries:
        if isinstance(impl, str) and impl == NOT_SAVED:  # a copy once loaded: by value
            idioms._note(f"{cls.__qualname__} is no longer registered with {module}.{qualname} (dispatch on it "
                         "no longer sees it): its implementation could not be saved")
            continue
        try:
            owner = _lookup(importlib.import_module(module).__name__, qualname)  # imported in the session
            if impl is None:
                owner.register(cls)
            else:
                owner.register(cls, impl)
        except Exception as exc:  # any failure costs the registration alone
            idioms._note(f"{cls.__qualname__} is no longer registered with {module}.{qualname} "
                         f"(isinstance and dispatch on it no longer see it): {type(exc).__name__}: {exc}")
    return cls


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
