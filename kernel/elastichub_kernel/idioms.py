"""Notebook idioms plain pickling loses, saved from their parts.

Each is a reduce the namespace pickler uses for objects of one type
(`reduce_for`, decided once per type), and the function that rebuilds it:

- a function decorated with ``functools.lru_cache``/``cache``: pickle names
  the wrapper (``__main__.fib``), which a new kernel cannot find, so the
  notebook's function is saved and wrapped again. Its cache lives in C and
  cannot be read: it comes back empty, and when it held results the
  restore report says so (`load_notes`);
- a ``functools.singledispatch`` function: its dispatch cache holds weak
  references; the base function and its registrations are saved;
- a ``functools.cached_property`` (holds a lock until Python 3.12);
- an exception class of the notebook whose ``__init__`` takes other
  arguments than it passes on: pickle would call it again with ``args``;
  rebuilt without ``__init__``, as pickle rebuilds any other object;
- a ``typing.NewType`` of the notebook (pickled by name, as lru_cache is);
- a numpy memory map of a file (``np.load(path, mmap_mode="r")``,
  ``np.memmap``): saved as its file, not its data, and mapped again. A copy
  would fill the checkpoint and memory with a dataset kept on disk on
  purpose, and cut writes off from the file. A file gone or changed since
  (size, mtime) fails the variable by name; a copy-on-write map and a view
  of a map are saved as data (no reduce here).
"""

from __future__ import annotations

import functools
import mmap
import os
import types
import typing

# Notes on values restored different from what was saved (a cache emptied),
# gathered per record by the loader; None outside a load.
load_notes: list | None = None

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
    if kind.__name__ == "memmap" and kind.__module__ == "numpy":  # numpy is never imported here
        return _file_map
    return None


def _set_attrs(obj, attrs):
    obj.__dict__.update(attrs)
    return obj


# -- lru_cache / cache ------------------------------------------------------

def _cached(wrapper, user_ns):
    func = getattr(wrapper, "__wrapped__", None)
    if not isinstance(func, types.FunctionType) or (func.__globals__ is not user_ns
                                                    and func.__module__ != "__main__"):
        return None  # a library's: pickled by name, and found again by import
    params = wrapper.cache_parameters()
    attrs = {k: v for k, v in wrapper.__dict__.items() if k != "__wrapped__"}
    return (_rebuild_cached, (func, params["maxsize"], params["typed"], wrapper.cache_info().currsize),
            attrs, None, None, _set_attrs)


def _rebuild_cached(func, maxsize, typed, cached):
    wrapper = functools.lru_cache(maxsize=maxsize, typed=typed)(func)
    if cached and load_notes is not None:
        load_notes.append(f"{func.__qualname__}() is restored with an empty cache ({cached} result(s) were "
                          f"cached; they are computed again when asked for)")
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

def _exception(exc, user_ns):
    return _rebuild_exception, (type(exc), exc.args, dict(exc.__dict__))


def _rebuild_exception(cls, args, attrs):
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(attrs)
    return exc


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


def _remap(filename, dtype, mode, offset, shape, order, size, mtime_ns):
    import numpy  # the saved state had it loaded

    try:
        now = os.stat(filename)
    except OSError as exc:
        raise ValueError(f"memory map of {filename}: the file cannot be read ({exc.strerror})") from None
    if (now.st_size, now.st_mtime_ns) != (size, mtime_ns):
        raise ValueError(f"memory map of {filename}: the file changed since the checkpoint "
                         f"(its size or modification time)")
    return numpy.memmap(filename, dtype=dtype, mode=mode, offset=offset, shape=shape, order=order)
