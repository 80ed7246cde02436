"""Records and the snapshot the policy sees, from hand-made Kubernetes objects (no cluster)."""

from __future__ import annotations

import json

import pytest

from podtools import cache

from elastichub import podmeta
from elastichub.orchestrator.cloud import PENDING, RUNNING, STOPPED, STOPPING, VM
from elastichub.orchestrator.observe import ObserveConfig, observe
from elastichub.orchestrator.records import load_drain, node_record, pod_record
from elastichub.policy import GiB, NodeStatus, Resources, Tier, plan_migration

NOW = 1_800_000_000.0


def node(name, tier="on-prem", ready=True, unschedulable=False, cpu="4", memory="8Gi", taint=False, drain=None,
         provider_id=None):
    obj = {"metadata": {"name": name, "labels": {podmeta.TIER_LABEL: tier} if tier else {}, "annotations": {}},
           "spec": {"unschedulable": unschedulable, **({"providerID": provider_id} if provider_id else {}),
                    "taints": [{"key": podmeta.DRAIN_TAINT, "effect": "NoSchedule"}] if taint else []},
           "status": {"allocatable": {"cpu": cpu, "memory": memory},
                      "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}]}}
    if drain is not None:
        obj["metadata"]["annotations"][podmeta.DRAIN_ANNOTATION] = json.dumps(drain)
    return node_record(obj)


def pod(name, node=None, user=None, memory="1Gi", cpu="500m", phase="Running", managed=True, migratable=None,
        created="2027-01-15T08:00:00Z", annotations=None, started=None):
    labels, annotations = {}, dict(annotations or {})
    if managed:
        labels[podmeta.MANAGED_LABEL] = "true"
        annotations[podmeta.USER_ANNOTATION] = user or name
        annotations[podmeta.SERVER_NAME_ANNOTATION] = ""
    if migratable is not None:
        labels[podmeta.MIGRATABLE_LABEL] = migratable
    return pod_record({"metadata": {"name": name, "namespace": "jh", "labels": labels, "annotations": annotations,
                                    "creationTimestamp": created},
                       "spec": {"nodeName": node, "containers": [{"name": "notebook", "resources": {
                           "requests": {"cpu": cpu, "memory": memory}}}]},
                       "status": {"phase": phase, **({"startTime": started} if started else {})}})


CONFIG = ObserveConfig(default_allocatable=Resources(2, 4 * GiB))


def test_requests_of_every_pod_count_but_only_managed_pods_are_servers():
    nodes = [node("onprem-1")]
    pods = [pod("jupyter-alice", "onprem-1", user="alice"), pod("system", "onprem-1", managed=False, memory="512Mi"),
            pod("done", "onprem-1", phase="Succeeded")]
    snap = observe(nodes, pods, None, CONFIG, NOW).snapshot
    n = snap.node("onprem-1")
    assert n.used == Resources(1.0, 1.5 * GiB)
    assert [s.name for s in n.servers] == ["alice"]
    assert n.status is NodeStatus.READY and n.tier is Tier.ONPREM


def test_unscheduled_servers_are_the_queue_oldest_first():
    pods = [pod("b", phase="Pending", created="2027-01-15T08:00:05Z"),
            pod("a", phase="Pending", created="2027-01-15T08:00:01Z"),
            pod("gone", phase="Failed")]
    snap = observe([node("onprem-1")], pods, None, CONFIG, NOW).snapshot
    assert [s.name for s in snap.pending] == ["a", "b"]


@pytest.mark.parametrize("vm_state, rec, status", [
    (STOPPED, dict(ready=False), NodeStatus.STOPPED),
    (PENDING, dict(ready=False), NodeStatus.BOOTING),
    (RUNNING, dict(ready=True, unschedulable=True, taint=True), NodeStatus.BOOTING),  # booted, not uncordoned
    (RUNNING, dict(ready=True), NodeStatus.READY),
    (RUNNING, dict(ready=True, unschedulable=True, taint=True, drain={"state": "draining", "servers": {}}),
     NodeStatus.CORDONED),
    (RUNNING, dict(ready=True, unschedulable=True), NodeStatus.CORDONED),  # an admin's cordon
    (STOPPING, dict(ready=True), NodeStatus.NOT_READY),
    # stopped by a drain that has still to clear its record (a restart between the two): not to be started yet
    (STOPPED, dict(ready=False, unschedulable=True, taint=True, drain={"state": "stopping-vm", "servers": {}}),
     NodeStatus.NOT_READY),
])
def test_cloud_node_status_from_node_and_vm(vm_state, rec, status):
    obs = observe([node("cloud-1", "cloud", **rec)], [], [VM("i-1", "cloud-1", vm_state, "cloud-1")], CONFIG, NOW)
    assert obs.snapshot.node("cloud-1").status is status


def test_a_stopped_node_an_admin_cordoned_is_not_in_the_pool():
    obs = observe([node("cloud-1", "cloud", ready=False, unschedulable=True)],
                  [], [VM("i-1", "cloud-1", STOPPED, "cloud-1")], CONFIG, NOW)
    assert [n.name for n in obs.snapshot.nodes] == []


def test_a_pool_vm_without_a_node_counts_with_the_default_size():
    obs = observe([], [], [VM("i-1", "vm-a", STOPPED, "node-a"), VM("i-2", "vm-b", PENDING, "node-b")], CONFIG,
                  NOW, boot_started={"node-b": NOW - 30})
    a, b = obs.snapshot.node("node-a"), obs.snapshot.node("node-b")
    assert (a.status, b.status) == (NodeStatus.STOPPED, NodeStatus.BOOTING)
    assert a.allocatable == Resources(2, 4 * GiB) and a.tier is Tier.CLOUD
    assert b.status_since == NOW - 30


def test_nodes_of_other_tiers_or_none_are_left_out():
    obs = observe([node("cp", tier=None), node("gpu", tier="gpu"), node("onprem-1")], [], None, CONFIG, NOW)
    assert [n.name for n in obs.snapshot.nodes] == ["onprem-1"]


def test_a_pinned_server_keeps_its_node_out_of_any_plan():
    nodes = [node("onprem-1"), node("cloud-1", "cloud")]
    movable = observe(nodes, [pod("alice", "cloud-1")], None, CONFIG, NOW).snapshot
    assert plan_migration(movable, movable.node("cloud-1")) is not None
    pinned = observe(nodes, [pod("alice", "cloud-1", migratable="false")], None, CONFIG, NOW).snapshot
    assert not pinned.node("cloud-1").servers[0].movable
    assert plan_migration(pinned, pinned.node("cloud-1")) is None


def test_bad_quantities_are_reported_not_fatal():
    obs = observe([node("onprem-1", memory="lots")], [pod("alice", "onprem-1", memory="12 GB")], None, CONFIG, NOW)
    assert any("allocatable" in p and "onprem-1" in p for p in obs.problems)
    assert any("requests" in p and "alice" in p for p in obs.problems)
    assert obs.snapshot.node("onprem-1").allocatable == Resources(0, 0)
    assert not any("request no memory" in p for p in obs.problems)  # said once, as what it is


def test_a_managed_pod_without_its_user_annotation_is_reported():
    rec = pod_record({"metadata": {"name": "x", "namespace": "jh", "labels": {podmeta.MANAGED_LABEL: "true"}},
                      "spec": {"containers": []}, "status": {}})
    assert podmeta.USER_ANNOTATION in rec.problem


def test_drain_records_that_are_not_ours_are_refused_by_name():
    assert load_drain(None) is None
    assert load_drain('{"state": "draining", "servers": {}}')["state"] == "draining"
    with pytest.raises(ValueError, match="not JSON"):
        load_drain("{oops")
    with pytest.raises(ValueError, match="not a drain record"):
        load_drain('["a"]')
    with pytest.raises(ValueError, match="drain record of version 2, written by another version of ElasticHub"):
        load_drain('{"v": 2, "state": "draining", "servers": {}}')


def test_a_live_moves_destination_is_not_a_second_server_while_its_source_runs():
    """The server is one: never queued as a new arrival (which would start a
    cloud VM mid-move), never moved twice, and its room counted once, at its
    source: with the destination's requests on its node too, every move
    looked like one server more, and the demo started a VM at each drain."""
    nodes = [node("onprem-1"), node("cloud-1", tier="cloud")]
    source = pod("jupyter-alice", "cloud-1", user="alice", started="2027-01-15T07:00:00Z")
    moving = {podmeta.MOVE_OF_ANNOTATION: "jupyter-alice", podmeta.STARTED_ANNOTATION: "2027-01-15T07:00:00Z"}
    unscheduled = pod("jupyter-alice-m000001", None, user="alice", phase="Pending", annotations=moving)
    snap = observe(nodes, [source, unscheduled], None, CONFIG, NOW).snapshot
    assert not snap.pending
    placed = pod("jupyter-alice-m000001", "onprem-1", user="alice", annotations=moving,
                 started="2027-01-15T09:00:00Z")
    snap = observe(nodes, [source, placed], None, CONFIG, NOW).snapshot
    assert [s.name for s in snap.node("cloud-1").servers] == ["alice"]
    assert snap.node("onprem-1").servers == () and snap.node("onprem-1").used.ram == 0
    # Once the source is gone the destination is the server, with the server's first start (its age).
    snap = observe(nodes, [placed], None, CONFIG, NOW).snapshot
    [alice] = snap.node("onprem-1").servers
    assert alice.name == "alice" and alice.started_at == pod("x", started="2027-01-15T07:00:00Z").started


def test_servers_that_request_no_memory_are_one_problem_naming_them():
    nodes = [node("onprem-1")]
    fine = observe(nodes, [pod("alice", "onprem-1"), pod("system", "onprem-1", managed=False, memory="0")],
                   None, CONFIG, NOW)
    assert fine.problems == []
    pods = [pod(u, "onprem-1", memory="0") for u in ("eve", "bob", "dan", "ann")] + [pod("carl", "onprem-1")]
    [problem] = observe(nodes, pods, None, CONFIG, NOW).problems
    assert problem.startswith("servers that request no memory: 4 (ann, bob, dan, ...): ")
    assert "c.KubeSpawner.mem_guarantee" in problem


def test_each_problem_is_an_event_once_while_it_lasts():
    from elastichub.orchestrator.controller import MAX_PROBLEM_EVENTS, Controller

    ctl = Controller(None, None, None, None, None, None, clock=lambda: NOW)
    ctl._report_problems(["a"])
    ctl._report_problems(["a"])
    assert [e["message"] for e in ctl.events] == ["a"] and ctl.events[0]["kind"] == "problem"
    assert ctl.metrics.registry.get_sample_value("elastichub_problems") == 1
    ctl._report_problems(["a", "servers that request no memory: 1 (ann): ..."])
    ctl._report_problems(["a", "servers that request no memory: 2 (ann, bob): ..."])  # the same subject
    assert [e["message"] for e in ctl.events] == ["a", "servers that request no memory: 1 (ann): ..."]
    ctl.events.pop()
    ctl._report_problems([])
    ctl._report_problems(["a", "b"])  # back after a cycle without it: said again
    many = [f"p{i}" for i in range(MAX_PROBLEM_EVENTS + 3)]
    ctl._report_problems(many)
    assert [e["message"] for e in ctl.events][1:] == ["a", "b"] + many[:MAX_PROBLEM_EVENTS] + [
        "and 3 more (api/status lists the first 20)"]


def test_the_status_page_says_the_time_zone_of_its_times(monkeypatch):
    """Decisions and events are shown at the orchestrator's local time, UTC in a pod: unlabelled, an
    admin in Berlin read 09:00 for a scale-out at 10:00 of theirs."""
    import time

    from elastichub.orchestrator.controller import Controller
    from elastichub.orchestrator.web import render_page

    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        ctl = Controller(None, None, None, None, None, None, clock=lambda: NOW)  # 2027-01-15: winter time
        ctl.event("scale-out", "started VM cloud-1 for node cloud-1")
        page = render_page(ctl.status())
    finally:
        monkeypatch.undo()
        time.tzset()
    assert "Times in CET." in page and "<li>09:00:00 <b>scale-out</b>" in page


def test_the_status_page_shows_the_problems():
    from elastichub.orchestrator.controller import Controller
    from elastichub.orchestrator.web import render_page

    ctl = Controller(None, None, None, None, None, None, clock=lambda: NOW)
    assert "<h2>Problems</h2>" not in render_page(ctl.status())
    ctl.last = observe([node("onprem-1")], [pod("ann", "onprem-1", memory="0")], None, CONFIG, NOW)
    assert "<h2>Problems</h2><ul class=\"problems\"><li>servers that request no memory: 1 (ann)" in render_page(
        ctl.status())


def test_a_limit_without_a_request_is_the_request_as_on_kubernetes():
    from elastichub.orchestrator.records import pod_requests

    limit_only = {"containers": [{"resources": {"limits": {"cpu": "2", "memory": "2Gi"}}},
                                 {"resources": {"limits": {"memory": "1Gi"}, "requests": {"memory": "512Mi"}}}]}
    assert pod_requests(limit_only) == (2.0, 2.5 * GiB)


def test_a_running_cloud_node_an_admin_cordoned_is_a_problem_while_it_lasts():
    vms = [VM("i-1", "cloud-1", RUNNING, "cloud-1")]
    onprem = node("onprem-1")
    [problem] = observe([onprem, node("cloud-1", "cloud", unschedulable=True)], [], vms, CONFIG, NOW).problems
    assert problem.startswith("cloud node cloud-1: cordoned, not by ElasticHub: its VM i-1 runs on")
    # Cordoned by a drain of ours (the taint says so), or on-prem: no problem.
    assert observe([onprem, node("cloud-1", "cloud", unschedulable=True, taint=True)], [], vms, CONFIG,
                   NOW).problems == []
    assert observe([node("onprem-1", unschedulable=True)], [], vms, CONFIG, NOW).problems == []


def test_nodes_nobody_labelled_are_problems_not_silence():
    """The informer sees only nodes with the tier label: an admin who forgot
    it would see cloud nodes bought for servers that have room on-prem."""
    [problem] = observe([node("cloud-1", "cloud")], [], None, CONFIG, NOW).problems
    assert problem.startswith("no on-prem node: none is labelled with the tier 'on-prem'")
    # Labelled, but misspelt (or another tier_label): the values found are named, with the key in force.
    misspelt = [node("onprem-1", "onprem"), node("onprem-2", "onprem"), node("cloud-1", "cloud")]
    custom = ObserveConfig(tier_label="example.org/pool")
    [problem] = observe(misspelt, [], None, custom, NOW).problems
    assert problem == ("no on-prem node: none is labelled with the tier 'on-prem'; 2 node(s) carry "
                       "example.org/pool='onprem', so every server needs the cloud; label them (kubectl label node "
                       "NAME example.org/pool=on-prem), or set the tier values of c.ElasticSpawner and "
                       "c.ElasticOrchestrator (onprem_tier) to theirs")
    pods = [pod("alice", "rack-7"), pod("bob", "rack-7"), pod("carl", "onprem-1")]
    [problem] = observe([node("onprem-1")], pods, None, CONFIG, NOW).problems
    assert problem.startswith("servers on nodes without a tier: 2 on rack-7: ")


def test_a_moved_server_is_no_new_arrival():
    """Its new pod is minutes old, but its user asked long ago: the policy
    sizes its reserve on recent arrivals, and a drain's moves used to look
    like a burst of them (a node started again right after one was emptied)."""
    from elastichub.orchestrator.records import format_time

    asked = "2027-01-15T08:00:00Z"
    live = pod("jupyter-alice-m1", "onprem-1", user="alice", created="2027-01-15T09:59:00Z",
               annotations={podmeta.ASKED_ANNOTATION: asked})
    assert live.created == live.as_server.created_at and format_time(live.created) == asked
    # Restarted by a drain whose record says when (until the drain writes it on the pod).
    restarted = pod("jupyter-bob", "onprem-1", user="bob", created="2027-01-15T09:59:00Z")
    record = {"v": 1, "state": "draining", "servers": {"bob": {"user": "bob", "name": "", "step": "done",
                                                               "asked": asked}}}
    obs = observe([node("onprem-1"), node("cloud-1", "cloud", unschedulable=True, taint=True, drain=record)],
                  [live, restarted], None, CONFIG, NOW)
    created = {s.name: format_time(s.created_at) for s in obs.snapshot.node("onprem-1").servers}
    assert created == {"alice": asked, "bob": asked}
    # A minute after the moves, the policy sees no recent arrival.
    from elastichub.policy import PolicyConfig, make_strategy
    from elastichub.orchestrator.records import parse_time

    elastic = make_strategy("elastic", PolicyConfig(theta_out=80))
    assert elastic._inflow(obs.snapshot, parse_time("2027-01-15T10:00:00Z")) == Resources(0, 0)


def test_a_drain_record_is_read_once_not_every_cycle(monkeypatch):
    """A record naming a node's 60 servers was parsed twice per cycle: longer than the rest of the
    snapshot of 800 servers. Read once per text; a new text (the drain's next step) is read anew."""
    from elastichub.orchestrator.records import parse_time

    loads, parsed = json.loads, []

    def counting(text, *args, **kw):
        if isinstance(text, str) and "read once" in text:
            parsed.append(text)
        return loads(text, *args, **kw)

    servers = {f"user{i}": {"user": f"user{i}", "name": "", "step": "done", "asked": "2027-01-15T08:00:00Z"}
               for i in range(60)}
    record = {"v": 1, "state": "draining", "reason": "read once", "servers": servers}
    nodes = [node("onprem-1"), node("cloud-1", "cloud", unschedulable=True, taint=True, drain=record)]
    pods = [pod(f"jupyter-user{i}", "onprem-1", user=f"user{i}", created="2027-01-15T09:59:00Z") for i in range(60)]
    monkeypatch.setattr(json, "loads", counting)
    for _ in range(3):
        obs = observe(nodes, pods, None, CONFIG, NOW)
        assert obs.drains == {"cloud-1": nodes[1].drain} and not obs.problems
        asked = {s.created_at for s in obs.snapshot.node("onprem-1").servers}
        assert asked == {parse_time("2027-01-15T08:00:00Z")}, "the record's times, not the new pods'"
    assert len(parsed) == 1, f"parsed {len(parsed)} times in 3 cycles"
    record["state"] = "aborting"
    observe([nodes[0], node("cloud-1", "cloud", unschedulable=True, taint=True, drain=record)], pods, None,
            CONFIG, NOW)
    assert len(parsed) == 2


def waiting(name, **spec):
    return pod_record({"metadata": {"name": name, "namespace": "jh", "creationTimestamp": "2027-01-15T08:00:00Z",
                                    "labels": {podmeta.MANAGED_LABEL: "true"},
                                    "annotations": {podmeta.USER_ANNOTATION: name,
                                                    podmeta.SERVER_NAME_ANNOTATION: ""}},
                       "spec": {"containers": [{"name": "notebook", "resources": {"requests": {
                           "cpu": "1", "memory": "2Gi"}}}], **spec},
                       "status": {"phase": "Pending"}})


def test_a_server_no_cloud_node_can_take_is_left_out_of_the_queue_and_named():
    """A GPU profile pinned to on-prem GPU nodes: in the queue the policy
    sizes the cloud on, it would start cloud nodes it can never use, and
    hold them up (nothing scales in while users queue)."""
    nodes = [node("onprem-1"), node("cloud-1", tier="cloud")]
    pods = [waiting("gpu", nodeSelector={"example.org/gpu": "a100"}), waiting("plain")]
    obs = observe(nodes, pods, None, CONFIG, NOW)
    assert [s.name for s in obs.snapshot.pending] == ["plain"]
    assert ("servers no cloud node can take wait for on-prem room: 1 (gpu: node selector example.org/gpu=a100)"
            in obs.problems)
    # A selector the cloud nodes match: the cloud can help, so it waits in the queue.
    matching = pod_record({**{"metadata": {"name": "burst", "namespace": "jh", "labels": {
        podmeta.MANAGED_LABEL: "true"}, "annotations": {podmeta.USER_ANNOTATION: "burst"}}},
        "spec": {"nodeSelector": {podmeta.TIER_LABEL: "cloud"}, "containers": [{"name": "n"}]},
        "status": {"phase": "Pending"}})
    assert [s.name for s in observe(nodes, [matching], None, CONFIG, NOW).snapshot.pending] == ["burst"]


def test_with_no_cloud_node_seen_every_waiting_server_stays_in_the_queue():
    pods = [waiting("gpu", nodeSelector={"example.org/gpu": "a100"}), waiting("plain")]
    obs = observe([node("onprem-1")], pods, None, CONFIG, NOW)
    assert [s.name for s in obs.snapshot.pending] == ["gpu", "plain"]
    assert not [p for p in obs.problems if "no cloud node can take" in p]


def test_a_server_only_a_cloud_node_can_take_is_marked_so_and_never_moved():
    """A "cloud burst" profile (node selector tier=cloud): waiting, it is
    marked cloud_only, so the policy starts a cloud node though on-prem has
    room; running, it is pinned, so its node is never drained from under it
    (every move would wait for the cloud node the drain takes away)."""
    nodes = [node("onprem-1"), node("cloud-1", tier="cloud")]
    burst = {"nodeSelector": {podmeta.TIER_LABEL: "cloud"}}
    pods = [waiting("carol", **burst), waiting("plain"),
            pod_record({"metadata": {"name": "dan", "namespace": "jh", "labels": {podmeta.MANAGED_LABEL: "true"},
                                     "annotations": {podmeta.USER_ANNOTATION: "dan"}},
                        "spec": {"nodeName": "cloud-1", "containers": [{"name": "n", "resources": {
                            "requests": {"memory": "1Gi"}}}], **burst}, "status": {"phase": "Running"}}),
            pod("erin", node="cloud-1")]
    snap = observe(nodes, pods, None, CONFIG, NOW).snapshot
    assert {s.name: s.cloud_only for s in snap.pending} == {"carol": True, "plain": False}
    assert {s.name: s.movable for s in snap.node("cloud-1").servers} == {"dan": False, "erin": True}
    assert plan_migration(snap, snap.node("cloud-1")) is None  # dan keeps his node
    # with no on-prem node to judge by, nothing is marked
    alone = observe([node("cloud-1", tier="cloud")], pods, None, CONFIG, NOW).snapshot
    assert not any(s.cloud_only for s in alone.pending)


@pytest.mark.parametrize("policy, said", [("paper", True), ("elastic", False)])
async def test_a_server_only_cloud_nodes_take_waiting_under_paper_is_a_problem(policy, said):
    """An admin's node selector only cloud nodes match: `paper` scales on RAM
    occupancy alone, so with on-prem room such a server waited until its
    start timed out, and nothing but the scheduler's event said why."""

    from elastichub.orchestrator.cloud import STOPPED, VM
    from elastichub.orchestrator.controller import Controller, Settings
    from elastichub.policy import PolicyConfig, make_strategy

    class Pool:
        async def list(self):
            return [VM("i-1", "cloud-1", STOPPED, "cloud-1")]

    nodes = cache({"onprem-1": node("onprem-1"), "cloud-1": node("cloud-1", tier="cloud")})
    pods = cache({"carol": waiting("carol", nodeSelector={podmeta.TIER_LABEL: "cloud"}),
                                    "plain": waiting("plain")})
    ctl = Controller(make_strategy(policy, PolicyConfig(tcool=1e9)), nodes, pods, None, None, Pool(),
                     Settings(dry_run=True), clock=lambda: NOW)
    await ctl.cycle()
    problems = [p for p in ctl.last.problems if p.startswith("servers only cloud nodes can take wait")]
    assert problems == ([
        "servers only cloud nodes can take wait: 1 (carol): the 'paper' strategy starts a cloud node on RAM occupancy "
        "alone, not for them, so they wait while on-prem has room; use c.ElasticOrchestrator.policy = 'elastic', or "
        "let their node selector or required node affinity match on-prem nodes"] if said else [])


def preferring(name, node_name, key, values):
    """A server pod with the spawner's preferred node affinity for tiers `values` of label `key`."""
    from elastichub.podspec import tier_preferences
    rec = pod(name, node_name)
    spec = {"nodeName": node_name, "containers": [{"name": "notebook", "resources": {"requests": {"memory": "1Gi"}}}],
            "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
                                          tier_preferences(key, [(v, 100 - i) for i, v in enumerate(values)])}}}
    return pod_record({"metadata": {"name": name, "namespace": "jh", "labels": {podmeta.MANAGED_LABEL: "true"},
                                    "annotations": {podmeta.USER_ANNOTATION: rec.user,
                                                    podmeta.SERVER_NAME_ANNOTATION: ""}},
                       "spec": spec, "status": {"phase": "Running"}})


