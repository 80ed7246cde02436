"""IPython modes a session switches with magics that are neither settings
%config sees nor variables: the shell aliases it defines (``%alias lsdata
ls -l data/``, ``%unalias``), automatic debugging (``%pdb on``), whether
``%doctest_mode`` is on, and the session log (``%logstart -o
session_log.py append``). They live in the shell object (its magics
table, ``call_pdb``, ``meta``, its logger), so a restore
lost them without a word: ``%lsdata`` was "not found", the next failing
cell no longer opened the debugger, and the log recorded no more cells. Saved with the session's
context (context.py, through shellstate.py) as the difference from the
shell at start, and set again at restore.
"""

from __future__ import annotations

import os
import sys

LOG_FIELDS = ("path", "output", "raw", "timestamp", "active")
# What %doctest_mode keeps in shell.meta: whether it is on, and the values it puts back when turned off.
DOCTEST_FIELDS = ("mode", "rc_pprint", "xmode", "rc_separate_out", "rc_separate_out2", "rc_separate_in",
                  "rc_active_types")


def _aliases(shell) -> dict:
    manager = getattr(shell, "alias_manager", None)
    try:
        return {name: cmd for name, cmd in manager.aliases if isinstance(cmd, str)}
    except Exception:  # no alias manager (a shell without one): nothing to carry
        return {}


def baseline(shell) -> dict:
    """The aliases, %pdb and whether a log is kept at start (the kernelspec's config may set each)."""
    return {"aliases": _aliases(shell), "pdb": bool(getattr(shell, "call_pdb", False)),
            "log": getattr(getattr(shell, "logger", None), "logfile", None) is not None,
            "doctest": bool(_doctest(shell).get("mode")), "redirected": _redirected(shell)}


# The standard streams when the running cell began; empty between cells. A checkpoint the cell takes
# (%elastic_checkpoint) may run inside the cell's own capture (%%capture, `with redirect_stdout(buf):`), which
# ends with the cell: the session's streams are those the cell found (set by the kernel around each cell).
_CELL_START: dict = {}


def cell_starts() -> None:
    _CELL_START.update(stdout=getattr(sys, "stdout", None), stderr=getattr(sys, "stderr", None))


def cell_ends() -> None:
    _CELL_START.clear()


def _redirected(shell) -> dict:
    """{"stdout": what it writes to} for each standard output stream that is not the kernel's (a
    ``redirect_stdout(buf).__enter__()`` not left, ``sys.stdout = buf``): the variable holding it, else its
    type. A restore gives the new kernel's streams (print shows in the notebook again): said, not done silently.
    Only a redirect that outlives a cell is the session's: during a cell, one it began with and has not left."""
    from .idioms3 import kernel_stream
    from .outputs import variables_by_id

    def own(target, name) -> bool:
        return target is None or target is getattr(sys, f"__{name}__", None) or kernel_stream(target)

    streams, names = {}, None
    for name in ("stdout", "stderr"):
        target = _CELL_START[name] if name in _CELL_START else getattr(sys, name, None)
        if own(target, name) or own(getattr(sys, name, None), name):  # none, or the cell left it: not after the cell
            continue
        names = variables_by_id(shell) if names is None else names
        streams[name] = names.get(id(target)) or f"a {type(target).__name__} no variable holds"
    return streams


def _doctest(shell) -> dict:
    """%doctest_mode's state: its prompts, plain tracebacks and printing are settings carried as the others are
    (%config, %xmode); this is what says it is on, and what turning it off puts back. Without it, after a move
    the next %doctest_mode turned it on again, and took the doctest values for the ones to go back to."""
    state = getattr(shell, "meta", {}).get("doctest_mode")
    if not isinstance(state, dict):
        return {}
    return {key: state[key] for key in DOCTEST_FIELDS if key in state and _plain(state[key])}


def _plain(value) -> bool:
    return value is None or isinstance(value, (bool, str)) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value))


def _log(shell) -> dict | None:
    """{"path", "output", "raw", "timestamp", "active"} of the log %logstart keeps, {"path": None} when its file
    cannot be named (moved since, or a relative name and the working directory changed), None without one."""
    logger = getattr(shell, "logger", None)
    logfile = getattr(logger, "logfile", None)
    if logfile is None:
        return None
    path = os.path.abspath(str(logger.logfname))
    try:
        found = os.path.samestat(os.fstat(logfile.fileno()), os.stat(path))
    except (OSError, ValueError, AttributeError, TypeError):  # closed, not a file
        found = False
    return {"path": path if found else None, "output": bool(logger.log_output), "raw": bool(logger.log_raw_input),
            "timestamp": bool(logger.timestamp), "active": bool(logger.log_active)}


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
    log = None if at_start.get("log") else _log(shell)
    if log:
        saved["log"] = log
    doctest = _doctest(shell)
    if bool(doctest.get("mode")) != at_start.get("doctest", False):
        saved["doctest"] = doctest
    redirected = {name: to for name, to in _redirected(shell).items() if name not in at_start.get("redirected", {})}
    if redirected:
        saved["redirected"] = redirected
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
    if "doctest" in saved and hasattr(shell, "meta"):
        from IPython.utils.ipstruct import Struct  # IPython's own: loaded with the shell

        shell.meta["doctest_mode"] = Struct(saved["doctest"])
        shell.switch_doctest_mode(bool(saved["doctest"].get("mode")))  # a frontend's own prompts, as the magic
    for name, to in saved.get("redirected", {}).items():
        problems.append(f"sys.{name} wrote to {to} (a redirect_{name} entered and not left, or sys.{name} = ...); "
                        f"after the move it writes to the notebook again: set it again if you still want that")
    return problems + _restore_log(shell, saved.get("log"))


def _restore_log(shell, log: dict | None) -> list[str]:
    """Go on with the session log, appended to (never %logstart's over/backup/rotate again: the log so far stays)."""
    logger = getattr(shell, "logger", None)
    if not log or logger is None or logger.logfile is not None:  # none, or one this kernel keeps already
        return []
    if log["path"] is None:
        return ["the session log %logstart kept is not carried (its file moved since, or was named relative to "
                "a working directory the notebook left): run %logstart again"]
    try:
        logger.logstart(log["path"], loghead="", logmode="append", log_output=log["output"],
                        timestamp=log["timestamp"], log_raw_input=log["raw"])
    except (OSError, RuntimeError) as exc:
        return [f"the session log {log['path']} was not started again ({type(exc).__name__}: {exc}): run %logstart"]
    logger.log_active = log["active"]  # %logoff'd: kept off, as before
    return []


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
    redirected = saved.get("redirected", {})
    if not (isinstance(redirected, dict) and set(redirected) <= {"stdout", "stderr"}
            and all(isinstance(v, str) for v in redirected.values())):
        raise ValueError("redirected")
    doctest = saved.get("doctest", {})
    if not (isinstance(doctest, dict) and set(doctest) <= set(DOCTEST_FIELDS) and all(map(_plain, doctest.values()))
            and isinstance(doctest.get("mode", False), bool)):
        raise ValueError("doctest")
    log = saved.get("log")
    if log is not None and not (isinstance(log, dict) and set(log) == set(LOG_FIELDS)
                                and (log["path"] is None or isinstance(log["path"], str) and os.path.isabs(log["path"]))
                                and all(isinstance(log[k], bool) for k in ("output", "raw", "timestamp", "active"))):
        raise ValueError("log")
