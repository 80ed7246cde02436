"""The cluster as the policy sees it: cached records -> `ClusterSnapshot`.

Pure (no I/O, clock passed in), so it is tested on hand-made records and
benchmarked at 1,000 nodes / 20,000 servers without a cluster.

How a node's status is read:
- on-prem: Ready -> READY, or CORDONED when unschedulable; else NOT_READY.
- cloud, its VM stopped -> STOPPED (the pool); VM started and the node not
  Ready yet, or Ready but still carrying our taint with no drain recorded
  (the scale-out has not uncordoned it yet) -> BOOTING; stopping -> NOT_READY
  (no target for a start); otherwise as on-prem.
- a pool VM with no Node object: STOPPED or BOOTING, with the allocatable of
  `default_allocatable` (a new cloud node registers only once it boots).
A stopped cloud node an admin cordoned (without our taint) stays out of the
pool: the orchestrator never starts a VM an admin set aside.
"""

from __future__ import annotations

from collections import Counter as Tally
from dataclasses import dataclass, field, replace
from typing import Iterable

from .. import podmeta
from ..policy import ClusterSnapshot, Node, NodeStatus, Resources, Server, Tier
from .cloud import PENDING, RUNNING, STOPPED, STOPPING, UNKNOWN, VM
from .nodefit import misfit
from .records import NodeRecord, PodRecord, drain_view


@dataclass(frozen=True)
class ObserveConfig:
    onprem_tier: str = "on-prem"
    cloud_tier: str = "cloud"
    default_allocatable: Resources = Resources()  # a pool VM not (yet) seen as a node
    tier_label: str = podmeta.TIER_LABEL


@dataclass
class Observation:
    snapshot: ClusterSnapshot
    vms: dict[str, VM] = field(default_factory=dict)  # node name -> its VM (cloud tier)
    drains: dict[str, str] = field(default_factory=dict)  # node name -> drain annotation text
    tainted: set[str] = field(default_factory=set)  # nodes carrying our taint
    problems: list[str] = field(default_factory=list)
    onprem_only: dict[str, str] = field(default_factory=dict)  # waiting server -> why no cloud node can run it
    waiting: dict[str, PodRecord] = field(default_factory=dict)  # waiting server -> its pod (queued or on-prem only)
    unmapped: list[VM] = field(default_factory=list)  # pool VMs no node name or providerID ties to a node
    # Cloud nodes hosting servers that no VM backs and no providerID ties to one: any VM without a
    # Node of its own may be theirs.
    unbacked: list[str] = field(default_factory=list)
    unknown_tiers: dict[str, str] = field(default_factory=dict)  # node -> a tier value neither on-prem's nor cloud's

    def node_of(self, vm_id: str | None, default: str) -> str:
        """The node VM `vm_id` is (found by its providerID, it may not be the name the mapping gives)."""
        return next((name for name, vm in self.vms.items() if vm.id == vm_id), default)


