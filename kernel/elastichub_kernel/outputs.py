"""The cells' outputs (``Out``, ``_<n>``, ``_``, ``__``, ``___``), saved
with the cell history (shellstate.py) as what they are, never as copies:
an output that is a variable's object is that variable again (``df``
shown as a cell's last line: ``_`` is ``df``), a number (a float or a
numpy scalar too: ``df.a.mean()`` is the output a data notebook shows
most) or a short text its value. Others (a table computed to be shown)
may be large and are not saved: the restore names them. Before, every
output was left out silently, and ``_`` read '' again: ``_ * 2`` went on
with ''.
"""

from __future__ import annotations

import re
import sys

from .forward import Values

_MISSING = object()
_TEXT_MAX = 10_000  # characters of an output kept as its value
_INT_MAX = 10 ** 100
UNDERS = ("_", "__", "___")
# A numpy scalar's dtype as dtype.str spells it: bool, (unsigned) integers and floats, whose .item() is exact.
_NUMPY_DTYPE = re.compile(r"[<>|=]?[biuf][1-8]")


def _ref(value, names: dict):
    """{"var": name} | {"value": value} | None (not carried)."""
    name = names.get(id(value))
    if name is not None:
        return {"var": name}
    if type(value) in (bool, float) or (type(value) is int and abs(value) < _INT_MAX) or (
            type(value) is str and len(value) <= _TEXT_MAX):
        return {"value": value}  # JSON holds a float exactly, nan and inf too
    return _numpy_scalar(value)


def _numpy_scalar(value):
    """{"value": its Python number, "numpy": its dtype} for a numpy scalar that number gives back bit for bit."""
    np = sys.modules.get("numpy")  # a numpy scalar means numpy is loaded: never imported for this
    if np is None or not isinstance(value, np.generic) or not _NUMPY_DTYPE.fullmatch(value.dtype.str):
        return None
    item = value.item()
    if type(item) not in (bool, int, float) or (type(item) is int and abs(item) >= _INT_MAX):
        return None
    if np.asarray(value.dtype.type(item)).tobytes() != np.asarray(value).tobytes():
        return None
    return {"value": item, "numpy": value.dtype.str}


def variables_by_id(shell) -> dict:
    """id -> name of the variables a checkpoint saves (not IPython's own)."""
    from . import usernames

    ns, hidden = shell.user_ns, getattr(shell, "user_ns_hidden", {})
    return {id(v): k for k, v in list(ns.items()) if isinstance(k, str) and k.isidentifier() and not (
        k in hidden and hidden[k] is v) and not usernames.managed(k, v, ns)}


def capture(shell, count: int) -> dict:
    """{"outputs": [[n, ref]...], "unders": [ref of _, __, ___]} of the
    cells before `count`; {} without outputs."""
    manager, hook = getattr(shell, "history_manager", None), getattr(shell, "displayhook", None)
    shown = getattr(manager, "output_hist", None)
    if not isinstance(shown, dict) or not shown:
        return {}
    names = variables_by_id(shell)
    saved = {"outputs": [[n, _ref(v, names)] for n, v in sorted(shown.items(), key=lambda item: item[0])
                         if type(n) is int and 1 <= n < count]}
    # IPython's own _ (not one the user bound): its displayhook's
    if hook is not None and all(shell.user_ns.get(u, _MISSING) is getattr(hook, u, None) for u in UNDERS):
        saved["unders"] = [_ref(getattr(hook, u), names) for u in UNDERS]
    return saved


def _valid_ref(ref) -> bool:
    if isinstance(ref, dict) and "numpy" in ref:
        return (len(ref) == 2 and isinstance(ref["numpy"], str) and _NUMPY_DTYPE.fullmatch(ref["numpy"]) is not None
                and type(ref.get("value")) in (int, bool, float))
    return ref is None or (isinstance(ref, dict) and len(ref) == 1 and (
        isinstance(ref.get("var"), str) or type(ref.get("value", _MISSING)) in (int, bool, float, str)))


def _entry(o) -> bool:
    """[n, {...}, ...]: a cell's output, of whatever kind."""
    return isinstance(o, list) and len(o) >= 2 and type(o[0]) is int and isinstance(o[1], dict)


# What this kernel knows of the saved outputs (forward.py): a kind of output a newer kernel saves (a new ref, a
# longer entry) is that cell's output not carried, named; the others and the rest of the history still restored.
SHAPE = {"outputs": [Values(_entry, lambda o: len(o) == 2 and _valid_ref(o[1]), lambda o, _: f"Out[{o[0]}]")],
         "unders": [Values(lambda r: isinstance(r, dict), _valid_ref, lambda r, _: "_, __ or ___ (a recent output)",
                           instead=None)]}


def valid(history: dict, count: int) -> bool:
    outputs, unders = history.get("outputs", []), history.get("unders", [None] * 3)
    return (isinstance(outputs, list) and all(
        isinstance(o, list) and len(o) == 2 and type(o[0]) is int and 1 <= o[0] < count and _valid_ref(o[1])
        for o in outputs) and isinstance(unders, list) and len(unders) == 3 and all(map(_valid_ref, unders)))


def _resolve(ref, ns: dict):
    if ref is None:
        return _MISSING
    if "numpy" in ref:
        np = sys.modules.get("numpy")  # loaded by the variables that needed it; else not imported for an output
        if np is None:
            return _MISSING
        try:
            return np.dtype(ref["numpy"]).type(ref["value"])
        except (TypeError, ValueError, OverflowError):  # a value its dtype cannot hold: a file made by hand
            return _MISSING
    return ns.get(ref["var"], _MISSING) if "var" in ref else ref["value"]


def restore(shell, history: dict) -> list[str]:
    """Out, _<n> and _, __, ___ as saved, into a shell whose history was
    just restored; problems name the outputs not carried."""
    outputs, unders = history.get("outputs", []), history.get("unders")
    shown = getattr(getattr(shell, "history_manager", None), "output_hist", None)
    if not outputs or not isinstance(shown, dict):
        return []
    missing, push = [], {}
    for n, ref in outputs:
        value = _resolve(ref, shell.user_ns)
        if value is _MISSING:
            missing.append(n)
            continue
        shown[n] = value  # Out and _oh are this dict
        push[f"_{n}"] = value
    lost = []
    if unders:
        hook = shell.displayhook
        for under, ref in zip(UNDERS, unders):
            value = _resolve(ref, shell.user_ns)
            if value is _MISSING:
                lost.append(under)
                continue
            setattr(hook, under, value)  # IPython's own again: the next output moves them on
            push[under] = value
    shell.push(push, interactive=False)
    if not missing:
        return []
    cells = ", ".join(f"Out[{n}]" for n in missing[-5:])
    unders_note = f"; {' and '.join(lost)} read{'s' if len(lost) == 1 else ''} ''" if lost else ""
    return [f"the outputs of {len(missing)} cell(s) are not carried ({'..., ' if len(missing) > 5 else ''}{cells}: "
            f"neither a variable's value nor a number or short text){unders_note}; re-run those cells for them"]
