"""core/v1 Events recorded by the scheduler and the kubelets.

Like Kubernetes' event recorder, a repeat of the same (object, reason,
message) bumps `count` and `lastTimestamp` of the existing Event instead of
creating a new one, so a pod that stays unschedulable does not flood the
store. Old events are pruned past a cap (Kubernetes drops them after an hour).
"""

from __future__ import annotations

import itertools
import logging
import time

from .store import ApiError, Store, now_rfc3339

log = logging.getLogger(__name__)

MAX_EVENTS = 2000  # per recorder; the oldest are deleted past this

_sequence = itertools.count(1)


class EventRecorder:
    """Creates (or bumps) Events for objects, as one component (e.g. "kubelet")."""

    def __init__(self, store: Store, component: str, host: str | None = None):
        self.store = store
        self.component = component
        self.host = host
        # (uid, reason, message) -> (namespace, event name), in creation order
        self._recent: dict[tuple[str, str, str], tuple[str, str]] = {}

    def record(self, obj: dict, reason: str, message: str, type: str = "Normal") -> None:
        """Record an event about `obj` (a pod or node as stored). Never raises."""
        try:
            self._record(obj, reason, message, type)
        except ApiError as e:  # the object's namespace vanished, the store is shutting down...
            log.debug("event %s on %s not recorded: %s", reason, obj["metadata"].get("name"), e)

    def _record(self, obj: dict, reason: str, message: str, type: str) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        key = (meta.get("uid", meta["name"]), reason, message)
        now = now_rfc3339()
        if key in self._recent:
            ns, name = self._recent[key]

            def bump(event: dict) -> None:
                event["count"] = event.get("count", 1) + 1
                event["lastTimestamp"] = now

            try:
                self.store.update("events", name, bump, namespace=ns)
                return
            except ApiError as e:
                if e.code != 404:
                    raise
                del self._recent[key]
        kind = obj.get("kind") or ("Node" if "namespace" not in meta else "Pod")
        involved = {
            "apiVersion": "v1",
            "kind": kind,
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        if kind != "Node":
            involved["namespace"] = namespace
        source = {"component": self.component}
        if self.host:
            source["host"] = self.host
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                # Kubernetes names events "<object>.<hex timestamp>"; the counter keeps them unique.
                "name": f"{meta['name']}.{next(_sequence):x}{time.time_ns():x}",
                "namespace": namespace,
            },
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": type,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "eventTime": None,  # clients (KubeSpawner) need both keys present
            "source": source,
            "reportingComponent": self.component,
            "reportingInstance": self.host or "",
        }
        created = self.store.create("events", event)
        self._recent[key] = (namespace, created["metadata"]["name"])
        if len(self._recent) > MAX_EVENTS:
            old_key = next(iter(self._recent))
            ns, name = self._recent.pop(old_key)
            try:
                self.store.delete("events", name, namespace=ns)
            except ApiError:
                pass
