"""The local cluster's object store: namespaces, nodes, pods and events.

One rising integer resourceVersion over the whole store (a string on
objects), as etcd gives the real API server. Stored objects are never
mutated in place: an update stores a fresh copy, so a change event can hold
a reference to the object as it was. Every public method hands out copies.

Watches and controllers `subscribe()`; a subscription may start from an
older resourceVersion and then replays the change history kept (bounded)
per kind, or fails with 410 Expired when that history no longer reaches
back far enough, as the real watch cache does.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import json
import random
import uuid
from typing import Any, Callable, Iterator

from .selectors import SelectorError, parse_field_selector, parse_label_selector

KINDS = {  # plural -> (Kind, namespaced)
    "namespaces": ("Namespace", False),
    "nodes": ("Node", False),
    "pods": ("Pod", True),
    "events": ("Event", True),
    "persistentvolumeclaims": ("PersistentVolumeClaim", True),  # KubeSpawner's storage_pvc_ensure
}
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # what apimachinery's name generator uses


class ApiError(Exception):
    """An error the API answers with a Kubernetes `Status` object."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict:
        out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            out["details"] = self.details
        return out


def not_found(kind: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{kind} "{name}" not found', {"name": name, "kind": kind})


RFC3339 = "%Y-%m-%dT%H:%M:%SZ"  # object timestamps: UTC, whole seconds


def now_rfc3339(later: float = 0.0) -> str:
    """Now (or `later` seconds from now) as an object timestamp."""
    now = datetime.datetime.now(datetime.timezone.utc)
    try:
        when = now + datetime.timedelta(seconds=later)
    except OverflowError:  # a grace period of millennia: the last time a timestamp can say
        when = datetime.datetime.max
    return when.strftime(RFC3339)


def copy_json(obj: Any) -> Any:
    """A deep copy of a JSON-shaped value (several times faster than deepcopy)."""
    if isinstance(obj, dict):
        return {k: copy_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [copy_json(v) for v in obj]
    return obj


def encode_json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


class WatchEvent:
    """One change: type, the object after it (before it, for DELETED), the
    object before it, and the store resourceVersion it happened at. The
    wire line is encoded at most once however many watches send it."""

    __slots__ = ("type", "object", "old", "rv", "kind", "_line", "_encode")

    def __init__(self, type: str, obj: dict, old: dict | None, rv: int, kind: str,
                 encode: Callable[[dict], str] = encode_json):
        self.type, self.object, self.old, self.rv, self.kind = type, obj, old, rv, kind
        self._line: bytes | None = None
        self._encode = encode

    def line(self) -> bytes:
        if self._line is None:
            self._line = f'{{"type":"{self.type}","object":{self._encode(self.object)}}}\n'.encode()
        return self._line


class Subscription:
    """Async-iterable of (event_type, obj) for later changes of one kind.

    Filters (namespace, selectors) apply the way watches see them: an object
    that stops matching arrives as DELETED, one that starts as ADDED. With
    raw=True it yields `WatchEvent`s (shared, read-only) instead of copies.
    A consumer that falls `max_backlog` events behind is cut off (iteration
    ends), as the real server drops a watcher that cannot keep up.
    """

    def __init__(self, store: "Store", kind: str, matcher: Callable[[dict], bool], namespace: str | None,
                 raw: bool, max_backlog: int):
        self._store, self.kind, self._match, self._ns = store, kind, matcher, namespace
        self._raw, self._max_backlog = raw, max_backlog
        self._queue: asyncio.Queue = asyncio.Queue()
        self.closed = False
        self.overflowed = False

    def _matches(self, obj: dict | None) -> bool:
        if obj is None:
            return False
        if self._ns is not None and obj["metadata"].get("namespace") != self._ns:
            return False
        return self._match(obj)

    def _translate(self, ev: WatchEvent) -> WatchEvent | None:
        if ev.type != "MODIFIED":
            return ev if self._matches(ev.object) else None
        now, before = self._matches(ev.object), self._matches(ev.old)
        if now and before:
            return ev
        if now:
            return WatchEvent("ADDED", ev.object, ev.old, ev.rv, ev.kind, ev._encode)
        if before:
            return WatchEvent("DELETED", ev.object, ev.old, ev.rv, ev.kind, ev._encode)
        return None

    def _offer(self, ev: WatchEvent) -> None:
        if self.closed:
            return
        ev = self._translate(ev)
        if ev is None:
            return
        if self._queue.qsize() >= self._max_backlog:
            self.overflowed = True
            self.close()
            return
        self._queue.put_nowait(ev)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._store._subscribers[self.kind].discard(self)
            self._queue.put_nowait(None)

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self.closed and self._queue.empty():
            raise StopAsyncIteration
        ev = await self._queue.get()
        if ev is None:
            raise StopAsyncIteration
        return ev if self._raw else (ev.type, copy_json(ev.object))

    def pending(self) -> list:
        """Events already queued, without waiting (used to drain replays)."""
        out = []
        while not self._queue.empty():
            ev = self._queue.get_nowait()
            if ev is None:
                self._queue.put_nowait(None)
                break
            out.append(ev if self._raw else (ev.type, copy_json(ev.object)))
        return out


class Store:
    """In-memory objects of the kinds in KINDS.

    `log_provider`, when set (the kubelet does), is called as
    `log_provider(namespace, pod_name, container)` and returns the container's
    log text (or an awaitable of it); the API's pods/NAME/log reads it.
    """

    def __init__(self, history_size: int = 5000, max_backlog: int = 20000,
                 namespaces: tuple[str, ...] = DEFAULT_NAMESPACES):
        self._rv = 0
        self._objects: dict[str, dict[tuple[str | None, str], dict]] = {k: {} for k in KINDS}
        self._history: dict[str, collections.deque] = {k: collections.deque(maxlen=history_size) for k in KINDS}
        # Per kind: the newest resourceVersion no longer in the history.
        self._history_floor: dict[str, int] = {k: 0 for k in KINDS}
        self._subscribers: dict[str, set[Subscription]] = {k: set() for k in KINDS}
        self.max_backlog = max_backlog
        # id(stored object) -> (object, its JSON): stored objects never change, so
        # each is encoded at most once however many lists and watches send it.
        self._json: dict[int, tuple[dict, str]] = {}
        self.log_provider: Callable[[str, str, str | None], Any] | None = None
        for ns in namespaces:
            self.create("namespaces", {"metadata": {"name": ns}})

    # -- helpers -----------------------------------------------------------

    @property
    def resource_version(self) -> str:
        return str(self._rv)

    @staticmethod
    def _check_kind(kind: str) -> None:
        if kind not in KINDS:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({kind})")

    def _key(self, kind: str, name: str, namespace: str | None) -> tuple[str | None, str]:
        self._check_kind(kind)
        return ((namespace or "default") if KINDS[kind][1] else None, name)

    def _lookup(self, kind: str, name: str, namespace: str | None) -> dict:
        obj = self._objects[kind].get(self._key(kind, name, namespace))
        if obj is None:
            raise not_found(kind, name)
        return obj

    def json_of(self, obj: dict) -> str:
        """The JSON text of a stored object (from iter_objects or a raw event), cached."""
        entry = self._json.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        text = encode_json(obj)
        if len(self._json) > 4 * sum(len(o) for o in self._objects.values()) + 1000:
            live = {id(o) for objs in self._objects.values() for o in objs.values()}
            self._json = {k: v for k, v in self._json.items() if k in live}
        self._json[id(obj)] = (obj, text)
        return text

    def _emit(self, kind: str, type_: str, obj: dict, old: dict | None) -> None:
        history = self._history[kind]
        if len(history) == history.maxlen:
            self._history_floor[kind] = history[0].rv
        ev = WatchEvent(type_, obj, old, self._rv, kind, self.json_of)
        history.append(ev)
        for sub in list(self._subscribers[kind]):
            sub._offer(ev)

    # -- the contract -------------------------------------------------------

    def create(self, kind: str, obj: dict) -> dict:
        self._check_kind(kind)
        obj = copy_json(obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(422, "Invalid", "metadata: Invalid value: must be an object")
        kind_name, namespaced = KINDS[kind]
        if namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
            if (None, meta["namespace"]) not in self._objects["namespaces"]:
                raise ApiError(404, "NotFound", f'namespaces "{meta["namespace"]}" not found',
                               {"name": meta["namespace"], "kind": "namespaces"})
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(422, "Invalid", f"{kind_name} is invalid: metadata.name: Required value: "
                               "name or generateName is required")
            for _ in range(100):
                meta["name"] = meta["generateName"] + "".join(random.choices(_GENERATE_CHARS, k=5))
                if self._key(kind, meta["name"], meta.get("namespace")) not in self._objects[kind]:
                    break
        key = self._key(kind, meta["name"], meta.get("namespace"))
        if key in self._objects[kind]:
            raise ApiError(409, "AlreadyExists", f'{kind} "{meta["name"]}" already exists',
                           {"name": meta["name"], "kind": kind})
        obj.setdefault("kind", kind_name)
        obj.setdefault("apiVersion", "v1")
        if kind == "namespaces":
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        self._rv += 1
        meta["uid"] = str(uuid.uuid4())
        meta["resourceVersion"] = str(self._rv)
        meta["creationTimestamp"] = now_rfc3339()
        self._objects[kind][key] = obj
        self._emit(kind, "ADDED", obj, None)
        return copy_json(obj)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict:
        return copy_json(self._lookup(kind, name, namespace))

    def iter_objects(self, kind: str, namespace: str | None = None) -> Iterator[dict]:
        """Stored objects themselves (read-only!), for cheap scans."""
        self._check_kind(kind)
        for (ns, _), obj in self._objects[kind].items():
            if namespace is None or ns == namespace:
                yield obj

    def list(self, kind: str, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> tuple[list[dict], str]:
        match = self.matcher(kind, label_selector, field_selector)
        items = [copy_json(o) for o in self.iter_objects(kind, namespace) if match(o)]
        return items, str(self._rv)

    @staticmethod
    def matcher(kind: str, label_selector: str | None, field_selector: str | None) -> Callable[[dict], bool]:
        """Compile both selectors into one predicate; bad syntax is a 400."""
        try:
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(field_selector, kind)
        except SelectorError as e:
            raise ApiError(400, "BadRequest", str(e))
        return lambda obj: labels(obj) and fields(obj)

    def update(self, kind: str, name: str, mutate: Callable[[dict], None], namespace: str | None = None) -> dict:
        current = self._lookup(kind, name, namespace)
        new = copy_json(current)
        mutate(new)
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            raise ApiError(422, "Invalid", "metadata: Invalid value: must be an object")
        for field in ("name", "namespace", "uid", "creationTimestamp"):
            if meta.get(field) != current["metadata"].get(field):
                raise ApiError(422, "Invalid", f'{KINDS[kind][0]} "{name}" is invalid: metadata.{field}: '
                               "Invalid value: field is immutable")
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        if new == current:
            return copy_json(current)
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        self._objects[kind][self._key(kind, name, namespace)] = new
        self._emit(kind, "MODIFIED", new, current)
        return copy_json(new)

    def delete(self, kind: str, name: str, namespace: str | None = None) -> dict:
        current = self._lookup(kind, name, namespace)
        del self._objects[kind][self._key(kind, name, namespace)]
        self._rv += 1
        gone = copy_json(current)
        gone["metadata"]["resourceVersion"] = str(self._rv)
        self._emit(kind, "DELETED", gone, current)
        return copy_json(gone)

    def subscribe(self, kind: str, since: str | None = None, namespace: str | None = None,
                  label_selector: str | None = None, field_selector: str | None = None,
                  raw: bool = False, initial: bool = False) -> Subscription:
        """Later changes of `kind`; with `since`, first the kept changes after
        that resourceVersion (410 Expired when they are gone); with
        `initial`, first a synthetic ADDED for every current object (what a
        watch without resourceVersion gets)."""
        self._check_kind(kind)
        sub = Subscription(self, kind, self.matcher(kind, label_selector, field_selector), namespace,
                           raw, self.max_backlog)
        if initial:
            for obj in self.iter_objects(kind, namespace):
                sub._offer(WatchEvent("ADDED", obj, None, int(obj["metadata"]["resourceVersion"]), kind,
                                      self.json_of))
        elif since is not None:
            rv = parse_resource_version(since)
            if rv < self._history_floor[kind]:
                raise ApiError(410, "Expired", f"too old resource version: {rv} ({self._history_floor[kind] + 1})")
            for ev in self._history[kind]:
                if ev.rv > rv:
                    sub._offer(ev)
        self._subscribers[kind].add(sub)
        return sub

    def close_subscriptions(self) -> None:
        """End every subscription (server shutdown: watches end promptly)."""
        for subs in self._subscribers.values():
            for sub in list(subs):
                sub.close()


def parse_resource_version(text: str) -> int:
    try:
        rv = int(text)
        if rv < 0:
            raise ValueError
        return rv
    except (TypeError, ValueError):
        raise ApiError(400, "BadRequest", f'resourceVersion: Invalid value: "{text}": must be a non-negative integer')
