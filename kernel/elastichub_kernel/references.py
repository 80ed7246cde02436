"""Variables that are a library's own object, not the notebook's value:
``from matplotlib import rcParams``, ``from os import environ``, ``from
sys import path as syspath``, ``from numpy.random import rand, seed``,
``from random import random``, the names of ``from sympy import *``.

Pickled, each came back as a detached copy (an ``rcParams`` plots no
longer read; a ``rand`` drawing from a second stream; sympy's ``RR`` did
not load at all). So a name the recorder saw bound by ``from M import a``
(or by ``from M import *``) that still is ``M.a`` when the checkpoint is
written is saved as that reference, with the imports, and restored as
``getattr(import_module(M), a)``: the same object of the library again,
whose state the kernel carries where it carries any (the global random
generators, rcParams and the other library options, sys.path, the
environment: context.py). Checking it costs one dict lookup per such name.

Attributes cells set on a library's module or class (``pd.DataFrame.shout
= ...``; the recorder notes them from the cell's code) are not carried:
the library is imported afresh. They are named, with their cells, in the
first cell after a restore.

A library's plain container changed in place (``from http.client import
responses; responses[299] = "Custom OK"``, a registry a library function
appends to) keeps what the session put in it: its contents are saved too
(a shallow copy, in the same pickling pass), and at restore, once the
state the kernel carries is applied, a fresh value that differs is filled
with them in place: the library's object, with the session's contents.
Only builtin containers with clear/update semantics are filled (dict,
list, set, bytearray, deque and collections' dicts), never the
interpreter's own (``sys.path``, ``sys.modules``: their contents are the
new process's; the context carries what the session changed in them). A
fresh value of another type comes back as the saved copy, named. Other
library objects are references only: their inner state is the library's
and is not carried (like attributes set on its classes).

Every object a variable holds that is one of these library objects
(``cfg = {"s": SETTINGS}``, ``dom = RR``) is pickled as a persistent id
naming the attribute, so every holder gets the same library object back.

Values equal by value need no reference (ints, strings, None...), and
attributes of the notebook's own modules are saved by value with those
modules' values (usermodules.py), in the same pickling pass, so that
``from helpers import CACHE`` stays ``helpers.CACHE``.

A ``decimal`` context the notebook holds (``ctx = decimal.getcontext()``)
is the cells' current context (libstate notes it after each cell): it is
saved by value and made the cells' current context again before the
first cell (``decimal.setcontext``), so ``ctx.prec = 3`` changes the
arithmetic as before.
"""

from __future__ import annotations

import collections
import copy
import sys
import types

from .recorder import HistoryRecorder

_BY_VALUE = (int, float, complex, bool, str, bytes, type(None), range)
_MISSING = object()
VALUE_PREFIX = "\x00ref:"  # the record of a library container's contents: "\x00ref:http.client:responses"
_CONTAINERS = (dict, list, set, bytearray, collections.OrderedDict, collections.defaultdict, collections.deque,
               collections.Counter)


def _process_state(obj) -> bool:
    """The interpreter's own containers (sys.path, sys.modules, sys.argv):
    their contents belong to the process that holds them."""
    return any(value is obj for value in vars(sys).values())


def carried_contents(obj):
    """A shallow copy of a library's plain container, saved with its
    reference; None for anything else."""
    if type(obj) not in _CONTAINERS or _process_state(obj):
        return None
    return copy.copy(obj)


def _same(fresh, saved) -> bool:
    try:
        return type(fresh) is type(saved) and bool(fresh == saved) \
            and getattr(fresh, "maxlen", None) == getattr(saved, "maxlen", None)
    except Exception:  # arrays in a dict: not comparable, so filled
        return False


def _fill(target, saved) -> None:
    if isinstance(target, (dict, set)):
        target.clear()
        target.update(saved)
    elif isinstance(target, collections.deque):
        target.clear()
        target.extend(saved)
    else:  # list, bytearray
        target[:] = saved


