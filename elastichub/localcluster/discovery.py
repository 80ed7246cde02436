"""Discovery documents of the local API server: version, API groups, resources.

The server claims a recent Kubernetes minor version: it implements the
features clients of that version probe for (resourceVersionMatch,
bookmarks, server-side field validation). Tested against the Debian
kubectl (v1.28 client) and kubernetes_asyncio 36.
"""

from __future__ import annotations

from .store import KINDS

SERVER_VERSION = {"major": "1", "minor": "28", "gitVersion": "v1.28.0-elastichub-localcluster",
                  "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                  "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.20", "compiler": "gc",
                  "platform": "linux/amd64"}
_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
_SHORT_NAMES = {"pods": ["po"], "nodes": ["no"], "namespaces": ["ns"], "events": ["ev"],
                "persistentvolumeclaims": ["pvc"]}
# Kinds with a status subresource; status changes only there.
STATUS_KINDS = ("pods", "nodes", "namespaces", "persistentvolumeclaims")


def _resource(name: str, kind: str, namespaced: bool, verbs: list[str], short: list[str] | None = None) -> dict:
    out = {"name": name, "singularName": "" if "/" in name else kind.lower(), "namespaced": namespaced,
           "kind": kind, "verbs": verbs}
    if short:
        out["shortNames"] = short
    return out


def api_resource_list() -> dict:
    resources = []
    for plural, (kind, namespaced) in KINDS.items():
        resources.append(_resource(plural, kind, namespaced, _VERBS, _SHORT_NAMES[plural]))
        if plural in STATUS_KINDS:
            resources.append(_resource(f"{plural}/status", kind, namespaced, ["get", "patch", "update"]))
    resources.append(_resource("pods/log", "Pod", True, ["get"]))
    resources.append(_resource("pods/binding", "Binding", True, ["create"]))
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": resources}


API_VERSIONS = {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:443"}]}
API_GROUPS = {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
