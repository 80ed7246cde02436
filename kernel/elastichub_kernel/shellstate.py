"""IPython's own state that a session sets with magics: the extensions it
loaded (`%load_ext autoreload`, `sql`, ...), autoreload's mode
(`%autoreload 2`), how floats print (`%precision 3`) and how tracebacks do
(`%xmode Minimal`). Saved with the session's context (context.py) and set
again once the variables are loaded: after a move, editing a helper module
still takes effect in the next cell, as it did before.
"""

from __future__ import annotations

AUTORELOAD_MODES = ("0", "1", "2", "3")
XMODES = ("Plain", "Context", "Verbose", "Minimal", "Docs")
_DEFAULT_XMODE = "Context"


def loaded_extensions(shell) -> frozenset:
    manager = getattr(shell, "extension_manager", None)
    return frozenset(getattr(manager, "loaded", None) or ())


def capture(shell, at_start: frozenset) -> dict:
    """The extensions loaded since start, and autoreload's mode if loaded."""
    saved: dict = {}
    added = sorted(loaded_extensions(shell) - at_start)
    if added:
        saved["extensions"] = added
    mode = _autoreload_mode(shell)
    if mode is not None:
        saved["autoreload"] = mode
    precision = getattr(_plain_formatter(shell), "float_precision", "")
    if precision:
        saved["precision"] = precision
    xmode = getattr(getattr(shell, "InteractiveTB", None), "mode", _DEFAULT_XMODE)
    if xmode != _DEFAULT_XMODE and xmode in XMODES:
        saved["xmode"] = xmode
    return saved


def _plain_formatter(shell):
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None) or {}
    return formatters.get("text/plain")


def _autoreload_mode(shell) -> str | None:
    registry = getattr(getattr(shell, "magics_manager", None), "registry", None) or {}
    reloader = getattr(registry.get("AutoreloadMagics"), "_reloader", None)
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
    if "precision" in saved:
        try:
            _plain_formatter(shell).float_precision = saved["precision"]
        except Exception as exc:  # a format IPython refuses
            problems.append(f"%precision {saved['precision']} was not set again ({type(exc).__name__}: {exc})")
    if "xmode" in saved:
        shell.InteractiveTB.set_mode(mode=saved["xmode"])  # as %xmode does, without its message
    return problems
