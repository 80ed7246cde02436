"""Jupyter Server extension: checkpoint the server's Elastic kernels on request.

``POST /api/elastichub/checkpoint`` (JSON body, optional ``kernel_id``; none
means every running kernel of the server; optional ``hold_s``: a restart
move's, each kernel then holds new cells until the server stops, at most
that long: livekernel.py) answers one result per kernel::

    {"kernel_id", "kernel_name", "ok", "bytes", "seconds", "migrated": [...],
     "recomputed": [...], "not_restorable": [{"name", "reason"}], "path",
     "unchanged", "wall_seconds", "held_s" (only when held), "error" (only when not ok)}

``GET /api/elastichub/status[?kernel_id=ID][&ask_kernels=0]`` answers the
extension's version and settings and, per kernel, whether it is an Elastic
kernel and what it reports about itself (``ask_kernels=0``: not asked, its
``status`` null; whether it is Elastic is read from its kernelspec).

``GET /api/elastichub/terminals`` answers, per terminal, the processes its
shell started (processes.py): a move waits for them.

``POST /api/elastichub/live`` (JSON body ``{"phase", "kernel_id"?, "wait_s"?,
"lease_s"?, "delta_id"?}``) relays one live-migration phase (precopy, freeze,
retire, thaw, apply: see livekernel.py) to the kernel(s) and answers one
result per kernel: ``{"kernel_id", "kernel_name", "ok", "phase", ...the
kernel's reply fields..., "error"}``.

A notebook renamed, or saved under another path, while its kernel runs keeps
the kernel, whose checkpoints are keyed by the path it started with. Before
it relays a checkpoint or a live pre-copy or freeze, and when the server
stops (before Jupyter shuts the kernels down), the extension tells each
Elastic kernel its notebook's path now (``elastichub_session_request``):
its checkpoints follow the notebook, so the kernel the notebook starts after
a move finds them.

Adoption (the destination of a live migration): at start, the sessions in
``$ELASTICHUB_ADOPT_SESSIONS`` (a JSON list shaped like ``GET /api/sessions``)
are started under the *same* kernel and session ids, their kernels with
``ELASTICHUB_LIVE_DESTINATION=1`` (they restore the pre-copy checkpoint and
keep its buffers for the delta). ``GET /api/elastichub/status`` reports each
under ``adopted``: starting, ready (the kernel answered: its start restore
is done) or failed, with the error.

The orchestrator calls the checkpoint endpoint before it stops a server: the
request waits for the kernel's reply (up to ``checkpoint_timeout``), so a large
state is written while nothing else is tearing the kernel down. Jupyter's own
shutdown and restart of an Elastic kernel ask for its checkpoint first the
same way (serverstop.py): Jupyter kills a kernel 5 s after asking it to stop.
The handlers are in serverhandlers.py. Both endpoints
are authenticated and authorized like Jupyter Server's own kernel API (auth
resource ``kernels``), so the hub's token works through the single-user server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from queue import Empty
from typing import Any

from jupyter_server.extension.application import ExtensionApp
from tornado import web
from traitlets import Float

# __version__: `jupyter server extension list` shows this module's.
from . import CHECKPOINT_REQUEST, LIVE_REQUEST, SESSION_REQUEST, STATUS_REQUEST, __version__
from .install import is_elastic_kernelspec
from .serverhandlers import (LIVE_PHASES, CheckpointHandler, LiveHandler, StatusHandler, TerminalsHandler,
                             close_kernel_websockets)

__all__ = ["LIVE_PHASES", "ElasticHubExtension", "__version__", "control_request", "is_elastic_kernelspec",
           "normalize_checkpoint_reply"]
ADOPT_ENV = "ELASTICHUB_ADOPT_SESSIONS"

# How often a waiting request checks that the kernel process is still alive.
_LIVENESS_POLL_S = 1.0


class KernelRequestError(Exception):
    """The kernel could not answer (dead, timed out, malformed reply)."""


async def control_request(kernel: Any, msg_type: str, timeout: float, content: dict | None = None) -> dict:
    """Send ``msg_type`` on the kernel's control channel; return the reply content.

    Only the control channel is opened: it is served by the kernel even while
    a cell runs, and a private client gets its own socket, so the reply is
    routed to us alone. Waits up to ``timeout`` seconds, checking that the
    kernel process is alive so a crash is reported at once, not at the timeout.
    """
    reply_type = msg_type.replace("_request", "_reply")
    client = kernel.client()
    client.start_channels(shell=False, iopub=False, stdin=False, hb=False, control=True)
    try:
        request = client.session.msg(msg_type, content or {})
        process = _process_id(kernel)
        client.control_channel.send(request)
        msg_id = request["header"]["msg_id"]
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KernelRequestError(f"no {msg_type} reply within {timeout:g} s")
            try:
                reply = await client.control_channel.get_msg(timeout=min(remaining, _LIVENESS_POLL_S))
            except Empty:
                # The server's restarter may already have replaced a dead
                # kernel: the new process never saw the request.
                if not await kernel.is_alive() or _process_id(kernel) != process:
                    raise KernelRequestError(f"the kernel died before answering {msg_type}") from None
                continue
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            content = reply.get("content")
            if reply.get("msg_type") != reply_type or not isinstance(content, dict):
                raise KernelRequestError(f"the kernel answered {msg_type} with a malformed {reply.get('msg_type')!r}")
            return content
    finally:
        client.stop_channels()


def _process_id(kernel: Any) -> Any:
    """The kernel process's pid where the provisioner knows it (local kernels)."""
    return getattr(getattr(kernel, "provisioner", None), "pid", None)


