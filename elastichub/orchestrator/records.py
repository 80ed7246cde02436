"""What the orchestrator keeps of each Node and Pod: small records parsed once
per watch event, so a cycle over 20,000 pods reads tuples, not manifests.

Pure functions of the raw JSON objects (as the API server sends them). A
malformed object (a bad quantity, a missing name) is parsed as far as it
can be and reported, never allowed to stop the loop: its `problem` says why.
"""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import podmeta
from ..policy import Resources, Server
from ..quantity import QuantityError, parse_cpu, parse_memory
from .nodefit import Constraints, NodeTemplate, node_template, pod_constraints

MILLI = 1000.0
DRAIN_RECORD_VERSION = 1  # the drain record's "v": bump when its states, steps or fields change meaning
READY_CONDITION = "Ready"


@dataclass(frozen=True, slots=True)
class NodeRecord:
    name: str
    tier: str | None  # the tier label's value; None: not an ElasticHub worker
    ready: bool
    unschedulable: bool
    cpu: float  # allocatable cores
    ram: float  # allocatable bytes
    provider_id: str = ""
    labels: dict = field(default_factory=dict)
    drain_taint: bool = False  # our NoSchedule taint: the orchestrator cordoned it
    drain: str | None = None  # our drain annotation (JSON), None when no drain is recorded
    problem: str = ""
    offers: NodeTemplate | None = None  # labels, lasting taints, extended resources (nodefit)


@dataclass(frozen=True, slots=True)
class PodRecord:
    key: str  # namespace/name
    node: str | None  # spec.nodeName; None while unscheduled
    phase: str
    cpu: float  # requested cores, every container
    ram: float  # requested bytes
    terminating: bool
    managed: bool  # a hub's server: labelled by ElasticSpawner, or `unlabelled`
    migratable: bool
    user: str = ""
    server_name: str = ""
    created: float | None = None  # epoch seconds
    started: float | None = None
    problem: str = ""
    server: str = ""  # "user" or "user/name": the hub's key of the server this pod runs
    holds_resources: bool = True  # counts towards its node's O_i: not finished
    as_server: Server | None = None  # the policy's view of it (managed pods), built once per event
    move_of: str = ""  # a live move's destination: the source pod's key (namespace/name)
    needs: Constraints | None = None  # a server's node constraints (nodefit); None for a pod not ElasticHub's
    uid: str = ""  # what an Event about the pod names (the spawner follows a pod's events by uid)
    unlabelled: bool = False  # a server KubeSpawner started before ElasticSpawner ran the hub: counted, never moved
    moving: bool = False  # a drain marked it, just before its stop (podmeta.MOVING_ANNOTATION)


def parse_time(text: str | None) -> float | None:
    """RFC 3339 (as Kubernetes writes it) to epoch seconds; None if absent or bad."""
    if not text or not isinstance(text, str):
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def format_time(epoch: float) -> str:
    """Epoch seconds to RFC 3339, as Kubernetes writes times."""
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_record(obj: dict, tier_label: str = podmeta.TIER_LABEL) -> NodeRecord:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    ready = any(c.get("type") == READY_CONDITION and c.get("status") == "True"
                for c in status.get("conditions") or [] if isinstance(c, dict))
    problem = ""
    alloc = status.get("allocatable") or {}
    try:
        cpu = parse_cpu(alloc.get("cpu", 0)) / MILLI
        ram = float(parse_memory(alloc.get("memory", 0)))
    except QuantityError as e:
        cpu = ram = 0.0
        problem = f"node {meta.get('name')!r}: allocatable: {e}"
    taints = spec.get("taints") or []
    return NodeRecord(
        name=str(meta.get("name", "")),
        tier=labels.get(tier_label),
        ready=ready,
        unschedulable=bool(spec.get("unschedulable")),
        cpu=cpu,
        ram=ram,
        provider_id=str(spec.get("providerID") or ""),
        labels=dict(labels),
        drain_taint=any(isinstance(t, dict) and t.get("key") == podmeta.DRAIN_TAINT for t in taints),
        drain=annotations.get(podmeta.DRAIN_ANNOTATION),
        problem=problem,
        offers=node_template(str(meta.get("name", "")), labels, spec, alloc),
    )


