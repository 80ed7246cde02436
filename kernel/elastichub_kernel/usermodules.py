"""The notebook's own modules: ``helpers.py`` next to the notebook, a
course's ``utils.py`` under ``week2/``, a package under a ``sys.path``
entry the notebook added. Told apart from libraries by their file: a
module the session loaded whose file is under none of the directories the
kernel's ``sys.path`` had at start (the start directory, where the
notebook is, excepted) nor the interpreter's library directories.

At checkpoint time each is saved as (name, file, size, modification time),
in the order the session loaded them, with the module-level values the
session may have changed (statedump.py pickles them with the variables, so
``from helpers import CACHE`` is ``helpers.CACHE`` again): those rebound
since the module was first seen (``helpers.SCALE = 2.5``: its bindings are
noted when it appears, and compared after each cell), and the mutable
values under SMALL_BYTES pickled (a ``CACHE`` dict a function fills). A
larger one never rebound (a 160 MB table the module builds at import) is
not saved, and named in general terms: the import builds it again, changes
made to it in place are not carried. One never rebound that cannot be
pickled (a lock, an open log file) is left to the import, silently. At
restore each is loaded again **from that file** (a package's submodules
from theirs, parents first) (``%cd week3`` after ``import utils`` in ``week2``: ``utils`` is
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
# module name -> {attr: its value when the module was first seen}; the
# objects are kept, not their ids (a freed float's id is soon another's),
# and dropped once the attribute is found rebound (_REBOUND).
_FIRST: dict[str, dict] = {}
_REBOUND: dict[str, set] = {}
# module name -> (its __spec__, its file's stamp) when it was loaded (importlib.reload makes a new spec):
# a checkpoint saves that stamp, so a file edited after the import, whose code the session never ran, is
# named at restore rather than silently run in its place.
_LOADED: dict[str, tuple] = {}
SMALL_BYTES = 1 << 20  # a mutable value never rebound is saved when its pickle is smaller
_LIBRARY_DIRS: dict = {}
_COUNT = [0]  # len(sys.modules) at the last scan after a cell


def library_dirs(start_path, start_cwd) -> tuple[str, ...]:
    """Directories whose modules are libraries: the start ``sys.path``
    entries but the start directory, and the interpreter's own."""
    key = (tuple(start_path), start_cwd)
    if key in _LIBRARY_DIRS:
        return _LIBRARY_DIRS[key]
    dirs = set()
    for entry in start_path:
        full = os.path.normpath(os.path.join(start_cwd or "", entry)) if entry or start_cwd else ""
        if full and full != start_cwd:
            dirs.add(os.path.realpath(full))
    paths = sysconfig.get_paths()
    dirs.update(os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)
    found = _LIBRARY_DIRS[key] = tuple(sorted(d.rstrip(os.sep) + os.sep for d in dirs))
    return found


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
                _first_seen(name, module)
        if seen[1] is not None:
            found[name] = seen[1]
    return found


def own_namespaces() -> dict[str, dict]:
    """{module: a shallow copy of its namespace} of the notebook's own
    modules loaded now (those seen so far): what %elastic_restore compares
    after it set their saved values again."""
    return {name: dict(vars(sys.modules[name])) for name, seen in _SEEN.items()
            if seen[1] is not None and isinstance(sys.modules.get(name), types.ModuleType)}


def is_own(name: str) -> bool:
    """Whether module `name`, as loaded now, is one of the notebook's own (as the last scan found it)."""
    seen, module = _SEEN.get(name), sys.modules.get(name)
    return seen is not None and seen[1] is not None and module is not None and id(module) == seen[0]


def _first_seen(name: str, module) -> None:
    _FIRST[name] = dict(vars(module))
    _REBOUND[name] = set()
    _note_loaded(name, module)


def _note_loaded(name: str, module) -> None:
    file = (_SEEN.get(name) or (None, None))[1] or getattr(module, "__file__", None)
    _LOADED[name] = (getattr(module, "__spec__", None), file_stamp(file) if isinstance(file, str) else None)


def loaded_stamp(name: str, file: str) -> list | None:
    """The stamp of `file` when module `name` was last loaded (its stamp now if not noted)."""
    noted = _LOADED.get(name)
    module = sys.modules.get(name)
    if noted is None or module is None or getattr(module, "__spec__", None) is not noted[0]:
        return file_stamp(file)
    return noted[1]


def note_rebindings(own) -> None:
    """Which module-level names of the notebook's modules were rebound
    (after each cell: a few dict look-ups per attribute of those modules)."""
    for name in own:
        first, module = _FIRST.get(name), sys.modules.get(name)
        if first is None or module is None:
            continue
        if getattr(module, "__spec__", None) is not _LOADED.get(name, (None,))[0]:
            _note_loaded(name, module)  # importlib.reload: the file's code as it is now
        rebound = _REBOUND[name]
        for attr, value in list(vars(module).items()):
            if first.get(attr, _MISSING) is not value and attr not in rebound:
                rebound.add(attr)
                first.pop(attr, None)  # not kept alive any longer


def track(context) -> None:
    """After a cell: note the modules that appeared (their first bindings)
    and the names rebound since. The scan of sys.modules runs only when it
    grew."""
    if len(sys.modules) != _COUNT[0]:
        _COUNT[0] = len(sys.modules)
        own = user_modules(context.modules, library_dirs(context.path, context.cwd))
    else:
        own = [name for name, seen in _SEEN.items() if seen[1] is not None]
    note_rebindings(own)


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