def observe(nodes: Iterable[NodeRecord], pods: Iterable[PodRecord], vms: Iterable[VM] | None,
            config: ObserveConfig, now: float, boot_started: dict[str, float] | None = None) -> Observation:
    """`boot_started`: the nodes whose boot the controller watches, since when. One whose VM the cloud
    still lists as stopped is booting all the same: its start call has not returned yet (GCE's waits for
    the operation) or the listing lags it (EC2's is eventually consistent). As stopped, the next cycle's
    policy started the same VM again, under a second watcher."""
    boot_started = boot_started or {}
    tiers = {config.onprem_tier: Tier.ONPREM, config.cloud_tier: Tier.CLOUD}
    problems: list[str] = []
    vm_by_node: dict[str, VM] = {}
    shared: dict[str, list[VM]] = {}  # node name -> every VM mapped to it, when more than one is
    unnamed: list[VM] = []  # VMs the mapping gives no node name (a VM without the mapping's tag)
    for vm in vms or ():
        if not vm.node_name:
            unnamed.append(vm)
            continue
        other = vm_by_node.get(vm.node_name)
        if other is not None:
            shared.setdefault(vm.node_name, [other]).append(vm)
            # The one that costs money is the node's: the last listed could be a stopped twin, and the
            # running one would then run on unknown, never stopped by a scale-in.
            if other.on or not vm.on:
                continue
        vm_by_node[vm.node_name] = vm
    for name, twins in shared.items():
        kept = vm_by_node[name]
        problems.append(f"VMs {', '.join(sorted(v.id for v in twins))}: all map to node {name}; only {kept.id} "
                        f"({kept.state}) is started and stopped by ElasticHub, the others are left alone: "
                        "rename or retag them, or take them out of the pool")
    cloud_managed = vms is not None

    nodes = nodes if isinstance(nodes, list) else list(nodes)
    if vm_by_node or unnamed:
        unnamed = _by_provider_id(nodes, tiers, vm_by_node, unnamed, problems)
    problems += [f"VM {vm.name} ({vm.id}) maps to no node name" for vm in unnamed]
    asked = _asked_in_drains(nodes)
    # Requests on each node, and each node's single-user servers (one pass: 20,000 pods in a cycle).
    pods = pods if isinstance(pods, list) else list(pods)
    # A live move's destination while its source still runs: the same server, not a second one.
    moving = {p.move_of for p in pods if p.move_of}
    if moving:
        moving &= {p.key for p in pods if p.key in moving and p.holds_resources}
    used: dict[str, list[float]] = {}
    servers: dict[str, list[Server]] = {}
    pending: list[Server] = []
    waiting: dict[str, PodRecord] = {}  # server -> its pod, for pending servers
    no_ram: list[str] = []
    other_tiers: list[PodRecord] = []  # servers the spawner placed by tiers the orchestrator does not read
    onprem = (config.tier_label, config.onprem_tier)
    for pod in pods:
        if pod.problem:
            problems.append(pod.problem)
        if not pod.holds_resources:
            continue
        node = pod.node
        # A live move's destination holds its room for the server counted at its source (on the node
        # being drained, whose servers the policy counts as demand): counted here too, every move
        # looked like one server more than there is, and started a cloud node for it.
        if node is not None and not (pod.move_of and pod.move_of in moving):
            u = used.get(node)
            if u is None:
                used[node] = [pod.cpu, pod.ram]
            else:
                u[0] += pod.cpu
                u[1] += pod.ram
        server = pod.as_server
        if asked and server is not None and pod.server in asked and server.created_at != asked[pod.server]:
            server = replace(server, created_at=asked[pod.server])  # restarted by a drain: no new arrival
        if server is not None and pod.ram <= 0 and not pod.problem:
            no_ram.append(pod.server)
        if server is not None and pod.needs is not None and pod.needs.prefers and onprem not in pod.needs.prefers:
            other_tiers.append(pod)
        if server is None or (pod.move_of and pod.move_of in moving):
            continue  # its node's requests count; the server is counted at its source until the switch
        if node is not None:
            here = servers.get(node)
            if here is None:
                servers[node] = [server]
            else:
                here.append(server)
        elif pod.phase == "Pending" and not pod.terminating:
            pending.append(server)
            waiting[server.name] = pod
    onprem_only: dict[str, str] = {}
    if waiting:
        pending = _cloud_can_take(pending, waiting, nodes, tiers, problems, onprem_only)
    _mark_cloud_only(pods, pending, servers, nodes, tiers)
    pending.sort(key=lambda s: (s.created_at if s.created_at is not None else now, s.name))
    if no_ram:
        problems.append(no_ram_problem(no_ram))
    if other_tiers:
        problems.append(other_tiers_problem(other_tiers, config))

    out_nodes: list[Node] = []
    drains: dict[str, str] = {}
    tainted: set[str] = set()
    seen: set[str] = set()
    unbacked: list[str] = []
    unknown_tiers: dict[str, str] = {}
    for rec in nodes:
        tier = tiers.get(rec.tier) if rec.tier is not None else None
        if tier is None:  # not an ElasticHub worker (control plane, another tier: said once, by the controller)
            if rec.tier is not None:
                unknown_tiers[rec.name] = rec.tier
            continue
        if rec.problem:
            problems.append(rec.problem)
        seen.add(rec.name)
        unreadable = drain_record_problem(rec)
        if unreadable:
            problems.append(unreadable)  # neither resumed nor uncordoned: the node is left as it is
        elif rec.drain is not None:
            drains[rec.name] = rec.drain
        if rec.drain_taint and not unreadable:
            tainted.add(rec.name)
        vm = vm_by_node.get(rec.name)
        if tier is Tier.CLOUD and cloud_managed and vm is None and not rec.provider_id and servers.get(rec.name):
            unbacked.append(rec.name)
        status = _status(rec, tier, vm, cloud_managed, hosting=bool(servers.get(rec.name)))
        if status is None:
            continue
        if status is NodeStatus.STOPPED and rec.name in boot_started:
            status = NodeStatus.BOOTING  # its start is on its way (see observe's docstring)
        if tier is Tier.CLOUD and vm is not None and vm.state in (STOPPED, STOPPING) and servers.get(rec.name):
            # Never ours: a drain stops a VM once no server is left on it, a boot watch never one that hosts.
            problems.append(f"cloud node {rec.name}: its VM {vm.id} is {vm.state} (not by ElasticHub) while "
                            f"{_servers_on(servers[rec.name])} are bound to it: their sessions ended; start the "
                            "VM again, or Kubernetes evicts their pods and their users start anew")
        elif status is NodeStatus.NOT_READY and tier is Tier.CLOUD and vm is not None and servers.get(rec.name):
            problems.append(f"cloud node {rec.name}: not Ready while {_servers_on(servers[rec.name])} run on it; "
                            f"its VM {vm.id} is left running (stopping it would end their sessions unsaved)")
        if status is NodeStatus.CORDONED and vm is not None and not rec.drain_taint:
            # The one way a pool VM runs on that no rule of ours will stop: say so while it lasts.
            problems.append(f"cloud node {rec.name}: cordoned, not by ElasticHub: its VM {vm.id} runs on, "
                            "untouched; uncordon the node to hand it back, or stop the VM")
        u = used.get(rec.name, (0.0, 0.0))
        since = boot_started.get(rec.name) if status is NodeStatus.BOOTING else None
        out_nodes.append(Node(rec.name, tier, Resources(rec.cpu, rec.ram), Resources(u[0], u[1]),
                              tuple(servers.get(rec.name, ())), status, since))

    if not any(n.tier is Tier.ONPREM for n in out_nodes):
        problems.append(no_onprem_problem(nodes, config))
    # A pool VM's node whose Node object is gone (deleted by hand) while pods are still bound to it.
    unlisted = {name for name in servers if name not in seen and name in vm_by_node}
    elsewhere = sorted(node for node in servers if node not in seen and node not in unlisted)
    if elsewhere:
        count = sum(len(servers[node]) for node in elsewhere)
        names = ", ".join(elsewhere[:3]) + (", ..." if len(elsewhere) > 3 else "")
        problems.append(f"servers on nodes without a tier: {count} on {names}: they count nowhere (label the "
                        f"nodes {config.onprem_tier!r} or {config.cloud_tier!r})")

    # Pool VMs that are no Node (yet).
    for name, vm in vm_by_node.items():
        if name in seen:
            continue
        if name in unlisted:
            problems.append(f"cloud node {name}: no Node object, but {_servers_on(servers[name])} are bound to "
                            f"it; its VM {vm.id} is left running (stopping it would end their sessions unsaved)")
            u = used.get(name, (0.0, 0.0))
            out_nodes.append(Node(name, Tier.CLOUD, config.default_allocatable, Resources(u[0], u[1]),
                                  tuple(servers[name]), NodeStatus.NOT_READY))
            continue
        if vm.state == STOPPED:
            status = NodeStatus.BOOTING if name in boot_started else NodeStatus.STOPPED
        elif vm.state in (RUNNING, PENDING, UNKNOWN):
            status = NodeStatus.BOOTING
        else:
            continue
        out_nodes.append(Node(name, Tier.CLOUD, config.default_allocatable, Resources(), (), status,
                              boot_started.get(name) if status is NodeStatus.BOOTING else None))

    cloud = {n.name for n in out_nodes if n.tier is Tier.CLOUD}
    unlabelled = [p.server for p in pods if p.unlabelled and p.holds_resources and p.node in cloud]
    if unlabelled:
        problems.append(unlabelled_problem(unlabelled))
    return Observation(ClusterSnapshot(tuple(out_nodes), tuple(pending)), vms=vm_by_node, drains=drains,
                       tainted=tainted, problems=problems, onprem_only=onprem_only,
                       waiting=waiting, unmapped=unnamed, unbacked=unbacked, unknown_tiers=unknown_tiers)


