"""The notebook's own modules: ``helpers.py`` next to the notebook, a
course's ``utils.py`` under ``week2/``, a package under a ``sys.path``
entry the notebook added. Told apart from libraries by their file: a
module the session loaded whose file is under none of the directories the
kernel's ``sys.path`` had at start (the start directory, where the
notebook is, excepted) nor the interpreter's library directories.

At checkpoint time each is saved as (name, file, size, modification time),
in the order the session loaded them, with the module-level values it
holds (``helpers.SCALE = 2.5``, a ``CACHE`` dict a function fills; engine.py
pickles them with the variables, so ``from helpers import CACHE`` is
``helpers.CACHE`` again). At restore each is loaded again **from that
file** (``%cd week3`` after ``import utils`` in ``week2``: ``utils`` is
week2's again, as it was in the session, not the one a fresh import would
find), its output captured: the first cell says which of them ran their
top-level code again and shows what they printed. A file gone or changed
since is named, with the variables built with it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import os
import sys
import sysconfig
import types

OWN_PACKAGE = __name__.rpartition(".")[0]
MODULE_PREFIX = "\x00module:"  # a record holding a module-level value: "\x00module:helpers:CACHE"
_MAX_OUTPUT = 4000  # characters of the modules' output shown in the restore note

# module name -> (id of the module object, its file if the notebook's own
# else None): a checkpoint classifies only the modules loaded since the last.
_SEEN: dict[str, tuple[int, str | None]] = {}


def library_dirs(start_path, start_cwd) -> tuple[str, ...]:
    """Directories whose modules are libraries: the start ``sys.path``
    entries but the start directory, and the interpreter's own."""
    dirs = set()
    for entry in start_path:
        full = os.path.normpath(os.path.join(start_cwd or "", entry)) if entry or start_cwd else ""
        if full and full != start_cwd:
            dirs.add(os.path.realpath(full))
    paths = sysconfig.get_paths()
    dirs.update(os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)
    return tuple(sorted(d.rstrip(os.sep) + os.sep for d in dirs))


def user_modules(baseline, libraries: tuple[str, ...]) -> dict:
    """{name: file} of the notebook's own modules loaded since the start
    (``baseline``), in the order they were loaded. A scan of sys.modules
    whose names are all but new ones looked up in a cache (microseconds)."""
    found = {}
    for name, module in list(sys.modules.items()):
        if name in baseline or module is None:
            continue
        seen = _SEEN.get(name)
        if seen is None or seen[0] != id(module):
            seen = _SEEN[name] = (id(module), _own_file(name, module, libraries))
        if seen[1] is not None:
            found[name] = seen[1]
    return found


def _own_file(name: str, module, libraries) -> str | None:
    if name == "__main__" or name == OWN_PACKAGE or name.startswith(OWN_PACKAGE + "."):
        return None
    if not isinstance(module, types.ModuleType):
        return None
    file = getattr(module, "__file__", None)
    spec = getattr(module, "__spec__", None)
    if not isinstance(file, str) or not os.path.isabs(file) or spec is None or spec.name != name:
        return None  # no file, or registered under another name: nothing to load it from
    real = os.path.realpath(file)
    if real.startswith(libraries):
        return None
    return file


def checked(entries) -> list:
    """The index's ``user_modules``; ValueError if malformed."""
    if not (isinstance(entries, list) and all(
            isinstance(e, dict) and isinstance(e.get("module"), str) and isinstance(e.get("file"), str)
            and (e.get("stamp") is None or isinstance(e.get("stamp"), list)) for e in entries)):
        raise ValueError("bad user_modules")
    return entries


def shown_name(name: str) -> str:
    """`helpers.CACHE` for the record of a module's value, else the name."""
    return name[len(MODULE_PREFIX):].replace(":", ".", 1) if name.startswith(MODULE_PREFIX) else name


def set_value(record: str, value) -> dict | None:
    """Set a loaded module-level value on its module again; a problem
    ({"name", "reason"}) if the module is not loaded here."""
    module, attr = record[len(MODULE_PREFIX):].split(":", 1)
    if module not in sys.modules:
        return {"name": f"{module}.{attr}", "reason": f"module {module} could not be loaded here"}
    setattr(sys.modules[module], attr, value)
    return None


