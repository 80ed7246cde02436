"""The local cluster's Kubernetes API server: JSON REST + chunked watches.

Serves the core/v1 subset real clients (kubectl, kubernetes_asyncio,
KubeSpawner) use against a `Store`: discovery, namespaces, nodes, pods
(with status, log and binding subresources) and events; list with label
and field selectors, watch with resourceVersion resume, 410 Expired,
timeoutSeconds and opt-in bookmarks; three patch types; server-side Table
printing. Every error is a Kubernetes `Status` object, never a traceback.
Watches and followed logs are streamed by streams.py.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import tornado.iostream
import tornado.web

from .discovery import API_GROUPS, API_VERSIONS, SERVER_VERSION, STATUS_KINDS, api_resource_list
from .patch import PatchError, apply_patch
from .streams import StreamingMixin
from .store import KINDS, ApiError, Store, encode_json, now_rfc3339, parse_resource_version
from .tables import table_version, to_table
from .validation import bound_claim, check_pod_update, decode, decode_options, default_pod, validate


_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
            406: "NotAcceptable", 409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType",
            422: "Invalid", 500: "InternalError", 504: "Timeout"}
_PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")


class BaseHandler(tornado.web.RequestHandler):
    """JSON answers, and every error as a Kubernetes Status."""

    def set_default_headers(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-cache, private")

    def send_json(self, obj: Any, code: int = 200) -> None:
        self.set_status(code)
        self.finish(encode_json(obj))

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        if isinstance(exc, ApiError):
            err = exc
        elif isinstance(exc, tornado.web.HTTPError) and exc.status_code < 500:
            err = ApiError(exc.status_code, _REASONS.get(exc.status_code, "BadRequest"),
                           exc.log_message % exc.args if exc.log_message else self._reason)
        else:
            err = ApiError(500, "InternalError", f"an error on the server ({type(exc).__name__}: {exc}) "
                           "has prevented the request from succeeding")
        self.set_header("Content-Type", "application/json")
        self.clear_header("Transfer-Encoding")
        self.set_status(err.code)
        self.finish(encode_json(err.status()))

    def log_exception(self, typ, value, tb) -> None:
        if isinstance(value, ApiError):
            return  # an answer, not a fault
        super().log_exception(typ, value, tb)


class TextHandler(BaseHandler):
    def initialize(self, text: str) -> None:
        self.text = text

    def get(self) -> None:
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(self.text)


class JsonHandler(BaseHandler):
    def initialize(self, body: Any) -> None:
        self.body = body

    def get(self) -> None:
        self.send_json(self.body)


class NotFoundHandler(BaseHandler):
    SUPPORTED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")

    def prepare(self) -> None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource",
                       {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]})


class ResourceHandler(StreamingMixin, BaseHandler):
    """Every /api/v1/... request: parse the path, then dispatch by verb."""

    SUPPORTED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

    @property
    def store(self) -> Store:
        return self.settings["store"]

    def prepare(self) -> None:
        self.kind, self.namespace, self.name, self.sub, self.watch_path = self._parse_path()
        self._warnings: list[str] = []
        self._closed = False

    def on_connection_close(self) -> None:
        self._closed = True
        sub = getattr(self, "_subscription", None)
        if sub is not None:
            sub.close()

    def _parse_path(self):
        parts = [p for p in self.request.path.split("/")[3:] if p]
        watch = bool(parts) and parts[0] == "watch"
        if watch:
            parts = parts[1:]
        not_found = ApiError(404, "NotFound", "the server could not find the requested resource")
        if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] not in ("status", "finalize"):
            ns, kind, rest = parts[1], parts[2], parts[3:]
            if kind not in KINDS or not KINDS[kind][1] or len(rest) > 2:
                raise not_found
            name, sub = (rest + [None, None])[:2]
            if sub is not None and (kind, sub) not in (("pods", "status"), ("pods", "log"), ("pods", "binding")):
                raise not_found
            return kind, ns, name, sub, watch
        if not parts or parts[0] not in KINDS or len(parts) > 3:
            raise not_found
        kind, name, sub = (parts + [None, None])[:3]
        if name is not None and KINDS[kind][1]:
            raise not_found  # /api/v1/pods/NAME is not a path; pods live under a namespace
        if sub is not None and (sub != "status" or kind not in STATUS_KINDS):
            raise not_found
        return kind, None, name, sub, watch

    # -- request helpers ----------------------------------------------------

    def _arg(self, name: str, default: str | None = None) -> str | None:
        return self.get_query_argument(name, default)

    def _flag(self, name: str) -> bool:
        return (self._arg(name) or "").lower() in ("true", "1")

    def _int_arg(self, name: str) -> int | None:
        raw = self._arg(name)
        if raw in (None, ""):
            return None
        try:
            return int(raw)
        except ValueError:
            raise ApiError(400, "BadRequest", f'{name}: Invalid value: "{raw}": must be an integer')

    def _body(self) -> Any:
        ctype = (self.request.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if self.request.method != "PATCH" and ctype not in ("application/json", "*/*", ""):
            raise ApiError(415, "UnsupportedMediaType",
                           f'the body of the request was in an unknown format ({ctype}) - accepted media types '
                           'include: application/json')
        try:
            body = json.loads(self.request.body or b"null", object_pairs_hook=self._object_hook)
        except (ValueError, UnicodeDecodeError) as e:
            raise ApiError(400, "BadRequest", f"the request body is not valid JSON: {e}")
        except RecursionError:  # too deep for the parser itself
            raise ApiError(400, "BadRequest", f"the request body nests deeper than {MAX_BODY_DEPTH} levels")
        if _depth(body) > MAX_BODY_DEPTH:
            raise ApiError(400, "BadRequest", f"the request body nests deeper than {MAX_BODY_DEPTH} levels")
        return body

    def _object_hook(self, pairs: list) -> dict:
        out = {}
        for key, value in pairs:
            if key in out:
                self._warnings.append(f'duplicate field "{key}"')
            out[key] = value
        return out

    def _field_validation(self) -> str:
        mode = self._arg("fieldValidation") or "Warn"
        if mode not in ("Ignore", "Warn", "Strict"):
            raise ApiError(400, "BadRequest", f'fieldValidation: Invalid value: "{mode}": '
                           'must be one of "Ignore", "Warn" or "Strict"')
        return mode

    def _decode(self, body: Any) -> dict:
        """Typed decode; unknown/duplicate fields are warned, dropped, or (Strict) a 400."""
        mode = self._field_validation()
        obj, unknown = decode(self.kind, body)
        problems = self._warnings + [f'unknown field "{path}"' for path in unknown]
        self._warnings = []
        if problems and mode == "Strict":
            kind_name = KINDS[self.kind][0]
            raise ApiError(400, "BadRequest", f'{kind_name} in version "v1" cannot be handled as a {kind_name}: '
                           f"strict decoding error: {', '.join(problems)}")
        if mode == "Warn":
            for problem in problems:
                self.add_header("Warning", '299 - "%s"' % problem.replace('"', '\\"'))
        if self.kind == "events":  # KubeSpawner reads both keys; the decode dropped them if null
            obj.setdefault("lastTimestamp", None)
            obj.setdefault("eventTime", None)
        return obj

    def _dry_run(self) -> bool:
        values = self.get_query_arguments("dryRun")
        for value in values:
            if value != "All":
                raise ApiError(400, "BadRequest", f'dryRun: Unsupported value: "{value}": supported values: "All"')
        return bool(values)

    def _namespace_of(self, obj: dict) -> None:
        if not KINDS[self.kind][1]:
            return
        meta = obj.setdefault("metadata", {})
        if meta.get("namespace") not in (None, "", self.namespace):
            raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the namespace "
                           "sent on the request")
        meta["namespace"] = self.namespace

    def _render(self, kind: str, objects: list[dict], rv: str, single: bool, headers: bool = True) -> Any:
        version = table_version(self.request.headers.get("Accept", ""))
        if version is None:
            return objects[0] if single else None
        return to_table(kind, objects, version, self._arg("includeObject"), rv, headers)

    def _no_collection(self) -> None:
        if self.name is None:
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested "
                           f"resource ({self.kind})")

    # -- verbs -------------------------------------------------------------------

    async def get(self, *_) -> None:
        if self.name is None:
            if self.watch_path or self._flag("watch"):
                await self._watch()
            else:
                await self._list()
        elif self.watch_path or self._flag("watch"):
            # watch of one object: a watch with a metadata.name field selector
            await self._watch(f"metadata.name={self.name}")
        elif self.sub == "log":
            await self._pod_log()
        elif self.sub == "binding":
            raise ApiError(405, "MethodNotAllowed", "bindings can only be created")
        else:
            obj = self.store.get(self.kind, self.name, self.namespace)
            self.send_json(self._render(self.kind, [obj], obj["metadata"]["resourceVersion"], True))

    async def _list(self) -> None:
        rv_arg, rv_match = self._arg("resourceVersion"), self._arg("resourceVersionMatch")
        if rv_match is not None:
            if not rv_arg:
                raise ApiError(400, "BadRequest", "resourceVersionMatch is forbidden unless resourceVersion is provided")
            if rv_match not in ("NotOlderThan", "Exact"):
                raise ApiError(400, "BadRequest", f'resourceVersionMatch: Unsupported value: "{rv_match}": '
                               'supported values: "Exact", "NotOlderThan"')
        if rv_arg:
            wanted = parse_resource_version(rv_arg)
            if rv_match == "Exact" and wanted != self.store._rv:
                raise ApiError(410, "Expired", f"too old resource version: {wanted} ({self.store._rv}); "
                               "this server keeps no snapshots: list with resourceVersionMatch=NotOlderThan")
            await self._wait_for_rv(wanted)
        self._int_arg("limit")  # validated; the whole list always fits one page here
        match = self.store.matcher(self.kind, self._arg("labelSelector"), self._arg("fieldSelector"))
        items = [o for o in self.store.iter_objects(self.kind, self.namespace) if match(o)]
        rv = self.store.resource_version
        table = self._render(self.kind, items, rv, False)
        if table is not None:
            return self.send_json(table)
        self.set_status(200)
        encoded = ",".join(self.store.json_of(o) for o in items)
        self.finish(f'{{"kind":"{KINDS[self.kind][0]}List","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}},'
                    f'"items":[{encoded}]}}')

    async def _wait_for_rv(self, wanted: int) -> None:
        """A list 'not older than' a version this store has not reached: wait a
        little (another writer may be about to reach it), then 504 as the real server."""
        for _ in range(60):
            if self.store._rv >= wanted:
                return
            await asyncio.sleep(0.05)
        raise ApiError(504, "Timeout", f"Too large resource version: {wanted}, current: {self.store._rv}",
                       {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                        "retryAfterSeconds": 1})

    async def post(self, *_) -> None:
        if self.sub == "binding":
            return self._bind()
        if self.name is not None or self.sub is not None:
            raise ApiError(405, "MethodNotAllowed", "POST is only allowed on a collection")
        if KINDS[self.kind][1] and self.namespace is None:
            raise ApiError(405, "MethodNotAllowed", f"create {self.kind} under /api/v1/namespaces/NAMESPACE/{self.kind}")
        obj = self._decode(self._body())
        self._namespace_of(obj)
        meta = obj.setdefault("metadata", {})
        for field in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "selfLink", "managedFields"):
            meta.pop(field, None)
        validate(self.kind, obj)
        if self.kind == "pods":
            default_pod(obj)
            meta["generation"] = 1
        elif self.kind == "persistentvolumeclaims":
            bound_claim(obj)
        if self._dry_run():
            meta.setdefault("name", (meta.get("generateName") or "") + "dryrun")
            meta["creationTimestamp"] = now_rfc3339()
            return self.send_json(obj, 201)
        self.send_json(self.store.create(self.kind, obj), 201)

    def _bind(self) -> None:
        body = decode_options("V1Binding", "Binding", self._body())
        target = body.get("target") or {}
        if not target.get("name"):
            raise ApiError(422, "Invalid", "Binding is invalid: target.name: Required value")
        node = target["name"]
        self.store.get("nodes", node)

        def bind(pod: dict) -> None:
            if pod["spec"].get("nodeName"):
                raise ApiError(409, "Conflict", f'pod {self.name} is already assigned to node '
                               f'"{pod["spec"]["nodeName"]}"')
            pod["spec"]["nodeName"] = node
        self.store.update("pods", self.name, bind, self.namespace)
        self.send_json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201)

    async def put(self, *_) -> None:
        self._no_collection()
        body = self._decode(self._body())
        self._namespace_of(body)
        if (body.get("metadata") or {}).get("name") not in (None, self.name):
            raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
        body.setdefault("metadata", {})["name"] = self.name
        self.send_json(self._replace(body))

    async def patch(self, *_) -> None:
        self._no_collection()
        ctype = self.request.headers.get("Content-Type") or ""
        patch_body = self._body()
        current = self.store.get(self.kind, self.name, self.namespace)
        try:
            patched = apply_patch(ctype, current, patch_body)
        except PatchError as e:
            raise ApiError(e.code, _REASONS.get(e.code, "Invalid"), str(e))
        self.send_json(self._replace(self._decode(patched)))

    def _replace(self, new: dict) -> dict:
        """Store `new` as the object (or, on /status, as its status), applying
        the real server's update rules; returns the stored result."""
        new_rv = (new.get("metadata") or {}).get("resourceVersion")
        dry_run = self._dry_run()

        def mutate(cur: dict) -> None:
            if new_rv and new_rv != cur["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {self.kind} "{self.name}": the '
                               "object has been modified; please apply your changes to the latest version and try "
                               "again", {"name": self.name, "kind": self.kind})
            if self.sub == "status":
                result = dict(cur, status=new.get("status") or {})
            else:
                result = dict(new)
                if self.kind in STATUS_KINDS:
                    result["status"] = cur.get("status")
                    if result["status"] is None:
                        result.pop("status")
                result.setdefault("kind", cur.get("kind"))
                result.setdefault("apiVersion", cur.get("apiVersion"))
                meta = result["metadata"] = dict(result.get("metadata") or {})
                for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                              "generation", "namespace"):
                    if field in cur["metadata"]:
                        meta[field] = cur["metadata"][field]
                    else:
                        meta.pop(field, None)
                validate(self.kind, result)
                if self.kind == "pods":
                    check_pod_update(cur, result)
            if dry_run:
                raise _DryRun(result)
            cur.clear()
            cur.update(result)

        try:
            return self.store.update(self.kind, self.name, mutate, self.namespace)
        except _DryRun as d:
            return d.result

    async def delete(self, *_) -> None:
        self._no_collection()
        if self.sub is not None:
            raise ApiError(405, "MethodNotAllowed", f"DELETE is not allowed on {self.kind}/{self.sub}")
        body = decode_options("V1DeleteOptions", "DeleteOptions", self._body() if self.request.body else {})
        grace = self._int_arg("gracePeriodSeconds")
        if grace is None:
            grace = body.get("gracePeriodSeconds")
        current = self.store.get(self.kind, self.name, self.namespace)
        pre = body.get("preconditions") or {}
        for field in ("uid", "resourceVersion"):
            if pre.get(field) and pre[field] != current["metadata"].get(field):
                raise ApiError(409, "Conflict", f"Precondition failed: {field} in precondition: {pre[field]}, "
                               f"{field} in object meta: {current['metadata'].get(field)}")
        if self._dry_run() or body.get("dryRun"):
            return self.send_json(current)
        if self.kind == "pods":
            return self.send_json(delete_pod(self.store, current, grace))
        if self.kind == "namespaces":
            self._delete_namespace()
        self.store.delete(self.kind, self.name, self.namespace)
        self.send_json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "details": {"name": self.name, "kind": self.kind, "uid": current["metadata"]["uid"]}})

    def _delete_namespace(self) -> None:
        if self.name in _PROTECTED_NAMESPACES:
            raise ApiError(403, "Forbidden", f'namespaces "{self.name}" is forbidden: this namespace may not be deleted')
        for ev in list(self.store.iter_objects("events", self.name)):
            self.store.delete("events", ev["metadata"]["name"], self.name)
        for pod in list(self.store.iter_objects("pods", self.name)):
            delete_pod(self.store, pod, None)


