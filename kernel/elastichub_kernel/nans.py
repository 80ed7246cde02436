"""NaN floats whose identity a notebook relies on.

A NaN equals nothing, itself included: ``nan in [nan]``, ``d[nan]`` and
``nan in s`` find it by identity only. pickle saves every float by value
(no memo, no reducer asked), so after a restore ``counts = {np.nan: 3}``
answered ``counts.get(np.nan)`` with None, ``x is np.nan`` was False, and
``y in ys`` (``ys = [y, y]``) was False: different values, nothing said.

So the saved state is scanned (as views.py scans for arrays: the variables
and a few levels into their dicts' keys and values, lists, tuples, sets and
plain objects' attributes, within a budget) for NaN floats that are a
library's (``numpy.nan``, ``math.nan``) or are held more than once. Each
is saved as a persistent id (serializer.py's references): a library's is
that library's NaN again where the library is loaded, and every holder of
one NaN gets one NaN back. A state without such a NaN pays nothing.
"""

from __future__ import annotations

import sys
import types

# (module, attribute) of the NaNs libraries hand out
LIBRARY_NANS = (("math", "nan"), ("numpy", "nan"), ("cmath", "nan"))
_SCAN_ITEMS = 1000
_SCAN_BUDGET = 20 * _SCAN_ITEMS
_DEPTH = 3
_SETS = (set, frozenset)


def _library_nans() -> dict:
    found = {}
    for module, attr in LIBRARY_NANS:
        value = getattr(sys.modules.get(module), attr, None)
        if type(value) is float and value != value:
            found[id(value)] = (module, attr)
    return found


def _inside(value) -> list:
    kind = type(value)
    if isinstance(value, dict) and kind.__module__ in ("builtins", "collections"):
        return [*value.keys(), *value.values()]
    if kind in (list, tuple) or kind in _SETS or kind.__name__ == "deque" and kind.__module__ == "collections":
        return list(value)
    try:  # never a notebook class's __getattr__
        state = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return []
    if type(state) is dict and not isinstance(value, (type, types.ModuleType, types.FunctionType)):
        return list(state.values())
    return []


def shared_nans(values) -> tuple[dict, list]:
    """({id: persistent id}, the NaNs, kept alive while their ids are used)
    of the NaN floats in `values` whose identity matters: a library's,
    ("ref", module, attr, n), or one met twice, ("nan", n)."""
    library = _library_nans()
    seen: dict = {}  # id -> [the float, times met]
    budget = _SCAN_BUDGET
    level, walked = list(values), set()
    for depth in range(_DEPTH + 1):
        deeper = []
        for item in level:
            if type(item) is float:
                if item != item:
                    seen.setdefault(id(item), [item, 0])[1] += 1
                continue
            if depth == _DEPTH or id(item) in walked:
                continue
            walked.add(id(item))
            try:
                inner = _inside(item)
            except Exception:  # a container changed by a thread of the notebook's, an odd __dict__
                continue
            if len(inner) <= min(_SCAN_ITEMS, budget):
                budget -= len(inner)
                deeper.extend(inner)
        level = deeper
    pids, kept = {}, []
    for key, (nan, times) in seen.items():
        if key in library:
            pids[key] = ("ref", *library[key], len(kept))
        elif times > 1:
            pids[key] = ("nan", len(kept))
        else:
            continue
        kept.append(nan)
    return pids, kept


def load(pid, table: dict):
    """The NaN a persistent id of `shared_nans` names: the library's where
    it is loaded here (never imported for a NaN), else one NaN per id in
    this load (`table`)."""
    if pid[0] == "ref":
        value = getattr(sys.modules.get(pid[1]), pid[2], None)
        if type(value) is float and value != value:
            return value
    return table.setdefault(pid[-1], float("nan"))


def is_nan_pid(pid) -> bool:
    return isinstance(pid, tuple) and (
        (len(pid) == 2 and pid[0] == "nan" and type(pid[1]) is int)
        or (len(pid) == 4 and pid[0] == "ref" and (pid[1], pid[2]) in LIBRARY_NANS and type(pid[3]) is int))