def _by_provider_id(nodes: list[NodeRecord], tiers: dict, vm_by_node: dict[str, VM], unnamed: list[VM],
                    problems: list[str]) -> list[VM]:
    """A VM whose node registered under another name than the mapping gives
    (an EC2 node named by its private DNS name, say), or under none (a VM
    without the mapping's tag), is that node's, in place, found by the
    node's providerID ("aws:///ZONE/i-0abc", "gce://PROJECT/ZONE/NAME",
    "azure:///.../virtualMachines/NAME", "openstack:///ID"): mapped by name
    alone, the node counted as one no VM backs, and its VM as a boot that
    never came, stopped at the boot timeout with the servers that had
    started on the node meanwhile (or, unnamed, ran on unknown). Returns
    the unnamed VMs no node names."""
    names = {rec.name for rec in nodes}
    lost = {}  # the last part of a VM's id, and its name -> VMs whose mapped node does not exist
    for vm in [vm for vm in vm_by_node.values() if vm.node_name not in names] + unnamed:
        for key in {vm.id, vm.id.rstrip("/").rsplit("/", 1)[-1], vm.name}:
            lost.setdefault(key, vm)
    found: set[str] = set()
    for rec in nodes:
        if not rec.provider_id or rec.name in vm_by_node or tiers.get(rec.tier) is not Tier.CLOUD:
            continue
        vm = lost.get(rec.provider_id.rstrip("/").rsplit("/", 1)[-1])
        if vm is None or vm.id in found or (vm.node_name and vm_by_node.get(vm.node_name) is not vm):
            continue
        found.add(vm.id)
        vm_by_node.pop(vm.node_name, None)
        vm_by_node[rec.name] = vm
        problems.append(f"cloud node {rec.name}: the node of VM {vm.name} ({vm.id}) by its providerID, which "
                        f"cloud_node_mapping maps to {vm.node_name or 'no node name'}: managed as {rec.name}; "
                        "set c.ElasticOrchestrator.cloud_node_mapping so that each VM maps to its node's name")
    return [vm for vm in unnamed if vm.id not in found]