def test_servers_the_spawner_places_by_other_tiers_than_the_orchestrators_are_a_problem():
    """c.ElasticSpawner.onprem_tier = "onprem" beside the orchestrator's
    "on-prem": the scheduler prefers nodes by values no node carries, and
    on-prem-first placement is gone without a word."""
    nodes = [node("onprem-1"), node("cloud-1", "cloud")]
    same = preferring("jupyter-ann", "onprem-1", podmeta.TIER_LABEL, ["on-prem", "cloud"])
    other = preferring("jupyter-bob", "cloud-1", podmeta.TIER_LABEL, ["onprem", "cloud"])
    other_key = preferring("jupyter-cy", "cloud-1", "example.org/pool", ["on-prem", "cloud"])
    assert observe(nodes, [same], None, CONFIG, NOW).problems == []
    problems = observe(nodes, [same, other, other_key], None, CONFIG, NOW).problems
    assert problems == [
        "servers placed by other tiers than the orchestrator's: 2 (jupyter-bob prefers elastichub.io/tier=cloud, "
        "elastichub.io/tier=onprem; the orchestrator reads elastichub.io/tier=on-prem and =cloud): give "
        "c.ElasticSpawner and c.ElasticOrchestrator the same tier_label, onprem_tier and cloud_tier"]
    custom = ObserveConfig(onprem_tier="onprem", default_allocatable=CONFIG.default_allocatable)
    assert "jupyter-ann prefers" in observe(nodes, [same, other], None, custom, NOW).problems[0]


