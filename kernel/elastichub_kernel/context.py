"""The session's process context, saved with its variables: the working
directory, the ``sys.path`` entries and the environment variables the
notebook changed. A notebook that ran ``%cd data``,
``sys.path.insert(0, "../src")`` or ``%env OMP_NUM_THREADS=4`` goes on
after a move as it was: its relative paths still resolve, and the modules
its variables were built with (imported through those entries) are found
again when they are loaded. A module imported through an entry that no
longer leads to it (a relative entry, then ``%cd`` elsewhere) is still
found: the directory it came from is kept too.

Only what the session changed is saved, as a difference from the kernel's
context when it started (its *baseline*): the rest is the new pod's own
(host name, service addresses). Variables the hub, the spawner or Jupyter
set per server (``JUPYTERHUB_*``, ``JPY_*``, ``ELASTICHUB_*``: tokens, URLs)
are never carried over. A changed ``TZ`` takes effect again (``time.tzset``),
and so do the locale categories the session set (``locale.setlocale``): a
locale this node lacks is named, not set. The global random generators (``random``, and
``numpy.random`` where the session loaded it) go on from where they were,
and the warning filters the session added still hold; IPython's
extensions and autoreload's mode too (shellstate.py), its logging
set-up (logstate.py), its libraries' display options (libstate.py) and
process settings such as ``sys.set_int_max_str_digits`` (procstate.py).
"""

from __future__ import annotations

import dataclasses
import importlib
import locale
import os
import re
import sys
import time
import warnings

from . import forward, libstate, logstate, procstate, shellmodes, shellstate, userhooks, usermagics

PLATFORM_PREFIXES = ("JUPYTERHUB_", "JPY_", "ELASTICHUB_")
_ACTIONS = ("default", "error", "ignore", "always", "module", "once")
# The categories LC_ALL is made of that a session sets (LC_PAPER & co. are glibc's, nothing in Python reads them).
LOCALE_CATEGORIES = tuple(name for name in ("LC_CTYPE", "LC_COLLATE", "LC_TIME", "LC_MONETARY", "LC_NUMERIC",
                                            "LC_MESSAGES") if hasattr(locale, name))


def _session_variable(name: str) -> bool:
    return not name.startswith(PLATFORM_PREFIXES)


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the directory was removed under the kernel
        return None


