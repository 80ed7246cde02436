"""IPython's own state that a session sets with magics: the extensions it
loaded (`%load_ext autoreload`, `sql`, ...), autoreload's mode
(`%autoreload 2`), how floats print (`%precision 3`), how tracebacks do
(`%xmode Minimal`), and what `%config` set
(`%config InteractiveShell.ast_node_interactivity = "all"`,
`%config InlineBackend.figure_format = "retina"`): the configurable
settings of the shell's parts that differ from their values at start.
Also the cell history: the execution counter (cell numbers go on where
they were) and the cells' sources (``In``, ``_i<n>``, ``%history``),
``%cd``'s history and ``%pushd``'s stack, and
their outputs where they cost nothing (outputs.py); and the magics the
notebook's own functions make (usermagics.py), and the event callbacks
and input transformers they are (userhooks.py). When the last cell failed,
its error is named at the restore: its traceback holds the old kernel's
frames and is not carried, and `%debug` and `%tb` said there was none.
Saved with the session's context (context.py) and set again once the
variables are loaded: after a move, editing a helper module still takes
effect in the next cell, and a cell shows the outputs it showed before.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import PurePath

from . import outputs, shellmodes, userhooks, usermagics
from .forward import Values

HISTORY_FIELDS = ("count", "in", "raw", "cut", "outputs", "unders")

AUTORELOAD_MODES = ("0", "1", "2", "3")
# The cells' sources kept, at most (characters): older cells past it come back as ''.
HISTORY_MAX_CHARS = 1_000_000
XMODES = ("Plain", "Context", "Verbose", "Minimal", "Docs")
# The values a newer IPython (or kernel) adds to these settings are left out and named (forward.py), the rest
# of the context restored; a value of another type is still rejected by name (checked).
XMODE_SHAPE = Values(lambda v: isinstance(v, str), XMODES.__contains__, lambda v, _: f"%xmode {v}")
AUTORELOAD_SHAPE = Values(lambda v: isinstance(v, str), AUTORELOAD_MODES.__contains__,
                          lambda v, _: f"%autoreload {v}")
HISTORY_SHAPE = {**dict.fromkeys(HISTORY_FIELDS), **outputs.SHAPE}
_DEFAULT_XMODE = "Context"


def loaded_extensions(shell) -> frozenset:
    manager = getattr(shell, "extension_manager", None)
    return frozenset(getattr(manager, "loaded", None) or ())


def capture(shell, at_start: frozenset, config_at_start: dict | None = None) -> dict:
    """The extensions loaded since start, autoreload's mode if loaded, the
    print modes, and the settings changed since `config_at_start`
    (`config_baseline`)."""
    saved: dict = {}
    added = sorted(loaded_extensions(shell) - at_start)
    if added:
        saved["extensions"] = added
    mode = _autoreload_mode(shell)
    if mode is not None:
        saved["autoreload"] = mode
        saved.update(_aimported(shell))
    precision = getattr(_plain_formatter(shell), "float_precision", "")
    if precision:
        saved["precision"] = precision
    xmode = getattr(getattr(shell, "InteractiveTB", None), "mode", _DEFAULT_XMODE)
    if xmode != _DEFAULT_XMODE and xmode in XMODES:
        saved["xmode"] = xmode
    history = _history(shell)
    if history:
        saved["history"] = history
    saved.update(_directories(shell))
    saved.update(usermagics.capture(shell))
    saved.update(userhooks.capture(shell))
    saved.update(_last_error(shell))
    if config_at_start is not None:
        saved.update(shellmodes.capture(shell, config_at_start.get("modes")))
        changed, unsaved = _config_changes(shell, config_at_start)
        if changed:
            saved["config"] = changed
        if unsaved:
            saved["config_unsaved"] = unsaved
    return saved


_UNSET = object()


def config_baseline(shell) -> dict:
    """{id(part): (part, {setting: value})}: every configurable setting of
    the shell's parts at start (what %config changes), and under None the
    shell's config (where %config puts settings of a part not made yet);
    under "modes" the aliases and %pdb (shellmodes.py)."""
    baseline = {id(part): (part, {name: _plain(getattr(part, name, _UNSET)) for name in _settings(part)})
                for part in _parts(shell)}
    baseline[None] = _config_sections(shell)
    baseline["modes"] = shellmodes.baseline(shell)
    return baseline


def _config_sections(shell) -> dict:
    config = getattr(shell, "config", None) or {}
    return {name: {key: _plain(value) for key, value in section.items()}
            for name, section in config.items() if isinstance(section, dict)}


def _parts(shell) -> list:
    """The shell's configurable parts, as %config finds them, and its display formatters (`%pprint` turns the
    plain one's pretty printing off, a cell sets `formatters["text/html"].enabled = False`: not parts %config
    lists, and lost by a move without a word); the kernel's application is not one a session sets (its ports,
    its files)."""
    from traitlets.config import Application

    parts = [part for part in getattr(shell, "configurables", ()) if not isinstance(part, Application)]
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    for part in (formatters.values() if isinstance(formatters, dict) else ()):
        if not any(part is known for known in parts):
            parts.append(part)
    return parts


# A display formatter's tables of printers: the libraries set theirs up again as they are imported (the inline
# backend's for figures), the notebook's own are userhooks.py's; not settings a session makes with %config.
_PRINTER_TABLES = frozenset({"type_printers", "deferred_printers", "singleton_printers"})


def _settings(part) -> list[str]:
    return sorted(name for name in type(part).class_traits(config=True) if name not in _PRINTER_TABLES)


def _plain(value):
    """`value` as JSON holds it (a set as a sorted list), else an _Unplain."""
    if isinstance(value, (set, frozenset)):
        try:
            value = sorted(value)
        except TypeError:  # members of different types
            return _Unplain(value)
    try:
        copy = json.loads(json.dumps(value, allow_nan=False))  # a copy: a list changed in place still differs
    except (TypeError, ValueError):
        return _Unplain(value)
    return copy if copy == value else _Unplain(value)


class _Unplain:
    """A value JSON cannot hold: compared by identity with the one at start."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Unplain) and other.value is self.value

    __hash__ = None


