"""The API server's long-lived answers: watches (chunked JSON lines, with
bookmarks and an initial-events end marker) and followed pod logs.

A mixin of `apiserver.ResourceHandler`, whose request parsing (`_arg`,
`_flag`, `_int_arg`, `_render`) and store it uses.
"""

from __future__ import annotations

import asyncio
import inspect
import random

import tornado.iostream

from .store import KINDS, ApiError, WatchEvent, encode_json
from .tables import table_version, to_table


class StreamingMixin:
    """Watches and pod logs of a `ResourceHandler`."""

    async def _watch(self, extra_field_selector: str | None = None) -> None:
        fields = ",".join(f for f in (self._arg("fieldSelector"), extra_field_selector) if f)
        rv_arg = self._arg("resourceVersion") or ""
        timeout = self._int_arg("timeoutSeconds")
        if not timeout or timeout < 0:  # the real server picks a random span in [min, 2*min)
            base = self.settings["watch_timeout"]
            timeout = base * (1 + random.random())
        bookmarks = self._flag("allowWatchBookmarks")
        initial = rv_arg in ("", "0") or self._flag("sendInitialEvents")
        try:
            sub = self.store.subscribe(self.kind, since=None if initial else rv_arg, namespace=self.namespace,
                                       label_selector=self._arg("labelSelector"), field_selector=fields,
                                       raw=True, initial=initial)
        except ApiError as e:
            if e.code != 410:
                raise
            self.set_status(200)
            self.finish(encode_json({"type": "ERROR", "object": e.status()}) + "\n")
            return
        self._subscription = sub
        try:
            await self._stream(sub, timeout, bookmarks, initial and self._flag("sendInitialEvents"))
        finally:
            sub.close()

    async def _stream(self, sub, timeout: float, bookmarks: bool, initial_end_marker: bool) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        interval = self.settings["bookmark_interval"]
        next_bookmark = loop.time() + interval
        table_version_ = table_version(self.request.headers.get("Accept", ""))
        kind_name, headers_sent = KINDS[self.kind][0], False
        self.set_status(200)
        self.set_header("Content-Type", "application/json")
        await self._flush()
        if initial_end_marker and bookmarks:
            pending = sub.pending()
            self._write_events(pending, table_version_, True)
            headers_sent = bool(pending)
            self.write(self._bookmark(kind_name, {"k8s.io/initial-events-end": "true"}))
        while not self._closed:
            now = loop.time()
            if now >= deadline:
                break
            wait = min(deadline, next_bookmark) - now if bookmarks else deadline - now
            try:
                async with asyncio.timeout(wait):
                    first = await sub.__anext__()
            except StopAsyncIteration:
                break  # server shutting down, or this watcher fell too far behind
            except TimeoutError:
                if bookmarks and loop.time() >= next_bookmark:
                    # Safe: with the queue empty every change up to now has been sent.
                    self.write(self._bookmark(kind_name))
                    next_bookmark = loop.time() + interval
                    if not await self._flush():
                        return
                continue
            events = [first] + sub.pending()
            self._write_events(events, table_version_, not headers_sent)
            headers_sent = True
            if not await self._flush():
                return
        if not self._closed:
            self.finish()

    def _bookmark(self, kind_name: str, annotations: dict | None = None) -> bytes:
        meta: dict = {"resourceVersion": self.store.resource_version}
        if annotations:
            meta["annotations"] = annotations
        return (encode_json({"type": "BOOKMARK", "object": {"kind": kind_name, "apiVersion": "v1", "metadata": meta}})
                + "\n").encode()

    def _write_events(self, events: list[WatchEvent], table_v: str | None, headers: bool) -> None:
        for ev in events:
            if table_v is None:
                self.write(ev.line())
            else:
                table = to_table(self.kind, [ev.object], table_v, self._arg("includeObject"),
                                 str(ev.rv), headers)
                headers = False
                self.write(encode_json({"type": ev.type, "object": table}) + "\n")

    async def _flush(self) -> bool:
        try:
            await self.flush()
            return True
        except tornado.iostream.StreamClosedError:
            self._closed = True
            return False

    async def _pod_log(self) -> None:
        pod = self.store.get("pods", self.name, self.namespace)
        names = [c["name"] for c in pod["spec"].get("containers") or []]
        container = self._arg("container")
        if container is None:
            if len(names) != 1:
                raise ApiError(400, "BadRequest", f"a container name must be specified for pod {self.name}, "
                               f"choose one of: [{' '.join(names)}]")
            container = names[0]
        elif container not in names:
            raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {self.name}")
        provider = self.store.log_provider
        text = await _call_provider(provider, self.namespace, self.name, container) if provider else None
        if text is None:
            raise ApiError(400, "BadRequest", f'container "{container}" in pod "{self.name}" is waiting to start: '
                           "no log yet")
        self.set_header("Content-Type", "text/plain")
        if not self._flag("follow"):
            return self.finish(_tail(text, self._int_arg("tailLines"), self._int_arg("limitBytes")))
        sent = _tail(text, self._int_arg("tailLines"), None)
        self.write(sent)
        offset = len(text)
        while not self._closed and await self._flush():
            await asyncio.sleep(self.settings["log_poll_interval"])
            try:
                pod = self.store.get("pods", self.name, self.namespace)
            except ApiError:
                break
            text = await _call_provider(provider, self.namespace, self.name, container) or ""
            if len(text) > offset:
                self.write(text[offset:])
                offset = len(text)
            if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                break
        if not self._closed:
            self.finish()


async def _call_provider(provider, namespace: str, name: str, container: str) -> str | None:
    text = provider(namespace, name, container)
    if inspect.isawaitable(text):
        text = await text
    return text


def _tail(text: str, lines: int | None, limit: int | None) -> str:
    if lines is not None and lines >= 0:
        kept = text.splitlines(keepends=True)
        text = "".join(kept[-lines:]) if lines else ""
    if limit is not None and limit >= 0:
        text = text[:limit]
    return text