@dataclasses.dataclass(frozen=True)
class SessionContext:
    """The kernel's context at start; saves and restores the session's
    changes to it."""

    cwd: str | None
    path: tuple[str, ...]
    environ: dict
    modules: frozenset = frozenset()  # loaded already: the kernel's own, not the session's
    filters: tuple = ()  # warnings.filters
    shell: object = dataclasses.field(default=None, compare=False, repr=False)  # IPython's (shellstate.py)
    extensions: frozenset = frozenset()  # the shell's at start
    recursion_limit: int = 1000
    logging: dict = dataclasses.field(default=None, compare=False, repr=False)  # logstate.baseline()
    config: dict = dataclasses.field(default=None, compare=False, repr=False)  # shellstate.config_baseline()
    locale: dict = dataclasses.field(default_factory=dict)  # {category: locale name} at start
    process: dict = dataclasses.field(default_factory=dict)  # procstate.baseline(): gc, int digits...

    @classmethod
    def now(cls, shell=None) -> SessionContext:
        return cls(_cwd(), tuple(p for p in sys.path if isinstance(p, str)), dict(os.environ),
                   frozenset(sys.modules), tuple(warnings.filters), shell,
                   shellstate.loaded_extensions(shell) if shell is not None else frozenset(),
                   sys.getrecursionlimit(), logstate.baseline(),
                   shellstate.config_baseline(shell) if shell is not None else None, _locales(),
                   procstate.baseline())

    def capture(self) -> dict:
        """The session's changes since start (JSON-able; empty when none).
        An added ``sys.path`` entry is kept with the start entry it follows
        (None: before all of them), so it goes back in the same place."""
        saved: dict = {}
        cwd = _cwd()
        if cwd and cwd != self.cwd:
            saved["cwd"] = cwd
        if sys.getrecursionlimit() != self.recursion_limit:  # sys.setrecursionlimit(10_000): deep recursion
            saved["recursion_limit"] = sys.getrecursionlimit()
        process = procstate.capture(self.process)  # sys.set_int_max_str_digits(0), gc.disable()...
        if process:
            saved["process"] = process
        start = set(self.path)
        now = [p for p in sys.path if isinstance(p, str)]
        added, anchor, seen = [], None, set()
        for entry in now:
            if entry in start:
                anchor = entry
            elif entry not in seen:
                added.append([anchor, entry])
            seen.add(entry)
        if added:
            saved["path_added"] = added
        removed = [p for p in self.path if p not in seen]
        if removed:
            saved["path_removed"] = removed
        env = {k: v for k, v in os.environ.items() if _session_variable(k) and self.environ.get(k) != v}
        if env:
            saved["env"] = env
        unset = sorted(k for k in self.environ if k not in os.environ and _session_variable(k))
        if unset:
            saved["env_unset"] = unset
        # Cython's shared modules live inside packages under names of their
        # own: nothing under the start's library directories is stranded.
        at_start = _resolved(self.path, self.cwd)
        libraries = tuple(d + os.sep for d in at_start - {self.cwd})
        stranded = sorted(d for d in module_roots(self.modules) - at_start - _resolved(now, cwd)
                          if not (d + os.sep).startswith(libraries))
        if stranded:
            saved["import_roots"] = stranded
        locales = {k: v for k, v in _locales().items() if v != self.locale.get(k)}
        if ";" in locales.get("LC_ALL", ""):  # categories set apart: saved one by one
            del locales["LC_ALL"]
        if locales:
            saved["locale"] = locales
        generators = _generator_states()
        if generators:
            saved["random_state"] = generators
        filters = _filters_ahead(list(warnings.filters), list(self.filters))
        if filters:
            saved["warning_filters"] = [_filter_fields(f) for f in filters]
        if self.shell is not None:
            saved.update(shellstate.capture(self.shell, self.extensions, self.config))
        saved.update(logstate.capture(self.logging))
        saved.update(libstate.capture())
        return saved

    def restore(self, saved) -> tuple[list[str], list[str]]:
        """Make the context this kernel's start context changed as
        ``saved`` says (so applying a newer one replaces an older one).
        Returns (what was brought back, problems), lines for the user."""
        if saved is None:
            return [], []
        try:
            saved, unknown = known_part(saved)
            checked(saved)
        except ValueError as exc:
            return [], [f"the session's working directory, sys.path, environment, locale, recursion limit, process "
                        f"settings, random generators, warning filters, IPython extensions, cell history, logging and "
                        f"library options were not restored: the checkpoint's context is malformed ({exc})"]
        done, problems = [], [unknown_note(unknown)] if unknown else []
        env, unset = saved.get("env", {}), saved.get("env_unset", [])
        tz = os.environ.get("TZ")
        # What an earlier restore (or a cell) changed and this context does not: back to the start value.
        for name in [k for k in os.environ if _session_variable(k) and self.environ.get(k) != os.environ[k]]:
            if name not in env and name not in unset:
                _set_env(name, self.environ.get(name), problems)
        for name, value in env.items():
            _set_env(name, value, problems)
        for name in unset:
            _set_env(name, None, problems)
        if os.environ.get("TZ") != tz or "TZ" in env or "TZ" in unset:
            # The C library reads TZ at tzset() only: without it localtime() and
            # time.tzname stay in the zone the kernel started in, whatever TZ says.
            time.tzset()
        # Not listed for the user: libraries set some at import (sklearn: KMP_*),
        # and a list of names nobody typed would only puzzle.

        # Before the variables: unpickling a deep structure may need it.
        limit = saved.get("recursion_limit", self.recursion_limit)
        if limit != sys.getrecursionlimit():
            try:
                sys.setrecursionlimit(limit)
            except (ValueError, RecursionError) as exc:
                problems.append(f"the recursion limit {limit} cannot be set here ({exc})")
        problems += procstate.restore(saved.get("process", {}), self.process)

        cwd = saved.get("cwd") or self.cwd
        if cwd and cwd != _cwd():
            try:
                os.chdir(cwd)
                if saved.get("cwd"):
                    done.append(f"working directory {cwd}")
            except OSError as exc:
                problems.append(f"the working directory {cwd} cannot be entered here ({exc.strerror}); "
                                f"the kernel stays in {_cwd()}")

        path = merged_path(self.path, saved.get("path_added", []), saved.get("path_removed", []))
        if path != [p for p in sys.path if isinstance(p, str)]:
            sys.path[:] = path
            importlib.invalidate_caches()
        # Last, so they shadow nothing: only an import that would fail finds them.
        stranded = [d for d in saved.get("import_roots", []) if d not in sys.path and os.path.isdir(d)]
        if stranded:
            sys.path.extend(stranded)
            importlib.invalidate_caches()
        added = [entry for _, entry in saved.get("path_added", [])]
        if added:
            done.append("sys.path entr" + ("y " if len(added) == 1 else "ies ") + ", ".join(added))
        done += self._restore_locale(saved.get("locale", {}), problems)
        libstate.restore_before_load(saved)
        return done, problems

    def _restore_locale(self, saved: dict, problems: list) -> list[str]:
        """Set the categories as the session had them (the others back to
        the start's); one this node lacks stays as it is, named."""
        done, failed = [], None
        whole = saved.get("LC_ALL")
        if whole is not None and whole != _locales().get("LC_ALL"):
            try:
                locale.setlocale(locale.LC_ALL, whole)
                done.append(f"locale {whole}")
            except (locale.Error, ValueError) as exc:
                failed = whole
                problems.append(f"the locale {whole} (LC_ALL) is not available here ({exc}): the kernel's stays "
                                "(install that locale, then run locale.setlocale again)")
        now = _locales()
        for category in LOCALE_CATEGORIES:
            wanted = saved.get(category, self.locale.get(category))
            if wanted is None or wanted == now.get(category) or wanted == failed:
                continue
            try:
                locale.setlocale(getattr(locale, category), wanted)
            except (locale.Error, ValueError) as exc:
                problems.append(f"the locale {category}={wanted} is not available here ({exc}): {category} stays "
                                f"{now.get(category)} (install that locale, then run locale.setlocale again)")
                continue
            if category in saved and wanted != whole:
                done.append(f"locale {category}={wanted}")
        return done

    def restore_after_load(self, saved) -> list[str]:
        """What goes back once the variables are loaded, so that importing
        their modules cannot undo it: the global random generators' state
        (``random``, and ``numpy.random`` where the session had loaded it:
        a notebook that seeded once draws on from where it was), and the
        warning filters the session added (``warnings.filterwarnings(
        "ignore")``), ahead of those the modules add; then IPython's
        extensions and autoreload's mode (shellstate.py), the logging
        set-up (logstate.py) and the libraries' options (libstate.py).
        Returns problems."""
        try:
            saved = known_part(saved)[0]  # the others: restore() named them
            checked(saved)
        except ValueError:  # restore() said so already
            return []
        problems = []
        states = saved.get("random_state") or {}
        if "random" in states:
            import random

            version, internal, gauss = states["random"]
            try:
                random.setstate((version, tuple(internal), gauss))
            except (TypeError, ValueError) as exc:
                problems.append(f"the state of the random module was not restored ({exc})")
        if "numpy" in states:
            try:
                import numpy.random
            except ImportError as exc:
                problems.append(f"the state of numpy's global random generator was not restored ({exc})")
            else:
                name, keys, pos, has_gauss, cached = states["numpy"]
                try:
                    numpy.random.set_state((name, numpy.array(keys, dtype=numpy.uint32), pos, has_gauss, cached))
                except (TypeError, ValueError) as exc:
                    problems.append(f"the state of numpy's global random generator was not restored ({exc})")
        for action, message, category, module, lineno in reversed(saved.get("warning_filters", [])):
            try:
                warnings.filterwarnings(action, message or "", _warning_class(category), module or "", lineno)
            except (ImportError, AttributeError, TypeError, ValueError, re.error) as exc:
                problems.append(f"the warning filter ({action}, {category}) was not restored ({exc})")
        if self.shell is not None:
            problems += shellstate.restore(self.shell, saved)
        return problems + logstate.restore(saved) + libstate.restore(saved)


