"""Process-wide settings a notebook changes with a call, carried like the
recursion limit (context.py): ``sys.set_int_max_str_digits`` (a number
theory notebook lifts it: after a move, ``str(math.factorial(3000))``
raised ValueError), ``socket.setdefaulttimeout``, ``gc.disable()`` and
``gc.set_threshold``, ``sys.setswitchinterval``, and ``tracemalloc.start(n)``
(a memory-profiling notebook's ``take_snapshot()`` raised after a move, its
``get_traced_memory()`` read (0, 0)): tracing starts again, said, since
what it traced in the old kernel is not counted; and ``faulthandler.enable()``
(a notebook chasing a crash in a C extension: after a move the crash
printed no traceback), to the file it wrote to (opened again to append;
one that cannot be is named: it came back writing to stderr unsaid).

Saved as the difference from the kernel's values at start; set again
before the variables load. Imports only the standard library.
"""

from __future__ import annotations

import gc
import os
import sys

# Where the notebook's faulthandler.enable() writes: None for the kernel's stderr, a file's absolute path, or
# UNNAMED (a descriptor, a file without a path). faulthandler cannot be asked: watch_faulthandler notes it.
UNNAMED = ""
_fault_file: list = [None]


def watch_faulthandler() -> None:
    """Wrap faulthandler.enable (ipykernel's own wrapper, at kernel start) to note where it writes."""
    import faulthandler

    enable = faulthandler.enable
    if getattr(enable, "elastichub_watch", False):
        return

    def watched(*args, **kwargs):
        result = enable(*args, **kwargs)
        _fault_file[0] = _where(args[0] if args else kwargs.get("file"))
        return result

    watched.elastichub_watch = True
    faulthandler.enable = watched


def _where(file):
    if file is None or file is sys.__stderr__ or file is sys.stderr:
        return None
    name = getattr(file, "name", None)
    return os.path.abspath(name) if isinstance(name, str) and not name.startswith("<") else UNNAMED


def baseline() -> dict:
    """The settings now (JSON-able)."""
    values = {"gc_enabled": gc.isenabled(), "gc_threshold": list(gc.get_threshold()),
              "switch_interval": sys.getswitchinterval()}
    if hasattr(sys, "get_int_max_str_digits"):  # Python 3.11+, and 3.10.7+
        values["int_max_str_digits"] = sys.get_int_max_str_digits()
    socket = sys.modules.get("socket")  # not imported for this: a kernel has it
    if socket is not None:
        values["socket_timeout"] = socket.getdefaulttimeout()
    tracemalloc = sys.modules.get("tracemalloc")  # nor this: a session that traces imported it
    if tracemalloc is not None:
        # its traceback limit while tracing, 0 when not
        values["tracemalloc"] = tracemalloc.get_traceback_limit() if tracemalloc.is_tracing() else 0
    faulthandler = sys.modules.get("faulthandler")  # nor this
    if faulthandler is not None:
        values["faulthandler"] = faulthandler.is_enabled()
        values["faulthandler_file"] = _fault_file[0] if values["faulthandler"] else None
    return values


# A setting's value at start when its module was not loaded then (the kernel does not load it to ask).
_UNLOADED = {"tracemalloc": 0, "faulthandler": False, "faulthandler_file": None}


def capture(start: dict) -> dict:
    """The settings the session changed since ``start``."""
    return {name: value for name, value in baseline().items()
            if start.get(name, _UNLOADED.get(name, value)) != value}


def restore(saved: dict, start: dict) -> list[str]:
    """Make the settings the start's, changed as ``saved`` says; problems."""
    now = {**_UNLOADED, **baseline()}
    problems = []
    for name, wanted in {**_UNLOADED, **start, **saved}.items():
        if name not in now or now[name] == wanted:
            continue
        try:
            _SETTERS[name](wanted)
        except OSError as exc:  # the file faulthandler wrote to: enabled to stderr meanwhile
            problems.append(f"faulthandler writes crash tracebacks to the kernel's error output now, not to "
                            f"{wanted or 'the file the notebook gave it'} ({exc.strerror or exc}): run "
                            "faulthandler.enable(file=...) again")
            continue
        except (ValueError, TypeError, OverflowError, ImportError) as exc:
            problems.append(f"the setting {_SHOWN[name]}({wanted!r}) cannot be made here ({exc})")
            continue
        if name == "tracemalloc" and wanted:
            problems.append("tracemalloc traces memory again from the restore: what it traced in the old kernel "
                            "(get_traced_memory, its peak, snapshots taken now) is not counted")
    return problems


def _set_gc(enabled):
    gc.enable() if enabled else gc.disable()


def _set_tracemalloc(limit):
    import tracemalloc

    tracemalloc.stop()  # start() again with another limit would keep the old one
    if limit:
        tracemalloc.start(limit)


def _set_faulthandler(enabled):
    import faulthandler

    # to the new kernel's stderr, as faulthandler.enable() in a cell wrote to the old one's
    faulthandler.enable() if enabled else faulthandler.disable()


def _set_faulthandler_file(where):
    import faulthandler

    if where is None:  # back to stderr (a restore over a session that wrote to a file)
        if faulthandler.is_enabled():
            faulthandler.enable()
        return
    if where == UNNAMED:
        raise OSError("it was not a file with a path to open again")
    # Append: the tracebacks it holds stay; faulthandler keeps the file object open.
    faulthandler.enable(file=open(where, "a"))
    _fault_file[0] = where


def _set_socket_timeout(value):
    import socket

    socket.setdefaulttimeout(value)


_SETTERS = {
    "gc_enabled": _set_gc,
    "gc_threshold": lambda values: gc.set_threshold(*values),
    "switch_interval": sys.setswitchinterval,
    "int_max_str_digits": lambda n: sys.set_int_max_str_digits(n),
    "socket_timeout": _set_socket_timeout,
    "tracemalloc": _set_tracemalloc,
    "faulthandler": _set_faulthandler,
    "faulthandler_file": _set_faulthandler_file,
}
SETTINGS = frozenset(_SETTERS)
_SHOWN = {"gc_enabled": "gc.enable/disable", "gc_threshold": "gc.set_threshold",
          "switch_interval": "sys.setswitchinterval", "int_max_str_digits": "sys.set_int_max_str_digits",
          "socket_timeout": "socket.setdefaulttimeout", "tracemalloc": "tracemalloc.start",
          "faulthandler": "faulthandler.enable/disable", "faulthandler_file": "faulthandler.enable(file=...)"}


def checked(saved) -> None:
    """ValueError naming the setting when ``saved`` is not what capture makes."""
    if not isinstance(saved, dict) or set(saved) - set(_SETTERS):
        raise ValueError("process")
    number = (int, float)
    for name, value in saved.items():
        ok = {"gc_enabled": isinstance(value, bool),
              "gc_threshold": isinstance(value, list) and 1 <= len(value) <= 3
              and all(isinstance(v, int) and not isinstance(v, bool) for v in value),
              "switch_interval": isinstance(value, number) and not isinstance(value, bool),
              "int_max_str_digits": isinstance(value, int) and not isinstance(value, bool),
              "socket_timeout": value is None or isinstance(value, number) and not isinstance(value, bool),
              "tracemalloc": isinstance(value, int) and not isinstance(value, bool) and value >= 0,
              "faulthandler": isinstance(value, bool),
              "faulthandler_file": value is None or isinstance(value, str),
              }[name]
        if not ok:
            raise ValueError(f"process: {name}")
