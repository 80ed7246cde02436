"""IPython modes a session switches with magics that are neither settings
%config sees nor variables: the shell aliases it defines (``%alias lsdata
ls -l data/``, ``%unalias``) and automatic debugging (``%pdb on``). They
live in the shell object (its magics table, ``call_pdb``), so a restore
lost them without a word: ``%lsdata`` was "not found", and the next
failing cell no longer opened the debugger. Saved with the session's
context (context.py, through shellstate.py) as the difference from the
shell at start, and set again at restore.
"""

from __future__ import annotations


def _aliases(shell) -> dict:
    manager = getattr(shell, "alias_manager", None)
    try:
        return {name: cmd for name, cmd in manager.aliases if isinstance(cmd, str)}
    except Exception:  # no alias manager (a shell without one): nothing to carry
        return {}


def baseline(shell) -> dict:
    """The aliases and %pdb at start (the kernelspec's config may set either)."""
    return {"aliases": _aliases(shell), "pdb": bool(getattr(shell, "call_pdb", False))}


def capture(shell, at_start: dict | None) -> dict:
    """{"aliases": {name: command} defined or changed since start, "unaliased": [name], "pdb": bool}, each
    only where it differs."""
    if not at_start:
        return {}
    saved: dict = {}
    now, before = _aliases(shell), at_start.get("aliases", {})
    defined = {name: cmd for name, cmd in now.items() if before.get(name) != cmd}
    if defined:
        saved["aliases"] = defined
    removed = sorted(set(before) - set(now))
    if removed:
        saved["unaliased"] = removed
    pdb = bool(getattr(shell, "call_pdb", False))
    if pdb != at_start.get("pdb", False):
        saved["pdb"] = pdb
    return saved


def restore(shell, saved: dict) -> list[str]:
    """Define the aliases again, remove those removed, set %pdb; problems as lines."""
    problems = []
    manager = getattr(shell, "alias_manager", None)
    for name, cmd in saved.get("aliases", {}).items():
        try:
            manager.define_alias(name, cmd)
        except Exception as exc:  # IPython's own check of the alias (a name a magic holds)
            problems.append(f"the alias %{name} ({cmd}) was not defined again ({type(exc).__name__}: {exc})")
    for name in saved.get("unaliased", []):
        if manager is not None and manager.is_alias(name):
            manager.undefine_alias(name)
    if "pdb" in saved:
        shell.call_pdb = saved["pdb"]
    return problems


def checked(saved: dict) -> None:
    """ValueError naming the field when "aliases", "unaliased" or "pdb" is malformed."""
    aliases = saved.get("aliases", {})
    if not (isinstance(aliases, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in aliases.items())):
        raise ValueError("aliases")
    removed = saved.get("unaliased", [])
    if not (isinstance(removed, list) and all(isinstance(v, str) for v in removed)):
        raise ValueError("unaliased")
    if not isinstance(saved.get("pdb", False), bool):
        raise ValueError("pdb")
