"""Pickling on a C stack big enough for the recursion limit in force.

Python 3.11's pickle recurses in C, one level per nested object, and stops
at ``sys.getrecursionlimit()`` with a RecursionError, which the serializer
handles (a structure saved flat, or named as not restorable). A notebook
that raised the limit (``sys.setrecursionlimit(300_000)``) and holds a list
nested 50,000 deep ran out of C stack before the limit: the kernel died of
SIGSEGV at its checkpoint, and the session was lost.

``run(fn)`` calls ``fn`` where it is when the limit is small enough for any
thread's stack; otherwise on a helper thread whose stack holds the limit
(``BYTES_PER_LEVEL`` per level: ~220 B measured for lists, dicts and
objects, ~1 KiB for a ``__reduce__`` that pickles again), up to
``MAX_STACK`` of address space, touched only as deep as the pickle goes.
A limit past that is lowered to what the stack holds while ``fn`` runs.
While it waits, the calling thread runs what the helper hands it with
``on_waiting_thread`` (the cells' thread: a sqlite3 connection answers only
the thread that made it).
"""

from __future__ import annotations

import queue
import sys
import threading

BYTES_PER_LEVEL = 2048
# Any thread's stack holds this (8 MiB: glibc's default for threads and the main one).
DIRECT_STACK = 8 << 20
MAX_STACK = 1 << 30
_MARGIN = 4 << 20  # the helper's own frames and the callers' reducers above the deepest level

_local = threading.local()
_stack_size_lock = threading.Lock()


def run(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, never past the end of the C stack."""
    limit = sys.getrecursionlimit()
    if limit * BYTES_PER_LEVEL <= DIRECT_STACK:
        return fn(*args, **kwargs)
    levels = min(limit, (MAX_STACK - _MARGIN) // BYTES_PER_LEVEL)
    stack = -(-(levels * BYTES_PER_LEVEL + _MARGIN) // (1 << 20)) << 20
    waiting, requests, box = threading.current_thread(), queue.SimpleQueue(), {}
    # run inside run (the serializer's retry of deep nesting): the first waiting thread answers, as the
    # cells' thread waiting for the outer helper does for a sqlite3 connection
    outer = getattr(_local, "waiting", None)

    def helper():
        _local.waiting = outer or (waiting, requests)
        try:
            with _limit_at_most(levels):
                box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # raised again on the calling thread
            box["error"] = exc
        finally:
            requests.put(None)

    try:
        with _stack_size_lock:
            before = threading.stack_size(stack)
            try:
                thread = threading.Thread(target=helper, name="elastichub-deep-pickle", daemon=True)
                thread.start()
            finally:
                threading.stack_size(before)
    except (RuntimeError, ValueError, MemoryError):  # no such stack here: a limit this thread's stack holds
        with _limit_at_most(DIRECT_STACK // BYTES_PER_LEVEL):
            return fn(*args, **kwargs)
    interrupted = None
    while True:
        try:
            request = requests.get()
        except BaseException as exc:  # Ctrl-C in %elastic_checkpoint: the helper cannot be stopped; wait for it
            interrupted = interrupted or exc
            continue
        if request is None:
            break
        call, reply = request
        try:
            reply.put((True, call()))
        except BaseException as exc:
            reply.put((False, exc))
    thread.join()
    if interrupted is not None:
        raise interrupted
    if "error" in box:
        raise box["error"]
    return box["value"]


def waiting_thread():
    """The thread waiting for this helper thread, or None on any other thread."""
    waiting = getattr(_local, "waiting", None)
    return waiting[0] if waiting else None


def on_waiting_thread(fn):
    """``fn()`` run by the thread waiting for this helper (see run)."""
    reply = queue.SimpleQueue()
    _local.waiting[1].put((fn, reply))
    ok, value = reply.get()
    if not ok:
        raise value
    return value


class _limit_at_most:
    """The recursion limit lowered to ``levels`` while inside (process-wide:
    only for limits no stack here can hold), then the user's again."""

    def __init__(self, levels: int):
        self.levels = levels
        self.before = None

    def __enter__(self):
        if sys.getrecursionlimit() > self.levels:
            self.before = sys.getrecursionlimit()
            sys.setrecursionlimit(self.levels)

    def __exit__(self, *exc):
        if self.before is not None and sys.getrecursionlimit() == self.levels:
            sys.setrecursionlimit(self.before)