def _failure(kernel_id: str, kernel_name: str | None, error: str) -> dict:
    return {
        "kernel_id": kernel_id,
        "kernel_name": kernel_name,
        "ok": False,
        "bytes": 0,
        "seconds": 0.0,
        "migrated": [],
        "recomputed": [],
        "not_restorable": [],
        "error": error,
    }


def normalize_checkpoint_reply(kernel_id: str, kernel_name: str | None, content: dict) -> dict:
    """Check the kernel's reply field by field and shape it for the API.

    A malformed reply is a failed checkpoint with a message naming the field:
    the orchestrator must never read "ok" from a reply it did not understand.
    """
    problems = []
    if not isinstance(content.get("ok"), bool):
        problems.append("'ok' is not a boolean")
    if not isinstance(content.get("bytes", 0), int) or isinstance(content.get("bytes", 0), bool):
        problems.append("'bytes' is not an integer")
    if not isinstance(content.get("seconds", 0.0), (int, float)):
        problems.append("'seconds' is not a number")
    for field in ("migrated", "recomputed"):
        value = content.get(field, [])
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            problems.append(f"'{field}' is not a list of names")
    not_restorable = content.get("not_restorable", [])
    if not (
        isinstance(not_restorable, list)
        and all(isinstance(v, dict) and isinstance(v.get("name"), str) for v in not_restorable)
    ):
        problems.append("'not_restorable' is not a list of {name, reason}")
    if not isinstance(content.get("warning", ""), str):
        problems.append("'warning' is not a string")
    if problems:
        return _failure(kernel_id, kernel_name, "malformed checkpoint reply from the kernel: " + "; ".join(problems))
    ok = content["ok"] and content.get("status", "ok") == "ok"
    result = {
        "kernel_id": kernel_id,
        "kernel_name": kernel_name,
        "ok": ok,
        "bytes": content.get("bytes", 0),
        "seconds": float(content.get("seconds", 0.0)),
        "migrated": list(content.get("migrated", [])),
        "recomputed": list(content.get("recomputed", [])),
        "not_restorable": [
            {"name": v["name"], "reason": str(v.get("reason", ""))} for v in not_restorable
        ],
        "path": content.get("path"),
        # True when the state had not changed since the last checkpoint,
        # which was confirmed instead of rewritten.
        "unchanged": bool(content.get("unchanged", False)),
    }
    if content.get("warning"):  # e.g. another kernel of this notebook saved to the same place
        result["warning"] = content["warning"]
    if isinstance(content.get("held_s"), (int, float)) and content["held_s"] > 0:  # a restart move's hold
        result["held_s"] = content["held_s"]
    if not ok:
        result["error"] = str(content.get("error") or "the kernel reported a failed checkpoint")
    return result