def test_a_cloud_node_that_stops_reporting_while_it_hosts_servers_is_no_boot():
    """A running VM whose node is not Ready used to count as booting, and a
    boot that times out stops its VM: the servers on it with it, unsaved."""
    vm = [VM("i-1", "cloud-1", RUNNING, "cloud-1")]
    servers = [pod("jupyter-alice", "cloud-1", user="alice")]
    obs = observe([node("onprem-1"), node("cloud-1", "cloud", ready=False)], servers, vm, CONFIG, NOW)
    assert obs.snapshot.node("cloud-1").status is NodeStatus.NOT_READY
    assert ("cloud node cloud-1: not Ready while 1 server(s) (alice) run on it; its VM i-1 is left running "
            "(stopping it would end their sessions unsaved)") in obs.problems
    # Its Node deleted by hand, the pods still bound to it: the same, said as it is.
    obs = observe([node("onprem-1")], servers, vm, CONFIG, NOW)
    assert obs.snapshot.node("cloud-1").status is NodeStatus.NOT_READY
    assert obs.problems == ["cloud node cloud-1: no Node object, but 1 server(s) (alice) are bound to it; its VM "
                            "i-1 is left running (stopping it would end their sessions unsaved)"]
    # Without servers a node that is not Ready is a boot, as before.
    obs = observe([node("onprem-1"), node("cloud-1", "cloud", ready=False)], [], vm, CONFIG, NOW)
    assert obs.snapshot.node("cloud-1").status is NodeStatus.BOOTING and obs.problems == []


