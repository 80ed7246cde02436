"""ElasticKernel: an IPython kernel that checkpoints and restores its state.

- records each cell (recorder.py: AST + namespace id diff, O(cell + #vars));
- checkpoints on shutdown, on the control message
  ``elastichub_checkpoint_request`` (relayed by the server extension's
  ``POST /api/elastichub/checkpoint``) and with ``%elastic_checkpoint``;
- restores the session's checkpoint on start, except after the user's own
  "Restart kernel" and in a kernel without a notebook path (nbconvert, a
  console: its folder's checkpoint may be another notebook's); a clean
  namespace then, and ``%elastic_restore`` brings it back;
- tells the user, in the output of the first cell they run after a start,
  what was restored and what was not (and why);
- live migration (livekernel.py, live.py): ``elastichub_live_request``;
- checkpoints follow a renamed notebook (sessionfollow.py): ``elastichub_session_request``.

Import cost matters (start-to-ready): this module imports nothing beyond
ipykernel and the standard library; serializer/engine load on first use.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time

from ipykernel.ipkernel import IPythonKernel
from traitlets import Bool, Float, Unicode, default

from . import (CHECKPOINT_REQUEST, LIVE_REQUEST, SESSION_REQUEST, STATUS_REQUEST, __version__, deepstack, idioms,
               libstate, procstate, shellmodes, userhooks, usermodules)
from .context import SessionContext
from .livekernel import MOVED_MESSAGE, LiveMigrationMixin
from .messages import NO_SESSION_NOTE, sendable
from .sessionfollow import SessionFollowMixin
from .shutdownguard import ShutdownGuardMixin
from .threadwatch import ThreadWatch
from .storage import (CHECKPOINT_NAME, DELTA_NAME, LIVE_BASE_NAME, RESTART_MARKER, check_private_dir, default_root,
                      ensure_private_dir, remove_stale_files)


class ElasticKernel(SessionFollowMixin, ShutdownGuardMixin, LiveMigrationMixin, IPythonKernel):
    implementation = "elastic-python"
    implementation_version = __version__
    banner = "Elastic Python: IPython with automatic checkpoint/restore (ElasticHub)"

    control_msg_types = [*IPythonKernel.control_msg_types, CHECKPOINT_REQUEST, STATUS_REQUEST, LIVE_REQUEST,
                         SESSION_REQUEST]

    checkpoint_root = Unicode(
        config=True,
        help="Root directory of checkpoints (one subdirectory per notebook). "
        "Default: $ELASTICHUB_CHECKPOINT_DIR or ~/.elastichub/checkpoints.",
    )

    @default("checkpoint_root")
    def _default_root(self):
        return default_root()

    session_name = Unicode(
        config=True,
        help="Notebook path keying this kernel's checkpoints. Default: "
        "$JPY_SESSION_NAME; without it, the working directory (and no automatic restore).",
    )

    @default("session_name")
    def _default_session_name(self):
        return os.environ.get("JPY_SESSION_NAME", "")

    restore_on_start = Bool(True, config=True, help="Restore the notebook's checkpoint when the kernel starts.")
    restore_after_user_restart = Bool(
        False,
        config=True,
        help="Also restore after the user's own 'Restart kernel'. Off by default: "
        "users expect a restart to give a clean namespace (%elastic_restore brings the state back).",
    )
    checkpoint_on_shutdown = Bool(True, config=True, help="Write a checkpoint when the kernel is shut down.")
    disk_speed_mbps = Float(
        config=True,
        help="Checkpoint volume speed in MB/s for the migrate-vs-recompute cost model. "
        "0: measure it once in the background after start (cached). "
        "Default: $ELASTICHUB_DISK_SPEED_MBPS or 0.",
    )

    @default("disk_speed_mbps")
    def _default_disk_speed(self):
        try:
            return max(float(os.environ.get("ELASTICHUB_DISK_SPEED_MBPS", "0")), 0.0)
        except ValueError:
            self.log.warning("ElasticHub: ignoring ELASTICHUB_DISK_SPEED_MBPS=%r (not a number)",
                             os.environ.get("ELASTICHUB_DISK_SPEED_MBPS"))
            return 0.0
    busy_timeout = Float(
        30.0, config=True,
        help="Seconds a checkpoint request waits for a running cell to finish before answering an error.",
    )
    unchanged_max_age = Float(
        600.0, config=True,
        help="A checkpoint request (or shutdown) with no cell, and no thread of the notebook's, run since "
        "this kernel's last checkpoint reuses that checkpoint if it is younger than this many seconds.",
    )
    keep_spare_file = Bool(
        True, config=True,
        help="Keep the replaced checkpoint file and overwrite it in place next time: "
        "about 2x faster durable writes of large states, for twice the disk space.",
    )
    live_default_lease = Float(
        60.0, config=True,
        help="Seconds a live-migration freeze lasts when its request names no lease_s.",
    )
    live_max_lease = Float(
        3600.0, config=True,
        help="Largest lease_s a freeze may ask for: a frozen kernel must always thaw by itself.",
    )
    shutdown_busy_timeout = Float(
        2.0, config=True,
        help="Same, at shutdown (Jupyter sends SIGTERM 2.5 s and SIGKILL 5 s after asking a kernel to stop; "
        "a checkpoint being written waits out the SIGTERM).",
    )

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Held while a cell runs and while a checkpoint pickles the namespace,
        # so a checkpoint never sees a half-updated state. Reentrant: the
        # %elastic_checkpoint magic runs inside a cell.
        self._state_lock = threading.RLock()
        self.session_dir = self._session_dir_for(self.session_name)
        # recorder and disk speed load on first use: start-to-ready pays
        # for nothing it does not need.
        self._recorder = None
        self._disk_speed = None
        # The state differs from the checkpoint file. A fresh namespace has
        # nothing to save: a kernel that runs no cell writes no file.
        self._dirty = False
        self._threads = ThreadWatch()  # the notebook's threads change values without cells
        # Start skipped an existing checkpoint (after the user's restart).
        self._skipped_restore = False
        self._notes: list[str] = []
        self.last_checkpoint: dict | None = None
        # The last write that failed since then ({"error", "at"}): %elastic_status says so, the older file stays.
        self.last_checkpoint_failure: dict | None = None
        self.restored: dict | None = None
        # The working directory, sys.path and environment at start: the
        # session's changes to them are saved with its variables.
        self.session_context: SessionContext | None = None
        self._live_init()
        self._guard_init()
        idioms.call_on_cells_thread = self._on_cells_thread
        # Widgets change variables through comm messages, not cells.
        for msg_type in ("comm_open", "comm_msg", "comm_close"):
            if msg_type in self.shell_handlers:
                self.shell_handlers[msg_type] = self._live_tracking(self.shell_handlers[msg_type])
        if self.shell is not None:
            from .magics import ElasticMagics

            self.shell.register_magics(ElasticMagics(self.shell, kernel=self))

    def _on_cells_thread(self, fn, timeout_s: float = 30.0):
        """``fn()`` on the thread cells run on (the main thread). Checkpoints
        are written on the control thread, while no cell runs; a sqlite3
        connection answers only the thread that made it."""
        loop = getattr(self, "io_loop", None)
        if threading.current_thread() is threading.main_thread() or loop is None:
            return fn()
        if deepstack.waiting_thread() is threading.main_thread():  # %elastic_checkpoint's deep pickling
            return deepstack.on_waiting_thread(fn)
        done, box = threading.Event(), {}

        def run():
            try:
                box["value"] = fn()
            except BaseException as exc:  # raised again on the calling thread
                box["error"] = exc
            finally:
                done.set()

        loop.add_callback(run)
        if not done.wait(timeout_s):
            raise TimeoutError(f"the notebook's thread did not answer within {timeout_s:g} s")
        if "error" in box:
            raise box["error"]
        return box["value"]

    @property
    def recorder(self):
        if self._recorder is None:
            from .recorder import HistoryRecorder

            self._recorder = HistoryRecorder()
        return self._recorder

    @property
    def disk_speed(self):
        if self._disk_speed is None:
            from .diskspeed import DiskSpeed

            self._disk_speed = DiskSpeed(self.checkpoint_root, self.disk_speed_mbps, log=self.log)
        return self._disk_speed

    # -- start ------------------------------------------------------------
    def start(self):
        # Taken here, not in __init__: ipykernel's app sets up the process
        # (MPLBACKEND...) between the two, and that is no change of the user's.
        procstate.watch_faulthandler()  # faulthandler cannot tell where it writes: noted as cells enable it
        userhooks.watch_atexit()  # nor atexit what the cells registered
        self.session_context = SessionContext.now(self.shell)
        self._threads = ThreadWatch()  # the kernel's own threads are all up by now
        self._install_sigterm_handler()
        remove_stale_files(self.session_dir)
        if self.restore_on_start:
            self._restore_at_start()
        self._note_unsaved_shutdown()
        super().start()
        # Profiling the disk waits until the kernel is up and idle-ish.
        self.io_loop.call_later(1.0, lambda: self.disk_speed.start_background(delay_s=1.0))

    def _restore_at_start(self):
        marker = os.path.join(self.session_dir, RESTART_MARKER)
        if os.path.lexists(marker):
            try:
                os.unlink(marker)
            except OSError:
                pass
            if not self.restore_after_user_restart:
                path = os.path.join(self.session_dir, CHECKPOINT_NAME)
                if os.path.lexists(path):
                    self._skipped_restore = True
                    self._notes.append(
                        f"ElasticHub: the kernel restarted without your variables, as a restart does. To get back "
                        f"those of the last checkpoint{_saved_when(path)}, run %elastic_restore before you create "
                        "variables of your own: once you have, the next checkpoint saves them instead."
                    )
                return
        if not any(os.path.lexists(os.path.join(self.session_dir, name))
                   for name in (CHECKPOINT_NAME, DELTA_NAME, LIVE_BASE_NAME)):
            return  # the common case: nothing more to load, no module to import
        if not self.session_name and not self._live_pending:
            # No notebook path (nbconvert, papermill, nbgrader, a console): the folder's checkpoint may be
            # another notebook's, and a grader must never start with its variables.
            self._skipped_restore = True
            self._notes.append(NO_SESSION_NOTE.format(saved=_saved_when(os.path.join(self.session_dir,
                                                                                     CHECKPOINT_NAME))))
            return
        self.restore_checkpoint(at_start=True)

    def restore_checkpoint(self, at_start: bool = False):
        """Restore the session's checkpoint into the namespace; queue/return
        the message for the user. Never raises."""
        from .engine import restore_or_reject
        from .messages import format_rejection, format_restore, not_restored

        try:
            problem = _dir_problem(self.session_dir)
            if problem:
                note = not_restored(f"the checkpoint's folder {problem}")
                report, rejected = None, None
            else:
                # A live-migration destination leaves the source's files be.
                # A delta completing the pre-copy is applied even there: a
                # destination pod restarted after its move must not come
                # back with the older pre-copy state.
                base: dict = {}
                report, rejected = restore_or_reject(self.session_dir, self.shell.user_ns, keep=base,
                                                     set_aside_files=not self._live_pending,
                                                     live_destination=self._live_pending,
                                                     context=self._context())
                note = None
                self._live_base = {"base_id": base.get("base_id"),
                                   "buffers": base.get("buffers") if self._live_pending else None}
        except Exception:  # belt and braces: a start must never fail
            self.log.exception("ElasticHub restore failed")
            report, rejected, note = None, None, not_restored("an unexpected error in ElasticHub (the kernel's log "
                                                              "has it)")
        if report is not None or rejected:
            # The checkpoint start skipped is restored (or set aside): no longer one to keep.
            self._skipped_restore = False
        if rejected:
            note = format_rejection(rejected)
            self.log.warning("%s", note)
        elif report is not None:
            self.restored = dict(report)
            self._live_names = set(report["migrated"]) | set(report["recomputed"])
            self.seed_recorder(report)
            note = format_restore(report)
            # The namespace now equals the file unless something failed (the
            # file was then set aside, and a new checkpoint is needed).
            self._dirty = bool(report["failed_now"])
            self._threads.mark_saved()
        if note and at_start:
            self._notes.append(note)
        return note

    def seed_recorder(self, report: dict) -> None:
        """What the restored names were imported from (`from M import a`) and
        the library attributes its cells set: this session's next checkpoint
        saves the one and names the other as the last one did."""
        libstate.make_cells_decimal_context(self.shell.user_ns, report.get("decimal_context"))
        references, changes = report.get("references") or {}, report.get("library_changes") or []
        if references or changes:
            for name, (module, attr) in references.items():
                self.recorder.imported[name] = (module, attr)
            for path, cell, module, kind in changes:
                self.recorder.module_attr_stores.setdefault(path, (cell, module, kind))

    # -- cells ------------------------------------------------------------
    async def do_execute(self, code, silent, store_history=True, user_expressions=None,
                         allow_stdin=False, *, cell_meta=None, cell_id=None):
        try:
            if not await self._live_gate():  # frozen: waits; retired: not run
                return self._not_run_reply(MOVED_MESSAGE)
        except KeyboardInterrupt:  # the user gave up waiting for a move
            return self._not_run_reply("ElasticHub: interrupted while the kernel was paused for a move to "
                                       "another node: this cell did not run. Run it again.")
        try:
            # Only to a cell the user runs: a frontend extension's own requests
            # (a variable inspector's) are store_history=False, shown nowhere.
            if self._notes and not silent and store_history:
                notes, self._notes = self._notes, []
                print("\n".join(notes), file=sys.stderr, flush=True)
            from .recorder import analyze_cell

            # Code that parses as Python is left unchanged by IPython's
            # transforms (magics, !shell, help? never parse): transform only
            # what does not, rather than doing IPython's work twice per cell.
            transformed, info = code, analyze_cell(code)
            if not info.parsed:
                try:
                    transformed = self.shell.transform_cell(code)
                except Exception:
                    transformed = code
                info = analyze_cell(transformed)
            ns = self.shell.user_ns
            prepared = self.recorder.prepare(info, ns)
            number = self.shell.execution_count
            # Here, as in the cell, the cells' execution context: the one
            # numpy's and decimal's options live in.
            libstate.apply_to_cells_context()
            started = time.perf_counter()
            shellmodes.cell_starts()  # a checkpoint in the cell sees the streams it began with
            try:
                reply = await super().do_execute(
                    code, silent, store_history, user_expressions, allow_stdin,
                    cell_meta=cell_meta, cell_id=cell_id,
                )
            finally:
                shellmodes.cell_ends()
            duration = time.perf_counter() - started
            libstate.note_cells_context()
            libstate.note_cell_code(transformed, ns)  # pl.set_random_seed: no getter, named at a move
            # which of the notebook's own modules' names this cell rebound: saved at checkpoint
            try:
                usermodules.track(self._context())
            except Exception:  # a module of the user's with a strange namespace never fails a cell
                pass
            if not _reads_only(code):
                # After the user's restart, a session holding nothing of the user's has nothing
                # to save over the checkpoint start skipped (a live pre-copy reads this too).
                self._dirty = not self._skipped_restore or self._holds_user_state()
            self._live_generation += 1
            self.recorder.record(number, transformed, info, prepared, ns, duration,
                                 reply.get("status") == "ok")
            return reply
        finally:
            self._state_lock.release()

    # -- checkpoint -------------------------------------------------------
    def checkpoint_now(self, wait_s: float | None = None, force: bool = False,
                       fingerprints: list | None = None) -> dict:
        """Write a checkpoint (or confirm the current one). Never raises:
        failures come back as ``{"status": "error", "ok": False, ...}`` and
        leave the previous checkpoint file untouched. ``fingerprints``: see
        engine.checkpoint (live pre-copy). A SIGTERM meanwhile waits for it."""
        with self._sigterm_waits():
            return self._checkpoint_now(wait_s, force, fingerprints)

    def _checkpoint_now(self, wait_s, force, fingerprints) -> dict:
        refused = self._live_refuses_checkpoint()
        if refused:
            return _error_reply(refused + "; checkpoint not written")
        wait_s = self.busy_timeout if wait_s is None else wait_s
        if not self._state_lock.acquire(timeout=max(wait_s, 0)):
            return _error_reply(f"a cell is still running after {wait_s:g} s; checkpoint not written")
        try:
            changed = self._state_changed()
            path = os.path.join(self.session_dir, CHECKPOINT_NAME)
            if (not force and not changed and self.last_checkpoint
                    and time.time() - self.last_checkpoint["written_at"] <= self.unchanged_max_age
                    and _same_file(path, self.last_checkpoint)):
                return dict(self.last_checkpoint, unchanged=True, seconds=0.0)
            if not force and not changed and self.restored and os.path.exists(path):
                return self._restored_file_reply(path)
            if not force and not changed and self.restored is None and self.last_checkpoint is None:
                return self._nothing_to_save_reply()
            from .engine import checkpoint, user_variable_names

            ns = self.shell.user_ns
            names = user_variable_names(ns, self.shell.user_ns_hidden)
            if self._skipped_restore and not names:
                # Never an empty namespace over the checkpoint the user's restart set aside, even when
                # asked (%elastic_checkpoint): %elastic_restore must still bring it back.
                return self._nothing_to_save_reply()
            ensure_private_dir(self.checkpoint_root, tighten=False)
            threads = self._threads.sample()  # before the state is read: what they do meanwhile is not in it
            reply = checkpoint(self.session_dir, ns, names, self.recorder, self.disk_speed,
                               self.session_name, keep_spare=self.keep_spare_file, fingerprints=fingerprints,
                               context=self._context())
            if reply.get("warning"):  # another kernel of this notebook saved here too (provenance.py)
                self._notes.append(reply["warning"])
            if self._live_phase == "running":
                # A live delta completes an older generation: superseded now.
                # (Frozen: the delta is the one a destination is applying.)
                _unlink_quietly(os.path.join(self.session_dir, DELTA_NAME))
                # So is a live pre-copy (live-base.ehk), unless this kernel is
                # the source of a move under way (pre-copied, not thawed since).
                held = self._live_precopy
                if not (held and held.get("base_id") and not held.get("thawed")):
                    _unlink_quietly(os.path.join(self.session_dir, LIVE_BASE_NAME))
                    self._live_precopy = None
            st = os.stat(reply["path"])
            reply["unchanged"] = False
            self.last_checkpoint = dict(reply, mtime_ns=st.st_mtime_ns, size=st.st_size,
                                        written_at=time.time())
            self._dirty = False
            self.last_checkpoint_failure = None
            self._threads.saved = threads
            self._skipped_restore = False  # this session's own checkpoint replaced the skipped one
            # ...and is the one the next start restores (an earlier nothing-to-save reply may have
            # set the restart marker again; a restart sets it after this write).
            _unlink_quietly(os.path.join(self.session_dir, RESTART_MARKER))
            self.log.info("ElasticHub checkpoint: %s bytes in %.3f s to %s",
                          reply["bytes"], reply["seconds"], reply["path"])
            return reply
        except Exception as exc:
            self.log.exception("ElasticHub checkpoint failed")
            self.last_checkpoint_failure = {"error": f"{type(exc).__name__}: {exc}", "at": time.time()}
            return _error_reply(f"{type(exc).__name__}: {exc}")
        finally:
            self._state_lock.release()

    def _state_changed(self) -> bool:
        """Cells, or threads of the notebook's, ran since the namespace last equalled the file."""
        if not self._dirty and self._threads.ran_since_saved():
            self._dirty = True
        return self._dirty

    def _context(self) -> SessionContext:
        if self.session_context is None:  # a kernel driven without start() (embedded)
            self.session_context = SessionContext.now(self.shell)
        return self.session_context

    def _restored_file_reply(self, path):
        r = self.restored
        return {"status": "ok", "ok": True, "bytes": os.path.getsize(path), "seconds": 0.0,
                "migrated": r["migrated"], "recomputed": r["recomputed"],
                "not_restorable": r["not_restorable"], "path": path, "error": None, "unchanged": True}

    def _nothing_to_save_reply(self):
        """A fresh namespace (no cell run, nothing restored): no file is
        written, and any checkpoint already there is left as it is. When
        start skipped that checkpoint (the user's restart), the marker is
        set again so the next start stays clean too, as it would have if
        this kernel had saved its empty namespace over the file."""
        reply = {"status": "ok", "ok": True, "bytes": 0, "seconds": 0.0, "migrated": [], "recomputed": [],
                 "not_restorable": [], "path": "", "error": None, "unchanged": True}
        if self._skipped_restore:
            path = os.path.join(self.session_dir, CHECKPOINT_NAME)
            if self.session_name:  # without one, no start restores it anyway
                _touch_marker(os.path.join(self.session_dir, RESTART_MARKER), self.log)
            reply["note"] = (f"this session has no variables to save: the checkpoint{_saved_when(path)} is kept "
                             "(%elastic_restore brings it back)")
        return reply

    def _holds_user_state(self) -> bool:
        """Whether the namespace holds a variable of the user's (an import, a definition, a value)."""
        from .engine import user_variable_names

        return bool(user_variable_names(self.shell.user_ns, self.shell.user_ns_hidden))

    async def elastichub_checkpoint_request(self, stream, ident, parent):
        request = parent.get("content") or {}
        if request.get("shutdown"):  # the server extension, just before Jupyter shuts this kernel down
            content = self.shutdown_checkpoint(wait_s=self.shutdown_busy_timeout)
        else:  # a restart move's holds the cells after it (livekernel.py)
            content = self.checkpoint_asked(request)
        content = {k: v for k, v in content.items() if k not in ("mtime_ns", "size", "written_at")}
        self.session.send(stream, "elastichub_checkpoint_reply", sendable(content), parent, ident=ident)

    async def elastichub_status_request(self, stream, ident, parent):
        self.session.send(stream, "elastichub_status_reply", sendable(self.status()), parent, ident=ident)

    def status(self) -> dict:
        write_bps, read_bps = self.disk_speed.estimate()
        return {
            "status": "ok",
            "checkpoint_dir": self.session_dir,
            "checkpoint_root": self.checkpoint_root,
            "session_key": os.path.basename(self.session_dir),
            "session_name": self.session_name,
            "dirty": self._dirty,
            "last_checkpoint": self.last_checkpoint,
            "last_checkpoint_failure": self.last_checkpoint_failure,
            "skipped_restore": self._skipped_restore,
            "restored": self.restored,
            "disk_speed": {"write_bps": write_bps, "read_bps": read_bps, "source": self.disk_speed.source},
            "live": self.live_status(),
        }

    async def do_shutdown(self, restart):
        with self._sigterm_waits():  # until the restart marker is set too
            refused = self._live_refuses_checkpoint()
            if refused:
                self.log.info("ElasticHub: no checkpoint at shutdown: %s", refused)
            elif self.checkpoint_on_shutdown:
                result = self.shutdown_checkpoint(wait_s=self.shutdown_busy_timeout)
                if not result["ok"]:
                    self.log.error("ElasticHub: checkpoint at shutdown failed: %s", result["error"])
            if restart:
                _touch_marker(os.path.join(self.session_dir, RESTART_MARKER), self.log)
        return super().do_shutdown(restart)


