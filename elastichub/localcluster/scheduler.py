"""The local cluster's scheduler: binds Pending pods to nodes.

Filter (a node must pass all): Ready, schedulable (not cordoned), the pod's
resource requests fit the allocatable capacity left by the non-terminated
pods already on the node, required node affinity and nodeSelector match, and
every NoSchedule/NoExecute taint is tolerated.

Score (highest wins, lexicographically): the sum of the weights of the
matching preferred node-affinity terms, then "most allocated" (bin packing,
as ElasticHub's paper does), then the node name for a stable order.

The filter and score functions are pure (plain dicts in, values out) so they
are tested without a server; `Scheduler` is the controller that runs them on
every change of pods or nodes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import Counter
from typing import Iterable

from .config import QuantityError, parse_cpu, parse_memory
from .events import EventRecorder
from .store import ApiError, Store, now_rfc3339

log = logging.getLogger(__name__)

SCHEDULER_NAME = "default-scheduler"
TERMINATED_PHASES = ("Succeeded", "Failed")


@dataclasses.dataclass
class Usage:
    """Resources requested by the pods on one node (millicores, bytes, pod count)."""

    cpu: int = 0
    memory: int = 0
    pods: int = 0
    extended: Counter = dataclasses.field(default_factory=Counter)  # e.g. nvidia.com/gpu, in thousandths

    def add(self, requests: tuple[int, int], extended: dict[str, int] | None = None) -> None:
        """Count one more pod requesting (cpu millicores, memory bytes) and `extended` resources."""
        self.cpu += requests[0]
        self.memory += requests[1]
        self.pods += 1
        self.extended.update(extended or {})


# ----------------------------------------------------------------------------- resources


def pod_requests(pod: dict) -> tuple[int, int]:
    """(cpu millicores, memory bytes) the pod requests; raises QuantityError on a bad quantity.

    As in Kubernetes: a container with a limit but no request requests its
    limit; init containers run one at a time, so the pod needs the larger of
    the sum over containers and the largest init container.
    """
    spec = pod.get("spec") or {}

    def one(container: dict) -> tuple[int, int]:
        resources = container.get("resources") or {}
        requests = dict(resources.get("limits") or {})
        requests.update(resources.get("requests") or {})
        return parse_cpu(requests.get("cpu", 0)), parse_memory(requests.get("memory", 0))

    regular = [one(c) for c in spec.get("containers") or []]
    init = [one(c) for c in spec.get("initContainers") or []]
    cpu = max([sum(c for c, _ in regular)] + [c for c, _ in init])
    memory = max([sum(m for _, m in regular)] + [m for _, m in init])
    return cpu, memory


# What every node has and the filters above count; any other resource a pod
# requests (nvidia.com/gpu, example.com/fpga) is an extended one: a node
# offers it only when its allocatable names it.
_CORE_RESOURCES = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})


def pod_extended(pod: dict) -> dict[str, int]:
    """Extended resources the pod requests, in thousandths (as cpu), the
    same sum-or-largest-init rule; raises QuantityError on a bad quantity."""
    spec = pod.get("spec") or {}

    def one(container: dict) -> dict[str, int]:
        resources = container.get("resources") or {}
        requests = dict(resources.get("limits") or {})
        requests.update(resources.get("requests") or {})
        return {k: parse_cpu(v) for k, v in requests.items()
                if k not in _CORE_RESOURCES and not k.startswith("hugepages-")}

    total: Counter = Counter()
    for container in spec.get("containers") or []:
        total.update(one(container))
    for container in spec.get("initContainers") or []:
        for name, amount in one(container).items():
            total[name] = max(total[name], amount)
    return {k: v for k, v in total.items() if v}


def node_allocatable(node: dict) -> tuple[int, int, int]:
    """(cpu millicores, memory bytes, max pods) of a node's status.allocatable."""
    alloc = (node.get("status") or {}).get("allocatable") or {}
    return parse_cpu(alloc.get("cpu", 0)), parse_memory(alloc.get("memory", 0)), int(alloc.get("pods", 110))


def node_usage(pods: Iterable[dict]) -> dict[str, Usage]:
    """Requests summed per node over bound pods that have not terminated."""
    usage: dict[str, Usage] = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or (pod.get("status") or {}).get("phase") in TERMINATED_PHASES:
            continue
        try:
            requests, extended = pod_requests(pod), pod_extended(pod)
        except QuantityError:
            requests, extended = (0, 0), {}  # a bound pod with a bad quantity was not bound by us; count it as empty
        usage.setdefault(node_name, Usage()).add(requests, extended)
    return usage


# ----------------------------------------------------------------------------- filters


def node_is_ready(node: dict) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def match_expression(expr: dict, labels: dict[str, str]) -> bool:
    """One NodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) against labels."""
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    present = key in labels
    value = labels.get(key)
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            have, want = int(value), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False  # an unknown operator matches nothing, as in Kubernetes