def delete_pod(store: Store, pod: dict, grace: int | None) -> dict:
    """Bound, live pods get a deletionTimestamp and the kubelet finishes the
    job (contract with L2); any other pod goes at once."""
    name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if not pod["spec"].get("nodeName") or phase not in ("Pending", "Running"):
        return store.delete("pods", name, namespace)
    if grace is None:
        grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    grace = max(0, grace)

    def mark(p: dict) -> None:
        meta = p["metadata"]
        if meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds", grace) <= grace:
            return  # already going, at least as fast: a repeated delete changes nothing
        meta["deletionTimestamp"] = now_rfc3339(grace)
        meta["deletionGracePeriodSeconds"] = grace
    return store.update("pods", name, mark, namespace)


MAX_BODY_DEPTH = 100  # deeper JSON than any Kubernetes object; bounds recursion in patch and decode


def _depth(value: Any) -> int:
    """Nesting depth of a JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_BODY_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


class _DryRun(Exception):
    def __init__(self, result: dict):
        self.result = result


def make_app(store: Store, extra_handlers: list = (), *, watch_timeout: float = 1800.0,
             bookmark_interval: float = 60.0, log_poll_interval: float = 0.5,
             log_function=None) -> tornado.web.Application:
    """The API server's tornado application. `extra_handlers` (URL specs)
    come first, so the cluster can add its own endpoints. `watch_timeout` is
    the base of a watch's length when the client gives no timeoutSeconds;
    `bookmark_interval` the spacing of BOOKMARKs for clients that allow them;
    `log_function(handler)` sees every request (an audit log for tests)."""
    handlers = list(extra_handlers) + [
        (r"/version/?", JsonHandler, {"body": SERVER_VERSION}),
        (r"/(?:healthz|readyz|livez)(?:/.*)?", TextHandler, {"text": "ok"}),
        (r"/api/?", JsonHandler, {"body": API_VERSIONS}),
        (r"/apis/?", JsonHandler, {"body": API_GROUPS}),
        (r"/api/v1/?", JsonHandler, {"body": api_resource_list()}),
        (r"/api/v1/.+", ResourceHandler),
        (r".*", NotFoundHandler),
    ]
    extra = {"log_function": log_function} if log_function is not None else {}
    return tornado.web.Application(handlers, store=store, watch_timeout=watch_timeout,
                                   bookmark_interval=bookmark_interval, log_poll_interval=log_poll_interval, **extra)


def write_kubeconfig(path: str, server_url: str, context: str = "elastichub-local",
                     namespace: str = "default") -> str:
    """A kubeconfig for the local cluster (plain HTTP on loopback, no auth)."""
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": context, "cluster": {"server": server_url}}],
        "users": [{"name": context, "user": {}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        "current-context": context,
    }
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(config, f, indent=2)  # JSON is YAML: kubectl and kubernetes_asyncio read it
    os.replace(tmp, path)
    return path