def test_every_counted_label_has_its_series_from_the_first_scrape():
    """An alert on `increase(elastichub_migrations_total{outcome="failed"}[5m]) > 0`
    misses the first failure when the series only appears with it."""
    from prometheus_client import generate_latest

    from elastichub.orchestrator.controller import Controller

    ctl = Controller(None, None, None, None, None, None, clock=lambda: NOW)
    text = generate_latest(ctl.metrics.registry).decode()
    for series in ('elastichub_migrations_total{method="live",outcome="failed"} 0.0',
                   'elastichub_scale_actions_total{action="scale-in"} 0.0',
                   'elastichub_cycle_errors_total{stage="drain"} 0.0'):
        assert series in text, text
    assert "_created" not in text


def test_the_node_count_of_a_status_no_node_has_is_zero_not_gone():
    """Every on-prem node NotReady: `elastichub_nodes{tier="on-prem",status="ready"}` vanished from the
    scrape instead of reading 0, and an alert on it being below 1 never fired."""
    from prometheus_client import generate_latest

    from elastichub.orchestrator.metrics import Metrics

    metrics = Metrics()
    for ready in (True, False):
        metrics.observed(observe([node("onprem-1", ready=ready)], [], None, CONFIG, NOW).snapshot, 0, 80.0)
    text = generate_latest(metrics.registry).decode()
    assert 'elastichub_nodes{status="ready",tier="on-prem"} 0.0' in text
    assert 'elastichub_nodes{status="not-ready",tier="on-prem"} 1.0' in text
    assert 'elastichub_nodes{status="booting",tier="cloud"} 0.0' in text
    assert text.count("elastichub_nodes{") == 10  # two tiers, five statuses: no more