def _asked_in_drains(nodes: list[NodeRecord]) -> dict[str, float]:
    """When the user asked for each server a drain restarts, by server key:
    its new pod is no arrival (the drain writes it on the pod once it runs)."""
    asked: dict[str, float] = {}
    for rec in nodes:
        if rec.drain is not None:
            asked.update(drain_view(rec.drain).asked)  # a record not ours asks nothing: reported apart
    return asked


def _cloud_can_take(pending: list[Server], waiting: dict[str, PodRecord], nodes: list[NodeRecord], tiers: dict,
                    problems: list[str], onprem_only: dict[str, str]) -> list[Server]:
    """The waiting servers a cloud node could run. The others (a GPU
    profile's node selector only on-prem nodes match) wait for on-prem room:
    in the queue the policy reads, they would start cloud nodes they can
    never use and, as nothing scales in while users queue, hold them up.
    With no cloud node seen yet there is nothing to judge by: all stay."""
    cloud = _templates(nodes, tiers, Tier.CLOUD)
    if not cloud:
        return pending
    kept, left_out = [], []
    for server in pending:
        c = waiting[server.name].needs
        reasons = [misfit(c, template) for template in cloud] if c is not None else [None]
        if all(reasons):
            left_out.append(f"{server.name}: {reasons[0]}")
            onprem_only[server.name] = reasons[0]
        else:
            kept.append(server)
    if left_out:
        problems.append(f"servers no cloud node can take wait for on-prem room: {len(left_out)} ("
                        + ", ".join(sorted(left_out)[:3]) + (", ..." if len(left_out) > 3 else "") + ")")
    return kept


