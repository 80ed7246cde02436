"""HTTP handlers of the server extension (serverext.py): ``/api/elastichub/``
checkpoint, status, live and terminals, and the live ``release`` phase's
closing of a kernel's client websockets."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from . import __version__

if TYPE_CHECKING:
    from .serverext import ElasticHubExtension

LIVE_PHASES = ("precopy", "freeze", "retire", "thaw", "apply", "release")


class _Handler(ExtensionHandlerMixin, APIHandler):
    # Same authorization as /api/kernels: POST needs "write", GET "read".
    auth_resource = "kernels"

    @property
    def ext(self) -> ElasticHubExtension:
        return self.extensionapp  # type: ignore[return-value]


class CheckpointHandler(_Handler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        kernel_id, hold = self._kernel_id_from_body()
        targets = self.ext.kernels(kernel_id)
        results = await asyncio.gather(*(self.ext.checkpoint(kid, k, hold) for kid, k in targets))
        self.finish(json.dumps(list(results)))

    def _kernel_id_from_body(self) -> tuple[str | None, dict | None]:
        """The kernel asked for (None: every one) and the kernel's request: ``hold_s``, a restart
        move's (the cells are held after the checkpoint until the server stops: livekernel.py)."""
        raw = self.request.body.strip()
        if not raw:
            return None, None
        try:
            body = json.loads(raw)
        except ValueError:
            raise web.HTTPError(400, "the request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise web.HTTPError(400, "the request body must be a JSON object, e.g. {\"kernel_id\": \"...\"}")
        unknown = sorted(set(body) - {"kernel_id", "hold_s"})
        if unknown:
            raise web.HTTPError(400, f"unknown field(s) in the request body: {', '.join(unknown)}")
        kernel_id = body.get("kernel_id")
        if kernel_id is not None and (not isinstance(kernel_id, str) or not kernel_id):
            raise web.HTTPError(400, "'kernel_id' must be a non-empty string")
        hold = body.get("hold_s")
        if hold is not None and (isinstance(hold, bool) or not isinstance(hold, (int, float)) or hold < 0):
            raise web.HTTPError(400, "'hold_s' must be a non-negative number of seconds")
        return kernel_id, None if hold is None else {"hold_s": hold}


class StatusHandler(_Handler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        kernel_id = self.get_query_argument("kernel_id", None) or None
        # ask_kernels=0: what each kernel is, not what it reports (no round trip: a kernel running a
        # cell may answer only when the cell ends), as the orchestrator asks before a drain.
        ask = self.get_query_argument("ask_kernels", "1") != "0"
        targets = self.ext.kernels(kernel_id)
        kernels = await asyncio.gather(*(self.ext.status(kid, k, ask) for kid, k in targets))
        self.finish(
            json.dumps(
                {
                    "version": __version__,
                    "checkpoint_timeout": self.ext.checkpoint_timeout,
                    "status_timeout": self.ext.status_timeout,
                    "kernels": list(kernels),
                    "adopted": list(self.ext.adopted),
                }
            )
        )


class LiveHandler(_Handler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        content = _live_body(self.request.body)
        kernel_id = content.pop("kernel_id", None)
        whole = kernel_id is None and content["phase"] in ("retire", "thaw")
        # The whole server retired: no kernel may start here any more (servermoving.py), and
        # those it lists next include any that started since the freeze.
        unlisted = await self.ext.gate.close() if whole and content["phase"] == "retire" else []
        targets = self.ext.kernels(kernel_id)
        results = await asyncio.gather(*(self.ext.live(kid, k, content) for kid, k in targets))
        if whole and content["phase"] == "thaw":  # the move undone: this server serves on
            self.ext.gate.open()
        self.finish(json.dumps(list(results) + unlisted))


class TerminalsHandler(ExtensionHandlerMixin, APIHandler):
    """Per terminal, the processes its shell started: ``[{"name",
    "processes": [{"pid", "command"}]}]`` (``processes`` null where they
    cannot be read). Authorized like Jupyter Server's own terminal API."""

    auth_resource = "terminals"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from .processes import descendants

        manager = self.settings.get("terminal_manager")
        shells = {}
        for name, term in list(getattr(manager, "terminals", {}).items()):
            pid = getattr(getattr(term, "ptyproc", None), "pid", None)
            if isinstance(pid, int):
                shells[name] = pid
        found = descendants(shells) if shells else {}
        self.finish(json.dumps([{"name": name, "processes": None if found is None else found.get(name, [])}
                                for name in shells]))


def close_kernel_websockets(kernel_id: str) -> int:
    """Close every client websocket of one kernel; how many. Jupyter Server
    keeps them by "kernel_id:session" in its channels connection class."""
    try:
        from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection
    except ImportError:
        return 0
    open_sessions = getattr(ZMQChannelsWebsocketConnection, "_open_sessions", None) or {}
    handlers = [h for key, h in list(open_sessions.items()) if key.split(":", 1)[0] == kernel_id]
    for handler in handlers:
        handler.close()
    return len(handlers)


def _live_body(raw: bytes) -> dict:
    """The live request body, checked field by field (400 naming the field)."""
    try:
        body = json.loads(raw.strip() or b"null")
    except ValueError:
        raise web.HTTPError(400, "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise web.HTTPError(400, 'the request body must be a JSON object, e.g. {"phase": "precopy"}')
    unknown = sorted(set(body) - {"phase", "kernel_id", "wait_s", "lease_s", "delta_id", "force", "abandon"})
    if unknown:
        raise web.HTTPError(400, f"unknown field(s) in the request body: {', '.join(unknown)}")
    if body.get("phase") not in LIVE_PHASES:
        raise web.HTTPError(400, f"'phase' must be one of {', '.join(LIVE_PHASES)}, not {body.get('phase')!r}")
    for key in ("wait_s", "lease_s"):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise web.HTTPError(400, f"'{key}' must be a non-negative number of seconds")
    for key in ("force", "abandon"):
        if key in body and not isinstance(body[key], bool):
            raise web.HTTPError(400, f"'{key}' must be true or false")
    for key in ("kernel_id", "delta_id"):
        value = body.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise web.HTTPError(400, f"'{key}' must be a non-empty string")
    return {k: v for k, v in body.items() if v is not None}
