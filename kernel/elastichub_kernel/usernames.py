"""Which names of the notebook's namespace are IPython's (or Python's), not
the user's: engine.user_variable_names saves all others.

IPython's own: the module dunders it sets (``__name__``, ``__builtins__``,
...), the input history (``_i``, ``_ii``, ``_iii``, ``_i<n>``: set again by
every cell) and the output cache (``_``, ``__``, ``___``, ``_<n>``: the
cells' outputs, not carried). A name of these a user bound is theirs and
saved: ``quotient, _ = divmod(17, 5)``, ``___ = "three"``, ``_3 = weights``
(IPython itself then stops updating ``_``, ``__`` and ``___``: it sees the
user's binding, and so does the restored kernel). Dunders a user binds
(``__version__``, ``__all__``, an annotation's ``__annotations__``) are
variables like any other.
"""

from __future__ import annotations

import re
import sys

# Set by IPython in a new namespace (its user_ns_hidden holds them too), or by
# Python itself (warnings' per-module registry): never the user's values.
_MANAGED_DUNDERS = frozenset({"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__builtin__",
                              "__builtins__", "__session__", "__warningregistry__"})
_INPUTS = re.compile(r"^_i{1,3}$|^_i\d+$")
_OUTPUT_N = re.compile(r"^_(\d+)$")
_UNDERS = ("_", "__", "___")
_MISSING = object()


def managed(name: str, value, ns: dict) -> bool:
    """``name`` holds IPython's (or Python's) value, not one the user bound."""
    if name in _MANAGED_DUNDERS or _INPUTS.match(name):
        return True
    if name in _UNDERS:
        return not _users_own_under(name, value, ns)
    n = _OUTPUT_N.match(name)
    if n:  # `_3 = ...` typed by the user holds something other than that cell's output
        outputs = ns.get("_oh")
        return not (isinstance(outputs, dict) and outputs.get(int(n.group(1)), _MISSING) is not value)
    return False


def _users_own_under(name: str, value, ns: dict) -> bool:
    """IPython's displayhook keeps its ``_``, ``__``, ``___``; the
    namespace's differs when the user bound it (IPython's own test)."""
    interactive = sys.modules.get("IPython.core.interactiveshell")
    shell = interactive.InteractiveShell._instance if interactive is not None else None
    hook = getattr(shell, "displayhook", None) if getattr(shell, "user_ns", None) is ns else None
    if hook is None:
        return False  # no shell of this namespace to ask: IPython's, as before
    return getattr(hook, name, _MISSING) is not value