def _templates(nodes: list[NodeRecord], tiers: dict, tier: Tier) -> list:
    """What each node of `tier` offers a pod (nodefit), for the nodes seen so far."""
    return [rec.offers for rec in nodes if rec.offers is not None and tiers.get(rec.tier) is tier]


def _mark_cloud_only(pods: list[PodRecord], pending: list[Server], servers: dict[str, list[Server]],
                     nodes: list[NodeRecord], tiers: dict) -> None:
    """Servers no on-prem node can take (a profile whose node selector only
    cloud nodes match), in place: a waiting one is `cloud_only`, so the
    policy starts a cloud node for it though on-prem has room; a running
    one is not `movable`, so its node is never drained from under it (every
    move would wait for a cloud node the drain is taking away)."""
    onprem = _templates(nodes, tiers, Tier.ONPREM)
    if not onprem:
        return
    tainted = any(t.taints for t in onprem)
    # Only waiting servers and those on cloud nodes (only cloud nodes are
    # drained), and most ask nothing of their node: one look each.
    cloud = {rec.name for rec in nodes if tiers.get(rec.tier) is Tier.CLOUD}
    asking = {p.server: p.needs for p in pods
              if p.needs is not None and (p.node is None or p.node in cloud)
              and (tainted or p.needs.node_selector or p.needs.terms or p.needs.extended)}
    if not asking:
        return

    def only_cloud(name: str) -> bool:
        needs = asking.get(name)
        return needs is not None and all(misfit(needs, template) for template in onprem)

    pending[:] = [replace(s, cloud_only=True) if only_cloud(s.name) else s for s in pending]
    for node in cloud & servers.keys():
        servers[node] = [replace(s, movable=False) if s.movable and only_cloud(s.name) else s
                         for s in servers[node]]


def no_onprem_problem(nodes: list[NodeRecord], config: ObserveConfig) -> str:
    """One line for a cluster with no on-prem node, naming the tier values its nodes do carry (a
    misspelt 'onprem' said nothing of itself) and the label key in force (not always ElasticHub's)."""
    others = Tally(rec.tier for rec in nodes if rec.tier is not None
                   and rec.tier not in (config.onprem_tier, config.cloud_tier))
    found = "".join(f"; {count} node(s) carry {config.tier_label}={value!r}" for value, count in
                    sorted(others.items())[:3])
    return (f"no on-prem node: none is labelled with the tier {config.onprem_tier!r}{found}, so every server "
            f"needs the cloud; label them (kubectl label node NAME {config.tier_label}={config.onprem_tier}), "
            "or set the tier values of c.ElasticSpawner and c.ElasticOrchestrator (onprem_tier) to theirs")


def no_ram_problem(servers: list[str]) -> str:
    """One line for every server whose pod requests no memory: RAM occupancy
    (theta_out) is what scales the cloud, and it cannot count them."""
    return (f"servers that request no memory: {len(servers)} ({_first_names(servers)}): the RAM occupancy "
            "that scales the cloud cannot count them; set c.KubeSpawner.mem_guarantee")