def _config_changes(shell, at_start: dict) -> tuple[dict, list[str]]:
    changed: dict = {}
    unsaved: list[str] = []

    def differs(name: str, setting: str, value) -> None:
        if isinstance(value, _Unplain):
            unsaved.append(f"{name}.{setting}")
        else:
            changed.setdefault(name, {})[setting] = value

    for part in _parts(shell):
        name = type(part).__name__
        start = at_start.get(id(part), (None, None))
        for setting in _settings(part):
            value = _plain(userhooks.others(setting, getattr(part, setting, _UNSET), shell.user_ns))
            if start[0] is part:
                before = start[1].get(setting, _UNSET)
            else:  # a part made since (InlineBackend, once a plot is drawn): against its defaults
                try:
                    before = _plain(part.trait_defaults(setting))
                except Exception:  # a default only its instance can compute
                    continue
            if value != before and not (isinstance(value, _Unplain) and value.value is _UNSET):
                differs(name, setting, value)
    made = {type(part).__name__ for part in _parts(shell)}
    start = at_start.get(None, {})
    for name, section in _config_sections(shell).items():
        for setting, value in section.items() if name not in made else ():
            if value != start.get(name, {}).get(setting, _UNSET):
                differs(name, setting, value)
    return changed, sorted(set(unsaved))


def _history(shell) -> dict:
    """{"count": the next cell's number, "in": In, "raw": the sources as typed (None: as In), "cut": the
    number of oldest cells whose source is left out}, or {} when no cell has run."""
    manager = getattr(shell, "history_manager", None)
    count = getattr(shell, "execution_count", None)
    if manager is None or not isinstance(count, int):
        return {}
    parsed, raw = list(manager.input_hist_parsed), list(manager.input_hist_raw)
    if len(parsed) != len(raw) or len(parsed) <= 1:
        return {}
    # In a cell (%elastic_checkpoint) that cell is in In already: the next one comes after it.
    count = max(count, len(parsed))
    parsed += [""] * (count - len(parsed))
    raw = [r if r != p else None for p, r in zip(parsed, raw + [""] * (count - len(raw)))]
    cut, budget = 0, HISTORY_MAX_CHARS
    for n in range(count - 1, 0, -1):  # newest first: the oldest are left out past the budget
        budget -= len(parsed[n]) + len(raw[n] or "")
        if budget < 0:
            cut = n
            break
    for n in range(1, cut + 1):
        parsed[n], raw[n] = "", None
    return {"count": count, "in": parsed, "raw": raw, **({"cut": cut} if cut else {}), **outputs.capture(shell, count)}


# (history manager id, execution count) a restore left: a later restore may replace what it set.
_history_restored: tuple | None = None


