"""Is every Kubernetes request a hub made allowed by the roles it would have?

The local cluster's API server does not authorize; its audit log (every
request: method, URI, status) is checked here against RBAC rules the way
Kubernetes' authorizer reads them, so a permission ElasticHub needs and
`elastichub rbac` does not grant fails a test instead of a deployment.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit


# The hub's own Role in zero-to-jupyterhub (jupyterhub/templates/hub/rbac.yaml),
# bound in the hub's namespace: what a KubeSpawner hub has before ElasticHub.
Z2JH_HUB_ROLE = (
    (("pods", "persistentvolumeclaims", "secrets", "services"), ("get", "watch", "list", "create", "delete")),
    (("events",), ("get", "watch", "list")),
)

# Non-resource URLs every authenticated client may GET (system:discovery, system:public-info-viewer).
_DISCOVERY = re.compile(r"^/(api|apis|version|healthz|readyz|livez|openapi)(/.*)?$")
_CORE = re.compile(r"^/api/v1(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[^/]+)"
                   r"(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?/?$")


def attributes(method: str, uri: str) -> tuple[str, str, str | None] | None:
    """(verb, resource, namespace) of a request, as the authorizer sees it;
    None for a URL every client may read, or one that is no Kubernetes API
    (the local cluster's cloud)."""
    parts = urlsplit(uri)
    if parts.path.startswith("/localcluster/") or (method == "GET" and _DISCOVERY.match(parts.path)
                                                   and not parts.path.startswith("/api/v1/")):
        return None
    m = _CORE.match(parts.path)
    if m is None:
        raise ValueError(f"a request this check cannot read: {method} {uri}")
    namespace, resource, name, sub = m.group("ns", "resource", "name", "sub")
    if sub:
        resource = f"{resource}/{sub}"
    query = parse_qs(parts.query)
    watching = query.get("watch", ["false"])[0].lower() in ("true", "1")
    if method == "GET":
        verb = "watch" if watching else ("get" if name else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection"}.get(method)
        if verb is None:
            raise ValueError(f"a request this check cannot read: {method} {uri}")
    return verb, resource, namespace


def _allows(rules, verb: str, resource: str) -> bool:
    return any(resource in resources and verb in verbs for resources, verbs in rules)


def forbidden(requests, hub_namespace: str, cluster_rules, namespace_rules) -> list[str]:
    """The requests (method, URI) that `cluster_rules` (a ClusterRole) and
    `namespace_rules` (Roles bound in `hub_namespace`) do not allow, each
    once, as 'VERB RESOURCE in NAMESPACE (METHOD URI)'."""
    refused: dict[tuple, str] = {}
    for method, uri in requests:
        attrs = attributes(method, uri)
        if attrs is None:
            continue
        verb, resource, namespace = attrs
        if _allows(cluster_rules, verb, resource):
            continue
        if namespace == hub_namespace and _allows(namespace_rules, verb, resource):
            continue
        refused.setdefault(attrs, f"{verb} {resource} in {namespace or 'the cluster'} ({method} {uri})")
    return list(refused.values())


def audit_into(requests: list):
    """A log_function for the local cluster's API server that records into `requests`."""
    def audit(handler):
        requests.append((handler.request.method, handler.request.uri, handler.get_status()))
    return audit


def assert_hub_roles_suffice(requests: list, roles: tuple) -> None:
    """Every Kubernetes request of the test (the hub's, ElasticSpawner's, the
    orchestrator's, all on the hub's service account in a deployment) is
    allowed by `roles`: (cluster rules, rules in the hub's namespace)."""
    cluster, namespaced = roles
    refused = forbidden([(m, uri) for m, uri, _ in requests], "default", cluster, namespaced)
    assert refused == [], "requests the hub's roles do not allow:\n" + "\n".join(refused)