def drain_record_problem(rec: NodeRecord) -> str | None:
    """Why the drain record on `rec` cannot be read (None: it can, or there
    is none): a drain this orchestrator must neither resume nor undo."""
    problem = drain_view(rec.drain).problem
    if problem:
        return (f"node {rec.name}: {problem}: left as it is (neither resumed nor uncordoned); finish the drain with "
                "the ElasticHub that wrote it, or see docs/deploy.md, 'Upgrading'")
    return None


def unlabelled_problem(servers: list[str]) -> str:
    """One line for the servers on cloud nodes whose pods have none of
    ElasticHub's labels: they keep their nodes up."""
    return (f"servers without the {podmeta.MANAGED_LABEL} label keep their cloud nodes up: {len(servers)} "
            f"({_first_names(servers)}): started by KubeSpawner before the hub ran ElasticSpawner (or another "
            "hub's), they are never moved (nothing asks them for a checkpoint); a server is ElasticSpawner's "
            "from its next start")


def cloud_only_unserved_problem(pending: Iterable[Server]) -> str | None:
    """One line for the waiting servers only cloud nodes can take (a node
    selector no on-prem node matches), for a strategy that starts cloud
    nodes on RAM occupancy alone (`paper`): with on-prem room they wait,
    until their start times out, and nothing else said why."""
    names = [s.name for s in pending if s.cloud_only]
    if not names:
        return None
    return (f"servers only cloud nodes can take wait: {len(names)} ({_first_names(names)}): the 'paper' strategy "
            "starts a cloud node on RAM occupancy alone, not for them, so they wait while on-prem has room; use "
            "c.ElasticOrchestrator.policy = 'elastic', or let their node selector or required node affinity match "
            "on-prem nodes")


def other_tiers_problem(pods: list[PodRecord], config: ObserveConfig) -> str:
    """One line for the servers whose pods prefer nodes by tiers other than
    the ones the orchestrator reads: ElasticSpawner and the orchestrator
    configured apart. Their on-prem-first placement then means nothing to
    the scheduler's view of the tiers the orchestrator scales."""
    first = min(pods, key=lambda p: p.server)
    prefers = ", ".join(f"{k}={v}" for k, v in sorted(first.needs.prefers))
    return (f"servers placed by other tiers than the orchestrator's: {len(pods)} ({first.server} prefers "
            f"{prefers}; the orchestrator reads {config.tier_label}={config.onprem_tier} and "
            f"={config.cloud_tier}): give c.ElasticSpawner and c.ElasticOrchestrator the same tier_label, "
            "onprem_tier and cloud_tier")


def _servers_on(servers: list[Server]) -> str:
    return f"{len(servers)} server(s) ({_first_names([s.name for s in servers])})"


def _first_names(names: list[str]) -> str:
    return ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")


def _status(rec: NodeRecord, tier: Tier, vm: VM | None, cloud_managed: bool, hosting: bool = False) \
        -> NodeStatus | None:
    """None: leave the node out of the snapshot. `hosting`: servers are bound to it."""
    if tier is Tier.CLOUD and cloud_managed:
        if vm is None:
            # A cloud-tier node with no VM in the pool: nothing can start or
            # stop it; it counts like any node while it runs.
            pass
        elif vm.state == STOPPED:
            if rec.unschedulable and not rec.drain_taint:
                return None  # an admin set it aside: not ours to start
            if rec.drain is not None:
                return NodeStatus.NOT_READY  # its drain has still to finish: not to be started before
            return NodeStatus.STOPPED
        elif vm.state == STOPPING:
            return NodeStatus.NOT_READY
        elif hosting and not rec.ready:
            # Servers run there: it was Ready, so this is no boot but a node that stopped reporting
            # (a boot that timed out would stop the VM, and their sessions with it).
            return NodeStatus.NOT_READY
        elif not rec.ready or (rec.drain_taint and rec.drain is None):
            return NodeStatus.BOOTING
    if not rec.ready:
        return NodeStatus.NOT_READY
    return NodeStatus.CORDONED if rec.unschedulable else NodeStatus.READY