_READ_ONLY_LINE = re.compile(r"^\s*(%elastic_status\b.*|%elastic_checkpoint\b.*|#.*)?$")


def _reads_only(code: str) -> bool:
    """A cell of %elastic_status / %elastic_checkpoint lines only: it changes no state of the user's
    (the checkpoint it writes is of the state as it was)."""
    lines = code.splitlines()
    return any(line.strip() for line in lines) and all(_READ_ONLY_LINE.match(line) for line in lines)


def _saved_when(path: str) -> str:
    """' (saved <time>)' for the checkpoint file at `path`, or '' when its index cannot be read."""
    try:
        from .messages import _when
        from .storage import read_index

        return f" (saved {_when(read_index(path).get('created'))})"
    except Exception:  # only a detail of a message: never a failed start
        return ""


def _error_reply(message: str) -> dict:
    return {"status": "error", "ok": False, "bytes": 0, "seconds": 0.0, "migrated": [], "recomputed": [],
            "not_restorable": [], "path": "", "error": message}


def _same_file(path: str, last: dict) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_mtime_ns == last.get("mtime_ns") and st.st_size == last.get("size")


def _dir_problem(directory: str) -> str | None:
    """Why the session directory (or the root above it) cannot be trusted."""
    for path in (os.path.dirname(directory), directory):
        problem = check_private_dir(path)
        if problem:
            return f"{path} {problem}"
    return None


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _touch_marker(path: str, log) -> None:
    try:
        ensure_private_dir(os.path.dirname(path))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        os.close(fd)
    except OSError as exc:
        log.warning("ElasticHub: could not mark the restart (%s)", exc)