def _filters_ahead(now: list, start: list) -> list:
    """The filters before the tail `now` shares with `start`: filterwarnings
    puts a new one first (and drops an equal one further back), so this is
    what the session and its modules put ahead, in their order."""
    n = 0
    while n < min(len(now), len(start)) and now[-1 - n] == start[-1 - n]:
        n += 1
    return now[:len(now) - n]


def _filter_fields(f) -> list:
    action, message, category, module, lineno = f
    return [action, getattr(message, "pattern", message), f"{category.__module__}:{category.__qualname__}",
            getattr(module, "pattern", module), lineno]


def _warning_class(name: str):
    """`pandas.errors:PerformanceWarning` -> the class (its module was loaded in the session)."""
    module, _, qualname = name.partition(":")
    value = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    if not (isinstance(value, type) and issubclass(value, Warning)):
        raise TypeError(f"{name} is not a warning category")
    return value


def _generator_states() -> dict:
    """The global generators' states, JSON-able; numpy's only if the
    session loaded it (nothing is imported here)."""
    states = {}
    random = sys.modules.get("random")
    if random is not None:
        version, internal, gauss = random.getstate()
        states["random"] = [version, list(internal), gauss]
    np_random = sys.modules.get("numpy.random")
    if np_random is not None and hasattr(np_random, "get_state"):
        try:
            name, keys, pos, has_gauss, cached = np_random.get_state(legacy=True)
            states["numpy"] = [name, [int(k) for k in keys], int(pos), int(has_gauss), float(cached)]
        except (TypeError, ValueError):  # a numpy whose global generator is not the legacy one
            pass
    return states