@pytest.mark.parametrize("order", [1, -1])
def test_two_vms_that_map_to_one_node_are_a_problem_and_the_running_one_is_managed(order):
    # An admin replaced a VM and left the old one stopped in the pool, under the same name (EC2 allows it).
    vms = [VM("i-new", "cloud-1", RUNNING, "cloud-1"), VM("i-old", "cloud-1", STOPPED, "cloud-1")][::order]
    obs = observe([node("onprem-1"), node("cloud-1", "cloud")], [], vms, CONFIG, NOW)
    assert obs.vms["cloud-1"].id == "i-new"  # the one that runs: billed, and stopped by a scale-in
    assert obs.snapshot.node("cloud-1").status is NodeStatus.READY
    said = [p for p in obs.problems if "i-old" in p]
    assert said and "i-new" in said[0] and "cloud-1" in said[0], obs.problems


@pytest.mark.parametrize("vm_id, provider_id", [
    ("i-0abc", "aws:///eu-west-1a/i-0abc"),
    ("/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/worker-a",
     "azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/worker-a"),
])
def test_a_vm_is_the_cloud_node_its_provider_id_names_when_the_mapping_names_no_node(vm_id, provider_id):
    nodes = [node("onprem-1"), node("ip-10-0-0-5", "cloud", provider_id=provider_id),
             node("ip-10-0-0-6", "on-prem", provider_id=provider_id)]
    obs = observe(nodes, [pod("alice", "ip-10-0-0-5")], [VM(vm_id, "worker-a", RUNNING, "worker-a")], CONFIG, NOW)
    assert obs.vms == {"ip-10-0-0-5": VM(vm_id, "worker-a", RUNNING, "worker-a")}
    assert [n.name for n in obs.snapshot.nodes if n.tier is Tier.CLOUD] == ["ip-10-0-0-5"]  # no phantom boot
    assert any(p.startswith("cloud node ip-10-0-0-5: the node of VM worker-a") and "cloud_node_mapping" in p
               for p in obs.problems), obs.problems