def pod_requests(spec: dict) -> tuple[float, float]:
    """(cores, bytes) the pod requests: the sum over its containers, or the
    largest init container if that is more (Kubernetes' effective request).
    A container with a limit and no request requests its limit, as the API
    server's defaulting writes it (KubeSpawner's mem_limit alone)."""
    def total(containers) -> tuple[float, float]:
        cpu = ram = 0.0
        for c in containers or []:
            resources = (c or {}).get("resources") or {}
            req = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
            cpu += parse_cpu(req.get("cpu", 0)) / MILLI
            ram += parse_memory(req.get("memory", 0))
        return cpu, ram

    cpu, ram = total(spec.get("containers"))
    for init in spec.get("initContainers") or []:
        icpu, iram = total([init])
        cpu, ram = max(cpu, icpu), max(ram, iram)
    return cpu, ram


def pod_record(obj: dict) -> PodRecord:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    problem = ""
    try:
        cpu, ram = pod_requests(spec)
    except QuantityError as e:
        cpu = ram = 0.0
        problem = f"pod {meta.get('namespace')}/{meta.get('name')}: requests: {e}"
    managed = labels.get(podmeta.MANAGED_LABEL) == podmeta.TRUE
    user = str(annotations.get(podmeta.USER_ANNOTATION, ""))
    server_name = str(annotations.get(podmeta.SERVER_NAME_ANNOTATION, ""))
    if managed and not user:
        problem = (f"pod {meta.get('namespace')}/{meta.get('name')}: labelled {podmeta.MANAGED_LABEL} "
                   f"but has no {podmeta.USER_ANNOTATION} annotation")
        managed = False
    node = spec.get("nodeName") or None
    # A server KubeSpawner started before the hub ran ElasticSpawner (or another hub's) has KubeSpawner's
    # marks only. Once bound to a node it is a session to keep: counted as a server that is never moved
    # (nothing here can checkpoint it), so its node is never drained from under it.
    kubespawner_user = annotations.get(podmeta.KUBESPAWNER_USER) or labels.get(podmeta.KUBESPAWNER_USER)
    unlabelled = podmeta.MANAGED_LABEL not in labels and bool(node and kubespawner_user)
    if unlabelled:
        managed, user = True, str(kubespawner_user)
        server_name = str(annotations.get(podmeta.KUBESPAWNER_SERVER_NAME, ""))
    phase = str(status.get("phase") or "Pending")
    # A moved server's pod carries when its user asked for it: no new arrival.
    created = parse_time(annotations.get(podmeta.ASKED_ANNOTATION)) or parse_time(meta.get("creationTimestamp"))
    # A live move's destination carries the server's first start: the server keeps its age.
    started = parse_time(annotations.get(podmeta.STARTED_ANNOTATION)) or parse_time(status.get("startTime"))
    move_of = annotations.get(podmeta.MOVE_OF_ANNOTATION)
    # Anything but an explicit "false" is movable: the spawner's default.
    migratable = labels.get(podmeta.MIGRATABLE_LABEL, podmeta.TRUE) != podmeta.FALSE and not unlabelled
    key = podmeta.server_key(user, server_name)
    return PodRecord(
        key=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        node=node, phase=phase, cpu=cpu, ram=ram, terminating=bool(meta.get("deletionTimestamp")),
        managed=managed, migratable=migratable, user=user, server_name=server_name, created=created,
        started=started, problem=problem, server=key,
        # A terminating pod still holds its requests until it is gone, as on Kubernetes.
        holds_resources=phase not in ("Succeeded", "Failed"),
        as_server=Server(key, Resources(cpu, ram), node, started, created, migratable) if managed else None,
        move_of=f"{meta.get('namespace', '')}/{move_of}" if managed and move_of else "",
        needs=pod_constraints(spec) if managed else None,
        uid=str(meta.get("uid") or ""),
        unlabelled=unlabelled,
        moving=managed and bool(annotations.get(podmeta.MOVING_ANNOTATION)),
    )


