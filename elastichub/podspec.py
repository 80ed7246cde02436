"""The pieces ElasticSpawner adds to a single-user pod, as pure functions.

Like kubespawner's objects.py: plain data in, plain data out, no cluster, no
hub, so each piece is unit-tested on its own and the orchestrator can read
pods with the same rules the spawner wrote them with.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Iterable

from . import podmeta

# A Kubernetes label value: at most 63 characters, alphanumerics at both ends,
# '-', '_' and '.' inside (the empty string is valid too, but not as a tier).
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
# A label key: optional DNS prefix and '/', then a name like a value.
_LABEL_KEY = re.compile(r"^([a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")


def label_value_problem(value: str) -> str | None:
    """Why `value` cannot be a Kubernetes label value (None when it can)."""
    if not isinstance(value, str) or not _LABEL_VALUE.match(value):
        return (f"{value!r} is not a Kubernetes label value (1-63 characters of "
                "letters, digits, '-', '_', '.', starting and ending with a letter or digit)")
    return None


def tier_value_problem(value: str, other_tier: str) -> str | None:
    """Why `value` cannot be a tier's value of the tier label, the other
    tier's being `other_tier` (None when it can): the spawner's and the
    orchestrator's settings are checked alike."""
    problem = label_value_problem(value)
    if problem is None and value == other_tier:
        problem = f"{value!r} is the other tier's value too; the on-prem and cloud tiers need different values"
    return problem


def label_key_problem(key: str) -> str | None:
    """Why `key` cannot be a Kubernetes label key (None when it can)."""
    if not isinstance(key, str) or not _LABEL_KEY.match(key):
        return f"{key!r} is not a Kubernetes label key (e.g. 'elastichub.io/tier')"
    return None


def pod_labels(migratable: bool) -> dict[str, str]:
    """Labels the orchestrator selects ElasticHub's pods by."""
    return {
        podmeta.MANAGED_LABEL: podmeta.TRUE,
        podmeta.MIGRATABLE_LABEL: podmeta.TRUE if migratable else podmeta.FALSE,
    }


def own_key_problem(setting: str, keys: Iterable[str]) -> str | None:
    """Why an admin's `extra_labels` / `extra_annotations` (`setting`) may
    not go on a pod: a key under ElasticHub's prefix would be overwritten by
    the spawner (or, for the orchestrator's own annotations, fake a move)."""
    ours = sorted(k for k in keys if isinstance(k, str) and k.startswith(podmeta.PREFIX))
    if not ours:
        return None
    hint = ("; to pin servers set migratable = False (in a profile's kubespawner_override)"
            if podmeta.MIGRATABLE_LABEL in ours else "")
    return (f"{setting}: {', '.join(map(repr, ours))} {'is' if len(ours) == 1 else 'are'} ElasticHub's own "
            f"(it writes every {podmeta.PREFIX} key on its pods itself){hint}")


# KubeSpawner's settings of Kubernetes objects, each a list of them or a dict
# naming them (its values are the objects, in the order of their names): the
# API kind of each, as KubeSpawner's client models name it.
OBJECT_LIST_SETTINGS = {
    "tolerations": "V1Toleration", "node_affinity_required": "V1NodeSelectorTerm",
    "node_affinity_preferred": "V1PreferredSchedulingTerm", "pod_affinity_required": "V1PodAffinityTerm",
    "pod_affinity_preferred": "V1WeightedPodAffinityTerm", "pod_anti_affinity_required": "V1PodAffinityTerm",
    "pod_anti_affinity_preferred": "V1WeightedPodAffinityTerm", "volumes": "V1Volume",
    "volume_mounts": "V1VolumeMount", "init_containers": "V1Container", "extra_containers": "V1Container",
    "image_pull_secrets": "V1LocalObjectReference",
}
# Of those, the settings whose items may also be a bare name (a Secret's).
NAME_ITEM_SETTINGS = {"image_pull_secrets"}
# KubeSpawner's settings of one object: its fields, at the top. (The API server drops a field it does not
# know: a misspelt runAsUser ran the server as root.)
OBJECT_SETTINGS = {"extra_pod_config": "V1PodSpec", "extra_container_config": "V1Container",
                   "lifecycle_hooks": "V1Lifecycle", "container_security_context": "V1SecurityContext",
                   "pod_security_context": "V1PodSecurityContext"}
