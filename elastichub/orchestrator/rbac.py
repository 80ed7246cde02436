"""`elastichub rbac`: the Kubernetes permissions ElasticHub needs beyond KubeSpawner's.

The orchestrator runs as a hub-managed service, in the hub's pod, with the
hub's service account, and ElasticSpawner is a KubeSpawner: both act as the
hub. A hub's own Role (zero-to-jupyterhub's, or any KubeSpawner set-up)
lets it get, list, watch, create and delete pods in the single-user
namespace. ElasticHub adds:

- cluster-wide: nodes get/list/watch/patch (occupancy, cordons, taints and
  the drain record on the Node) and pods list/watch in every namespace (a
  node's occupancy counts every pod on it, system pods included);
- in the single-user namespace: pods patch (a live move's route request and
  its answer; a restart move's mark before its stop), plus get/create/delete, so that an orchestrator run under a
  service account of its own needs nothing else; events create (a waiting
  server's pod says why it waits, on the hub's spawn page).

With KubeSpawner's `enable_user_namespaces` each server runs in a namespace
of its own, so the pod rules are cluster-wide too (`user_namespaces`).

`manifests()` builds them as plain objects (a ClusterRole and its binding,
a Role and its binding), tested without a cluster; `run` prints them as
YAML for `kubectl apply -f -`.
"""

from __future__ import annotations

import argparse
import re

RBAC_API = "rbac.authorization.k8s.io/v1"

# (resources, verbs), all in the core API group
CLUSTER_RULES = (
    (("nodes",), ("get", "list", "watch", "patch")),
    (("pods",), ("list", "watch")),
)
NAMESPACE_RULES = (
    (("pods",), ("get", "create", "patch", "delete")),
    (("events",), ("create",)),
)

# RFC 1123 label (a namespace) and subdomain (a service account, an object name)
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _rules(rules) -> list[dict]:
    return [{"apiGroups": [""], "resources": list(resources), "verbs": list(verbs)} for resources, verbs in rules]


def _check(what: str, value: str, pattern: re.Pattern, limit: int) -> None:
    if not isinstance(value, str) or len(value) > limit or not pattern.match(value):
        dots = "" if pattern is _LABEL else ", '.' between parts"
        raise ValueError(f"{what} {value!r} is not a valid Kubernetes name "
                         f"(lower-case letters, digits and '-'{dots}, at most {limit} characters)")


def manifests(namespace: str, service_account: str = "hub", name: str = "elastichub",
              user_namespaces: bool = False) -> list[dict]:
    """The ClusterRole, ClusterRoleBinding, Role and RoleBinding that grant
    `service_account` in `namespace` (the hub's; zero-to-jupyterhub calls
    it `hub`) what ElasticHub needs. Objects are named `name`. With
    `user_namespaces` the pod rules go in the ClusterRole, and there is no
    Role."""
    _check("namespace", namespace, _LABEL, 63)
    _check("service account", service_account, _SUBDOMAIN, 253)
    _check("name", name, _SUBDOMAIN, 253)

    # Fresh dicts per object: YAML would write a shared one as an anchor and aliases.
    def meta(**extra) -> dict:
        return {"name": name, **extra,
                "labels": {"app.kubernetes.io/name": "elastichub", "app.kubernetes.io/component": "orchestrator"}}

    def binding(kind: str, role_kind: str, **extra) -> dict:
        return {"apiVersion": RBAC_API, "kind": kind, "metadata": meta(**extra),
                "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name}}

    if user_namespaces:
        return [{"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": meta(),
                 "rules": _rules(cluster_rules(user_namespaces=True))},
                binding("ClusterRoleBinding", "ClusterRole")]
    return [
        {"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": meta(), "rules": _rules(CLUSTER_RULES)},
        binding("ClusterRoleBinding", "ClusterRole"),
        {"apiVersion": RBAC_API, "kind": "Role", "metadata": meta(namespace=namespace),
         "rules": _rules(NAMESPACE_RULES)},
        binding("RoleBinding", "Role", namespace=namespace),
    ]


def cluster_rules(user_namespaces: bool = False) -> tuple:
    """The ClusterRole's rules: with `user_namespaces`, the namespaced
    rules merged in, resource by resource."""
    if not user_namespaces:
        return CLUSTER_RULES
    merged: dict[str, list[str]] = {}
    for resources, verbs in CLUSTER_RULES + NAMESPACE_RULES:
        for resource in resources:
            have = merged.setdefault(resource, [])
            have += [v for v in verbs if v not in have]
    return tuple(((resource,), tuple(verbs)) for resource, verbs in merged.items())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", required=True, metavar="NS",
                        help="the hub's namespace, where the single-user pods run")
    parser.add_argument("--service-account", default="hub", metavar="NAME",
                        help="the hub pod's service account (default: hub, zero-to-jupyterhub's)")
    parser.add_argument("--name", default="elastichub", metavar="NAME",
                        help="name of the roles and bindings (default: elastichub)")
    parser.add_argument("--user-namespaces", action="store_true",
                        help="servers run in namespaces of their own (KubeSpawner's enable_user_namespaces): "
                             "grant the pod verbs in every namespace")


def run(args: argparse.Namespace) -> int:
    import yaml

    from ..cli import UsageError

    try:
        objects = manifests(args.namespace, args.service_account, args.name, args.user_namespaces)
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(f"# ElasticHub's permissions for service account {args.service_account!r} in namespace "
          f"{args.namespace!r},\n# on top of the hub's own (KubeSpawner's) role. Apply with: kubectl apply -f -")
    print(yaml.safe_dump_all(objects, sort_keys=False), end="")
    return 0