def file_stamp(file: str) -> list | None:
    try:
        st = os.stat(file)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def saved_values(module, file: str) -> dict:
    """The module-level values of a module of the notebook's to carry: what
    the session may have changed or filled. Not its own functions and
    classes, nor modules (loading the module makes them again, the same),
    nor what its own `from M import x` bound that still is M.x (a copy of
    a library's rcParams would no longer be the library's)."""
    name = module.__name__
    namespace = vars(module)
    imported, stars = _imports_of(file)
    values = {}
    for attr, value in list(namespace.items()):
        if not isinstance(attr, str) or (attr.startswith("__") and attr.endswith("__")):
            continue
        if isinstance(value, types.ModuleType):
            continue
        if isinstance(value, (type, types.FunctionType)) and getattr(value, "__module__", None) == name \
                and getattr(value, "__qualname__", None) == attr:
            continue
        sources = [imported[attr]] if attr in imported else [(m, attr) for m in stars]
        if any(getattr(sys.modules.get(m), "__dict__", {}).get(a, _MISSING) is value for m, a in sources):
            continue
        values[attr] = value
    return values


_MISSING = object()
_IMPORTS: dict[str, tuple[list, dict, list]] = {}  # file -> (its stamp, {name: (module, attr)}, star modules)


def _imports_of(file: str) -> tuple[dict, list]:
    """The `from M import x [as y]` and `from M import *` of a module's
    source (parsed once per version of the file)."""
    stamp = file_stamp(file)
    cached = _IMPORTS.get(file)
    if cached is not None and cached[0] == stamp:
        return cached[1], cached[2]
    imported, stars = {}, []
    if file.endswith(".py"):
        from .recorder import analyze_cell

        try:
            with open(file, encoding="utf-8") as source:
                info = analyze_cell(source.read())
        except (OSError, UnicodeDecodeError):
            info = None
        for bound, module, attr in (info.imports if info is not None else ()):
            if attr == "*":
                stars.append(module)
            elif attr is not None and not module.startswith("."):
                imported[bound] = (module, attr)
    _IMPORTS[file] = (stamp, imported, stars)
    return imported, stars


def load_again(entries: list) -> dict:
    """Load each module of ``entries`` ({"module", "file", "stamp"}) from
    its file, in their order; what their top-level code prints is captured.
    Returns {"loaded": [name], "output": text, "problems": {name: why},
    "changed": {name: why}}. A module already loaded (a restore into a
    running session) is left as it is."""
    report = {"loaded": [], "output": "", "problems": {}, "changed": {}}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        for entry in entries:
            name, file = entry["module"], entry["file"]
            if name in sys.modules:
                continue
            stamp = file_stamp(file)
            if stamp is None:
                report["changed"][name] = f"its file {file} is gone"
            elif stamp != entry.get("stamp"):
                report["changed"][name] = f"its file {file} changed since the checkpoint"
            try:
                if stamp is not None and "." not in name:
                    _load_from(name, file)
                else:  # a submodule is found through its package's __path__, loaded from its file already
                    importlib.import_module(name)
            except BaseException as exc:  # its own code: SystemExit, KeyboardInterrupt included
                sys.modules.pop(name, None)
                report["problems"][name] = f"import {name} failed here ({type(exc).__name__}: {exc})"
                continue
            now = getattr(sys.modules.get(name), "__file__", None)
            if stamp is None and now:
                report["changed"][name] += f"; {name} now comes from {now}"
            report["loaded"].append(name)
    text = out.getvalue()
    report["output"] = text if len(text) <= _MAX_OUTPUT else text[:_MAX_OUTPUT] + "\n[... cut]"
    return report


def _load_from(name: str, file: str) -> None:
    package = os.path.basename(file).split(".")[0] == "__init__"
    spec = importlib.util.spec_from_file_location(
        name, file, submodule_search_locations=[os.path.dirname(file)] if package else None)
    if spec is None or spec.loader is None:
        raise ImportError(f"no loader for {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def restore_notes(report: dict, users: dict) -> list[str]:
    """Lines for the first cell: which modules ran again and what they
    printed; a changed or gone file, with the variables built with it
    (``users``: module -> variable names)."""
    notes = []
    if report["loaded"]:
        notes.append("Note: the notebook's own module(s) " + ", ".join(report["loaded"]) + " were imported again "
                     "from their files to restore the state: their top-level code ran again.")
        if report["output"].strip():
            notes.append("What they printed:\n" + "\n".join("  | " + line for line in
                                                              report["output"].rstrip("\n").splitlines()))
    for name, why in report["changed"].items():
        names = users.get(name)
        names = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
        built = (f"; built with it, {', '.join(names)} may behave differently than before the restore"
                 if names else "")
        notes.append(f"WARNING: module {name}: {why}{built}.")
    return notes
