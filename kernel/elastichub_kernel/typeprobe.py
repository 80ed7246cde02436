"""Lazy type probing: decide what a user object is from its class metadata.

``isinstance(x, numpy.ndarray)`` would need ``import numpy``; the reference
kernel pays ~0.24 s per start importing libraries the user may never use.
Every type question here is answered from ``type(x).__mro__`` names
(``module.qualname``), so no user library is ever imported by the kernel.
"""

from __future__ import annotations

import types

from .idioms3 import restorable_generator, standard_stream
from .idioms4 import shut_down_executor, tried_file
from .idioms5 import in_progress_reason
from .idioms6 import MOCK_REASON, held_lock_reason

# Objects whose value lives outside the process (a connection, an OS handle,
# a running frame): a pickled copy would be a different, dead thing. (A
# thread lock no one holds, an Event, a Condition or Semaphore no thread
# waits on, are made again: idioms6.py.)
# Keys are "module.qualname" of a class anywhere in the MRO.
_UNRESTORABLE_CLASSES = {
    "socket.socket": "an open network socket (reconnect after restore)",
    "_socket.socket": "an open network socket (reconnect after restore)",
    "ssl.SSLSocket": "an open TLS connection (reconnect after restore)",
    "_io._IOBase": "an open file handle (reopen the file after restore)",
    "threading.Thread": "a running thread",
    "multiprocessing.pool.Pool": "a pool of worker processes",
    "subprocess.Popen": "a running child process",
    "select.epoll": "an OS event handle",
    "selectors.BaseSelector": "an OS event handle",
    "asyncio.events.AbstractEventLoop": "an event loop",
    "concurrent.futures._base.Executor": "a pool of workers",
    "zmq.sugar.socket.Socket": "an open ZeroMQ socket",
    "zmq.sugar.context.Context": "a ZeroMQ context",
    "unittest.mock.NonCallableMock": MOCK_REASON,
}

# In-memory stream classes live under _io too but are plain values; open()'s
# file objects are saved as their file (idioms.py), or refuse with the reason.
_RESTORABLE_IO = {"_io.BytesIO", "_io.StringIO", "_io.TextIOWrapper", "_io.BufferedReader", "_io.BufferedWriter",
                  "_io.BufferedRandom", "_io.FileIO"}

_BUILTIN_UNRESTORABLE = {
    types.GeneratorType: "a generator (its paused execution state cannot be saved)",
    types.CoroutineType: "a coroutine (its paused execution state cannot be saved)",
    types.AsyncGeneratorType: "an async generator (its paused execution state cannot be saved)",
    types.FrameType: "an execution frame",
    types.TracebackType: "a traceback (it holds live frames)",
}


def class_names(obj) -> list[str]:
    """``module.qualname`` of every class in ``type(obj).__mro__``."""
    names = []
    for cls in type(obj).__mro__:
        names.append(f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', cls.__name__)}")
    return names


def type_name(obj) -> str:
    """The user-facing name of an object's type, e.g. ``numpy.ndarray``."""
    return class_names(obj)[0].replace("builtins.", "")


def is_module(obj) -> bool:
    # type(), not isinstance(): isinstance asks a dead weakref.proxy its
    # __class__ and raised ReferenceError, which failed the whole checkpoint
    return issubclass(type(obj), types.ModuleType)


def unrestorable_reason(obj, user_ns: dict | None = None) -> str | None:
    """Why ``obj`` cannot be carried to another process, or None.

    Only classes whose value is inherently process-bound are listed; anything
    else is tried with pickle, and a pickling error is reported by name.
    """
    for kind, reason in _BUILTIN_UNRESTORABLE.items():
        if issubclass(type(obj), kind):  # as is_module: a dead weakref.proxy raises in isinstance
            if kind is types.GeneratorType and restorable_generator(obj, user_ns):
                return None  # ended, a generator expression, or not started (idioms3)
            return reason
    names = class_names(obj)
    if names[0] in _RESTORABLE_IO or tried_file(obj, names[0]) or standard_stream(obj) is not None:
        # sys.stdout: the next kernel's (idioms3); gzip.open's, a closed zip member: saved or refused with why (idioms4)
        return None
    if "threading.Thread" in names and not obj.is_alive():
        return None  # not started yet, or finished: its attributes are all it is (idioms6)
    if shut_down_executor(obj):  # what a with block leaves: made again shut down (idioms4)
        return None
    for name in names:
        reason = _UNRESTORABLE_CLASSES.get(name)
        if reason is not None:
            return reason
    # a hash being fed, a compressor, a finditer (idioms5); a thread lock held (idioms6)
    return in_progress_reason(obj) or held_lock_reason(obj)