# Of those, the ones KubeSpawner puts on the pod as written, so only the API's camelCase names are taken
# (a client model's snake_case name ended in KubeSpawner's ValueError).
CAMEL_CASE_SETTINGS = {"container_security_context", "pod_security_context"}


def object_list_problem(setting: str, value: Any, fields: dict[str, str] | None = None,
                        kind: str = "") -> str | None:
    """Why a setting of OBJECT_LIST_SETTINGS cannot be read (None when it
    can): each item must be a dict (or a client model) whose keys are
    `fields` (a model's attribute_map: snake_case -> camelCase; either is
    taken). KubeSpawner's own errors named neither the setting nor the item."""
    items = value.items() if isinstance(value, dict) else enumerate(value or [])
    for key, item in items:
        if isinstance(item, str) and setting in NAME_ITEM_SETTINGS:
            continue
        if not isinstance(item, dict) and not hasattr(item, "openapi_types"):
            return (f"{setting}[{key!r}]: {item!r} is not a dict: {setting} is a list of Kubernetes objects written "
                    "as dicts, or a dict of them by name (a single one goes in a list: [{...}])")
        if isinstance(item, dict) and fields:
            problem = unknown_field_problem(f"{setting}[{key!r}]", item, fields, kind)
            if problem:
                return problem
    return None


def unknown_field_problem(where: str, obj: dict, fields: dict[str, str], kind: str,
                          camel_case: bool = False) -> str | None:
    """Why `obj`, a Kubernetes `kind` as a dict, has a key that is no field of
    it (`fields`, its model's attribute_map), or None; with `camel_case`, a
    field's snake_case name is refused too."""
    for name in obj:
        if camel_case and name in fields and fields[name] != name:
            return (f"{where}: {name!r} is a snake_case name; it takes the Kubernetes API's camelCase names "
                    f"(did you mean {fields[name]!r}?)")
        if name not in fields and name not in fields.values():
            close = difflib.get_close_matches(str(name), list(fields.values()), n=1)
            if close:
                hint = f" (did you mean {close[0]!r}?)"
            elif len(fields) <= 8:  # a small kind: its fields say what was meant
                hint = f" (its fields: {', '.join(sorted(fields.values()))})"
            else:
                hint = ""
            return f"{where}: {name!r} is no field of a Kubernetes {kind}{hint}"
    return None


def env_value_problem(name: str, value: Any, fields: dict[str, str], called: bool = False) -> str | None:
    """Why `value` cannot be the pod's environment variable `name` (None
    when it can): a string, None (no value: what os.environ.get gives for
    an unset variable), or a Kubernetes EnvVar as a dict (valueFrom);
    `called`: `value` is what the setting's callable returned."""
    if value is None or isinstance(value, str):
        return None
    where = f"environment[{name!r}]"
    if isinstance(value, dict):
        return unknown_field_problem(where, value, fields, "EnvVar")
    source = " (what its callable returned)" if called else ""
    return (f"{where}: {value!r}{source} is a{'n' if type(value).__name__[0] in 'aeiou' else ''} "
            f"{type(value).__name__}, not a string: an environment variable's value is text (e.g. '1', not 1)")


# The taint the scheduler reads a cordoned node by (spec.unschedulable): a pod
# tolerating it is placed on cordoned nodes, the ones the orchestrator drains.
CORDON_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "value": ""}


def cordon_toleration(tolerations: Any) -> dict | None:
    """The first of `tolerations` (KubeSpawner's list, or dict by name) that
    tolerates a cordon, as Kubernetes matches a toleration to a taint."""
    items = tolerations.values() if isinstance(tolerations, dict) else tolerations or []
    for t in (plain(t) for t in items):
        if not isinstance(t, dict) or t.get("effect") not in (None, "", CORDON_TAINT["effect"]):
            continue
        if t.get("key") not in (None, "", CORDON_TAINT["key"]):
            continue
        if t.get("operator") == "Exists" or (t.get("key") and str(t.get("value") or "") == CORDON_TAINT["value"]):
            return t
    return None