def _resolved(entries, cwd) -> set:
    base = cwd or ""
    return {os.path.normpath(os.path.join(base, e)) if base or os.path.isabs(e) else e for e in entries}


# module name -> (id of the module object, its root or None): a checkpoint
# reads only the modules loaded since the last one (a few ms for numpy +
# pandas + sklearn the first time, then next to nothing).
_ROOTS: dict[str, tuple[int, str | None]] = {}


def module_roots(known=frozenset()) -> set:
    """The directories the loaded modules, bar ``known``, were imported from
    (the sys.path entry each top-level package was found under), read off
    their files."""
    roots = set()
    for name, module in list(sys.modules.items()):
        if name in known:
            continue
        cached = _ROOTS.get(name)
        if cached is None or cached[0] != id(module):
            cached = _ROOTS[name] = (id(module), _root_of(name, module))
        if cached[1] is not None:
            roots.add(cached[1])
    return roots


def _root_of(name: str, module) -> str | None:
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not os.path.isabs(file) or name == "__main__":
        return None
    parts = name.split(".")
    directory, stem = os.path.dirname(file), os.path.basename(file).split(".")[0]
    if stem == "__init__":
        expected = parts
    elif stem == parts[-1]:
        expected = parts[:-1]
    else:
        return None  # registered under another name (an alias): its file tells no root
    for part in reversed(expected):
        if os.path.basename(directory) != part:
            return None  # not laid out as its name says (a loader of its own): no root to tell
        directory = os.path.dirname(directory)
    return directory


def merged_path(start, added, removed) -> list[str]:
    """``start`` without ``removed``, each added entry after its anchor (or
    first when its anchor is None or not in ``start``), in saved order."""
    gone = set(removed)
    after: dict = {}
    for anchor, entry in added:
        after.setdefault(anchor if anchor in start else None, []).append(entry)
    result = list(after.get(None, []))
    for entry in start:
        if entry not in gone:
            result.append(entry)
        result.extend(after.get(entry, []))
    unique, seen = [], set()
    for entry in result:
        if entry not in seen:
            unique.append(entry)
            seen.add(entry)
    return unique


# Every field this kernel saves, and what it knows inside them (forward.py). A checkpoint may hold others: a
# newer kernel's (the image was rolled back after it wrote them). Those are named and skipped, the known ones still
# restored: rejecting the whole context for them dropped the session's directory, environment and settings too.
SHAPE = {**dict.fromkeys(("cwd", "path_added", "path_removed", "env", "env_unset", "import_roots", "warning_filters",
                          "extensions", "recursion_limit", "precision", "config",
                          "config_unsaved", "locale", "magics_lost", "aliases", "unaliased", "pdb", "last_error",
                          "hooks_lost", "aimport", "aimport_skip", "dir_history", "dir_stack")),
         "process": dict.fromkeys(procstate.SETTINGS), "random_state": {"random": None, "numpy": None},
         "logging": logstate.SHAPE, "library_options": libstate.SHAPE,
         "xmode": shellstate.XMODE_SHAPE, "autoreload": shellstate.AUTORELOAD_SHAPE,
         "history": shellstate.HISTORY_SHAPE, "log": dict.fromkeys(shellmodes.LOG_FIELDS),
         "doctest": dict.fromkeys(shellmodes.DOCTEST_FIELDS), "redirected": {"stdout": None, "stderr": None},
         "hooks": userhooks.SHAPE, "hooks_more": userhooks.SHAPE, "magics": usermagics.SHAPE}
FIELDS = frozenset(SHAPE)


def known_part(saved) -> tuple[dict, list[str]]:
    """(what of ``saved`` this kernel knows, the names of the rest: a field, a key inside one, an entry of a kind
    a newer kernel added); ValueError when ``saved`` is not a context at all."""
    if not isinstance(saved, dict):
        raise ValueError("not an object")
    return forward.known_part(saved, SHAPE)


