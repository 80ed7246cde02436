"""The kernel's side of a safe shutdown: a checkpoint being written is not
cut short by SIGTERM, and a shutdown that left work unsaved is said at the
next start.

jupyter_client stops a kernel with SIGINT, then ``shutdown_request``, then
SIGTERM after ``shutdown_wait_time / 2`` (2.5 s by default) and SIGKILL after
``shutdown_wait_time`` (5 s). A large state's checkpoint takes longer than
2.5 s: killed by SIGTERM, it left a partial temp file, no checkpoint, and a
next start that restored an older one (or nothing) without a word.

- SIGTERM while a checkpoint is written is held until the write is done,
  then the kernel stops (SIGTERM at other times stops it at once, as
  before). Only SIGKILL ends a write; the server extension asks for the
  checkpoint before Jupyter's shutdown starts its clock (serverstop.py).
- Before a shutdown checkpoint writes, a marker (``shutdown-unsaved``) is
  left in the session directory (or, where that cannot be written, next to
  it in the root, else, the whole volume read-only, in the temp directory,
  ``elastichub-<uid>/``); a completed checkpoint removes it, a failed one records
  why. SIGTERM that stops a kernel holding unsaved work leaves one too. The
  next start reads it and tells the user which checkpoint they have and
  that the work after it was not saved.

Imports only the standard library.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import tempfile
import threading
import time

from .messages import STARTED_EMPTY, _when
from .storage import CHECKPOINT_NAME, ensure_private_dir

UNSAVED_MARKER = "shutdown-unsaved"
_KILLED = "the kernel was stopped before it finished writing it"


class ShutdownGuardMixin:
    def _guard_init(self):
        self._writes = 0                # checkpoints being written now (nested: do_shutdown, then the write)
        self._sigterm_held = False      # a SIGTERM came during one: stop once it is done
        self._writes_lock = threading.Lock()

    # -- SIGTERM ---------------------------------------------------------
    def _install_sigterm_handler(self):
        """On the main thread (start): Python lets only it set handlers. A
        handler someone else installed is left alone."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum, frame):
        if self._writes:
            if not self._sigterm_held:
                self._sigterm_held = True
                self.log.warning("ElasticHub: SIGTERM while a checkpoint is written: stopping once it is done")
            return
        # Threads count as at a checkpoint: a loop that appended to `results` since the last one
        # leaves unsaved work as a cell does.
        unsaved = self._dirty or self._threads.ran_since_saved(in_signal_handler=True)
        if unsaved and not self._live_refuses_checkpoint():
            self._mark_unsaved("the kernel was stopped (SIGTERM) before it wrote its checkpoint")
        _stop_by_sigterm()

    @contextlib.contextmanager
    def _sigterm_waits(self):
        """While inside, SIGTERM waits; a SIGTERM that waited stops the
        kernel when the outermost one ends."""
        with self._writes_lock:
            self._writes += 1
        try:
            yield
        finally:
            with self._writes_lock:
                self._writes -= 1
                stop = self._writes == 0 and self._sigterm_held
            if stop:
                # Handlers run on the main thread: os.kill wakes it; the
                # callback makes sure its event loop runs Python to see it.
                os.kill(os.getpid(), signal.SIGTERM)
                loop = getattr(self, "io_loop", None)
                if loop is not None:
                    loop.add_callback(lambda: None)

    # -- the shutdown checkpoint -----------------------------------------
    def shutdown_checkpoint(self, wait_s: float) -> dict:
        """The checkpoint of a shutdown (the kernel's own, or the one the
        server extension asks for just before it): checkpoint_now, with the
        marker that tells the next start when it did not complete."""
        # A kernel that moved (or is moving) live has its state elsewhere.
        unsaved = self._state_changed() and not self._live_refuses_checkpoint()
        if unsaved:
            self._mark_unsaved(_KILLED)
        result = self.checkpoint_now(wait_s=wait_s)
        if result["ok"]:
            self._clear_unsaved()
        elif unsaved:
            self._mark_unsaved(result["error"])
        return result

    def _marker_paths(self) -> list[str]:
        key = os.path.basename(self.session_dir)
        # Last, off the checkpoint volume: where that volume turned read-only, a note left in the
        # node's temp directory still reaches the notebook's next kernel on this server.
        digest = hashlib.sha256(self.session_dir.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return [os.path.join(self.session_dir, UNSAVED_MARKER),
                os.path.join(self.checkpoint_root, f".{key}.{UNSAVED_MARKER}"),
                os.path.join(tempfile.gettempdir(), f"elastichub-{os.geteuid()}", f"{key}-{digest}.{UNSAVED_MARKER}")]

    def _mark_unsaved(self, reason: str) -> None:
        data = json.dumps({"time": time.time(), "reason": str(reason)[:2000]}).encode()
        for number, path in enumerate(self._marker_paths()):
            try:
                ensure_private_dir(os.path.dirname(path), tighten=number != 1)  # never the root
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
                try:
                    os.write(fd, data)  # a full disk may leave it empty: it still says "not saved"
                finally:
                    os.close(fd)
                return
            except OSError:
                continue  # a read-only session directory: next to it, in the root, else in the temp directory
        self.log.error("ElasticHub: could not leave a note that this session's work was not saved")

    def _clear_unsaved(self) -> None:
        for path in self._marker_paths():
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _note_unsaved_shutdown(self) -> None:
        """At start, after the restore: the last session's shutdown left
        work unsaved. Tell the user (first cell) what they have instead."""
        found = None
        for path in self._marker_paths():
            if found is None:
                found = _read_marker(path)
            with contextlib.suppress(OSError):
                os.unlink(path)
        if found is None:
            return
        when, reason = found
        head = (f"ElasticHub: WARNING: the work of the last session was NOT all saved: its checkpoint at "
                f"shutdown ({_when(when)}) did not complete ({reason}).")
        if self.restored is not None:
            tail = (f" This kernel holds the checkpoint of {_when(self.restored.get('created'))}: what was "
                    "done after it is lost (re-run those cells).")
        elif self._skipped_restore:
            from .kernel import _saved_when

            tail = (f" %elastic_restore brings back the checkpoint{_saved_when(self._checkpoint_path())}, "
                    "without what was done after it.")
        else:
            tail = f" No earlier checkpoint was restored. {STARTED_EMPTY}"
        self._notes.append(head + tail)

    def _checkpoint_path(self) -> str:
        return os.path.join(self.session_dir, CHECKPOINT_NAME)


def _read_marker(path: str):
    """(time, reason) of a marker, or None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        mtime = os.fstat(fd).st_mtime
        raw = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        data = json.loads(raw)
        return float(data.get("time", mtime)), str(data.get("reason") or _KILLED)
    except (ValueError, TypeError, AttributeError):
        return mtime, _KILLED


def _stop_by_sigterm():
    """End the process as SIGTERM's default action would."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
