"""Kubernetes through kubernetes_asyncio: watch-backed caches and node marks.

`Informer` lists a resource once, then follows its watch from that
resourceVersion (re-listing on 410 Gone, reconnecting with back-off on any
other failure), keeping one small record per object (`records`). A cycle
reads the records; it never lists the cluster.

`KubeNodes` marks the nodes the orchestrator drains: cordon + a NoSchedule
taint + a JSON annotation with the drain's progress, written with the
node's resourceVersion so two writers never silently overwrite each other.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import os
import random
import secrets
from typing import Any, Callable

from kubernetes_asyncio.client.exceptions import ApiException

from .. import podmeta, podspec
from .records import pod_record

log = logging.getLogger(__name__)

# Seconds one request (not a watch) may take: kubernetes_asyncio sets no limit, and an answer that
# never comes would hold a drain's step for ever.
REQUEST_TIMEOUT = 60.0
# A watch sends an event or a bookmark now and then, and the server ends it after watch_timeout: one
# silent for that long and this margin more is dead (a connection a proxy or a network holds open).
WATCH_SILENCE_MARGIN = 30.0


# The pods the orchestrator watches: every pod not finished, of any namespace (each counts towards its
# node's usage). A finished one (a batch job's, Succeeded or Failed) holds nothing; watched, a shared
# cluster's thousands of them cost memory and events for nothing. One that finishes leaves the selection:
# the API server sends it as DELETED, as a deleted pod.
UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"


SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def in_cluster_environ(environ, token_file: str = SERVICE_ACCOUNT_TOKEN) -> dict | None:
    """The environment to load the in-cluster configuration with, or None
    outside a pod. A hub-managed service inherits only a few variables of
    the hub's (JupyterHub's env_keep), not KUBERNETES_SERVICE_HOST/PORT:
    in a pod with a service account the API server is then reached by its
    cluster DNS name, which its certificate names too."""
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return dict(environ)
    if not os.path.isfile(token_file):
        return None
    return {**environ, "KUBERNETES_SERVICE_HOST": "kubernetes.default.svc", "KUBERNETES_SERVICE_PORT": "443"}


class Informer:
    """One resource's list+watch into `records` (key -> parse(obj))."""

    def __init__(self, name: str, list_fn: Callable, parse: Callable[[dict], Any], key: Callable[[dict], str],
                 *, watch_timeout: int = 300, max_backoff: float = 30.0,
                 silence_margin: float = WATCH_SILENCE_MARGIN, **selectors):
        self.name = name
        self.list_fn = list_fn
        self.parse = parse
        self.key = key
        self.watch_timeout = watch_timeout
        self.max_backoff = max_backoff
        self.silence_margin = silence_margin
        self.selectors = {k: v for k, v in selectors.items() if v}
        self.records: dict[str, Any] = {}
        self.synced = asyncio.Event()
        self.version = 0  # bumped on every change: a cheap "anything new?"
        self.lists = 0  # how many full lists (1 + re-lists after 410 or errors)
        self.last_error: str = ""
        self._resource_version: str | None = None

    async def run(self) -> None:
        """Forever: list, then watch; a failure is logged and retried with back-off."""
        failures = 0
        while True:
            try:
                if self._resource_version is None:
                    await self._list()
                await self._watch()
                failures = 0
            except asyncio.CancelledError:
                raise
            except ApiException as e:
                if e.status == 410:  # our resourceVersion is too old: start over
                    log.info("%s watch expired (410): listing again", self.name)
                    self._resource_version = None
                    continue
                failures += 1
                self.last_error = f"{e.status} {e.reason}"
                self._resource_version = None
                await self._backoff(failures)
            except Exception as e:  # connection refused, reset, malformed answer
                failures += 1
                self.last_error = f"{type(e).__name__}: {e}"
                self._resource_version = None
                await self._backoff(failures)

    async def _backoff(self, failures: int) -> None:
        delay = min(self.max_backoff, 0.5 * 2 ** min(failures, 10)) * random.uniform(0.5, 1.0)
        log.warning("%s list/watch failed (%s); retrying in %.1f s", self.name, self.last_error, delay)
        await asyncio.sleep(delay)

    async def _list(self) -> None:
        body = await _raw_json(await self.list_fn(_preload_content=False, _request_timeout=REQUEST_TIMEOUT,
                                                  **self.selectors))
        items = body.get("items")
        if not isinstance(items, list):
            raise ValueError(f"{self.name} list answer has no items")
        records = {}
        for obj in items:
            records[self.key(obj)] = self.parse(obj)
        self.records = records
        self._resource_version = (body.get("metadata") or {}).get("resourceVersion") or "0"
        self.version += 1
        self.lists += 1
        self.last_error = ""
        self.synced.set()

    async def _watch(self) -> None:
        resp = await _checked(await self.list_fn(watch=True, resource_version=self._resource_version,
                                                 timeout_seconds=self.watch_timeout, allow_watch_bookmarks=True,
                                                 _preload_content=False, **self.selectors))
        try:
            while True:
                silence = self.watch_timeout + self.silence_margin
                try:
                    async with asyncio.timeout(silence):
                        line = await resp.content.readline()
                except TimeoutError:
                    # The cache would go stale without a word (a server seen waiting while it runs, a
                    # node seen booting while Ready): list again.
                    raise ApiException(status=0, reason=f"no word on the watch for {silence:g} s") from None
                if not line:
                    return  # the server ended the watch (timeoutSeconds): resume from where we are
                self._apply(json.loads(line))
        finally:
            resp.release()

    def _apply(self, event: dict) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise ApiException(status=obj.get("code", 500), reason=obj.get("message", "watch error"))
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self._resource_version = rv or self._resource_version
            return
        key = self.key(obj)
        if kind == "DELETED":
            self.records.pop(key, None)
        elif kind in ("ADDED", "MODIFIED"):
            self.records[key] = self.parse(obj)
        else:
            raise ValueError(f"{self.name} watch sent an event of unknown type {kind!r}")
        if rv:
            self._resource_version = rv
        self.version += 1