def unknown_note(unknown: list[str]) -> str:
    shown = ", ".join(repr(name[:80]) for name in unknown[:8]) + (", ..." if len(unknown) > 8 else "")
    return (f"this checkpoint was saved by a newer version of ElasticHub's kernel: its session setting(s) {shown} "
            "are unknown to this version and were not restored (everything else was)")


def checked(saved) -> None:
    """ValueError naming the field when a field ``saved`` holds that this
    kernel knows is malformed (the others: see known_part)."""
    if not isinstance(saved, dict):
        raise ValueError("not an object")
    if "cwd" in saved and not isinstance(saved["cwd"], str):
        raise ValueError("cwd")
    added = saved.get("path_added", [])
    if not (isinstance(added, list) and all(
            isinstance(a, list) and len(a) == 2 and (a[0] is None or isinstance(a[0], str)) and isinstance(a[1], str)
            for a in added)):
        raise ValueError("path_added")
    for field in ("path_removed", "env_unset", "import_roots", "extensions"):
        value = saved.get(field, [])
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ValueError(field)
    env = saved.get("env", {})
    if not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
        raise ValueError("env")
    for name in [*env, *saved.get("env_unset", [])]:
        if not _session_variable(name):
            raise ValueError(f"env: {name} is the platform's, not the session's")
    states = saved.get("random_state", {})
    if not isinstance(states, dict) or set(states) - {"random", "numpy"}:
        raise ValueError("random_state")
    if "random" in states and not (_ints_list(states["random"], 3, 1)
                                   and isinstance(states["random"][0], int)
                                   and (states["random"][2] is None or isinstance(states["random"][2], float))):
        raise ValueError("random_state: random")
    if "numpy" in states and not (_ints_list(states["numpy"], 5, 1) and isinstance(states["numpy"][0], str)
                                  and all(isinstance(v, int) for v in states["numpy"][2:4])
                                  and isinstance(states["numpy"][4], float)):
        raise ValueError("random_state: numpy")
    if "autoreload" in saved and saved["autoreload"] not in shellstate.AUTORELOAD_MODES:
        raise ValueError("autoreload")
    if not isinstance(saved.get("precision", ""), str):
        raise ValueError("precision")
    if saved.get("xmode", "Context") not in shellstate.XMODES:
        raise ValueError("xmode")
    shellstate.checked_config(saved)
    shellstate.checked_autoreload(saved)
    shellstate.checked_directories(saved)
    usermagics.checked(saved)
    userhooks.checked(saved)
    shellmodes.checked(saved)
    if "process" in saved:
        procstate.checked(saved["process"])
    limit = saved.get("recursion_limit", 1)
    if not (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
        raise ValueError("recursion_limit")
    filters = saved.get("warning_filters", [])
    if not (isinstance(filters, list) and all(
            isinstance(f, list) and len(f) == 5 and f[0] in _ACTIONS and isinstance(f[2], str) and ":" in f[2]
            and all(v is None or isinstance(v, str) for v in (f[1], f[3]))
            and isinstance(f[4], int) and not isinstance(f[4], bool) and f[4] >= 0 for f in filters)):
        raise ValueError("warning_filters")
    locales = saved.get("locale", {})
    if not (isinstance(locales, dict) and all(isinstance(k, str) and k.startswith("LC_") and isinstance(v, str)
                                              for k, v in locales.items())):
        raise ValueError("locale")
    shellstate.checked_history(saved)
    shellstate.checked_last_error(saved)
    if "logging" in saved:
        logstate.checked(saved["logging"])
    if "library_options" in saved:
        libstate.checked(saved["library_options"])


def _ints_list(value, length: int, at: int) -> bool:
    """``value`` is a list of ``length`` items whose item ``at`` is a list of ints."""
    return (isinstance(value, list) and len(value) == length and isinstance(value[at], list)
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value[at]))


def _locales() -> dict:
    """{category: its locale name} now (a query: setlocale with no locale changes nothing)."""
    names = {}
    for category in ("LC_ALL", *LOCALE_CATEGORIES):
        try:
            names[category] = locale.setlocale(getattr(locale, category))
        except (locale.Error, ValueError):  # not queryable here: neither saved nor set
            pass
    return names


def _set_env(name: str, value: str | None, problems: list) -> None:
    try:
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    except (ValueError, OSError) as exc:  # a name or value the OS refuses
        problems.append(f"the environment variable {name!r} cannot be set here ({exc})")