def carried_values(own: dict, notes: list, stores: dict) -> dict:
    """{record name: value} of the module-level values to save (see
    saved_values); a large value not saved is named in ``notes``.
    ``stores``: the recorder's module_attr_stores, the attributes cells
    assigned (``helpers.SCALE = 2.5`` in the cell that imported helpers,
    before the module was first seen)."""
    note_rebindings(own)
    for path, (_, module, kind) in stores.items():
        if kind == "module" and module in _REBOUND:
            _REBOUND[module].add(path.rpartition(".")[2])
    return {f"{MODULE_PREFIX}{module}:{attr}": value for module in own
            for attr, value in saved_values(sys.modules[module], own[module], notes).items()}


_UNCHANGEABLE = (int, float, complex, bool, str, bytes, type(None), range, type, types.FunctionType,
                 types.BuiltinFunctionType)


def saved_values(module, file: str, notes: list | None = None) -> dict:
    """The module-level values of a module of the notebook's to carry: what
    the session may have changed or filled. Not its own functions and
    classes, nor modules (loading the module makes them again, the same),
    nor what its own `from M import x` bound that still is M.x (a copy of
    a library's rcParams would no longer be the library's), nor what the
    session never rebound and cannot have changed in place, nor a large
    or unpicklable value it never rebound (loading the module makes them)."""
    name = module.__name__
    first, rebound = _FIRST.get(name), _REBOUND.get(name, set())
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
        if first is not None and attr not in rebound and first.get(attr, _MISSING) is value:
            if isinstance(value, _UNCHANGEABLE):
                continue
            size = _pickled_size(value)
            if size is None:  # a lock, an open file: the import makes it anew
                continue
            if size > SMALL_BYTES:
                if notes is not None:
                    notes.append(f"{name}.{attr} ({_size_text(value)}) is not saved: its module builds it "
                                 "again at import; changes made to it in place are not carried.")
                continue
        values[attr] = value
    return values


class _TooLarge(Exception):
    pass


class _Counter:
    def __init__(self):
        self.n = 0

    def write(self, data) -> int:
        self.n += memoryview(data).nbytes
        if self.n > SMALL_BYTES:
            raise _TooLarge
        return len(data)


def _pickled_size(value) -> int | None:
    """Its pickle's size, stopped past SMALL_BYTES (a 160 MB table costs 1 MB
    of pickling, not 160); None if it cannot be pickled."""
    from .serializer import NamespacePickler

    counter = _Counter()
    try:
        NamespacePickler(counter, {}, None).dump(value)
    except _TooLarge:
        return SMALL_BYTES + 1
    except Exception:
        return None
    return counter.n


def _size_text(value) -> str:
    nbytes = getattr(value, "nbytes", None)
    return f"{nbytes / 1e6:.0f} MB" if isinstance(nbytes, int) and nbytes >= 10**6 else "over 1 MB pickled"


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
    before = set(sys.modules)
    # parents before their submodules (a package's __init__ may import them: through the
    # __path__ of the folder it was loaded from, as in the session)
    entries = sorted(entries, key=lambda e: e["module"].count("."))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        for entry in entries:
            name, file = entry["module"], entry["file"]
            if name in sys.modules:
                continue
            stamp = file_stamp(file)
            if stamp is None:
                report["changed"][name] = f"its file {file} is gone"
            elif stamp != entry.get("stamp"):
                report["changed"][name] = (f"its file {file} changed since the session loaded it (the session "
                                           "ran its code as it was then; this is the file's code now)")
            try:
                if stamp is not None:
                    _load_from(name, file)
                else:
                    importlib.import_module(name)
            except BaseException as exc:  # its own code: SystemExit, KeyboardInterrupt included
                sys.modules.pop(name, None)
                report["problems"][name] = f"import {name} failed here ({type(exc).__name__}: {exc})"
                continue
            now = getattr(sys.modules.get(name), "__file__", None)
            if stamp is None and now:
                report["changed"][name] += f"; {name} now comes from {now}"
    # every module of the notebook's whose code ran, also those another one imported
    report["loaded"] = [e["module"] for e in entries if e["module"] not in before and e["module"] in sys.modules]
    for entry in entries:
        module = sys.modules.get(entry["module"])
        if entry["module"] in report["loaded"] and module is not None:
            _SEEN[entry["module"]] = (id(module), entry["file"])
            _first_seen(entry["module"], module)  # before the saved values are set: those count as rebound
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
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:  # as an import does: pk.core is an attribute of pk
        setattr(sys.modules[parent], child, module)


def restore_notes(report: dict, users: dict, set_back: list[str] = ()) -> list[str]:
    """Lines for the first cell: which modules ran again and what they
    printed; a changed or gone file, with the variables built with it
    (``users``: module -> variable names) and the values the session had
    changed that were set back on it (``set_back``: their record names)."""
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
        # The session's values go back over the edited file's: old constants beside new functions.
        values = [shown_name(r) for r in set_back if shown_name(r).rpartition(".")[0] == name]
        over = (f"; its values from this session, {', '.join(values)}, were set back over the file's (re-run "
                f"`import importlib; importlib.reload({name})` for the file's own)" if values else "")
        notes.append(f"WARNING: module {name}: {why}{built}{over}.")
    return notes
