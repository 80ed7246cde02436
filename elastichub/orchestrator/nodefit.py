"""Could a waiting pod run on a node at all? The scheduler's node filters
that do not depend on load: node selector, required node affinity, taints
and tolerations, extended resources (GPUs).

A hub's profiles often pin servers where the cloud is no help (a GPU
profile whose node selector only on-prem GPU nodes match): such a pod, left
in the queue the policy sizes the cloud on, would start cloud nodes it can
never use and, since nothing scales in while users queue, hold every cloud
node up until it found room. Pure functions of the API objects, as the
scheduler reads them (kubernetes.io/docs: "Assigning Pods to Nodes",
"Taints and Tolerations").
"""

from __future__ import annotations

from dataclasses import dataclass

# Requests every node has room for in its own terms: not extended resources.
_BASIC = ("cpu", "memory", "ephemeral-storage", "pods")
# Taints a node carries for a while by itself (booting, cordoned, unreachable),
# or that we put on to drain it: they say nothing about the node once it is up.
_PASSING_TAINT_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/", "elastichub.io/")


def _extended(names) -> tuple[str, ...]:
    return tuple(sorted(n for n in names if n not in _BASIC and not str(n).startswith("hugepages-")))


@dataclass(frozen=True, slots=True)
class Constraints:
    """What a pod asks of its node, beyond room."""

    node_selector: tuple[tuple[str, str], ...] = ()
    terms: tuple = ()  # required nodeSelectorTerms (ORed), as the API gives them
    tolerations: tuple = ()
    extended: tuple[str, ...] = ()  # extended resources it requests (nvidia.com/gpu)
    prefers: frozenset = frozenset()  # (key, value) of its preferred node affinity's In expressions


@dataclass(frozen=True, slots=True)
class NodeTemplate:
    """What a node offers: its labels, lasting taints and extended resources."""

    name: str
    labels: dict
    taints: tuple = ()  # (key, value, effect)
    extended: frozenset = frozenset()


def pod_constraints(spec: dict) -> Constraints:
    """The pod's constraints (its tolerations too: a tainted node refuses a
    pod that asks nothing else)."""
    selector = spec.get("nodeSelector") or {}
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = tuple(t for t in required.get("nodeSelectorTerms") or [] if isinstance(t, dict))
    names: set[str] = set()
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = (c or {}).get("resources") or {}
        names.update((resources.get("requests") or {}).keys())
        names.update((resources.get("limits") or {}).keys())
    extended = _extended(names)
    tolerations = tuple(t for t in spec.get("tolerations") or [] if isinstance(t, dict))
    prefers = frozenset(
        (str(e.get("key")), str(v))
        for t in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or [] if isinstance(t, dict)
        for e in (t.get("preference") or {}).get("matchExpressions") or []
        if isinstance(e, dict) and e.get("operator") == "In" for v in e.get("values") or [])
    return Constraints(tuple(sorted((str(k), str(v)) for k, v in selector.items())), terms, tolerations, extended,
                       prefers)


def node_template(name: str, labels: dict, spec: dict, allocatable: dict) -> NodeTemplate:
    taints = tuple((str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
                   for t in spec.get("taints") or [] if isinstance(t, dict)
                   and t.get("effect") in ("NoSchedule", "NoExecute")
                   and not str(t.get("key", "")).startswith(_PASSING_TAINT_PREFIXES))
    offered = frozenset(n for n in _extended(allocatable) if str(allocatable.get(n)).strip() not in ("0", ""))
    return NodeTemplate(name, dict(labels), taints, offered)


def misfit(c: Constraints, node: NodeTemplate) -> str | None:
    """Why the pod could never run on `node`, or None if it could."""
    for key, value in c.node_selector:
        if node.labels.get(key) != value:
            return f"node selector {key}={value}"
    if c.terms and not any(_term_matches(t, node) for t in c.terms):
        return "required node affinity"
    for resource in c.extended:
        if resource not in node.extended:
            return f"resource {resource}"
    for key, value, effect in node.taints:
        if not any(_tolerates(t, key, value, effect) for t in c.tolerations):
            return f"taint {key}{'=' + value if value else ''}:{effect}"
    return None


def _term_matches(term: dict, node: NodeTemplate) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no node
    return (all(_matches(e, node.labels.get(e.get("key"))) for e in expressions if isinstance(e, dict))
            and all(_matches(f, node.name if f.get("key") == "metadata.name" else None)
                    for f in fields if isinstance(f, dict)))


def _matches(expression: dict, actual: str | None) -> bool:
    op, values = expression.get("operator"), [str(v) for v in expression.get("values") or []]
    if op == "In":
        return actual is not None and actual in values
    if op == "NotIn":
        return actual is None or actual not in values
    if op == "Exists":
        return actual is not None
    if op == "DoesNotExist":
        return actual is None
    if op in ("Gt", "Lt") and actual is not None and len(values) == 1:
        try:
            a, v = int(actual), int(values[0])
        except ValueError:
            return False
        return a > v if op == "Gt" else a < v
    return False


def _tolerates(t: dict, key: str, value: str, effect: str) -> bool:
    if t.get("effect") and t.get("effect") != effect:
        return False
    operator = t.get("operator") or "Equal"
    if operator == "Exists":
        return not t.get("key") or t.get("key") == key
    return t.get("key") == key and str(t.get("value") or "") == value
