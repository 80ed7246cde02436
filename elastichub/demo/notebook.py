"""A notebook as a student's JupyterLab tab uses it, through the hub's proxy:
a session (`POST /user/NAME/api/sessions`), then code run on its kernel over
the kernel websocket (`/user/NAME/api/kernels/ID/channels`), the Jupyter
messaging protocol as JSON frames. Used by `elastichub demo` and the tests.
"""

from __future__ import annotations

import asyncio
import json
import posixpath
import uuid
from urllib.parse import quote, urlparse

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import WebSocketClosedError, websocket_connect


class NotebookError(Exception):
    """The session could not be opened, or the kernel's websocket went away."""


class Notebook:
    """One open notebook of `user` at `path` (relative to the server's root)."""

    def __init__(self, hub_url: str, user: str, token: str, path: str, kernel: str = "elastic-python",
                 server_name: str = ""):
        self.hub_url = hub_url.rstrip("/")
        self.user, self.token, self.path, self.kernel = user, token, path, kernel
        # Escaped as JupyterHub escapes a server's URL (url_escape_path: '@'
        # and '~' stay): the single-user server routes on exactly that path.
        prefix = f"/user/{quote(user, safe='@~')}" + (f"/{quote(server_name, safe='@~')}" if server_name else "")
        self.base = self.hub_url + prefix
        self.kernel_id: str | None = None
        self.session_id = uuid.uuid4().hex
        self.ws = None
        self.http = AsyncHTTPClient()

    async def _request(self, method: str, path: str, body=None) -> tuple[int, object]:
        resp = await self.http.fetch(HTTPRequest(
            self.base + path, method=method, body=None if body is None else json.dumps(body),
            headers={"Authorization": f"token {self.token}"}, request_timeout=120, follow_redirects=False),
            raise_error=False)
        try:
            return resp.code, json.loads(resp.body) if resp.body else None
        except ValueError:
            return resp.code, resp.body

    async def open(self, create: bool = True) -> "Notebook":
        """Open (and, if missing, create) the notebook and its kernel, as a tab does."""
        if create:
            code, _ = await self._request("GET", f"/api/contents/{quote(self.path)}?content=0")
            if code == 404:
                code, body = await self._request("PUT", f"/api/contents/{quote(self.path)}", {"type": "notebook"})
                if code not in (200, 201):
                    raise NotebookError(f"cannot create {self.path}: {code} {body}")
        code, session = await self._request("POST", "/api/sessions", {
            "path": self.path, "name": posixpath.basename(self.path), "type": "notebook",
            "kernel": {"name": self.kernel}})
        if code != 201 or not isinstance(session, dict):
            raise NotebookError(f"cannot open {self.path} for {self.user}: {code} {session}")
        self.kernel_id = session["kernel"]["id"]
        await self.connect()
        return self

    async def rename(self, new_path: str) -> None:
        """Rename the notebook as JupyterLab does, kernel running: the file,
        then the session's path and name."""
        code, body = await self._request("PATCH", f"/api/contents/{quote(self.path)}", {"path": new_path})
        if code != 200:
            raise NotebookError(f"cannot rename {self.path} to {new_path}: {code} {body}")
        code, sessions = await self._request("GET", "/api/sessions")
        session = next((s for s in sessions or [] if s["kernel"]["id"] == self.kernel_id), None)
        if code != 200 or session is None:
            raise NotebookError(f"no session of {self.user}'s kernel {self.kernel_id}: {code} {sessions}")
        code, body = await self._request("PATCH", f"/api/sessions/{session['id']}",
                                         {"path": new_path, "name": posixpath.basename(new_path)})
        if code != 200:
            raise NotebookError(f"cannot move {self.path}'s session to {new_path}: {code} {body}")
        self.path = new_path

    async def connect(self) -> None:
        """Connect the kernel websocket (again, after it closed: as JupyterLab
        does, to the same kernel id, wherever the hub's route now leads)."""
        ws_url = urlparse(self.base)._replace(scheme="wss" if self.base.startswith("https") else "ws").geturl()
        try:
            # The same patience as the HTTP calls: tornado's 20 s default ran out
            # when ten kernels started at once on two busy cores.
            self.ws = await websocket_connect(HTTPRequest(
                f"{ws_url}/api/kernels/{self.kernel_id}/channels?session_id={self.session_id}",
                headers={"Authorization": f"token {self.token}"}, connect_timeout=120, request_timeout=120),
                max_message_size=64 << 20)
        except Exception as e:
            raise NotebookError(f"cannot connect to {self.user}'s kernel: {e}") from None

    def submit(self, code: str) -> str:
        """Send an execute_request; its msg_id (collect the outcome with `collect`)."""
        msg_id = uuid.uuid4().hex
        if self.ws is None:
            raise NotebookError(f"{self.user}'s kernel websocket is not connected")
        message = json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": self.user,
                       "session": self.session_id, "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}})
        try:
            self.ws.write_message(message)
        except WebSocketClosedError:
            raise NotebookError(f"{self.user}'s kernel websocket closed") from None
        return msg_id

    async def collect(self, msg_id: str, timeout: float = 300) -> dict:
        """{"status", "stdout", "stderr", "results" (text/plain of each result or
        display), "error" ("ename: evalue")} of the cell `msg_id`, once the kernel
        is idle after it (or its reply came and the socket closed)."""
        out = {"status": None, "stdout": "", "stderr": "", "results": [], "error": None}
        idle = False
        while out["status"] is None or not idle:
            async with asyncio.timeout(timeout):
                raw = await self.ws.read_message()
            if raw is None:
                if out["status"] is not None:
                    # Answered; only the trailing "idle" was cut off (a live move closed the
                    # socket): the cell is done, as JupyterLab would show it.
                    return out
                raise NotebookError(f"{self.user}'s kernel websocket closed")
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content.get("name") in ("stdout", "stderr"):
                out[content["name"]] += content["text"]
            elif kind in ("execute_result", "display_data"):
                out["results"].append(content["data"].get("text/plain", ""))
            elif kind == "error":
                out["error"] = f"{content['ename']}: {content['evalue']}"
            elif kind == "execute_reply":
                out["status"] = content["status"]
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
        return out

    async def run(self, code: str, timeout: float = 300) -> dict:
        return await self.collect(self.submit(code), timeout)

    def close(self) -> None:
        """Close the tab: the websocket goes, the kernel stays (as in JupyterLab)."""
        if self.ws is not None:
            self.ws.close()
            self.ws = None
