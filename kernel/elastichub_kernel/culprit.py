"""Where inside a variable the object pickle refused sits.

Pickle says only "cannot pickle '_thread.lock' object": for a notebook
object with many attributes (an experiment holding its results, its
configuration, a lock somewhere) the student cannot tell which to drop.
The variable's attributes, dict items and list, tuple or set elements are
searched, breadth first and without running any of its code (no
``__getstate__``, no ``__getattr__``), for an object of the type pickle
named: ``exp.results['guard']``. Only run after a failure, and bounded.
"""

from __future__ import annotations

import re

_REFUSED = re.compile(r"cannot pickle '([^']+)' object")
MAX_SEEN = 20_000  # objects looked at, at most: a failing checkpoint must not take long to say why
MAX_DEPTH = 8


def where(name: str, value, exc: BaseException) -> str | None:
    """The path from `name` to the object `exc` says pickle refused
    (``exp.results['guard']``), or None (not found, or the value itself)."""
    found = _REFUSED.search(str(exc))
    if found is None:
        return None
    refused, seen, level = found.group(1), {id(value)}, [(name, value)]
    if _refused_as(value, refused):
        return None  # the value itself (a multiprocessing Queue holds a queue.Queue: not the one refused)
    for _ in range(MAX_DEPTH):
        following = []
        for path, obj in level:
            for step, child in _children(obj):
                if id(child) in seen:
                    continue
                if len(seen) >= MAX_SEEN:
                    return None
                seen.add(id(child))
                if _refused_as(child, refused):
                    return path + step
                following.append((path + step, child))
        level = following
    return None


def _refused_as(obj, refused: str) -> bool:
    """Whether pickle's name of `obj`'s type (its C tp_name: ``_thread.lock``,
    ``generator``; a class's own name) is `refused`."""
    kind = type(obj)
    return refused in (kind.__name__, f"{kind.__module__}.{kind.__qualname__}")


def _children(obj):
    """(step, child) of `obj`'s plain parts, read without running its code
    (the base types' own methods, never a subclass's)."""
    kind = type(obj)  # not isinstance: a dead weakref.proxy raises there
    try:
        if issubclass(kind, dict):
            return [(f"[{key!r}]", item) for key, item in list(dict.items(obj))[:1000]]
        if issubclass(kind, (list, tuple)):
            items = list.copy(obj) if issubclass(kind, list) else tuple.__getitem__(obj, slice(0, 1000))
            return [(f"[{i}]", item) for i, item in enumerate(items[:1000])]
        if issubclass(kind, (set, frozenset)):
            items = list((set if issubclass(kind, set) else frozenset).copy(obj))
            return [(" (an item)", item) for item in items[:1000]]
        attrs = object.__getattribute__(obj, "__dict__")
    except Exception:  # no __dict__, or a type that refuses to be read this way
        return []
    if type(attrs) is not dict:
        return []
    return [(f".{key}", item) for key, item in list(attrs.items())[:1000] if isinstance(key, str)]