class ElasticHubExtension(ExtensionApp):
    """Checkpoint endpoint of the Elastic Python kernel (``/api/elastichub/``)."""

    name = "elastichub_kernel"
    load_other_extensions = True

    checkpoint_timeout = Float(
        1800.0,
        config=True,
        help="""Seconds to wait for one kernel's checkpoint reply. Generous:
        writing a large state takes as long as the disk needs, and a request
        that gives up early leaves the orchestrator without a checkpoint.""",
    )
    status_timeout = Float(
        10.0,
        config=True,
        help="Seconds to wait for one kernel's status reply.",
    )
    live_timeout = Float(
        1800.0,
        config=True,
        help="""Seconds to wait for one kernel's live-migration reply (a
        precopy writes a full checkpoint; a freeze first waits wait_s).""",
    )
    adopt_timeout = Float(
        600.0,
        config=True,
        help="Seconds an adopted kernel may take to start and restore its pre-copy.",
    )
    shutdown_checkpoint_timeout = Float(
        600.0,
        config=True,
        help="""Seconds Jupyter's shutdown or restart of an Elastic kernel (closing
        its notebook, Shut Down, Restart, culling, the server stopping) waits for
        the checkpoint the extension asks for first, before Jupyter's own
        shutdown_wait_time (5 s) starts. 0: not asked; the kernel then has only
        that time for its checkpoint (serverstop.py).""",
    )

    def initialize_settings(self) -> None:
        # One lock per kernel: two checkpoint requests for the same kernel
        # run one after the other, never interleaved in its storage.
        self.locks: dict[str, asyncio.Lock] = {}
        self.adopted: list[dict] = []
        self._adoptions: list[asyncio.Task] = []
        # kernel id -> the notebook path it was last told (follow_sessions)
        self.told: dict[str, str] = {}
        from .servermoving import MoveGate
        from .serverstop import checkpoint_before_shutdown

        checkpoint_before_shutdown(self)
        self.gate = MoveGate(self.log, self.serverapp.runtime_dir)  # closed while a live move retires the kernels
        self.gate.wrap(self.serverapp.kernel_manager)

    def initialize_handlers(self) -> None:
        self.handlers.extend(
            [
                (r"/api/elastichub/checkpoint", CheckpointHandler),
                (r"/api/elastichub/status", StatusHandler),
                (r"/api/elastichub/live", LiveHandler),
                (r"/api/elastichub/terminals", TerminalsHandler),
            ]
        )

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        raw = os.environ.get(ADOPT_ENV, "").strip()
        if not raw:
            return
        try:
            items = json.loads(raw)
            if not isinstance(items, list):
                raise ValueError("not a JSON list")
        except ValueError as exc:
            self.log.error("elastichub: %s is malformed (%s); no session adopted", ADOPT_ENV, exc)
            self.adopted.append({"session_id": None, "kernel_id": None, "state": "failed",
                                 "error": f"{ADOPT_ENV} is malformed ({exc})"})
            return
        # Sessions by kernel: a notebook and a console on its kernel (or two notebooks sharing one) are
        # two sessions of one kernel, which must start once (two starts of one id: two processes).
        by_kernel: dict[str, list] = {}
        for item in items:
            entry = {"session_id": None, "kernel_id": None, "state": "starting", "error": None}
            self.adopted.append(entry)
            try:
                fields = _adoption_fields(item)
            except ValueError as exc:  # already says what is wrong
                entry.update(state="failed", error=str(exc))
                self.log.error("elastichub: adopting a session failed: %s", exc)
                continue
            entry.update(session_id=fields[0], kernel_id=fields[4])
            by_kernel.setdefault(fields[4], []).append((fields, entry))
        for group in by_kernel.values():
            # The notebook's session first: its path names the kernel's checkpoints (as follow_sessions).
            group.sort(key=lambda member: member[0][3] != "notebook")
            # In the background: the server answers (status says "starting")
            # while large pre-copies are read.
            self._adoptions.append(asyncio.create_task(self._adopt(group)))

    async def _adopt(self, group: list) -> None:
        """Start one kernel under its old id, then save each of its sessions under theirs."""
        entries = [entry for _, entry in group]
        session_id, path, name, _, kernel_id, kernel_name = group[0][0]
        try:
            app = self.serverapp
            sm, km = app.session_manager, app.kernel_manager
            kernel_path = await _maybe_await(app.contents_manager.get_kernel_path(path=path))
            # The same JPY_SESSION_NAME as the source server gave its kernel,
            # or told it since the notebook was renamed (follow_sessions): the
            # same checkpoint directory (the home is shared).
            env = dict(sm.get_kernel_env(path, name), ELASTICHUB_LIVE_DESTINATION="1")
            self.told[kernel_id] = env["JPY_SESSION_NAME"]
            await km.start_kernel(kernel_id=kernel_id, kernel_name=kernel_name, path=kernel_path, env=env)
            for (sid, spath, sname, kind, _, _), _ in group:
                await sm.save_session(sid, path=spath, name=sname, type=kind, kernel_id=kernel_id)
            self.log.info("elastichub: adopting session(s) %s: kernel %s started, waiting for its restore",
                          ", ".join(e["session_id"] for e in entries), kernel_id)
            status = await self._first_status(km.get_kernel(kernel_id))
            live = status.get("live") or {}
            for entry in entries:
                entry.update(state="ready", restored_base_id=live.get("restored_base_id"),
                             restored=status.get("restored"))
            self.log.info("elastichub: adopted session %s (kernel %s)", session_id, kernel_id)
        except Exception as exc:
            error = str(exc) if isinstance(exc, (ValueError, KernelRequestError)) else f"{type(exc).__name__}: {exc}"
            for entry in entries:
                entry.update(state="failed", error=error)
            self.log.error("elastichub: adopting the session(s) of kernel %s failed: %s", kernel_id, error)

    def _kernel_or_404(self, kernel_id: str) -> Any:
        km = self.serverapp.kernel_manager
        if kernel_id not in km:
            raise web.HTTPError(404, f"no kernel with id {kernel_id!r} on this server")
        return km.get_kernel(kernel_id)

    def kernels(self, kernel_id: str | None) -> list[tuple[str, Any]]:
        if kernel_id is not None:
            return [(kernel_id, self._kernel_or_404(kernel_id))]
        km = self.serverapp.kernel_manager
        running = km.list_kernel_ids()
        for gone in set(self.locks) - set(running):  # forget kernels shut down since
            if not self.locks[gone].locked():
                del self.locks[gone]
        for gone in set(self.told) - set(running):
            del self.told[gone]
        return [(kid, km.get_kernel(kid)) for kid in running]

    @staticmethod
    def _spec(kernel: Any) -> Any:
        try:
            return kernel.kernel_spec
        except Exception:  # a spec removed since start: treat as not elastic
            return None

    async def checkpoint(self, kernel_id: str, kernel: Any, request: dict | None = None,
                         timeout: float | None = None) -> dict:
        started = time.monotonic()
        self.gate.cancel_precopy(kernel_id)  # it would hold this checkpoint until it is written whole
        result = await self._checkpoint(kernel_id, kernel, request, timeout or self.checkpoint_timeout)
        result["wall_seconds"] = round(time.monotonic() - started, 6)
        level = self.log.info if result["ok"] else self.log.warning
        level(
            "elastichub checkpoint of kernel %s: ok=%s bytes=%s in %.3f s%s",
            kernel_id,
            result["ok"],
            result["bytes"],
            result["wall_seconds"],
            f" ({result['error']})" if "error" in result else "",
        )
        return result

    async def _checkpoint(self, kernel_id: str, kernel: Any, request: dict | None, timeout: float) -> dict:
        name = getattr(kernel, "kernel_name", None)
        if not is_elastic_kernelspec(self._spec(kernel)):
            # Decided from the spec: a stock kernel would never answer.
            return _failure(
                kernel_id,
                name,
                f"kernel {name!r} is not an Elastic Python kernel: it cannot checkpoint "
                "(start the notebook with the 'Elastic Python' kernel)",
            )
        async with self.locks.setdefault(kernel_id, asyncio.Lock()):
            if not await kernel.is_alive():
                return _failure(kernel_id, name, "the kernel is not running")
            await self.follow_sessions([kernel_id])
            try:
                content = await control_request(kernel, CHECKPOINT_REQUEST, timeout, request)
            except KernelRequestError as e:
                return _failure(kernel_id, name, str(e))
        return normalize_checkpoint_reply(kernel_id, name, content)

    async def _first_status(self, kernel: Any) -> dict:
        """The kernel's first status reply (sent once its start restore is
        done). Asked again every few seconds, each time on a new socket, as
        Jupyter nudges a starting kernel: a request sent while the kernel
        was still starting has been seen to go unanswered."""
        deadline = time.monotonic() + self.adopt_timeout
        wait = 1.0
        while True:
            remaining = deadline - time.monotonic()
            try:
                return await control_request(kernel, STATUS_REQUEST, max(min(remaining, wait), 0.1))
            except KernelRequestError as exc:
                wait = min(wait * 2, 5.0)
                if "died" in str(exc) or remaining <= wait:
                    raise KernelRequestError(f"the adopted kernel did not become ready: {exc}") from None

    async def live(self, kernel_id: str, kernel: Any, content: dict) -> dict:
        name = getattr(kernel, "kernel_name", None)
        started = time.monotonic()
        base = {"kernel_id": kernel_id, "kernel_name": name, "phase": content["phase"]}
        if content["phase"] == "release":
            # The server's part, not the kernel's: once the hub routes to the
            # destination, the clients' sockets to this server close now, so
            # they reconnect (to the destination) at once rather than when
            # this pod's process ends.
            closed = close_kernel_websockets(kernel_id)
            self.log.info("elastichub live release of kernel %s: %d client connection(s) closed", kernel_id, closed)
            return {**base, "ok": True, "closed": closed, "seconds": round(time.monotonic() - started, 6),
                    "error": None}
        if not is_elastic_kernelspec(self._spec(kernel)):
            return {**base, "ok": False, "elastic": False,
                    "error": f"kernel {name!r} is not an Elastic Python kernel: it cannot be moved live "
                    "(start the notebook with the 'Elastic Python' kernel)"}
        precopy = content["phase"] == "precopy"
        if precopy:  # a restart under way (its user's): the kernel after it is pre-copied
            await self.gate.settled(kernel_id)
        process = _process_id(kernel)
        for attempt in (1, 2):
            with self.gate.precopy(kernel_id, content) if precopy else contextlib.nullcontext(content) as asked:
                reply = await self._relay(kernel_id, kernel, asked)
            # Restarted under the request (or its restart's checkpoint cancelled it): the new process (a fresh
            # state) is pre-copied, rather than the move failing.
            if not (precopy and attempt == 1 and (isinstance(reply, str) or reply.get("cancelled") is True)
                    and (await self.gate.settled(kernel_id) or _process_id(kernel) != process)):
                break
            self.log.info("elastichub: kernel %s restarted during its pre-copy: asking the new process", kernel_id)
        if isinstance(reply, str):
            return {**base, "ok": False, "error": reply}
        if not isinstance(reply.get("ok"), bool):
            return {**base, "ok": False, "error": "malformed live reply from the kernel: 'ok' is not a boolean"}
        result = {**reply, **base, "ok": reply["ok"] and reply.get("status", "ok") == "ok"}
        result.pop("status", None)
        if not result["ok"]:
            result["error"] = str(reply.get("error") or "the kernel reported a failure")
        result["wall_seconds"] = round(time.monotonic() - started, 6)
        level = self.log.info if result["ok"] else self.log.warning
        level("elastichub live %s of kernel %s: ok=%s in %.3f s%s", content["phase"], kernel_id, result["ok"],
              result["wall_seconds"], f" ({result['error']})" if result.get("error") else "")
        return result

    async def _relay(self, kernel_id: str, kernel: Any, content: dict) -> dict | str:
        """The kernel's reply to one live phase, or why there is none."""
        async with self.locks.setdefault(kernel_id, asyncio.Lock()):
            if not await kernel.is_alive():
                return "the kernel is not running"
            if content["phase"] in ("precopy", "freeze"):  # the source's files: under the notebook's path now
                await self.follow_sessions([kernel_id])
            try:
                return await control_request(kernel, LIVE_REQUEST, self.live_timeout, content)
            except KernelRequestError as e:
                return str(e)

    async def follow_sessions(self, kernel_ids: list[str] | None = None) -> None:
        """Tell each Elastic kernel (of `kernel_ids`, default all) the path its
        notebook has now, where it changed since it was last told."""
        sm = self.serverapp.session_manager
        try:
            models = await _maybe_await(sm.list_sessions())
        except Exception as exc:  # the sessions database: a failure here must not stop a checkpoint
            self.log.warning("elastichub: cannot list the sessions (%s): notebook paths not followed", exc)
            return
        wanted: dict[str, str] = {}
        for model in models:
            kernel_id = (model.get("kernel") or {}).get("id")
            if not kernel_id or (kernel_ids is not None and kernel_id not in kernel_ids):
                continue
            if kernel_id not in wanted or model.get("type") == "notebook":  # before a console on the same kernel
                # what Jupyter gives a kernel started now for this session: its path and name now
                wanted[kernel_id] = sm.get_kernel_env(model.get("path"), model.get("name"))["JPY_SESSION_NAME"]
        await asyncio.gather(*(self._follow(kernel_id, name) for kernel_id, name in wanted.items()
                               if self.told.get(kernel_id) != name))

    async def _follow(self, kernel_id: str, session_name: str) -> None:
        km = self.serverapp.kernel_manager
        if kernel_id not in km:
            return
        kernel = km.get_kernel(kernel_id)
        if not is_elastic_kernelspec(self._spec(kernel)) or not await kernel.is_alive():
            return
        try:
            reply = await control_request(kernel, SESSION_REQUEST, self.status_timeout,
                                          {"session_name": session_name})
        except KernelRequestError as exc:
            self.log.warning("elastichub: kernel %s was not told its notebook is %s: %s", kernel_id, session_name, exc)
            return
        if not reply.get("ok"):
            self.log.warning("elastichub: kernel %s did not follow its notebook to %s: %s", kernel_id, session_name,
                             reply.get("error"))
            return
        self.told[kernel_id] = session_name
        if reply.get("moved"):
            self.log.info("elastichub: kernel %s follows its notebook to %s (checkpoints in %s)", kernel_id,
                          session_name, reply.get("checkpoint_dir"))

    async def stop_extension(self) -> None:
        # Jupyter stops extensions before it shuts the kernels down, and each
        # kernel's shutdown writes its checkpoint: under the notebook's path now.
        try:
            async with asyncio.timeout(self.status_timeout + 5):
                await self.follow_sessions()
        except TimeoutError:
            self.log.warning("elastichub: telling the kernels their notebooks' paths took too long at shutdown")

    async def status(self, kernel_id: str, kernel: Any, ask: bool = True) -> dict:
        name = getattr(kernel, "kernel_name", None)
        elastic = is_elastic_kernelspec(self._spec(kernel))
        entry: dict[str, Any] = {
            "kernel_id": kernel_id,
            "kernel_name": name,
            "elastic": elastic,
            "execution_state": getattr(kernel, "execution_state", None),
            "checkpointing": kernel_id in self.locks and self.locks[kernel_id].locked(),
            "status": None,
        }
        # Asking a kernel busy writing a checkpoint would only time out.
        if not elastic or entry["checkpointing"] or not ask:
            return entry
        try:
            if not await kernel.is_alive():
                entry["error"] = "the kernel is not running"
            else:
                entry["status"] = await control_request(kernel, STATUS_REQUEST, self.status_timeout)
        except KernelRequestError as e:
            entry["error"] = str(e)
        return entry


def _adoption_fields(item: Any) -> tuple:
    """(session_id, path, name, type, kernel_id, kernel_name) of one session to adopt."""
    if not isinstance(item, dict) or not isinstance(item.get("kernel"), dict):
        raise ValueError(f"a session to adopt must be an object with a 'kernel' object, not {item!r:.200}")
    fields = (item.get("id"), item.get("path"), item["kernel"].get("id"), item["kernel"].get("name"))
    for label, value in zip(("id", "path", "kernel.id", "kernel.name"), fields):
        if not isinstance(value, str) or not value:
            raise ValueError(f"session to adopt: '{label}' must be a non-empty string")
    name, kind = item.get("name"), item.get("type")
    return fields[0], fields[1], name, kind, fields[2], fields[3]


async def _maybe_await(value: Any) -> Any:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "elastichub_kernel.serverext", "app": ElasticHubExtension}]