def pod_annotations(user: str, server_name: str, version: str,
                    delete_grace: int = podmeta.DEFAULT_DELETE_GRACE) -> dict[str, str]:
    """Annotations naming the hub server a pod belongs to (raw names: label
    values cannot hold every JupyterHub user name, annotations can), and
    how long the hub lets it stop."""
    return {
        podmeta.USER_ANNOTATION: user,
        podmeta.SERVER_NAME_ANNOTATION: server_name,
        podmeta.VERSION_ANNOTATION: version,
        podmeta.DELETE_GRACE_ANNOTATION: str(delete_grace),
    }


def delete_grace(pod: dict | None) -> int:
    """The seconds a pod is given to stop, as its spawner wrote them (a
    missing or unreadable value: KubeSpawner's default)."""
    text = str((_meta(pod or {}).get("annotations") or {}).get(podmeta.DELETE_GRACE_ANNOTATION, ""))
    return int(text) if text.isdigit() else podmeta.DEFAULT_DELETE_GRACE


def tier_preferences(key: str, tiers: Iterable[tuple[str, int]]) -> list[dict[str, Any]]:
    """Preferred node-affinity terms, one per (tier value, weight): the
    scheduler adds a node's weight to its score, so a higher weight is
    filled first, and a cordoned node is never a candidate at all."""
    return [
        {"weight": weight,
         "preference": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}}
        for value, weight in tiers
    ]


def plain(obj: Any) -> Any:
    """`obj` as the JSON Kubernetes reads: KubeSpawner builds a pod of
    client models, but copies `extra_pod_config` and profile values in as
    the admin's dicts, so a pod spec mixes the two."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if hasattr(obj, "openapi_types") and hasattr(obj, "attribute_map"):
        return {obj.attribute_map[k]: plain(getattr(obj, k)) for k in obj.openapi_types
                if getattr(obj, k) is not None}
    return obj


def with_preferences(affinity: dict | None, terms: list[dict[str, Any]]) -> dict[str, Any]:
    """A pod's affinity (plain JSON) with `terms` appended to its preferred
    node affinity: the admin's own terms stay, and come first."""
    out = dict(affinity or {})
    node = dict(out.get("nodeAffinity") or {})
    key = "preferredDuringSchedulingIgnoredDuringExecution"
    node[key] = list(node.get(key) or []) + list(terms)
    out["nodeAffinity"] = node
    return out


def outweighing_preferences(affinity: dict | None, margin: int) -> list[dict[str, Any]]:
    """The preferred node-affinity terms in `affinity` heavy enough
    (weight >= `margin`, the on-prem weight less the cloud weight) to send a
    server to a cloud node they match while on-prem has room."""
    terms = ((affinity or {}).get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return [t for t in terms if isinstance(t, dict) and isinstance(t.get("weight"), int) and t["weight"] >= margin]


def _meta(pod: dict) -> dict:
    return pod.get("metadata") or {}


def server_pods(pods: Iterable[dict], user: str, server_name: str) -> list[dict]:
    """The ElasticHub pods of one hub server, oldest first, found by their
    label and annotations rather than a name derived from the user: a
    make-before-break move has two pods for one server for a while."""
    mine = [
        pod for pod in pods
        if (_meta(pod).get("labels") or {}).get(podmeta.MANAGED_LABEL) == podmeta.TRUE
        and (_meta(pod).get("annotations") or {}).get(podmeta.USER_ANNOTATION) == user
        and (_meta(pod).get("annotations") or {}).get(podmeta.SERVER_NAME_ANNOTATION, "") == server_name
    ]
    return sorted(mine, key=lambda p: (_meta(p).get("creationTimestamp") or "", _meta(p).get("name") or ""))


def current_pod(pods: Iterable[dict], user: str, server_name: str, serving: str | None = None) -> dict | None:
    """The pod serving the server: the one named `serving` (the spawner's
    pod name) when it is alive, else the newest that is not being deleted.
    During a live move the newer pod is the destination, which serves only
    once the route switched to it."""
    alive = [p for p in server_pods(pods, user, server_name) if not _meta(p).get("deletionTimestamp")]
    named = [p for p in alive if serving and _meta(p).get("name") == serving]
    return (named or alive or [None])[-1]


def route_requests(pods: Iterable[dict]) -> list[dict]:
    """Destination pods whose route the orchestrator asked the hub to switch,
    or whose switch a hub claimed and never answered (it restarted)."""
    return [p for p in pods if (_meta(p).get("annotations") or {}).get(podmeta.ROUTE_ANNOTATION)
            in (podmeta.ROUTE_REQUESTED, podmeta.ROUTE_SWITCHING) and not _meta(p).get("deletionTimestamp")]


def annotation_swap(key: str, expected: str, value: str) -> list[dict]:
    """A JSON patch (RFC 6902) setting annotation `key` to `value` only while
    it is `expected`: the API server refuses it (422) otherwise."""
    path = "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")
    return [{"op": "test", "path": path, "value": expected}, {"op": "replace", "path": path, "value": value}]