def object_name(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def object_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class KubeNodes:
    """Writes on Node objects: cordon/uncordon, our taint, our drain record."""

    def __init__(self, core_api, *, retries: int = 5):
        self.core = core_api
        self.retries = retries

    async def _update(self, name: str, change: Callable[[dict], dict | None]) -> dict | None:
        """Read the node, let `change` compute a patch from it (None: nothing
        to do), and apply it conditionally on the node's resourceVersion;
        a conflict (someone wrote in between) re-reads and retries."""
        for attempt in range(self.retries):
            node = await self.get(name)
            if node is None:
                return None
            patch = change(node)
            if patch is None:
                return node
            patch.setdefault("metadata", {})["resourceVersion"] = node["metadata"].get("resourceVersion")
            try:
                return await _raw_json(await self.core.patch_node(name, patch, _preload_content=False,
                                                                  _request_timeout=REQUEST_TIMEOUT))
            except ApiException as e:
                if e.status != 409 or attempt == self.retries - 1:
                    raise
        return None

    async def get(self, name: str) -> dict | None:
        return await _read_or_none(self.core.read_node, name)

    async def mark_drain(self, name: str, record: dict) -> dict | None:
        """Cordon, taint and record the drain, in one write."""
        def change(node: dict) -> dict:
            taints = _without_our_taint(node) + [{"key": podmeta.DRAIN_TAINT, "value": "true",
                                                  "effect": "NoSchedule"}]
            return {"spec": {"unschedulable": True, "taints": taints},
                    "metadata": {"annotations": {podmeta.DRAIN_ANNOTATION: json.dumps(record, sort_keys=True)}}}
        return await self._update(name, change)

    async def record_drain(self, name: str, record: dict) -> dict | None:
        """Update the drain's progress (the annotation only)."""
        text = json.dumps(record, sort_keys=True)

        def change(node: dict) -> dict | None:
            if (node["metadata"].get("annotations") or {}).get(podmeta.DRAIN_ANNOTATION) == text:
                return None
            return {"metadata": {"annotations": {podmeta.DRAIN_ANNOTATION: text}}}
        return await self._update(name, change)

    async def end_drain(self, name: str, *, uncordon: bool) -> dict | None:
        """Forget the drain record; `uncordon`: also lift the cordon and our
        taint (a drain rolled back). A node whose VM was stopped stays
        cordoned, so it takes no pod when it boots again before we say so."""
        def change(node: dict) -> dict | None:
            annotations = node["metadata"].get("annotations") or {}
            patch: dict = {}
            if podmeta.DRAIN_ANNOTATION in annotations:
                patch["metadata"] = {"annotations": {podmeta.DRAIN_ANNOTATION: None}}
            if uncordon:
                spec = _uncordon_spec(node)
                if spec:
                    patch["spec"] = spec
            return patch or None
        return await self._update(name, change)

    async def uncordon(self, name: str) -> dict | None:
        """A booted node joins the cluster: lift the cordon and our taint."""
        return await self._update(name, lambda node: ({"spec": spec} if (spec := _uncordon_spec(node)) else None))


def error_line(e: BaseException) -> str:
    """An error on one line: an ApiException's str() spans several (status, reason, headers, body), and
    the API server's own words are in the body's Status (`... cannot patch resource "nodes" ...`)."""
    if not isinstance(e, ApiException):
        return " ".join(str(e).split())
    try:
        said = json.loads(e.body).get("message") if e.body else None
    except (TypeError, ValueError, AttributeError):  # not a Status: the reason alone
        said = None
    return " ".join(f"{e.status} {e.reason}{': ' + str(said)[:300] if said and said != e.reason else ''}".split())


async def _checked(resp):
    """`resp` if the API server said yes. Asked for with
    _preload_content=False, kubernetes_asyncio leaves the status unread: a
    500, a 409 or a 404 came back as if it were the object."""
    if 200 <= resp.status <= 299:
        return resp
    try:
        body = await resp.read()
    finally:
        resp.release()
    try:
        reason = json.loads(body).get("message") or resp.reason
    except (ValueError, AttributeError):
        reason = resp.reason
    raise ApiException(status=resp.status, reason=" ".join(str(reason).split())[:300])


async def _raw_json(resp) -> dict:
    """The body of a response asked for with _preload_content=False: the
    object as the API server sent it, not decoded into models."""
    resp = await _checked(resp)
    try:
        return json.loads(await resp.read())
    finally:
        resp.release()


async def _read_or_none(read: Callable, *args) -> dict | None:
    """A read as raw JSON; None when the object does not exist."""
    try:
        return await _raw_json(await read(*args, _preload_content=False, _request_timeout=REQUEST_TIMEOUT))
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def _holds_resources(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _without_our_taint(node: dict) -> list[dict]:
    return [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != podmeta.DRAIN_TAINT]


def _uncordon_spec(node: dict) -> dict:
    """Lift a cordon only where our taint says the cordon is ours: an
    admin's own `kubectl cordon` is never undone by the orchestrator."""
    spec = node.get("spec") or {}
    taints = spec.get("taints") or []
    kept = _without_our_taint(node)
    if len(kept) == len(taints):
        return {}
    return {"unschedulable": False, "taints": kept}


class KubePods:
    """The pod calls of a live move: read one pod as raw JSON, create the
    destination, annotate it, delete the pod that served before."""

    def __init__(self, core_api):
        self.core = core_api

    async def get(self, namespace: str, name: str) -> dict | None:
        return await _read_or_none(self.core.read_namespaced_pod, name, namespace)

    async def stays_on(self, namespace: str, name: str, node: str) -> bool:
        """Is the pod bound to `node`, running or waiting, and not being deleted?"""
        pod = await self.get(namespace, name)
        return pod is not None and not (pod.get("metadata") or {}).get("deletionTimestamp") and (
            (pod.get("spec") or {}).get("nodeName") == node and _holds_resources(pod))

    async def servers_on(self, node: str) -> list[dict]:
        """The hub's server pods bound to `node` that hold resources, read
        from the API server, not a cache: asked before a VM is stopped. Not
        by our label alone: a server KubeSpawner started before the hub ran
        ElasticSpawner has none, and its session ends with the VM too."""
        body = await _raw_json(await self.core.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={node}", _preload_content=False, _request_timeout=REQUEST_TIMEOUT))
        return [p for p in body.get("items") or [] if _holds_resources(p) and pod_record(p).managed]

    async def create(self, namespace: str, manifest: dict) -> None:
        await self.core.create_namespaced_pod(namespace, manifest, _request_timeout=REQUEST_TIMEOUT)

    async def annotate(self, namespace: str, name: str, annotations: dict) -> None:
        await self.core.patch_namespaced_pod(name, namespace, {"metadata": {"annotations": annotations}},
                                             _request_timeout=REQUEST_TIMEOUT)

    async def unmark_moving(self, keys: list[str]) -> None:
        """Take a drain's mark (podmeta.MOVING_ANNOTATION) off the pods `keys` (namespace/name); one gone
        meanwhile has nothing left to take off."""
        for key in keys:
            namespace, name = key.split("/", 1)
            try:
                await self.annotate(namespace, name, {podmeta.MOVING_ANNOTATION: None})
            except ApiException as e:
                if e.status != 404:
                    raise
            else:
                log.info("took the mark of a move off pod %s: no drain stops it", key)

    async def swap_annotation(self, namespace: str, name: str, key: str, expected: str, value: str) -> bool:
        """Set annotation `key` to `value` only while it is `expected`; False
        when it is not (the API server refuses the patch's test: 422)."""
        try:
            await self.core.patch_namespaced_pod(name, namespace, podspec.annotation_swap(key, expected, value),
                                                 _request_timeout=REQUEST_TIMEOUT)
        except ApiException as e:
            if e.status == 422:
                return False
            raise
        return True

    async def event(self, namespace: str, name: str, uid: str, reason: str, message: str) -> None:
        """A Normal Event about a pod: what `kubectl describe` and the hub's
        spawn page show."""
        at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        await self.core.create_namespaced_event(namespace, {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{name}.{secrets.token_hex(8)}", "namespace": namespace},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name, "uid": uid},
            "reason": reason, "message": message, "type": "Normal", "count": 1,
            "firstTimestamp": at, "lastTimestamp": at, "source": {"component": "elastichub-orchestrator"}})

    async def delete(self, namespace: str, name: str, grace_seconds: int | None = None, uid: str | None = None) -> None:
        """Delete a pod; gone already is fine. With `uid`, only that pod: one
        made since under its name (409: the precondition failed) stays."""
        body = {"preconditions": {"uid": uid}} if uid else None
        try:
            await self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=grace_seconds, body=body,
                                                  _request_timeout=REQUEST_TIMEOUT)
        except ApiException as e:
            if e.status not in ((404, 409) if uid else (404,)):
                raise