def match_term(term: dict, node: dict) -> bool:
    """A NodeSelectorTerm: all its matchExpressions (labels) and matchFields (metadata.name)."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no node (Kubernetes semantics)
    labels = (node.get("metadata") or {}).get("labels") or {}
    field_values = {"metadata.name": node["metadata"]["name"]}
    return all(match_expression(e, labels) for e in exprs) and all(
        match_expression(f, field_values) for f in fields
    )


def _node_affinity(pod: dict) -> dict:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def matches_required_affinity(pod: dict, node: dict) -> bool:
    """nodeSelector (all labels equal) and requiredDuringScheduling terms (any term)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    return any(match_term(t, node) for t in required.get("nodeSelectorTerms") or [])


UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def tolerates(toleration: dict, taint: dict) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (
        taint.get("value") or ""
    )


def untolerated_taint(pod: dict, node: dict) -> dict | None:
    """The first NoSchedule/NoExecute taint of the node that the pod does not tolerate."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def filter_node(pod: dict, node: dict, usage: Usage, requests: tuple[int, int],
                extended: dict[str, int] | None = None) -> str | None:
    """Why the pod cannot go to this node (a short reason, as in FailedScheduling), or None."""
    if not node_is_ready(node):
        return "node(s) were not ready"
    if (node.get("spec") or {}).get("unschedulable") and not any(
            tolerates(t, UNSCHEDULABLE_TAINT) for t in (pod.get("spec") or {}).get("tolerations") or []):
        return "node(s) were unschedulable"  # a pod that tolerates the cordon's taint goes there (NodeUnschedulable)
    taint = untolerated_taint(pod, node)
    if taint is not None:
        value = f"={taint['value']}" if taint.get("value") else ""
        return f"node(s) had untolerated taint {{{taint['key']}{value}: }}"
    if not matches_required_affinity(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    try:
        cpu, memory, max_pods = node_allocatable(node)
    except (ValueError, TypeError):  # a status written through the API with a bad quantity
        return "node(s) had an invalid allocatable"
    if usage.pods + 1 > max_pods:
        return "Too many pods"
    if usage.cpu + requests[0] > cpu:
        return "Insufficient cpu"
    if usage.memory + requests[1] > memory:
        return "Insufficient memory"
    offered = (node.get("status") or {}).get("allocatable") or {}
    for name, amount in sorted((extended or {}).items()):
        try:
            have = parse_cpu(offered.get(name, 0))
        except QuantityError:
            have = 0
        if usage.extended[name] + amount > have:
            return f"Insufficient {name}"
    return None


# ----------------------------------------------------------------------------- scores


def preferred_affinity_score(pod: dict, node: dict) -> int:
    """Sum of the weights of the preferred node-affinity terms the node matches."""
    preferred = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(int(p.get("weight", 0)) for p in preferred if match_term(p.get("preference") or {}, node))


def most_allocated_score(node: dict, usage: Usage, requests: tuple[int, int]) -> float:
    """Mean of cpu and memory fractions allocated once the pod is placed (0..1): packing."""
    cpu, memory, _ = node_allocatable(node)
    fractions = [
        (usage.cpu + requests[0]) / cpu if cpu else 0.0,
        (usage.memory + requests[1]) / memory if memory else 0.0,
    ]
    return sum(fractions) / len(fractions)


def missing_claim(pod: dict, claims: set[tuple[str | None, str]]) -> str | None:
    """The first PersistentVolumeClaim the pod mounts that does not exist (it
    waits for it, as on Kubernetes), or None."""
    namespace = pod["metadata"].get("namespace")
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = ((volume or {}).get("persistentVolumeClaim") or {}).get("claimName")
        if name and (namespace, name) not in claims:
            return name
    return None


def choose_node(pod: dict, nodes: list[dict], usage: dict[str, Usage]) -> tuple[str | None, str]:
    """(name of the best node, "") or (None, a FailedScheduling message)."""
    try:
        requests, extended = pod_requests(pod), pod_extended(pod)
    except QuantityError as e:
        return None, f"invalid resource request: {e}"
    best: tuple | None = None
    reasons: Counter[str] = Counter()
    for node in nodes:
        name = node["metadata"]["name"]
        node_use = usage.get(name, Usage())
        reason = filter_node(pod, node, node_use, requests, extended)
        if reason:
            reasons[reason] += 1
            continue
        score = (preferred_affinity_score(pod, node), most_allocated_score(node, node_use, requests))
        # Ties go to the alphabetically first node; the key sorts that one highest.
        key = (score, _invert(name))
        if best is None or key > best[0]:
            best = (key, name)
    if best is not None:
        return best[1], ""
    detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
    message = f"0/{len(nodes)} nodes are available"
    return None, f"{message}: {detail}." if detail else f"{message}."


def _invert(name: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in name) + (0,)


# ----------------------------------------------------------------------------- controller


def wants_scheduling(pod: dict) -> bool:
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    return (
        not spec.get("nodeName")
        and (spec.get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME
        and (pod.get("status") or {}).get("phase", "Pending") == "Pending"
        and not meta.get("deletionTimestamp")
    )


def _set_condition(pod: dict, condition: dict) -> None:
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
    status["conditions"] = [condition] + conditions


class Scheduler:
    """Watches pods and nodes; binds each schedulable Pending pod, records why the others wait."""

    def __init__(self, store: Store):
        self.store = store
        self.events = EventRecorder(store, SCHEDULER_NAME)
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._subscriptions: list = []
        self._stopping = False
        self._last_failure: dict[str, str] = {}  # pod uid -> last FailedScheduling message

    async def start(self) -> None:
        self._stopping = False
        for kind in ("pods", "nodes", "persistentvolumeclaims"):
            self._tasks.append(asyncio.create_task(self._watch(kind), name=f"scheduler-watch-{kind}"))
        self._tasks.append(asyncio.create_task(self._loop(), name="scheduler"))
        self._wake.set()

    async def stop(self) -> None:
        self._stopping = True
        for sub in list(self._subscriptions):
            sub.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def _watch(self, kind: str) -> None:
        while not self._stopping:
            sub = self.store.subscribe(kind, raw=True)
            self._subscriptions.append(sub)
            async for _event in sub:
                self._wake.set()
            self._subscriptions.remove(sub)
            self._wake.set()  # cut off (fell behind): re-subscribe and re-scan everything

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(0)  # let a burst of changes arrive, then schedule them in one pass
            try:
                self.schedule_pending()
            except Exception:  # a bug here must not stop scheduling for good
                log.exception("scheduling pass failed")

    def schedule_pending(self) -> None:
        """One pass: try every Pending unbound pod, oldest first."""
        # Stored objects are replaced, never changed in place, so reading them uncopied is safe.
        pods = list(self.store.iter_objects("pods"))
        pending = sorted(
            (p for p in pods if wants_scheduling(p)),
            key=lambda p: (p["metadata"].get("creationTimestamp", ""), int(p["metadata"]["resourceVersion"])),
        )
        if not pending:
            return
        nodes = list(self.store.iter_objects("nodes"))
        usage = node_usage(pods)
        claims = {(c["metadata"].get("namespace"), c["metadata"]["name"])
                  for c in self.store.iter_objects("persistentvolumeclaims")}
        for pod in pending:
            missing = missing_claim(pod, claims)
            node_name, message = (None, f'0/{len(nodes)} nodes are available: persistentvolumeclaim "{missing}" '
                                  "not found.") if missing else choose_node(pod, nodes, usage)
            if node_name is None:
                self._unschedulable(pod, message)
                continue
            if self._bind(pod, node_name):
                usage.setdefault(node_name, Usage()).add(pod_requests(pod), pod_extended(pod))

    def _bind(self, pod: dict, node_name: str) -> bool:
        meta = pod["metadata"]

        def bind(p: dict) -> None:
            if p["spec"].get("nodeName"):
                raise ApiError(409, "Conflict", f"pod {meta['name']} is already bound")
            p["spec"]["nodeName"] = node_name
            _set_condition(p, {"type": "PodScheduled", "status": "True", "lastTransitionTime": now_rfc3339(),
                               "lastProbeTime": None})

        try:
            bound = self.store.update("pods", meta["name"], bind, namespace=meta.get("namespace"))
        except ApiError as e:  # deleted or bound meanwhile
            log.debug("binding %s failed: %s", meta["name"], e)
            return False
        self._last_failure.pop(meta.get("uid", ""), None)
        self.events.record(bound, "Scheduled",
                           f"Successfully assigned {meta.get('namespace', 'default')}/{meta['name']} to {node_name}")
        return True

    def _unschedulable(self, pod: dict, message: str) -> None:
        meta = pod["metadata"]
        uid = meta.get("uid", meta["name"])
        if self._last_failure.get(uid) == message:
            return  # nothing new to say; the condition and event already say it
        self._last_failure[uid] = message
        if len(self._last_failure) > 10000:  # forget pods long gone
            self._last_failure.pop(next(iter(self._last_failure)))

        def mark(p: dict) -> None:
            _set_condition(p, {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                               "message": message, "lastTransitionTime": now_rfc3339(), "lastProbeTime": None})
            p["status"].setdefault("phase", "Pending")

        try:
            updated = self.store.update("pods", meta["name"], mark, namespace=meta.get("namespace"))
        except ApiError:
            return
        self.events.record(updated, "FailedScheduling", message, type="Warning")
