"""%elastic_checkpoint, %elastic_restore, %elastic_status."""

from __future__ import annotations

import json
import os
import sys

from IPython.core.magic import Magics, line_magic, magics_class

from . import context


@magics_class
class ElasticMagics(Magics):
    def __init__(self, shell, kernel):
        super().__init__(shell)
        self.kernel = kernel
        # The global random generator's state at start: moved since, it is the session's own stream
        self._random_at_start = context._generator_states().get("random")

    @line_magic
    def elastic_checkpoint(self, line=""):
        """Write a checkpoint of the namespace now."""
        reply = self.kernel.checkpoint_now(force=True)
        if not reply["ok"]:
            print(f"ElasticHub: checkpoint failed: {reply['error']}")
            return
        if reply.get("note"):  # nothing written (after the user's restart, nothing of the user's yet)
            print(f"ElasticHub: no checkpoint written: {reply['note']}.")
            return
        if reply.get("warning") in self.kernel._notes:  # said here, not again in the next cell
            self.kernel._notes.remove(reply["warning"])
            print(reply["warning"])
        print(f"ElasticHub: checkpoint written to {reply['path']} ({reply['bytes']} bytes, "
              f"{reply['seconds']:.2f} s): {len(reply['migrated'])} saved, {len(reply['recomputed'])} to recompute.")
        for item in reply["not_restorable"]:
            print(f"  not restorable: {item['name']}: {item['reason']}")

    @line_magic
    def elastic_restore(self, line=""):
        """Bring back the last checkpoint of this notebook into the namespace.
        Variables of this session that the checkpoint also holds take the
        checkpoint's value, and are named; the others are kept."""
        from . import userhooks, usermodules
        from .engine import user_variable_names

        ns = self.shell.user_ns
        names = user_variable_names(ns, self.shell.user_ns_hidden)
        modules = usermodules.own_namespaces()  # the checkpoint's values of them are set again too
        # References to small values only (compared after): holding a large
        # array of the session would double the memory the restore needs.
        small = {name: ns[name] for name in names if _small(ns[name])}
        own_context = _own_context(self.kernel._context(), self._random_at_start)
        before = self.kernel.restored
        with userhooks.session_registrations(self.shell):  # the checkpoint's are these again, not others
            note = self.kernel.restore_checkpoint()
        print(note or "ElasticHub: no checkpoint to restore for this notebook.")
        report = self.kernel.restored
        if report is None or report is before:
            return  # nothing was restored
        restored = set(report["migrated"]) | set(report["recomputed"])
        replaced = [name for name in names if name in restored and not _same(small, name, ns)]
        replaced += [f"{module}.{attr}" for module, values in modules.items() for attr, old in values.items()
                     if not attr.startswith("__") and not _kept(old, getattr(sys.modules.get(module), attr, old))]
        kept = [name for name in names if name not in restored]
        if replaced:
            print("This session's own value of " + _listed(replaced) + " was REPLACED by the checkpoint's "
                  "(re-run the cells that set it to get it back).")
        # The process context goes back to the checkpoint's too: said the same way (values never shown).
        changed = [what for what, value in own_context.items() if _context_value(what) != value]
        if changed:
            print("This session's own process context was REPLACED by the checkpoint's: "
                  + _listed([_CONTEXT_LABELS[what[0]].format(*what[1:]) for what in changed])
                  + " (set again what you need of this session's).")
        if kept:
            print("Kept as this session had them: " + _listed(kept) + ".")

    @line_magic
    def elastic_status(self, line=""):
        """Show the last checkpoint (when, how large, what it saved and what not) and the last restore;
        ``--json``: the kernel's raw status, for the course staff."""
        args = line.split()
        if args == ["--json"]:
            print(json.dumps(self.kernel.status(), indent=1, default=str))
        elif args:
            print(f"ElasticHub: %elastic_status takes no {' '.join(args)!r}; usage: %elastic_status [--json]")
        else:
            from .statusview import summary

            print(summary(self.kernel.status()))


_SMALL_TYPES = (type(None), bool, int, float, complex, str, bytes, type(json))  # type(json): a module


def _small(value) -> bool:
    return type(value) in _SMALL_TYPES and (not isinstance(value, (str, bytes)) or len(value) <= 4096)


def _same(small: dict, name: str, ns: dict) -> bool:
    """The restored value of `name` is the session's own (a module imported
    again, an equal number or string). Anything larger counts as replaced."""
    return name in small and name in ns and _kept(small[name], ns[name])


def _kept(old, new) -> bool:
    """A module's value after the restore is the session's own: the same
    object, or an equal one of the same type (a dict set back unchanged)."""
    if new is old:
        return True
    try:
        return type(new) is type(old) and bool(new == old)
    except Exception:  # an == that raises (arrays): not provably the same
        return False


_CONTEXT_LABELS = {"env": "environment variable {}", "cwd": "working directory", "path": "sys.path",
                   "recursion_limit": "recursion limit", "locale": "locale {}",
                   "random": "the random module's stream", "numpy": "numpy's global random stream"}


def _context_value(what: tuple):
    kind = what[0]
    if kind == "env":
        return os.environ.get(what[1])
    if kind == "cwd":
        return context._cwd()
    if kind == "path":
        return tuple(p for p in sys.path if isinstance(p, str))
    if kind == "recursion_limit":
        return sys.getrecursionlimit()
    if kind == "locale":
        return context._locales().get(what[1])
    return context._generator_states().get(kind)  # random, numpy


def _own_context(start, random_at_start) -> dict:
    """What this session changed in the process context since the kernel
    started (the part a restore sets): {(kind, name...): its value}."""
    own: dict = {}
    for name in sorted(set(os.environ) | set(start.environ)):
        if context._session_variable(name) and os.environ.get(name) != start.environ.get(name):
            own[("env", name)] = os.environ.get(name)
    starts = {("cwd",): start.cwd, ("path",): start.path, ("recursion_limit",): start.recursion_limit,
              ("random",): random_at_start, ("numpy",): None}  # numpy: loaded by the session
    starts.update({("locale", category): value for category, value in start.locale.items()})
    for what, at_start in starts.items():
        value = _context_value(what)
        if value is not None and value != at_start:
            own[what] = value
    return own


def _listed(names: list, most: int = 20) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
