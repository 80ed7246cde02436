"""The kernel's side of live migration: the ``elastichub_live_request``
control message (phases precopy, freeze, retire, thaw, apply) and the
frozen state.

ipykernel 7 serves control messages on their own thread, while cells run
on the main thread (subshells on theirs). Freezing therefore is a flag,
not a held lock: the control thread takes the state lock (waiting, bounded,
for a running cell), sets ``frozen`` under it and writes the delta; every
cell passes a gate that checks the flag after taking the same lock, so no
cell can start between the check and the freeze. A cell (or a comm
message) meeting a frozen kernel records *activity* and waits, polling,
without holding the main thread: thaw, retire and the lease timer are
served meanwhile. The lease is a timer thread, so a frozen kernel thaws
even if nothing ever talks to it again; only retire cancels it.

Imports only the standard library: the delta code (live.py, xxhash) loads
on the first live request.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import sys
import threading
import time

from . import LIVE_REQUEST
from .messages import sendable
from .storage import ensure_private_dir

LIVE_REPLY = LIVE_REQUEST.replace("_request", "_reply")
PHASES = ("precopy", "freeze", "retire", "thaw", "apply")
# Neutral on where the server ends up: a move can still be undone after retire (the source thaws).
MOVED_MESSAGE = ("ElasticHub was moving this server to another node as this cell was sent: it did not run. "
                 "Run it again.")
_POLL_S = 0.02
_SAY_HELD_S = 3.0  # a cell held longer than this says why it waits (a pause is usually over sooner)


class LiveMigrationMixin:
    # Settings (traits of ElasticKernel): live_default_lease, live_max_lease.

    def _live_init(self):
        self._live_lock = threading.Lock()  # guards the _live_* fields below
        self._live_phase = "running"        # running | frozen | retired
        self._live_activity = False         # a cell or comm message met the frozen kernel
        self._live_timer: threading.Timer | None = None
        self._live_lease_end = None
        self._live_delta_id = None          # the delta this kernel wrote (source)
        self._live_precopy = None           # {"base_id", "fingerprints"} (source)
        # Destination: started by an adopting server; the source still owns
        # the session's files until apply succeeds.
        self._live_destination = os.environ.get("ELASTICHUB_LIVE_DESTINATION") == "1"
        self._live_pending = self._live_destination
        self._live_base = {"base_id": None, "buffers": None}  # what the start restore loaded
        self._live_names: set = set()       # names bound by the last restore/apply
        self._live_precopy_hook = None      # tests: called (blob, offset) between pre-copy chunks
        self._live_generation = 0           # cells and comm messages run so far (pre-copy reuse)
        self._live_hold = None              # a restart move's hold: its lease (s), renewed by a checkpoint

    # -- gate for cells and comm messages -----------------------------------
    def _live_enter(self) -> str:
        """The phase a newly arrived cell/comm message meets (activity noted)."""
        with self._live_lock:
            if self._live_phase == "frozen":
                self._live_activity = True
            return self._live_phase

    async def _live_gate(self) -> bool:
        """Wait until a cell may run; hold the state lock on True. False:
        retired. KeyboardInterrupt: the user interrupted the wait."""
        interrupted, saved, since = [], None, time.monotonic()
        try:
            while True:
                phase = self._live_enter()
                if phase == "retired":
                    return False
                if phase == "frozen":
                    if since is not None and time.monotonic() - since > _SAY_HELD_S:
                        since = None  # said once per cell
                        self._say_held()
                    if saved is None and threading.current_thread() is threading.main_thread():
                        # Like ipykernel's async cells: SIGINT (Interrupt) ends
                        # the wait; raised inside the event loop it would be lost.
                        saved = signal.signal(signal.SIGINT, lambda *_: interrupted.append(1))
                    if interrupted:
                        raise KeyboardInterrupt
                    await asyncio.sleep(_POLL_S)
                    continue
                if not self._state_lock.acquire(blocking=False):
                    await asyncio.sleep(0.005)  # a checkpoint or a freeze is being written
                    continue
                if self._live_phase == "running":
                    break
                self._state_lock.release()
        finally:
            if saved is not None:
                signal.signal(signal.SIGINT, saved)
        if self._live_pending or self._live_base.get("buffers") is not None:
            # Someone uses this kernel: it owns its state now (a destination
            # pod restarted after its move must checkpoint again). A cell
            # may change arrays in place, and they live in the base
            # buffers: from now on an apply reads the base from its file.
            self._live_pending = False
            self._live_base = dict(self._live_base, buffers=None)
        return True

    def _say_held(self) -> None:
        """Why a cell waits: without a word, a cell held for a move looked hung for up to a minute."""
        end = self._live_lease_end
        left = f" (at most {max(end - time.monotonic(), 0):.0f} s more)" if end is not None else ""
        print(f"ElasticHub is moving this server to another node: this cell waits{left}. It runs as soon "
              "as the move lets it; if the server moves first, you will be told it did not run.",
              file=sys.stderr, flush=True)

    def _not_run_reply(self, message: str) -> dict:
        """A cell that was not run: said on stderr, and an error reply (no traceback)."""
        print(message, file=sys.stderr, flush=True)
        return {"status": "error", "ename": "ElasticHubNotRun", "evalue": message, "traceback": [],
                "execution_count": self.shell.execution_count}

    def _live_tracking(self, handler):
        """Widgets change variables through comm messages: while frozen they
        are activity and wait for thaw; after retire they are dropped."""
        def handle(*args, **kwargs):
            if self._live_enter() == "running":
                with self._state_lock:
                    if self._live_phase == "running":
                        self._dirty = True
                        self._live_generation += 1
                        return handler(*args, **kwargs)
                self._live_enter()
            return wait_then_handle(args, kwargs)

        async def wait_then_handle(args, kwargs):
            while self._live_enter() == "frozen":
                await asyncio.sleep(_POLL_S)
            if self._live_phase == "retired":
                self.log.warning("ElasticHub: comm message after retire not handled (the kernel moved)")
                return None
            result = handle(*args, **kwargs)
            if asyncio.iscoroutine(result):
                result = await result
            return result

        return handle

    # -- the control message -------------------------------------------------
    async def elastichub_live_request(self, stream, ident, parent):
        content = parent.get("content") or {}
        phase = content.get("phase") if isinstance(content, dict) else None
        started = time.perf_counter()
        if phase not in PHASES:
            reply = {"ok": False, "error": f"unknown live-migration phase {phase!r}: expected one of "
                     + ", ".join(PHASES)}
        else:
            try:
                reply = getattr(self, f"_phase_{phase}")(content)
            except Exception as exc:  # a reply, never a traceback
                self.log.exception("ElasticHub live %s failed", phase)
                reply = {"ok": False, "error": f"unexpected error ({type(exc).__name__}: {exc})"}
        reply = {k: v for k, v in reply.items() if k not in ("mtime_ns", "size", "written_at")}
        reply.update(phase=phase, seconds=round(time.perf_counter() - started, 6))
        reply.setdefault("error", None)
        reply["status"] = "ok" if reply["ok"] else "error"
        level = self.log.info if reply["ok"] else self.log.warning
        level("ElasticHub live %s: ok=%s in %.3f s%s", phase, reply["ok"], reply["seconds"],
              f" ({reply['error']})" if reply["error"] else "")
        self.session.send(stream, LIVE_REPLY, sendable(reply), parent, ident=ident)

    def _phase_precopy(self, content) -> dict:
        """Pickle the state under the state lock (milliseconds: array buffers
        stay out of band), then write live-base.ehk WITHOUT it while cells
        run (engine.precopy_write: a torn buffer's fingerprint differs at
        freeze, so the delta re-sends it). checkpoint.ehk is not touched."""
        if self._live_phase != "running":
            return _fail(f"the kernel is {self._live_phase}; precopy needs a running kernel (thaw it first)")
        if self._live_pending:
            return _fail("this kernel is a live-migration destination awaiting apply; it has no state of its own")
        if not self._dirty and self.restored is None and self.last_checkpoint is None:
            self._live_precopy = {"base_id": None, "fingerprints": []}
            return dict(self._nothing_to_save_reply(), base_id=None)
        held = self._live_precopy
        if not self._state_lock.acquire(timeout=self.busy_timeout):
            return _fail(f"a cell is still running after {self.busy_timeout:g} s; pre-copy not written", busy=True)
        try:
            if self._live_phase != "running":
                return _fail(f"the kernel is {self._live_phase}; precopy needs a running kernel (thaw it first)")
            from .engine import precopy_dump, precopy_write, user_variable_names
            from .live import live_base_id

            generation = self._live_generation
            if (held and held.get("base_id") and not held.get("thawed") and held.get("generation") == generation
                    and live_base_id(self.session_dir) == held["base_id"]):
                # Nothing ran since the last pre-copy, and its file is still
                # there: the same base (a destination restored it already).
                return dict(held["reply"], unchanged=True, seconds=0.0)

            ns = self.shell.user_ns
            ensure_private_dir(self.checkpoint_root, tighten=False)
            prepared = precopy_dump(ns, user_variable_names(ns, self.shell.user_ns_hidden), self.recorder,
                                    self.disk_speed, context=self._context())
            locked_s = time.perf_counter()
        except Exception as exc:
            self.log.exception("ElasticHub live pre-copy failed")
            return _fail(f"the pre-copy could not be made ({type(exc).__name__}: {exc})")
        finally:
            self._state_lock.release()
        # A new pre-copy replaces any earlier one: the earlier base is no
        # longer offered (a freeze checks the file is still its base).
        self._live_precopy = None
        try:
            reply = precopy_write(self.session_dir, prepared, self.session_name,
                                  between_chunks=self._precopy_chunks(content.get("cancel_file")))
        except _Cancelled:
            # The server extension was asked for a checkpoint (its user or the culler stops the server):
            # that checkpoint goes first, and the move is over. No pre-copy file is left to hold room.
            from .live import remove_live_base

            remove_live_base(self.session_dir)
            return _fail("the pre-copy was cancelled: a checkpoint was asked meanwhile (the server is stopping); "
                         "no pre-copy file is kept", cancelled=True)
        except Exception as exc:
            self.log.exception("ElasticHub live pre-copy write failed")
            return _fail(f"the pre-copy could not be written ({type(exc).__name__}: {exc}); "
                         "the checkpoint is unchanged")
        finally:
            del prepared  # the user's buffers are no longer held
        fingerprints = reply.pop("fingerprints")
        self._live_precopy = {"base_id": reply["base_id"], "fingerprints": fingerprints,
                              "generation": generation, "reply": dict(reply)}
        self.log.info("ElasticHub live pre-copy: state lock held for the pickling only; %s bytes written "
                      "in %.3f s while cells ran", reply["bytes"], time.perf_counter() - locked_s)
        return reply

    def _precopy_chunks(self, cancel_file):
        """Called after each chunk of the pre-copy is written: the test hook, then whether the
        server extension asked to cancel (`cancel_file` exists: this thread serves no other control
        message until the write is done, so the ask comes by a file)."""
        hook = self._live_precopy_hook

        def between(blob, offset):
            if hook is not None:
                hook(blob, offset)
            if isinstance(cancel_file, str) and os.path.lexists(cancel_file):
                raise _Cancelled

        return between

    def _phase_freeze(self, content) -> dict:
        wait_s = _number(content, "wait_s", self.busy_timeout, 0, 3600)
        lease_s = _number(content, "lease_s", self.live_default_lease, 0, self.live_max_lease)
        for value in (wait_s, lease_s):
            if isinstance(value, str):
                return _fail(value)
        if lease_s <= 0:
            return _fail("'lease_s' must be more than 0 s: a frozen kernel must thaw by itself")
        if self._live_pending:
            return _fail("this kernel is a live-migration destination awaiting apply; it cannot be frozen")
        if self._live_phase != "running":
            return _fail(f"the kernel is already {self._live_phase}")
        if not self._state_lock.acquire(timeout=wait_s):
            return _fail(f"a cell is still running after {wait_s:g} s; not frozen", busy=True)
        try:
            with self._live_lock:
                if self._live_phase != "running":
                    return _fail(f"the kernel is already {self._live_phase}")
                self._live_phase, self._live_activity = "frozen", False
            held = self._live_precopy or {"base_id": None, "fingerprints": []}
            try:
                from .engine import user_variable_names
                from .live import live_base_id, write_delta

                if held["base_id"] and live_base_id(self.session_dir) != held["base_id"]:
                    # The pre-copy file is gone (a full checkpoint after a
                    # thaw removed it): a delta carrying everything.
                    held = {"base_id": None, "fingerprints": []}

                ns = self.shell.user_ns
                ensure_private_dir(self.checkpoint_root, tighten=False)
                reply = write_delta(self.session_dir, ns, user_variable_names(ns, self.shell.user_ns_hidden),
                                    self.recorder, self.disk_speed, self.session_name, held["base_id"],
                                    held["fingerprints"], self.shell.execution_count, context=self._context())
            except Exception as exc:
                with self._live_lock:
                    self._live_phase = "running"
                self.log.exception("ElasticHub live delta failed")
                return _fail(f"the delta could not be written ({type(exc).__name__}: {exc}); not frozen")
            with self._live_lock:
                self._live_delta_id = reply["delta_id"]
                self._start_lease(lease_s)
            return dict(reply, lease_s=lease_s)
        finally:
            self._state_lock.release()

    def checkpoint_and_hold(self, hold_s) -> dict:
        """A restart move's checkpoint, then new cells held (they wait, as on
        a frozen kernel) until the server stops. A cell started between the
        orchestrator's last look and the hub's stop ran past the checkpoint
        and was interrupted by the stop, its side effects half done; held
        under the state lock, no cell starts in between. A cell sent
        meanwhile never runs here: the stop's interrupt answers it "did not
        run". The hold is a lease: it ends by itself if the stop never
        comes, a thaw ends it (the orchestrator saw a cell waiting: it runs,
        and the move checkpoints again), and a checkpoint asked while held
        (the hub's stop asks one) renews it."""
        lease_s = _number({"hold_s": hold_s}, "hold_s", 0.0, 0, self.live_max_lease)
        if isinstance(lease_s, str):
            return dict(_fail(lease_s), status="error")
        if not self._state_lock.acquire(timeout=self.busy_timeout):
            return dict(_fail(f"a cell is still running after {self.busy_timeout:g} s; checkpoint not written"),
                        status="error")
        try:
            reply = self.checkpoint_now(wait_s=0)
            if not reply.get("ok") or lease_s <= 0:
                return reply
            with self._live_lock:
                if self._live_phase != "running":  # a live move's freeze: its own lease holds the cells
                    return dict(reply, held_s=0.0)
                self._live_phase, self._live_activity, self._live_hold = "frozen", False, lease_s
                self._start_lease(lease_s)
            return dict(reply, held_s=lease_s)
        finally:
            self._state_lock.release()

    def checkpoint_asked(self, request: dict) -> dict:
        """The checkpoint endpoint's request: ``hold_s`` holds the cells after it; a checkpoint
        asked while they are held (the hub's stop asks one) holds them anew."""
        if "hold_s" in request:
            return self.checkpoint_and_hold(request["hold_s"])
        reply = self.checkpoint_now(force=bool(request.get("force")))
        with self._live_lock:
            if not (reply.get("ok") and self._live_phase == "frozen" and self._live_hold):
                return reply
            self._cancel_lease()
            self._start_lease(self._live_hold)
            return dict(reply, held_s=self._live_hold)

    def _start_lease(self, lease_s: float) -> None:
        timer = threading.Timer(lease_s, self._lease_ran_out)
        timer.daemon = True
        timer.name = "elastichub-lease"
        self._live_timer, self._live_lease_end = timer, time.monotonic() + lease_s
        timer.start()

    def _lease_ran_out(self) -> None:
        if self._phase_thaw({}, lease=threading.current_thread()).get("was") == "frozen":
            self.log.warning("ElasticHub: live-migration lease ran out; thawed")

    def _phase_retire(self, content) -> dict:
        with self._live_lock:
            if self._live_phase == "retired":
                return {"ok": True, "retired": True}
            if self._live_phase != "frozen":
                return _fail("the kernel is not frozen (thawed, or its lease ran out); not retired")
            activity = self._live_activity
            if activity and not content.get("force"):
                return _fail("a cell or comm message arrived since the freeze; not retired (still frozen)",
                             activity=True)
            # Forced (the orchestrator's last try for a kernel that is never
            # quiet): what arrived during the pause is not run here; each
            # waiting cell is answered "it did not run. Run it again".
            self._live_phase, self._live_hold = "retired", None
            self._cancel_lease()
        return {"ok": True, "retired": True, "delta_id": self._live_delta_id, "activity": activity}

    def _phase_thaw(self, content, lease: threading.Thread | None = None) -> dict:
        """``lease``: the lease timer thawing; decided under the lock, as a
        retire served meanwhile must stay (the destination owns the state)."""
        lease_ran_out = lease is not None
        with self._live_lock:
            was = self._live_phase
            if lease_ran_out and (was != "frozen" or self._live_timer is not lease):
                return {"ok": True, "was": was, "delta_removed": False}
            self._live_phase, self._live_hold = "running", None
            self._cancel_lease()
            delta_id, self._live_delta_id = self._live_delta_id, None
            if self._live_precopy:
                # The pause is being retried (a cell arrived): the retry's
                # freeze still builds on this pre-copy, so its file stays
                # (unless the move is given up, below).
                self._live_precopy = dict(self._live_precopy, thawed=True)
        removed = False
        if delta_id:
            from .live import remove_delta

            removed = remove_delta(self.session_dir, delta_id)
        held = self._live_precopy
        # Nobody finishes the move: its lease ran out, the orchestrator gave it up ("abandon": undone),
        # or it is undone before any pause (a thaw between two tries of the pause meets a frozen kernel).
        # Its pre-copy file goes too: a full copy of the state, kept until the next full checkpoint it
        # may leave no room for.
        given_up = lease_ran_out or content.get("abandon") is True or was == "running"
        if given_up and held and held.get("base_id"):
            from .live import remove_live_base

            remove_live_base(self.session_dir, held["base_id"])
            self._live_precopy = None
        return {"ok": True, "was": was, "delta_removed": removed}

    def _cancel_lease(self) -> None:
        if self._live_timer is not None:
            self._live_timer.cancel()
        self._live_timer, self._live_lease_end = None, None

    def _phase_apply(self, content) -> dict:
        delta_id = content.get("delta_id")
        if not isinstance(delta_id, str) or not delta_id:
            return _fail("'delta_id' must be the non-empty delta_id the source's freeze answered")
        if self._live_phase != "running":
            return _fail(f"the kernel is {self._live_phase}; only a running kernel can apply a delta")
        if not self._state_lock.acquire(timeout=self.busy_timeout):
            return _fail(f"a cell is still running after {self.busy_timeout:g} s; delta not applied", busy=True)
        try:
            from .live import LiveError, build, swap
            from .storage import CheckpointRejected

            ns = self.shell.user_ns
            try:
                # Bound as they load (notebook code run by a later one sees them); undone if refused.
                bindings, report = build(self.session_dir, ns, self._live_base, delta_id,
                                         base_id=self._live_base.get("base_id"), context=self._context(),
                                         old_names=self._live_names)
            except LiveError as exc:
                return _fail(f"{exc}; namespace unchanged")
            except CheckpointRejected as bad:
                return _fail(f"the delta file {bad.path} was refused: {bad.reason}; namespace unchanged")
            if report["failed_now"]:
                bindings.undo()
                names = ", ".join(f"{i['name']} ({i['reason']})" for i in report["failed_now"])
                return _fail(f"these variables could not be loaded here: {names}; namespace unchanged")
            swap(ns, self._live_names, bindings)
            self.shell.execution_count = report["execution_count"]
            self._live_names = set(report["migrated"]) | set(report["recomputed"])
            self.seed_recorder(report)
            # The state is now checkpoint.ehk + live-delta.ehk on disk (a
            # restart applies both); the next full checkpoint replaces them.
            self._live_pending = False
            # The base buffers stay until the first cell runs here: nothing
            # changed them, and a second apply (the source ran a cell that
            # arrived during the pause, then froze again) reuses them.
            same_base = report["base_id"] == self._live_base.get("base_id")
            self._live_base = {"base_id": report["base_id"],
                               "buffers": self._live_base.get("buffers") if same_base else None}
            self.restored, self._dirty, self.last_checkpoint = dict(report), False, None
            from .messages import format_live_arrival

            self._notes = [format_live_arrival(report)]
            return {"ok": True, "bytes_read": report["bytes_read"], "migrated": report["migrated"],
                    "recomputed": report["recomputed"], "not_restorable": report["not_restorable"],
                    "differs": report["differs"], "delta_id": report["delta_id"], "base_id": report["base_id"],
                    "execution_count": report["execution_count"]}
        finally:
            self._state_lock.release()

    def live_status(self) -> dict:
        with self._live_lock:
            end = self._live_lease_end
            return {
                "phase": self._live_phase,
                "activity": self._live_activity,
                "lease_remaining_s": None if end is None else round(max(end - time.monotonic(), 0.0), 3),
                "destination": self._live_destination,
                "awaiting_apply": self._live_pending,
                "restored_base_id": self._live_base.get("base_id"),
                "base_buffers_held": self._live_base.get("buffers") is not None,
                "precopy_base_id": (self._live_precopy or {}).get("base_id"),
                "delta_id": self._live_delta_id,
                "held": bool(self._live_hold),
            }

    def _live_refuses_checkpoint(self) -> str | None:
        """Why this kernel must not write the session's checkpoint now."""
        if self._live_phase == "retired":
            return "this kernel was retired by a live migration: the kernel on the new node owns the state"
        if self._live_pending:
            return ("this kernel is a live-migration destination awaiting apply: the source kernel "
                    "still owns the checkpoint")
        return None


class _Cancelled(Exception):
    """The pre-copy gives way to a checkpoint."""


def _fail(error: str, **extra) -> dict:
    return {"ok": False, "error": error, **extra}


def _number(content: dict, key: str, default: float, low: float, high: float):
    """The float value of ``content[key]`` or an error message (a str)."""
    value = content.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"'{key}' must be a number of seconds, not {value!r}"
    if not low <= value <= high:
        return f"'{key}' must be between {low:g} and {high:g} s, not {value:g}"
    return float(value)

