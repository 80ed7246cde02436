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

import sys
import types

from .recorder import HistoryRecorder

_BY_VALUE = (int, float, complex, bool, str, bytes, type(None), range)
_MISSING = object()


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
    A module of the notebook's own carries its values itself."""
    return [[path, cell, module, kind] for path, (cell, module, kind) in recorder.module_attr_stores.items()
            if not (kind == "module" and module in own)]


def library_change_notes(changes: list) -> list[str]:
    """The attributes cells set on libraries' modules and classes: not
    carried (the library is imported afresh), named with their cells."""
    if not changes:
        return []
    shown = ", ".join(f"{path} (cell [{cell}])" for path, cell, _, _ in changes[:20])
    more = f" and {len(changes) - 20} more" if len(changes) > 20 else ""
    return [f"WARNING: attributes the notebook set on libraries' modules or classes are not carried (the "
            f"libraries were imported afresh): {shown}{more}. Re-run those cells if later cells need them."]