def reconcile(saved: dict, names: dict, ns: dict) -> list:
    """After the kernel's carried state is applied: each library container
    whose fresh value differs from the saved contents gets them in place;
    one that cannot (its type changed here) is replaced, in the variables
    that referenced it, by the saved copy, and named. ``saved``: record
    name -> contents; ``names``: (module, attr) -> variable names."""
    differs = []
    for record, contents in saved.items():
        module, attr = record[len(VALUE_PREFIX):].split(":", 1)
        fresh = getattr(sys.modules.get(module), "__dict__", {}).get(attr, _MISSING)
        if fresh is _MISSING or _same(fresh, contents):
            continue
        if type(fresh) is type(contents) and not _process_state(fresh):
            _fill(fresh, contents)
            continue
        holders = [n for n in names.get((module, attr), ()) if ns.get(n) is fresh]
        for name in holders:
            ns[name] = contents
        differs.append({"name": ", ".join(holders) or f"{module}.{attr}",
                        "reason": f"came back as a copy of the saved value, no longer {module}.{attr} "
                                  f"(which is a {type(fresh).__name__} here)"})
    return differs


def shown(record: str) -> str:
    return record[len(VALUE_PREFIX):].replace(":", ".", 1) if record.startswith(VALUE_PREFIX) else record


def module_reference(name: str, value, imported: dict, own_modules) -> tuple[str, str] | None:
    """(module, attribute) when ``value`` is to be saved as that reference."""
    source = imported.get(name)
    if source is None or type(value) in _BY_VALUE or isinstance(value, types.ModuleType):
        return None
    module_name, attr = source
    if module_name in own_modules or module_name == "__main__":
        return None
    module = sys.modules.get(module_name)
    if module is None or getattr(module, "__name__", None) != module_name:
        return None
    found = getattr(module, "__dict__", {}).get(attr, _MISSING)  # no getattr: a module __getattr__ runs code
    return (module_name, attr) if found is value else None


def library_changes(recorder: HistoryRecorder, own) -> list:
    """[path, cell, module, kind] of the attributes cells set on modules and
    classes of libraries (`pd.DataFrame.shout = ...`): not carried, named.
    A module of the notebook's own carries its values itself; ``sys.stdout = buf`` is named by shellmodes.py
    when still in effect at the checkpoint (set back since, nothing differs)."""
    return [[path, cell, module, kind] for path, (cell, module, kind) in recorder.module_attr_stores.items()
            if not (kind == "module" and module in own) and path not in _STREAMS]


_STREAMS = ("sys.stdout", "sys.stderr")


def library_values(changes: list) -> dict:
    """{path: value} of the plain values (a flag, a number, a text) cells set
    on libraries' modules, as they are now: at restore, one the new process
    has as well (``sys.dont_write_bytecode = True`` where the image sets
    PYTHONDONTWRITEBYTECODE) is not named as lost."""
    values = {}
    for path, _, module, kind in changes:
        value = _module_value(module, path) if kind == "module" else _MISSING
        if type(value) in (bool, int, float, str, type(None)):  # JSON keeps these exactly
            values[path] = value
    return values


def _module_value(module: str, path: str):
    # vars(), not getattr: a module's __getattr__ is code of the library
    return getattr(sys.modules.get(module), "__dict__", {}).get(path.rsplit(".", 1)[-1], _MISSING)


def _still_set(change: list, values: dict) -> bool:
    path, _, module, kind = change
    if kind != "module" or not isinstance(values, dict) or path not in values:
        return False
    now, saved = _module_value(module, path), values[path]
    return type(now) is type(saved) and now == saved


def library_change_notes(changes: list, values=None) -> list[str]:
    """The attributes cells set on libraries' modules and classes: not
    carried (the library is imported afresh), named with their cells; one
    that has its saved value here all the same is not."""
    changes = [c for c in changes if not _still_set(c, values or {})]
    if not changes:
        return []
    shown = ", ".join(f"{path} (cell [{cell}])" for path, cell, _, _ in changes[:20])
    more = f" and {len(changes) - 20} more" if len(changes) > 20 else ""
    return [f"WARNING: attributes the notebook set on libraries' modules or classes are not carried (the "
            f"libraries were imported afresh): {shown}{more}. Re-run those cells if later cells need them."]
