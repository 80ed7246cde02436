"""The notebook's own functions IPython calls on its own: event callbacks
(``get_ipython().events.register("post_run_cell", log_cell)``), input
transformers (``ip.input_transformers_cleanup.append(shout)``: a cell's
own syntax), AST transformers (``ip.ast_transformers.append(Timer())``),
display printers (``formatters["text/plain"].for_type(Fraction,
as_ratio)``) and the custom exception handler
(``ip.set_custom_exc((GradingError,), friendly)``: a course's friendlier
errors). IPython keeps them in the shell, which a restore does not
carry: after a move the cell timer printed nothing, and a cell in the
notebook's own syntax failed with a NameError, without a word. Also its
signal handlers (``signal.signal(signal.SIGALRM, on_timeout)``, the
time-limit idiom): the process keeps them, and after a move the next
``signal.alarm(5)`` killed the kernel (SIGALRM's default action).

Each one that a variable holds (the function, the transformer object, or
the object a bound method belongs to: ``ip.events.register(...,
timer.start)``) is saved by that variable's name, in the session's context
(context.py, through shellstate.py), and registered again once the
variables are loaded; nothing runs until the next cell, as before. The
others (a lambda no variable holds) are named in the restore report.
IPython's and the libraries' own hooks are theirs to register again.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import types

from .forward import Kinds
from .usermagics import notebook_function

_EVENT = "events:"
_SIGNAL = "signal:"
_PRINTER = "printer:"  # printer:<mime type> <module>:<class qualname>
_ATEXIT = "atexit"
_CUSTOM_EXC = "custom_exc:"  # custom_exc:<module>:<class qualname> ...: get_ipython().set_custom_exc's classes
_NEWER_PLACES = (_ATEXIT, _CUSTOM_EXC)  # saved apart, in "hooks_more" (capture)
_LISTS = ("input_transformers_cleanup", "input_transformers_post", "ast_transformers")


# (function, args, kwargs, the module whose code called it) of each atexit.register a cell made, directly or
# through a function (the notebook's own module's too), in order: atexit cannot be asked (watch_atexit).
_atexit: list = []


def watch_atexit() -> None:
    """Wrap atexit.register and unregister (at kernel start) to note what the cells register: a library
    registers its own again when it is imported again, the notebook's functions were lost unsaid."""
    import atexit

    register, unregister = atexit.register, atexit.unregister
    if getattr(register, "elastichub_watch", False):
        return

    def watched_register(func, *args, **kwargs):
        result = register(func, *args, **kwargs)
        origin = _called_by(sys._getframe(1))
        if origin is not None:
            _atexit.append((func, args, kwargs, origin))
        return result

    def watched_unregister(func):
        unregister(func)
        _atexit[:] = [entry for entry in _atexit if entry[0] != func]

    watched_register.elastichub_watch = True
    atexit.register, atexit.unregister = watched_register, watched_unregister


def _called_by(frame) -> str | None:
    """The module whose code registered, or None when a module's import did (its top-level code, or what that
    calls): importing the module again registers it again, as the restore does with the notebook's own."""
    caller = frame.f_globals.get("__name__")
    if caller == "__main__":
        return caller
    if not isinstance(caller, str) or caller.split(".")[0] == __name__.split(".")[0]:
        return None  # this kernel's (the restore's, noted there)
    from .usermodules import library_dirs

    if os.path.realpath(frame.f_code.co_filename).startswith(library_dirs((), None)):
        return None  # an installed library's (IPython's own %%script): its own to register again
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":
            return None
        frame = frame.f_back
    return caller


def _cells_atexit() -> list:
    """The atexit functions the cells registered: by their own code, or through the notebook's own module's
    function (helpers.start_log()), which its import at restore does not call; a library's are its own."""
    from .usermodules import is_own

    return [(f, a, k) for f, a, k, origin in _atexit if origin == "__main__" or is_own(origin)]


