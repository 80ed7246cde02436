"""Whether the notebook's threads ran since its state was last saved.

A request with no cell run since the last checkpoint confirms that
checkpoint instead of writing it again (``unchanged``). A thread the
notebook started (a training loop appending to ``results``) changes values
without a cell: closing the notebook after it ran only confirmed the older
checkpoint, and its work was lost. So the state is unchanged only when, too,
no thread of the notebook's started, ended or used CPU since then: each
one's CPU time (Linux's per-thread CPU clock, read by its thread id) is
noted when the state is saved and compared. A thread blocked for good (on
an event, a queue) leaves it unchanged; one whose time cannot be read
counts as running.

The notebook's threads are the Python threads the kernel did not have when
it started, bar its own (``elastichub-*``).
"""

from __future__ import annotations

import threading
import time


class ThreadWatch:
    def __init__(self):
        self._kernels = set(threading.enumerate())
        self.saved: dict | None = None  # {thread: CPU ns or None} when the namespace last equalled the file

    def notebook_threads(self, threads=None) -> list:
        return [t for t in (threading.enumerate() if threads is None else threads)
                if t not in self._kernels and not t.name.startswith("elastichub-")]

    def sample(self, threads=None) -> dict:
        return {t: _cpu_ns(t) for t in self.notebook_threads(threads)}

    def mark_saved(self) -> None:
        self.saved = self.sample()

    def ran_since_saved(self, in_signal_handler: bool = False) -> bool:
        # A signal handler runs on the main thread between two bytecodes, maybe while that thread
        # holds threading's (non-reentrant) lock, which enumerate() takes: there, the running
        # threads are read from the table that lock guards, copied in one step under the GIL.
        now = self.sample(list(getattr(threading, "_active", {}).copy().values()) if in_signal_handler else None)
        saved = self.saved or {}
        return (any(t not in saved or ns is None or ns != saved[t] for t, ns in now.items())
                or any(t not in now for t in saved))


def _cpu_ns(thread) -> int | None:
    """The thread's CPU time so far. The clock is named by the thread's id
    (Linux's CPUCLOCK_SCHED encoding), not by pthread_getcpuclockid: the
    thread may end meanwhile, and then that call reads freed memory; this
    one fails cleanly (EINVAL), also for an id another process has now."""
    tid = getattr(thread, "native_id", None)
    if not tid:
        return None
    try:
        return time.clock_gettime_ns(((~tid) << 3) | 6)
    except (OSError, OverflowError, AttributeError):
        return None
