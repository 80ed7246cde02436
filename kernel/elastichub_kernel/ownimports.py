"""The kernel's own imports of what it loads late (cloudpickle, xxhash,
pickletools), which no file of the notebook's can stand in for.

IPython puts the notebook's folder (``''``) on ``sys.path`` before
site-packages, and the notebook may put its own folders first. A plain
``import cloudpickle`` at the first checkpoint would then run a
``cloudpickle.py`` of the student's (code the user never imported) and fail
every checkpoint after it. ``dependency(name)`` finds the module on the
kernel's own path (``sys.path`` as the kernel started, without its working
directory: see launcher.py) and never hands back a module of the user's
that ``sys.modules`` holds under that name. It is registered under its name
as any import is (pickles name its functions, ``cloudpickle.cloudpickle.
_make_function``, and pickle imports them by name), unless the user's own
module already holds that name: the kernel's copy is then loaded beside
it, only its submodules registered where the user has none.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from importlib.machinery import PathFinder

_lock = threading.Lock()
_loaded: dict = {}
_kernel_path: list | None = None


def kernel_path() -> list:
    """sys.path as the kernel started, without its working directory; taken
    on the first call (the launcher's, before IPython adds ``''``)."""
    global _kernel_path
    if _kernel_path is None:
        cwd = os.path.realpath(os.getcwd())
        _kernel_path = [os.path.abspath(p) for p in sys.path
                        if isinstance(p, str) and p and os.path.realpath(p) != cwd]
    return _kernel_path


def dependency(name: str):
    """The top-level module ``name`` of the kernel's environment."""
    with _lock:
        module = _loaded.get(name)
        if module is None:
            module = _loaded[name] = _import(name)
        return module


def _import(name: str):
    spec = PathFinder.find_spec(name, kernel_path())
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"No module named {name!r} in the kernel's environment", name=name)
    have = sys.modules.get(name)
    if have is not None:
        if _origin(have) == spec.origin:
            return have
    else:
        try:
            first = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            first = None
        if first is not None and first.origin == spec.origin:
            return importlib.import_module(name)  # nothing of the user's in the way: the usual import
    return _load_beside(name, spec)


def _origin(module) -> str | None:
    spec = getattr(module, "__spec__", None)
    return getattr(spec, "origin", None) or getattr(module, "__file__", None)


def _load_beside(name: str, spec):
    """Load ``spec`` as ``name``: registered while its code runs (its own
    imports of its submodules need it), and after unless the user's module
    holds the name."""
    def family():
        return {k: m for k, m in list(sys.modules.items()) if k == name or k.startswith(name + ".")}

    users = family()
    for key in users:
        del sys.modules[key]
    try:
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        module = sys.modules.get(name, module)
    finally:
        ours = family()
        for key in ours:
            del sys.modules[key]
        sys.modules.update(users)
        for key, sub in ours.items():
            sys.modules.setdefault(key, sub)
    return module
