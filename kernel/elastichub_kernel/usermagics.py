"""The notebook's own magics (``@register_line_magic def hello(line)``,
``get_ipython().register_magic_function(f, "cell", "sql")``): IPython's
registration lives in its magics manager, which a restore does not carry,
so ``%hello`` was "not found" after one, though ``hello`` itself came back.
Each magic made from a notebook function that a variable holds is saved
by that variable's name (in the session's context, context.py) and
registered again once the variables are loaded; the others (a lambda no
variable holds, a ``Magics`` class of the notebook's: registering it again
would run its ``__init__``) are named in the restore report.
"""

from __future__ import annotations

import types

from .forward import Kinds

KINDS = ("line", "cell")


def notebook_function(fn, user_ns) -> bool:
    """Whether `fn` is a function the notebook defined (its cells' globals, or __main__'s), not a library's."""
    return isinstance(fn, types.FunctionType) and (fn.__globals__ is user_ns or fn.__module__ == "__main__")


def _shown(kind: str, name: str) -> str:
    return ("%" if kind == "line" else "%%") + name


def capture(shell) -> dict:
    """{"magics": [[kind, magic name, variable]...], "magics_lost": [shown name...]}, or {}."""
    from .outputs import variables_by_id

    table = getattr(getattr(shell, "magics_manager", None), "magics", None)
    if not isinstance(table, dict):
        return {}
    user_ns, names = shell.user_ns, None
    kept, lost = [], []
    for kind in KINDS:
        for name, fn in list(table.get(kind, {}).items()):
            owner = getattr(fn, "__self__", None)
            if notebook_function(fn, user_ns):
                names = variables_by_id(shell) if names is None else names
                var = names.get(id(fn))
                if var is not None:
                    kept.append([kind, name, var])
                    continue
            elif getattr(type(owner), "__module__", None) != "__main__":
                continue  # a library's or IPython's own
            lost.append(_shown(kind, name))
    return {**({"magics": kept} if kept else {}), **({"magics_lost": lost} if lost else {})}


# What this kernel saves (forward.py): a magic of a kind a newer kernel carries is left out, named.
SHAPE = [Kinds(0, KINDS.__contains__)]


def checked(saved: dict) -> None:
    kept, lost = saved.get("magics", []), saved.get("magics_lost", [])
    if not (isinstance(kept, list) and all(isinstance(m, list) and len(m) == 3 and m[0] in KINDS
                                           and all(isinstance(v, str) for v in m) for m in kept)):
        raise ValueError("magics")
    if not (isinstance(lost, list) and all(isinstance(v, str) for v in lost)):
        raise ValueError("magics_lost")


def restore(shell, saved: dict) -> list[str]:
    """Register the saved magics again (once the variables are loaded); problems as lines."""
    problems = []
    for kind, name, var in saved.get("magics", []):
        fn = shell.user_ns.get(var)
        if not isinstance(fn, types.FunctionType):
            problems.append(f"the magic {_shown(kind, name)} is not carried: {var}, its function, was not restored")
            continue
        shell.register_magic_function(fn, kind, name)
    lost = saved.get("magics_lost", [])
    if lost:
        problems.append(f"the notebook's magic(s) {', '.join(lost)} are not carried (no variable holds their "
                        "function, or they are methods of a Magics class): run the cells that made them again")
    return problems