def _restore_history(shell, saved: dict) -> list[str]:
    """Set the execution counter and In as saved, into a shell that ran no
    cell of its own yet (a start, a live move): a session's own cells, run
    before %elastic_restore, keep their numbers."""
    global _history_restored
    history, manager = saved.get("history"), getattr(shell, "history_manager", None)
    if not history or manager is None:
        return []
    count = shell.execution_count
    fresh = (count == 1 and len(manager.input_hist_parsed) == 1) or (
        _history_restored == (id(manager), count) and len(manager.input_hist_parsed) == count)
    if not fresh:
        return []
    parsed = history["in"]
    raw = [p if r is None else r for p, r in zip(parsed, history["raw"])]
    manager.input_hist_parsed[:] = parsed  # in place: In and _ih are this list
    manager.input_hist_raw[:] = raw
    shell.execution_count = history["count"]
    last = len(raw) - 1
    # What IPython's store_inputs leaves after the last cell: _i is the cell before it, _i<n> each cell.
    manager._i00, manager._i, manager._ii, manager._iii = (raw[last - k] if last - k >= 1 else ""
                                                           for k in range(4))
    shell.push({"_i": manager._i, "_ii": manager._ii, "_iii": manager._iii,
                **{f"_i{n}": raw[n] for n in range(1, len(raw))}}, interactive=False)
    _history_restored = (id(manager), history["count"])
    problems = outputs.restore(shell, history)
    cut = history.get("cut", 0)
    if cut:
        problems.append(f"the sources of cells 1-{cut} (In[1] to In[{cut}]) were not carried (the history is larger "
                        f"than {HISTORY_MAX_CHARS // 1_000_000} MB): they read ''")
    return problems


# Directories of `%cd`'s history kept, at most (the newest).
DIR_HISTORY_MAX = 1000


def _directories(shell) -> dict:
    """`%cd`'s history (`_dh`, what `%cd -` and `%dhist` read) and `%pushd`'s stack: after a move `%cd -` said
    "No previous directory", `%popd` "empty stack"."""
    saved = {}
    history, stack = _directory_lists(shell)
    # paths only: something else a cell appended to _dh is not a directory %cd can go back to
    if isinstance(history, list) and len(history) > 1:
        saved["dir_history"] = [str(d) for d in history[-DIR_HISTORY_MAX:] if isinstance(d, (str, PurePath))]
    if isinstance(stack, list) and stack:
        saved["dir_stack"] = [str(d) for d in stack[-DIR_HISTORY_MAX:] if isinstance(d, (str, PurePath))]
    return saved


def _directory_lists(shell) -> tuple:
    """(_dh, %pushd's stack): lists of the shell's (its history manager keeps _dh)."""
    return getattr(getattr(shell, "history_manager", None), "dir_hist", None), getattr(shell, "dir_stack", None)


def _restore_directories(shell, saved: dict) -> None:
    for key, now in zip(("dir_history", "dir_stack"), _directory_lists(shell)):
        if key in saved and isinstance(now, list):
            kind = type(now[0]) if now and isinstance(now[0], (str, os.PathLike)) else str
            now[:] = [kind(d) for d in saved[key]]  # in place: _dh is this list


def checked_directories(saved: dict) -> None:
    """ValueError naming the field when "dir_history" or "dir_stack" is malformed."""
    for key in ("dir_history", "dir_stack"):
        dirs = saved.get(key, [])
        if not (isinstance(dirs, list) and len(dirs) <= DIR_HISTORY_MAX and all(isinstance(d, str) for d in dirs)):
            raise ValueError(key)


def checked_history(saved: dict) -> None:
    """ValueError when the context's "history" is malformed."""
    history = saved.get("history")
    if history is None:
        return
    count = history.get("count") if isinstance(history, dict) else None
    if not (isinstance(count, int) and not isinstance(count, bool) and count >= 1
            and not set(history) - set(HISTORY_FIELDS)
            and isinstance(history.get("in"), list) and len(history["in"]) == count
            and all(isinstance(v, str) for v in history["in"]) and isinstance(history.get("raw"), list)
            and len(history["raw"]) == count and all(v is None or isinstance(v, str) for v in history["raw"])
            and isinstance(history.get("cut", 0), int) and 0 <= history.get("cut", 0) < count
            and outputs.valid(history, count)):
        raise ValueError("history")


def _last_error(shell) -> dict:
    """{"last_error": "ZeroDivisionError: division by zero"} when the last cell failed (the error %debug and %tb
    would show next), else {}."""
    value = getattr(sys, "last_value", None)
    if getattr(shell, "last_execution_succeeded", True) or not isinstance(value, BaseException):
        return {}
    from .serializer import describe_error  # loaded by the checkpoint this is part of

    try:
        return {"last_error": describe_error(value)}
    except Exception:  # an exception class of the notebook's whose __str__ fails
        return {"last_error": type(value).__name__}


def checked_last_error(saved: dict) -> None:
    if not isinstance(saved.get("last_error", ""), str):
        raise ValueError("last_error")


def _plain_formatter(shell):
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None) or {}
    return formatters.get("text/plain")


def _reloader(shell):
    registry = getattr(getattr(shell, "magics_manager", None), "registry", None) or {}
    return getattr(registry.get("AutoreloadMagics"), "_reloader", None)