def route_request_problem(pod: dict, user: str, server_name: str) -> str | None:
    """Why a pod may not become this server's (None when it may): it must be
    an ElasticHub pod of the same hub server, and a live move's destination."""
    meta = _meta(pod)
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    if labels.get(podmeta.MANAGED_LABEL) != podmeta.TRUE:
        return f"pod {meta.get('name')} is not an ElasticHub pod"
    if (annotations.get(podmeta.USER_ANNOTATION), annotations.get(podmeta.SERVER_NAME_ANNOTATION, "")) != (
            user, server_name):
        return f"pod {meta.get('name')} belongs to another server"
    if not annotations.get(podmeta.MOVE_OF_ANNOTATION):
        return f"pod {meta.get('name')} is not the destination of a move"
    return None


# The container KubeSpawner runs the single-user server in (its make_pod names it so): the spawner's
# checks and the orchestrator's live moves find it by this name.
NOTEBOOK_CONTAINER = "notebook"


def notebook_serving(pod: dict | None) -> bool:
    """Is the pod's notebook container up and ready, whatever its other
    containers do? KubeSpawner's is_pod_running asks every container: a
    sidecar (extra_containers) not ready hid a server that could checkpoint."""
    status = (pod or {}).get("status") or {}
    notebook = [c for c in status.get("containerStatuses") or []
                if isinstance(c, dict) and c.get("name") == NOTEBOOK_CONTAINER]
    return (status.get("phase") == "Running" and bool(status.get("podIP")) and bool(notebook)
            and not _meta(pod).get("deletionTimestamp") and all(c.get("ready") for c in notebook))


def pod_node(pod: dict | None) -> str | None:
    """The node a pod is bound to (None before the scheduler placed it)."""
    return ((pod or {}).get("spec") or {}).get("nodeName") or None


def drain_moving(pod: dict | None) -> bool:
    """Has a drain marked the pod, just before it stops the server to move it (podmeta.MOVING_ANNOTATION)?"""
    return bool((_meta(pod or {}).get("annotations") or {}).get(podmeta.MOVING_ANNOTATION))


def moving_message(old_node: str, new_node: str) -> str:
    return f"Moving your server from {old_node} to {new_node}"


def restore_message(kernels: int, nbytes: int, unsaved: int = 0) -> str:
    noun = "kernel" if kernels == 1 else "kernels"
    # A kernel that could not checkpoint (a stock python3 one) lost its variables: said, not hidden by the rest.
    lost = (f"; {unsaved} other {'kernel' if unsaved == 1 else 'kernels'} could not save "
            f"{'its' if unsaved == 1 else 'their'} variables: run {'its' if unsaved == 1 else 'their'} "
            "notebook's cells again") if unsaved else ""
    # A few variables are a few kB: "0.0 MB saved" read as nothing saved.
    size = f"{nbytes / 1e6:.1f} MB" if nbytes >= 50_000 else "less than 0.1 MB"
    return (f"Your variables will be restored when the notebook's kernel starts "
            f"({kernels} {noun}, {size} saved{lost})")