def _places(shell):
    """(place, its list) of every hook list of the shell, and the atexit functions the cells registered
    (with arguments: a partial, which no variable holds)."""
    yield _ATEXIT, [functools.partial(f, *a, **k) if a or k else f for f, a, k in _cells_atexit()]
    callbacks = getattr(getattr(shell, "events", None), "callbacks", None)
    for event, hooks in (callbacks.items() if isinstance(callbacks, dict) else ()):
        yield _EVENT + event, hooks
    for name in _LISTS:
        hooks = getattr(shell, name, None)
        if isinstance(hooks, list):
            yield name, hooks
    for number in sorted(signal.valid_signals()):
        try:
            handler, name = signal.getsignal(number), _signal_name(number)
        except (OSError, ValueError):  # a number the platform lists but will not answer for, or has no name
            continue
        if callable(handler):  # not SIG_DFL, SIG_IGN, or None (set outside Python)
            yield _SIGNAL + name, [handler]
    handler, classes = _custom_exc(shell)
    if handler is not None:
        yield _CUSTOM_EXC + " ".join(f"{c.__module__}:{c.__qualname__}" for c in classes), [handler]
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    for mime, formatter in (formatters.items() if isinstance(formatters, dict) else ()):
        by_type, by_name = getattr(formatter, "type_printers", None), getattr(formatter, "deferred_printers", None)
        printers = [((getattr(kind, "__module__", None), getattr(kind, "__qualname__", None)), fn)
                    for kind, fn in (list(by_type.items()) if isinstance(by_type, dict) else ())]
        for key, fn in printers + (list(by_name.items()) if isinstance(by_name, dict) else []):
            if isinstance(key, tuple) and len(key) == 2 and all(isinstance(part, str) for part in key):
                yield f"{_PRINTER}{mime} {key[0]}:{key[1]}", [fn]  # (module, name), as for_type_by_name takes


def _custom_exc(shell) -> tuple:
    """(the handler the notebook gave set_custom_exc, its exception classes), or (None, ()). IPython keeps the
    handler in the closure of the wrapper it makes (CustomTB)."""
    classes = getattr(shell, "custom_exceptions", ())
    classes = tuple(c for c in (classes if isinstance(classes, tuple) else (classes,)) if isinstance(c, type))
    wrapper = getattr(getattr(shell, "CustomTB", None), "__func__", None)
    code, cells = getattr(wrapper, "__code__", None), getattr(wrapper, "__closure__", None) or ()
    if not classes or code is None or "handler" not in code.co_freevars:
        return None, ()
    try:
        return cells[code.co_freevars.index("handler")].cell_contents, classes
    except (IndexError, ValueError):  # an empty cell
        return None, ()


def _signal_name(number: int) -> str:
    """SIGALRM; a realtime signal by its offset (SIGRTMIN+3: Signals names only SIGRTMIN and SIGRTMAX, and the
    offset is what the notebook wrote, its number what this C library makes of it)."""
    rtmin, rtmax = getattr(signal, "SIGRTMIN", None), getattr(signal, "SIGRTMAX", None)
    if rtmin is not None and rtmin < number < rtmax:
        return f"SIGRTMIN+{number - rtmin}"
    return signal.Signals(number).name


def _signal_number(name: str) -> int:
    base, _, offset = name.partition("+")
    if offset and not offset.isdigit():
        raise ValueError(f"{name} is not a signal")
    return getattr(signal, base) + int(offset or 0)


def _unwrapped(hook):
    """IPython wraps a callback taking fewer arguments than its event passes (events.py's `adapted`)."""
    inner = getattr(hook, "__wrapped__", None)
    return inner if inner is not None and getattr(hook, "__module__", "") == "IPython.core.events" else hook


def _notebook_made(hook, user_ns) -> bool:
    fn = getattr(hook, "__func__", hook)  # a bound method: its function
    if isinstance(fn, functools.partial):
        fn = fn.func
    if isinstance(fn, types.FunctionType):
        return notebook_function(fn, user_ns)
    return type(hook).__module__ == "__main__"  # an object of a notebook class (an ast.NodeTransformer)


def _notebook_hook(hook, user_ns) -> bool:
    try:
        return _notebook_made(_unwrapped(hook), user_ns)
    except Exception:  # a notebook object whose attributes fail (its own __getattr__): capture names it
        return True


def others(setting: str, value, user_ns):
    """A shell setting's value without the notebook's own hooks (`ast_transformers` is a %config setting too:
    this module carries those, shellstate.py the rest)."""
    if setting not in _LISTS or not isinstance(value, list):
        return value
    kept = [hook for hook in value if not _notebook_hook(hook, user_ns)]
    return value if len(kept) == len(value) else kept


def _shown(place: str, hook) -> str:
    what = getattr(getattr(hook, "func", hook), "__qualname__", None) or type(hook).__qualname__
    if place == _ATEXIT:
        module = getattr(getattr(hook, "func", hook), "__module__", None)
        what = f"{module}.{what}" if isinstance(module, str) and module != "__main__" else what  # helpers.py's
        return f"{what} (registered with atexit: it will not run when the kernel stops)"
    if place.startswith(_SIGNAL):
        return f"{what} (the {place[len(_SIGNAL):]} handler)"
    if place.startswith(_CUSTOM_EXC):
        kinds = ", ".join(kind.replace(":", ".") for kind in place[len(_CUSTOM_EXC):].split())
        return f"{what} (set_custom_exc's handler of {kinds})"
    if place.startswith(_PRINTER):
        mime, _, kind = place[len(_PRINTER):].partition(" ")
        return f"{what} (the {mime} printer of {kind.replace(':', '.')})"
    return f"{what} ({place[len(_EVENT):] + ' callback' if place.startswith(_EVENT) else place})"