def test_a_vm_the_mapping_names_no_node_is_the_cloud_node_its_provider_id_names():
    """mapping tag:KEY and a VM cloned without the tag: its node ran, its VM was no one's (never
    stopped by a scale-in, not billed)."""
    vms = [VM("i-0abc", "worker-a", RUNNING, ""), VM("i-0def", "worker-b", STOPPED, "")]
    nodes = [node("onprem-1"), node("ip-10-0-0-5", "cloud", provider_id="aws:///eu-west-1a/i-0abc")]
    obs = observe(nodes, [], vms, CONFIG, NOW)
    assert obs.vms == {"ip-10-0-0-5": vms[0]}
    assert any(p.startswith("cloud node ip-10-0-0-5: the node of VM worker-a (i-0abc)") and "no node name" in p
               for p in obs.problems), obs.problems
    assert "VM worker-b (i-0def) maps to no node name" in obs.problems
    assert not any("worker-a (i-0abc) maps to no node name" in p for p in obs.problems)


@pytest.mark.parametrize("drain", [None, {"v": 1, "state": "draining", "servers": {}}])
def test_a_cloud_vm_stopped_by_someone_else_under_servers_is_a_problem_saying_so(drain):
    """Stopped in the cloud's console while alice ran there: nothing was said (or, mid-drain, that
    its VM was left running)."""
    nodes = [node("onprem-1"), node("cloud-1", "cloud", ready=False, drain=drain)]
    obs = observe(nodes, [pod("alice", "cloud-1")], [VM("i-1", "cloud-1", STOPPED, "cloud-1")], CONFIG, NOW)
    said = [p for p in obs.problems if p.startswith("cloud node cloud-1:")]
    assert len(said) == 1 and "its VM i-1 is stopped (not by ElasticHub) while 1 server(s) (alice)" in said[0], said