def unmovable(pods: list[PodRecord]) -> str:
    """Why a drain of a node holding `pods` cannot go on (some may not be
    moved); one line, for the drain's roll-back and the status page."""
    pinned = [p.server for p in pods if not p.migratable and not p.unlabelled]
    unlabelled = [p.server for p in pods if p.unlabelled]
    why = [f"server(s) {', '.join(pinned)} may not be moved (migratable: false)"] if pinned else []
    if unlabelled:
        why.append(f"server(s) {', '.join(unlabelled)} have no {podmeta.MANAGED_LABEL} label (started by "
                   "KubeSpawner before the hub ran ElasticSpawner, or another hub's): never moved")
    return "; ".join(why)


def load_drain(text: str | None) -> dict | None:
    """The drain annotation as a dict; None when absent. A value that is not
    our JSON raises ValueError naming the problem (the caller reports it and
    treats the node as an admin's, never guessing)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{podmeta.DRAIN_ANNOTATION} is not JSON: {e}") from None
    if not isinstance(value, dict) or not isinstance(value.get("servers", {}), dict):
        raise ValueError(f"{podmeta.DRAIN_ANNOTATION} is not a drain record: {text[:200]!r}")
    if value.get("v", DRAIN_RECORD_VERSION) != DRAIN_RECORD_VERSION:
        # Another ElasticHub's (a newer one, before a downgrade): its states and steps are not ours to guess.
        raise ValueError(f"{podmeta.DRAIN_ANNOTATION} is a drain record of version {value.get('v')!r}, written by "
                         f"another version of ElasticHub; this one reads version {DRAIN_RECORD_VERSION}")
    return value


@dataclass(frozen=True, slots=True)
class DrainView:
    """What each cycle reads of a drain record: read once per text, not every cycle (a record naming
    60 servers took longer to parse, twice, than the rest of the snapshot of 800 servers)."""
    problem: str = ""  # why it is not our record ("": it is, or there is none)
    servers: frozenset = frozenset()  # the servers it names: being moved
    asked: tuple = ()  # (server, when its user asked for it), for the servers it restarts


@functools.lru_cache(maxsize=64)  # the records on the nodes being drained (each step writes a new one)
def drain_view(text: str | None) -> DrainView:
    try:
        record = load_drain(text) or {}
    except ValueError as e:
        return DrainView(problem=str(e))
    servers = record.get("servers") or {}
    asked = tuple((key, when) for key, entry in servers.items() if isinstance(entry, dict)
                  and (when := parse_time(entry.get("asked"))) is not None)
    return DrainView(servers=frozenset(servers), asked=asked)


def drained_servers(drains) -> set[str]:
    """The servers the nodes' drain records (their annotations' texts) name: being moved. A record not
    ours names none (observe() reports it)."""
    named: set[str] = set()
    for text in drains:
        named |= drain_view(text).servers
    return named


def stale_marks(pods, nodes: dict, draining: Callable[[str], bool]) -> list[str]:
    """The pods (keys) a drain marked as moving off their node, just before its stop, that still run on a node
    no drain records or runs: that drain ended without their stop (its record removed by hand, `kubectl
    annotate node NODE elastichub.io/drain-`). Left marked, their user's own stop would be told as a move.
    A node with a record (one this version cannot read too) is its drain's: it clears its own marks."""
    return [p.key for p in pods if p.moving and not p.terminating and p.holds_resources
            and getattr(nodes.get(p.node), "drain", None) is None and not (p.node and draining(p.node))]


def forget_gone(by_server: dict, pods, drains) -> None:
    """Drop, in place, the entries of servers with neither a pod nor a place in a drain record (stopped,
    not mid-move): kept, such a map grew with every server a hub ever ran."""
    if not by_server:
        return
    here = {p.server for p in pods if p.managed} | drained_servers(drains)
    for key in [k for k in by_server if k not in here]:
        del by_server[key]