def _registrations(shell):
    """(place, position, the hook as registered, [variable, method] holding it or None, shown) of each of the
    notebook's own hooks (the cells' atexit functions all)."""
    from .outputs import variables_by_id

    user_ns, names = shell.user_ns, None
    for place, hooks in _places(shell):
        for position, registered in enumerate(list(hooks)):
            hook = registered
            try:
                hook = _unwrapped(registered)
                if place != _ATEXIT and not _notebook_made(hook, user_ns):  # atexit's: a cell registered them
                    continue
                names = variables_by_id(shell) if names is None else names
                owner = getattr(hook, "__self__", None)
                if id(hook) in names:
                    yield place, position, registered, [names[id(hook)], ""], None
                elif (isinstance(hook, types.MethodType) and id(owner) in names
                      and getattr(owner, hook.__name__, None) == hook):
                    yield place, position, registered, [names[id(owner)], hook.__name__], None
                else:
                    yield place, position, registered, None, _shown(place, hook)
            except Exception:  # a notebook object whose attributes fail: named, never a failed checkpoint
                yield place, position, registered, None, f"a {type(hook).__name__} ({place})"


def capture(shell) -> dict:
    """{"hooks": [[place, position, variable, method or ""]...], "hooks_lost": [shown...]}, or {}."""
    kept, lost = [], []
    for place, position, _, held, shown in _registrations(shell):
        if held is None:
            lost.append(shown)
        else:
            kept.append([place, position, *held])
    # Kinds kernels before forward.py reject in "hooks" (and with it the whole context): a field of their own,
    # which such a kernel skips by name, should the image be rolled back.
    newer = [hook for hook in kept if hook[0].startswith(_NEWER_PLACES)]
    kept = [hook for hook in kept if hook not in newer]
    return {**({"hooks": kept} if kept else {}), **({"hooks_more": newer} if newer else {}),
            **({"hooks_lost": lost} if lost else {})}


# (place, variable, method) -> the hooks this session registered so, noted before %elastic_restore sets the
# checkpoint's values: the checkpoint's registration of the same place and variable is the same one.
_SESSION: dict = {}


@contextlib.contextmanager
def session_registrations(shell):
    """Around %elastic_restore: the session's own registrations, told apart by where they are and which
    variable holds them (two functions a factory made share a name, and stay two)."""
    _SESSION.clear()
    try:
        for place, _, registered, held, _ in _registrations(shell):
            if held is not None:
                _SESSION.setdefault((place, *held), []).append(registered)
    except Exception:  # the notebook's objects, looked at: nothing dropped then, never a failed restore
        _SESSION.clear()
    try:
        yield
    finally:
        _SESSION.clear()


def _known_place(place: str) -> bool:
    return place.startswith((_EVENT, _SIGNAL, _PRINTER, _CUSTOM_EXC)) or place in (*_LISTS, _ATEXIT)


# What this kernel saves (forward.py): a hook of a kind a newer kernel carries is left out, named.
SHAPE = [Kinds(0, _known_place)]


def checked(saved: dict) -> None:
    """ValueError naming the field when "hooks", "hooks_more" or "hooks_lost" is malformed."""
    for field in ("hooks", "hooks_more"):
        kept = saved.get(field, [])
        if not (isinstance(kept, list) and all(
                isinstance(h, list) and len(h) == 4 and isinstance(h[0], str) and _known_place(h[0])
                and type(h[1]) is int and h[1] >= 0
                and isinstance(h[2], str) and isinstance(h[3], str) for h in kept)):
            raise ValueError(field)
    lost = saved.get("hooks_lost", [])
    if not (isinstance(lost, list) and all(isinstance(v, str) for v in lost)):
        raise ValueError("hooks_lost")