def _aimported(shell) -> dict:
    """The modules `%aimport name` marked to reload (what `%autoreload 1` reloads) and `%aimport -name` marked
    never to (a module whose top-level code must not run again under `%autoreload 2`): after a move the one was
    reloaded no more, the other reloaded, running its code again, without a word."""
    reloader, saved = _reloader(shell), {}
    for key, marks in (("aimport", "modules"), ("aimport_skip", "skip_modules")):
        names = sorted(name for name in getattr(reloader, marks, None) or () if isinstance(name, str))
        if names:
            saved[key] = names
    return saved


def checked_autoreload(saved: dict) -> None:
    """ValueError naming the field when "aimport" or "aimport_skip" is malformed."""
    for key in ("aimport", "aimport_skip"):
        names = saved.get(key, [])
        if not (isinstance(names, list) and all(isinstance(n, str) and n for n in names)):
            raise ValueError(key)


def _autoreload_mode(shell) -> str | None:
    reloader = _reloader(shell)
    if reloader is None:
        return None
    if not getattr(reloader, "enabled", False):
        return "0"
    if getattr(reloader, "autoload_obj", False):
        return "3"
    return "2" if getattr(reloader, "check_all", False) else "1"


def restore(shell, saved: dict) -> list[str]:
    """Load the extensions again and set autoreload's mode; problems as lines."""
    problems = []
    for name in saved.get("extensions", []):
        try:
            shell.extension_manager.load_extension(name)
        except Exception as exc:  # an extension's own load code: anything may fail
            problems.append(f"the IPython extension {name} was not loaded again ({type(exc).__name__}: {exc})")
    mode = saved.get("autoreload")
    if mode is not None:
        try:
            shell.run_line_magic("autoreload", mode)
        except Exception as exc:
            problems.append(f"%autoreload {mode} was not set again ({type(exc).__name__}: {exc})")
    if mode is not None or "aimport" in saved or "aimport_skip" in saved:  # a newer mode left out: still marked
        problems += _restore_aimported(shell, saved)
    if "precision" in saved:
        try:
            _plain_formatter(shell).float_precision = saved["precision"]
        except Exception as exc:  # a format IPython refuses
            problems.append(f"%precision {saved['precision']} was not set again ({type(exc).__name__}: {exc})")
    if "xmode" in saved:
        shell.InteractiveTB.set_mode(mode=saved["xmode"])  # as %xmode does, without its message
    _restore_directories(shell, saved)
    if saved.get("last_error"):
        problems.append(f"the last cell failed ({saved['last_error']}), and its traceback is not carried (it holds "
                        "the old kernel's frames): %debug and %tb have none to show; run that cell again to inspect it")
    return (problems + _restore_config(shell, saved) + _restore_history(shell, saved) + usermagics.restore(shell, saved)
            + shellmodes.restore(shell, saved) + userhooks.restore(shell, saved))


def _restore_aimported(shell, saved: dict) -> list[str]:
    """Mark the modules as %aimport did (marking imports nothing: the variables' modules are loaded already)."""
    marked, skipped = saved.get("aimport", []), saved.get("aimport_skip", [])
    reloader = _reloader(shell)
    if reloader is None:
        lines = [f"%aimport {' '.join(marked)}"] * bool(marked) + [f"%aimport -{n}" for n in skipped]
        return [f"{'; '.join(lines)} was not set again (autoreload is not loaded here): run it again"] if lines else []
    for name in marked:
        reloader.mark_module_reloadable(name)
    for name in skipped:
        reloader.mark_module_skipped(name)
    return []


def _restore_config(shell, saved: dict) -> list[str]:
    """Set what %config set, as %config does; a part not made yet
    (InlineBackend before the first plot) finds it in the shell's config."""
    from traitlets.config import Config

    problems = []
    for name, settings in saved.get("config", {}).items():
        config = Config({name: settings})
        parts = [part for part in _parts(shell) if type(part).__name__ == name]
        if not parts:
            shell.config.merge(config)
        for part in parts:
            try:
                with warnings.catch_warnings():  # a deprecated alias (figure_format) warns
                    warnings.simplefilter("ignore")
                    part.update_config(config)
            except Exception as exc:  # the trait's own validation
                problems.append(f"%config {name} {settings} was not set again ({type(exc).__name__}: {exc})")
    for setting in saved.get("config_unsaved", []):
        problems.append(f"%config {setting} is not carried (its value cannot be saved): set it again")
    return problems


def checked_config(saved: dict) -> None:
    """ValueError when the context's "config" or "config_unsaved" is malformed."""
    config = saved.get("config", {})
    if not (isinstance(config, dict) and all(
            isinstance(name, str) and name.isidentifier() and isinstance(settings, dict)
            and all(isinstance(k, str) and k.isidentifier() for k in settings) for name, settings in config.items())):
        raise ValueError("config")
    unsaved = saved.get("config_unsaved", [])
    if not (isinstance(unsaved, list) and all(isinstance(v, str) for v in unsaved)):
        raise ValueError("config_unsaved")