async def test_a_node_with_a_third_tier_value_is_said_once_naming_it_and_the_values_understood():
    """A 'gpu' pool beside on-prem and cloud was left out of every plan without a word."""
    from elastichub.orchestrator.controller import Controller
    from elastichub.policy import PolicyConfig, make_strategy

    nodes = {n.name: n for n in (node("onprem-1"), node("gpu-1", tier="gpu"), node("cp", tier=None))}
    ctl = Controller(make_strategy("elastic", PolicyConfig()), cache(nodes), cache({}), None, None, None,
                     clock=lambda: NOW, monotonic=lambda: NOW)
    for _ in range(3):
        await ctl.cycle()
    [event] = [e for e in ctl.events if "gpu-1" in e["message"]]
    assert event["kind"] == "problem"
    assert event["message"].startswith(f"node gpu-1: {podmeta.TIER_LABEL}='gpu' is neither 'on-prem' nor 'cloud'")


def test_the_status_page_lists_servers_no_checkpoint_can_move_as_pinned_with_why():
    """A server found unmovable (a stock kernel) is pinned for the policy, but its node's `pinned` list on
    api/status and the page left it out: an admin saw a cloud node kept up with no pinned server on it."""
    from elastichub.orchestrator.controller import Controller
    from elastichub.orchestrator.movable import Finding
    from elastichub.orchestrator.web import render_page

    ctl = Controller(None, None, None, None, None, None, clock=lambda: NOW)
    pods = [pod("alice", "cloud-1"), pod("bob", "cloud-1", migratable="false"), pod("carl", "cloud-1")]
    ctl.last = observe([node("onprem-1"), node("cloud-1", "cloud")], pods, None, CONFIG, NOW)
    why = "kernel(s) 'python3' (k2) not Elastic Python: they cannot checkpoint"
    ctl.movable.found["alice"] = Finding("alice", "", "uid", frozenset({"k2"}), why)
    [cloud] = [n for n in ctl.status()["nodes"] if n["name"] == "cloud-1"]
    assert cloud["pinned"] == ["alice", "bob"]
    assert cloud["pinned_why"]["alice"] == why and "migratable: false" in cloud["pinned_why"]["bob"]
    page = render_page(ctl.status())
    assert '<span class="pill pinned" title="kernel(s) &#x27;python3&#x27; (k2)' in page
    assert "pinned: alice: kernel(s) &#x27;python3&#x27; (k2) not Elastic Python" in page
    assert '<span class="pill">carl</span>' in page