def restore(shell, saved: dict) -> list[str]:
    """Register the saved hooks again (once the variables are loaded); problems as lines."""
    problems = []
    places = dict(_places(shell))
    for place, position, var, method in saved.get("hooks", []) + saved.get("hooks_more", []):
        shown = f"{var}{'.' + method if method else ''} ({place})"
        try:
            problem = _restore_one(shell, places, place, position, var, method)
        except Exception as exc:  # the notebook's own object, looked at: never a failed restore
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            problems.append(f"the notebook's hook {shown} was not registered again ({problem}); run the cell that "
                            "registered it again")
    lost = saved.get("hooks_lost", [])
    if lost:
        signals = any(shown.endswith(" handler)") for shown in lost)
        problems.append(f"the notebook's hook(s) {', '.join(lost)} are not carried (no variable holds them): run the "
                        "cells that registered them again" + ("; until then a signal does what it does by default "
                                                              "(SIGALRM, SIGUSR1 stop the kernel)" if signals else ""))
    return problems


def _restore_one(shell, places: dict, place: str, position: int, var: str, method: str) -> str | None:
    hook = shell.user_ns.get(var)
    if method:
        hook = getattr(hook, method, None)
    if hook is None or not (callable(hook) or place == "ast_transformers"):
        return f"{var}, which held it, was not restored"
    return _register(shell, places, place, position, hook, (place, var, method))


def _register(shell, places: dict, place: str, position: int, hook, key: tuple) -> str | None:
    """Put `hook` back at `place`; why not, or None."""
    if place.startswith(_SIGNAL):
        return _set_handler(place[len(_SIGNAL):], hook)
    if place.startswith(_PRINTER):
        return _set_printer(shell, place[len(_PRINTER):], hook)
    if place.startswith(_CUSTOM_EXC):
        return _set_custom_exc(shell, place[len(_CUSTOM_EXC):].split(), hook)
    hooks = places.get(place)
    if hooks is None:
        return "this IPython has no such hook"
    if any(_unwrapped(h) == hook for h in hooks):  # %elastic_restore into a session that has it
        return None
    _drop_older(shell, place, hooks, hook, key)
    if place == _ATEXIT:
        import atexit

        atexit.register(hook)  # in the saved order: they run in reverse, as before
        _atexit.append((hook, (), {}, "__main__"))  # restore code calls it, for the cells
        return None
    if place.startswith(_EVENT):
        try:
            shell.events.register(place[len(_EVENT):], hook)  # adapted to the event's arguments, as before
        except (TypeError, KeyError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return None
    hooks.insert(min(position, len(hooks)), hook)  # among IPython's own, where it was
    return None


def _drop_older(shell, place: str, hooks: list, hook, key: tuple) -> None:
    """%elastic_restore into a session that registered the hook itself: its variable now holds the
    checkpoint's function, a new object, and the session's own stays registered; unregistered here, else a
    callback ran twice a cell and an atexit function twice at the end. Only the one registered at that place
    and held by that variable (session_registrations): another of the same name is another function."""
    for h in _SESSION.get(key, []):
        if h is hook or not any(h is registered for registered in hooks):
            continue
        if place == _ATEXIT:
            import atexit

            atexit.unregister(h)
        elif place.startswith(_EVENT):
            shell.events.unregister(place[len(_EVENT):], h)
        else:
            hooks.remove(h)


def _set_handler(name: str, handler) -> str | None:
    """Set a signal's handler as the notebook did; why not, or None."""
    try:
        signal.signal(_signal_number(name), handler)
    except (AttributeError, ValueError, OSError, TypeError) as exc:  # no such signal here, not the main thread, refused
        return f"{type(exc).__name__}: {exc}"
    return None


def _set_printer(shell, where: str, printer) -> str | None:
    """Register a display printer as `formatter.for_type` did, by its type's module and name: that imports
    nothing (a library's type is found when it is first shown) and finds the notebook's class made again."""
    mime, _, kind = where.partition(" ")
    module, _, name = kind.partition(":")
    formatter = (getattr(getattr(shell, "display_formatter", None), "formatters", None) or {}).get(mime)
    if formatter is None:
        return f"no {mime} formatter here"
    if not (module and name.isidentifier()):  # found by name: a class inside another one is not
        return f"{module}.{name} is not found by its name"
    formatter.for_type_by_name(module, name, printer)
    return None


def _set_custom_exc(shell, kinds: list, handler) -> str | None:
    """set_custom_exc again, with the classes found by name: the notebook's own among the restored variables,
    a library's in its module (loaded again with the variables that use it)."""
    import builtins

    classes = []
    for kind in kinds:
        module, _, name = kind.partition(":")
        value = shell.user_ns if module == "__main__" else vars(builtins) if module == "builtins" else None
        value = value if value is not None else vars(sys.modules.get(module) or types.SimpleNamespace())
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
        if not (isinstance(value, type) and issubclass(value, BaseException)):
            return f"the exception class {module}.{name} is not found here"
        classes.append(value)
    shell.set_custom_exc(tuple(classes), handler)
    return None
