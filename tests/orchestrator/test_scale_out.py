"""Scale-out against the local cluster: real kubernetes_asyncio informers, the
local cluster's libcloud driver, the shared policy. Faults are injected
through small subclasses of the libcloud driver."""

from __future__ import annotations

import asyncio

import pytest
from podtools import cluster_config, node_of, server_pod, until

from elastichub import podmeta
from elastichub.orchestrator.cloud import CloudError, CloudPool
from elastichub.orchestrator.drain import DrainTimeouts
from elastichub.policy import PolicyConfig, make_strategy

pytestmark = [pytest.mark.timeout(60)]


def paper(theta=80.0, tcool=0.0):
    return make_strategy("paper", PolicyConfig(theta_out=theta, tmon=0.2, tcool=tcool))


async def fill(cluster, users, memory="2Gi"):
    for u in users:
        cluster.store.create("pods", server_pod(u, memory))
    await until(lambda: all(node_of(cluster.store, f"jupyter-{u}") for u in users), what="pods bound")


async def test_above_theta_out_a_vm_starts_its_node_turns_ready_and_takes_new_servers(cluster_factory, wire):
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(7)])  # 14 of 16 GiB on-prem: 87.5 %
    ctl = await wire(cluster, paper())
    await until(lambda: ctl.pods.records and all(p.node for p in ctl.pods.records.values()), what="cache")
    decision = await ctl.cycle()
    assert decision["action"] == "scale-out" and decision["nodes"] == ["cloud-1"], decision
    await until(lambda: ctl.nodes.records["cloud-1"].ready, what="cloud-1 Ready")
    await until(lambda: not ctl._busy("boot:cloud-1"), what="the boot step")
    node = cluster.store.get("nodes", "cloud-1")
    assert not node["spec"].get("unschedulable")
    vms = {vm.id: vm.state for vm in await ctl.cloud.list()}
    assert vms == {"cloud-1": "running", "cloud-2": "stopped"}
    # On-prem has 2 GiB left: two more 2 GiB servers, one of them must go to the cloud.
    await fill(cluster, ["late1", "late2"])
    assert {node_of(cluster.store, "jupyter-late1"), node_of(cluster.store, "jupyter-late2")} & {"cloud-1"}
    assert any(e["kind"] == "node-ready" for e in ctl.events)


async def test_below_theta_out_nothing_starts(cluster_factory, wire):
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, ["a", "b"])
    ctl = await wire(cluster, paper())
    decision = await ctl.cycle()
    assert decision["action"] == "none"
    assert {vm.state for vm in await ctl.cloud.list()} == {"stopped"}


class NeverBoots:
    """A VM whose start is accepted but which never becomes a node (a broken image)."""

    def start_node(self, node):
        self.starts = getattr(self, "starts", 0) + 1
        return True


class RaisesOnStart:
    def start_node(self, node):
        raise RuntimeError("InsufficientInstanceCapacity: injected")


def driver_with(cluster, mixin):
    base = type(cluster.cloud_driver())
    return type(f"{mixin.__name__}Driver", (mixin, base), {})("k", host=cluster.config.host, port=cluster.port)


async def test_a_vm_whose_node_never_turns_ready_is_stopped_and_backed_off(cluster_factory, wire):
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(7)])
    driver = driver_with(cluster, NeverBoots)
    ctl = await wire(cluster, paper(), cloud=CloudPool(driver), boot_timeout=0.5, boot_backoff=30)
    assert (await ctl.cycle())["nodes"] == ["cloud-1"]
    await until(lambda: any(e["kind"] == "boot-failed" for e in ctl.events), what="boot failure")
    await until(lambda: not ctl._busy("boot:cloud-1"), what="the boot step")
    assert driver.starts == 1
    assert ctl.backoff["cloud-1"].failures == 1
    # Backed off: the next decision picks the other VM, not the broken one.
    decision = await ctl.cycle()
    assert decision["nodes"] == ["cloud-2"], decision
    assert ctl.metrics.boot_failures._value.get() == 1


async def test_a_libcloud_call_that_raises_is_an_event_and_a_back_off(cluster_factory, wire):
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(7)])
    ctl = await wire(cluster, paper(), cloud=CloudPool(driver_with(cluster, RaisesOnStart)))
    await ctl.cycle()
    await until(lambda: any("InsufficientInstanceCapacity" in e["message"] for e in ctl.events), what="event")
    assert ctl.backoff["cloud-1"].failures == 1
    assert {vm.state for vm in await ctl.cloud.list()} == {"stopped"}


class HeldStart:
    """A start call that returns only when the test lets it (GCE's waits for the operation; EC2's
    listing may lag the start): meanwhile the cloud still lists the VM as stopped."""
    release = None  # a threading.Event, set by the test

    def start_node(self, node):
        self.starts = getattr(self, "starts", 0) + 1
        self.release.wait(20)
        return super().start_node(node)


async def test_a_vm_whose_start_is_on_its_way_is_not_started_again_by_the_next_cycle(cluster_factory, wire):
    """The next cycle saw the VM stopped and `elastic` (not gated by the cooldown) started it again,
    under a second boot watcher, the scale-out counted twice."""
    import threading

    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(7)])
    driver = driver_with(cluster, HeldStart)
    driver.release = threading.Event()
    ctl = await wire(cluster, make_strategy("elastic", PolicyConfig(theta_out=80, tmon=0.2)), cloud=CloudPool(driver))
    try:
        assert (await ctl.cycle())["nodes"] == ["cloud-1"]
        await until(lambda: getattr(driver, "starts", 0) == 1, what="the start call under way")
        again = await ctl.cycle()
        assert again["action"] == "none", again
        assert ctl.status()["pool"]["booting"] == 1
    finally:
        driver.release.set()
    await until(lambda: ctl.nodes.records["cloud-1"].ready and not ctl._busy("boot:cloud-1"), what="cloud-1 up")
    assert driver.starts == 1 and ctl.metrics.actions.labels("scale-out")._value.get() == 1
    assert [e["kind"] for e in ctl.events].count("scale-out") == 1, ctl.events


class ListFails:
    def list_nodes(self):
        raise ConnectionError("cloud API down: injected")


async def test_a_cloud_that_cannot_be_listed_skips_the_decision_not_the_loop(cluster_factory, wire):
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(7)])
    ctl = await wire(cluster, paper(), cloud=CloudPool(driver_with(cluster, ListFails)))
    decision = await ctl.cycle()
    assert decision["action"] == "none" and "unknown" in decision["reason"]
    assert any("cloud API down" in e["message"] for e in ctl.events)



class ListTimesOut:
    def list_nodes(self):
        raise TimeoutError("timed out")  # what a socket timeout inside the driver raises


class ListHangs:
    def list_nodes(self):
        import time
        time.sleep(1)
        return []


async def test_a_driver_timeout_is_named_apart_from_a_cloud_that_does_not_answer(cluster_factory):
    """The driver's own socket timeout (at once) was told as "no answer within
    120 s", sending an admin after the pool's timeout instead of the network."""
    cluster = await cluster_factory(cluster_config())
    with pytest.raises(CloudError) as own:
        await CloudPool(driver_with(cluster, ListTimesOut)).list()
    assert str(own.value) == "list VMs: TimeoutError: timed out"
    with pytest.raises(CloudError) as ours:
        await CloudPool(driver_with(cluster, ListHangs), timeout=0.2).list()
    assert str(ours.value) == "list VMs: no answer from the cloud within 0.2 s"


async def test_a_restart_while_a_vm_boots_keeps_the_cooldown(cluster_factory, wire):
    """The new run adopts the boot and counts Tcool from then: `paper` starts
    no second node in the same cooldown because its state was lost."""
    cluster = await cluster_factory(cluster_config(boot_delay=30))
    await fill(cluster, [f"u{i}" for i in range(7)])  # 87.5 % on-prem
    first = await wire(cluster, paper(tcool=600))
    assert (await first.cycle())["nodes"] == ["cloud-1"]
    await until(lambda: any(e["kind"] == "scale-out" for e in first.events), what="cloud-1's VM started")
    await first.close()  # the run ends while cloud-1 boots

    second = await wire(cluster, paper(tcool=600))
    decision = await second.cycle()
    assert decision["action"] == "none", decision
    assert second._busy("boot:cloud-1")  # adopted: it will uncordon cloud-1 once Ready
    assert {vm.id: vm.state for vm in await second.cloud.list()}["cloud-2"] == "stopped"


async def test_a_cloud_node_that_stops_reporting_keeps_its_vm_while_it_hosts_a_server(cluster_factory, wire):
    """Its kubelet stops posting status (Ready: Unknown) while alice runs on
    it: counted as a boot, it was stopped at the boot timeout, and alice's
    session ended unsaved."""
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(8)])  # on-prem full
    ctl = await wire(cluster, paper(), boot_timeout=0.5)
    await until(lambda: len(ctl.pods.records) >= 8, what="cache")
    assert (await ctl.cycle())["nodes"] == ["cloud-1"]
    await until(lambda: not ctl._busy("boot:cloud-1") and ctl.nodes.records["cloud-1"].ready, what="cloud-1 up")
    await fill(cluster, ["alice"])
    assert node_of(cluster.store, "jupyter-alice") == "cloud-1"

    def stops_reporting(node):
        for condition in node["status"]["conditions"]:
            if condition["type"] == "Ready":
                condition.update(status="Unknown", reason="NodeStatusUnknown")
    cluster.store.update("nodes", "cloud-1", stops_reporting)
    await until(lambda: not ctl.nodes.records["cloud-1"].ready, what="cloud-1 not Ready in the cache")
    for _ in range(4):  # past the boot timeout, several cycles
        await ctl.cycle()
        await asyncio.sleep(0.3)
    assert {vm.id: vm.state for vm in await ctl.cloud.list()}["cloud-1"] == "running"
    assert not any(e["kind"] == "boot-failed" and "cloud-1" in e["message"] for e in ctl.events), ctl.events
    assert any("cloud node cloud-1: not Ready while 1 server(s) (alice)" in e["message"] for e in ctl.events)


async def test_a_dry_run_starts_nothing_counts_nothing_and_says_each_would_be_action_once(cluster_factory, wire):
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(7)])
    ctl = await wire(cluster, paper(), dry_run=True)
    await until(lambda: len(ctl.pods.records) >= 7, what="cache")
    for _ in range(3):
        assert (await ctl.cycle())["action"] == "scale-out"
    assert {vm.state for vm in await ctl.cloud.list()} == {"stopped"}
    said = [e["message"] for e in ctl.events if e["kind"] == "dry-run"]
    assert said == ["would start VM cloud-1 for node cloud-1"]  # once, not every Tmon
    counted = ctl.metrics.actions.labels("scale-out")._value.get()
    assert counted == 0  # elastichub_scale_actions_total counts what was done


async def test_a_node_whose_drain_rolled_back_is_not_drained_again_at_once(cluster_factory, wire):
    """A drain the hub's 503s rolled back was decided again the next cycle:
    every Tmon its users were checkpointed and paused for nothing."""
    from elastichub.orchestrator.controller import Backoff
    from elastichub.policy import ScaleIn

    cluster = await cluster_factory(cluster_config())
    ctl = await wire(cluster, paper())
    await ctl.cycle()
    ctl._drain_backoff("cloud-1")
    taken = ctl._act(ScaleIn("cloud-1", (), reason="servers fit elsewhere"), ctl.clock())
    assert taken.startswith("not now: its last drain rolled back or was interrupted"), taken
    assert not ctl._busy("drain:cloud-1")
    ctl.backoff["drain:cloud-1"] = Backoff(1, ctl.clock() - 1)  # its back-off over: drained again
    assert ctl._act(ScaleIn("cloud-1", (), reason="servers fit elsewhere"), ctl.clock()) == "draining cloud-1"


async def test_without_a_cloud_driver_no_node_is_drained(cluster_factory, wire):
    """No cloud configured: the loop decides and starts nothing. A cloud node
    it could give back (started by someone else) used to be drained all the
    same: its users moved for no VM to stop, and the log said "VM stopped"."""
    cluster = await cluster_factory(cluster_config(onprem=2, cloud=1))
    driver = cluster.cloud_driver()
    vm = next(n for n in await asyncio.to_thread(driver.list_nodes) if n.name == "cloud-1")
    await asyncio.to_thread(driver.start_node, vm)
    await until(lambda: any(c.get("type") == "Ready" and c.get("status") == "True" for c in
                            (cluster.store.get("nodes", "cloud-1") or {}).get("status", {}).get("conditions", [])),
                what="cloud-1 Ready")
    cluster.store.create("pods", server_pod("alice", "1Gi"))
    await until(lambda: node_of(cluster.store, "jupyter-alice"), what="alice bound")
    ctl = await wire(cluster, paper(), cloud=None)
    await until(lambda: ctl.nodes.records.get("cloud-1") and ctl.nodes.records["cloud-1"].ready, what="cache")
    decision = await ctl.cycle()
    assert decision["action"] == "scale-in", decision
    assert not ctl._busy("drain:cloud-1") and decision["taken"].startswith("no cloud_driver"), decision
    assert not cluster.store.get("nodes", "cloud-1")["spec"].get("unschedulable")


class NamedOtherwise:
    """VMs named apart from their nodes (as EC2 instances are from nodes named by their private DNS
    names): mapped by name, each maps to a node that never registers."""

    def list_nodes(self):
        nodes = super().list_nodes()
        for node in nodes:
            node.name = f"vm-{node.name}"
        return nodes


def set_tier(cluster, name, tier):
    def change(node):
        labels = node["metadata"]["labels"]
        if tier is None:
            labels.pop(podmeta.TIER_LABEL, None)
        else:
            labels[podmeta.TIER_LABEL] = tier
    cluster.store.update("nodes", name, change)


async def test_a_vm_whose_node_registers_under_another_name_is_that_node_and_not_stopped_under_its_servers(
        cluster_factory, wire):
    """The boot watched for a node of the mapped name, timed out, found no server on that name and
    stopped the VM, under the servers that had started on its node (registered by another name)."""
    cluster = await cluster_factory(cluster_config())
    for name in ("cloud-1", "cloud-2"):  # a cloud node registers, with its tier label, when its VM first boots
        set_tier(cluster, name, None)
    await fill(cluster, [f"u{i}" for i in range(8)])  # on-prem full
    ctl = await wire(cluster, paper(), cloud=CloudPool(driver_with(cluster, NamedOtherwise)), boot_timeout=3)
    await until(lambda: len(ctl.pods.records) >= 8, what="cache")
    assert (await ctl.cycle())["nodes"] == ["vm-cloud-1"]
    await until(lambda: any(e["kind"] == "scale-out" for e in ctl.events), what="VM cloud-1 started")
    set_tier(cluster, "cloud-1", "cloud")
    await until(lambda: "cloud-1" in ctl.nodes.records and ctl.nodes.records["cloud-1"].ready, what="cloud-1 up")
    await fill(cluster, ["alice"])
    assert node_of(cluster.store, "jupyter-alice") == "cloud-1"
    while ctl._busy("boot:vm-cloud-1"):  # the cycles go on while the boot is watched
        await ctl.cycle()
        await asyncio.sleep(0.2)
    assert {vm.id: vm.state for vm in await ctl.cloud.list()}["cloud-1"] == "running"
    assert node_of(cluster.store, "jupyter-alice") == "cloud-1"
    assert not any(e["kind"] == "boot-failed" for e in ctl.events), ctl.events
    assert ctl.last.vms["cloud-1"].id == "cloud-1"  # a scale-in can drain it and stop its VM
    assert any("the node of VM vm-cloud-1 (cloud-1) by its providerID" in p for p in ctl.last.problems)


async def test_a_clock_stepped_back_holds_neither_the_cooldown_nor_a_back_off_for_the_length_of_the_step(
        cluster_factory, wire):
    """An NTP step of a day back: every time remembered was a day in the future, and Tcool held every
    scale-out (and a back-off its VM) for a day while users queued."""
    from elastichub.orchestrator.controller import Backoff

    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(7)])  # 87.5 % on-prem
    now, ticks = [1_800_000_000.0], [0.0]  # the wall clock, and the monotonic one (time that really passed)
    ctl = await wire(cluster, paper(tcool=600))
    ctl.clock, ctl.monotonic = (lambda: now[0]), (lambda: ticks[0])
    await above_theta_out_again(cluster, ctl)
    now[0] += 100
    ticks[0] += 100
    assert (await ctl.cycle())["action"] == "none"  # within Tcool of the scale-out
    ctl.backoff["cloud-2"] = Backoff(failures=1, until=now[0] + 60)
    now[0] -= 86_400  # the step: no time passed for the loop
    await ctl.cycle()
    assert any(e["kind"] == "clock" and "back 86400 s" in e["message"] for e in ctl.events), ctl.events
    assert ctl.backoff["cloud-2"].until == now[0] + 60  # what was left of it, no more
    now[0] += 500  # Tcool after the scale-out
    ticks[0] += 500
    decision = await ctl.cycle()
    assert decision["action"] == "scale-out", decision


async def above_theta_out_again(cluster, ctl):
    """cloud-1 started and Ready (the controller's first cycle), then on-prem and cloud-1 above theta_out."""
    await until(lambda: len(ctl.pods.records) >= 7, what="cache")
    assert (await ctl.cycle())["nodes"] == ["cloud-1"]
    await until(lambda: not ctl._busy("boot:cloud-1") and ctl.nodes.records["cloud-1"].ready, what="cloud-1 up")
    await fill(cluster, ["late1", "late2", "late3"])  # 20 of 24 GiB: above theta_out again
    await until(lambda: len(ctl.pods.records) >= 10, what="cache")


async def test_a_clock_stepped_forward_ends_neither_the_cooldown_nor_a_back_off_early(cluster_factory, wire):
    """An NTP step of an hour forward, 100 s after a scale-out: Tcool (600 s) read as over and a second
    node started at once, a back-off ended an hour early, and the step was billed as an hour of cloud-1."""
    from elastichub.orchestrator.controller import Backoff

    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(7)])  # 87.5 % on-prem
    now, ticks = [1_800_000_000.0], [0.0]
    ctl = await wire(cluster, paper(tcool=600))
    ctl.clock, ctl.monotonic = (lambda: now[0]), (lambda: ticks[0])
    await above_theta_out_again(cluster, ctl)
    ctl.backoff["cloud-2"] = Backoff(failures=1, until=now[0] + 60)
    billed = ctl.metrics.cloud_node_seconds._value.get()
    now[0] += 3_600 + 100  # the step, and 100 s that passed
    ticks[0] += 100
    decision = await ctl.cycle()
    assert decision["action"] == "none", decision  # 100 s into the cooldown, not 3,700
    assert any(e["kind"] == "clock" and "forward 3600 s" in e["message"] for e in ctl.events), ctl.events
    assert ctl.backoff["cloud-2"].until == now[0] - 40  # over 40 s ago, as it really is
    assert ctl.metrics.cloud_node_seconds._value.get() - billed == 100  # cloud-1 ran 100 s, not 3,700
    now[0] += 500
    ticks[0] += 500
    assert (await ctl.cycle())["action"] == "scale-out"  # the cooldown over by the time that passed


class RecordingHub:
    """A hub where every server runs, idle, and checkpoints: it records what it is asked."""

    def __init__(self):
        self.calls = []

    async def server(self, user, name):
        from elastichub.orchestrator.hub import HubServer
        return HubServer(user, name, True, None, f"/user/{user}/", {}, None, None)

    async def kernels(self, server):
        return []

    async def terminals(self, server):
        return []

    async def checkpoint(self, server, timeout, hold_s=None):
        from elastichub.checkpoint_client import SAVED, CheckpointOutcome
        self.calls.append(("checkpoint", server.user))
        return CheckpointOutcome(SAVED, kernels=1)

    async def stop(self, user, name):
        self.calls.append(("stop", user))

    async def start(self, user, name, options):
        self.calls.append(("start", user))


async def alice_on_cloud_1(cluster_factory):
    """A local cluster (2 on-prem, 2 cloud nodes) with cloud-1's VM started and alice's server (1 GiB)
    bound to it."""
    cluster = await cluster_factory(cluster_config(onprem=2, cloud=2))
    driver = cluster.cloud_driver()
    vm = next(n for n in await asyncio.to_thread(driver.list_nodes) if n.name == "cloud-1")
    await asyncio.to_thread(driver.start_node, vm)
    alice = server_pod("alice", "1Gi")
    alice["spec"]["nodeName"] = "cloud-1"
    cluster.store.create("pods", alice)
    return cluster


@pytest.mark.parametrize("pool", ["none", "without it"])
async def test_a_drain_recorded_on_a_node_whose_vm_is_not_in_the_pool_is_rolled_back_not_resumed(
        cluster_factory, wire, pool):
    """A run with a cloud driver began draining cloud-1; the next has none, or a pool that no longer
    holds cloud-1's VM (its tags or cloud_vm_tags changed). The resumed drain moved alice off for
    nothing, as no VM could be stopped, and left the node cordoned."""
    cluster = await alice_on_cloud_1(cluster_factory)
    driver = cluster.cloud_driver()
    hub = RecordingHub()
    cloud = None if pool == "none" else CloudPool(driver, name_prefix="cloud-2")
    ctl = await wire(cluster, paper(theta=101), hub=hub, cloud=cloud, drain=DrainTimeouts(stop=0.5, poll=0.05))
    await until(lambda: any(p.node == "cloud-1" and p.phase == "Running" for p in ctl.pods.records.values()),
                what="alice running on cloud-1")
    await ctl.kube.mark_drain("cloud-1", {"v": 1, "state": "draining", "started": ctl.clock(), "servers": {}})
    await until(lambda: ctl.nodes.records["cloud-1"].drain is not None, what="the record in the cache")
    await ctl.cycle()
    await until(lambda: not ctl._busy("drain:cloud-1"), what="the drain's end")
    assert hub.calls == [], hub.calls
    node = cluster.store.get("nodes", "cloud-1")
    assert not node["spec"].get("unschedulable") and podmeta.DRAIN_ANNOTATION not in node["metadata"]["annotations"]
    assert any("cloud-1 has no VM in the cloud pool" in e["message"] for e in ctl.events), ctl.events


@pytest.mark.parametrize("pool, said", [
    ({"tags": {"elastichub.io/pool": "cloud"}}, "the cloud lists 2 VM(s), none tagged elastichub.io/pool=cloud"),
    ({"name_prefix": "elastic-"}, "the cloud lists 2 VM(s), none named elastic-*"),
])
async def test_a_cloud_pool_that_holds_no_vm_is_a_problem_naming_its_filter(cluster_factory, wire, pool, said):
    """cloud_vm_tags with a typo: no VM is in the pool, nothing can scale out, and nothing said why
    (the waiting users were told every node is full)."""
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(8)])  # on-prem full
    ctl = await wire(cluster, paper(), cloud=CloudPool(cluster.cloud_driver(), **pool))
    await until(lambda: len(ctl.pods.records) >= 8, what="cache")
    assert (await ctl.cycle())["action"] == "none"
    problem = next((p for p in ctl.last.problems if p.startswith("cloud pool: no VM in it")), "")
    assert said in problem and "no cloud node can start" in problem, ctl.last.problems
    assert any(e["kind"] == "problem" and e["message"] == problem for e in ctl.events)


class AnswersFalse:
    """libcloud's start_node/stop_node answer False for a start or stop the cloud did not take."""

    def start_node(self, node):
        return False

    def stop_node(self, node):
        return False


async def test_a_start_the_cloud_answers_false_to_is_a_failed_boot_at_once_not_after_the_boot_timeout(
        cluster_factory, wire):
    """The VM was said started and watched for the whole boot timeout while the users waited;
    the next VM is tried at once instead."""
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(7)])
    ctl = await wire(cluster, paper(), cloud=CloudPool(driver_with(cluster, AnswersFalse)), boot_timeout=600)
    await until(lambda: len(ctl.pods.records) >= 7, what="cache")
    assert (await ctl.cycle())["nodes"] == ["cloud-1"]
    await until(lambda: not ctl._busy("boot:cloud-1"), what="the boot step")
    failed = [e["message"] for e in ctl.events if e["kind"] == "boot-failed"]
    assert failed and "start VM cloud-1: the cloud did not take it (the driver answered False)" in failed[0], ctl.events
    assert not any(e["kind"] == "scale-out" for e in ctl.events)
    assert (await ctl.cycle())["nodes"] == ["cloud-2"]
    with pytest.raises(CloudError, match="stop VM cloud-2: the cloud did not take it"):
        await ctl.cloud.stop("cloud-2")


async def test_a_clock_stepped_forward_mid_boot_stops_no_vm(cluster_factory, wire):
    """An NTP step of a day forward while cloud-1 booted: past its deadline by the wall clock, the
    VM was stopped as a failed boot and kept out of the pool, and the waiting users waited longer."""
    cluster = await cluster_factory(cluster_config(boot_delay=1.5))
    await fill(cluster, [f"u{i}" for i in range(7)])
    now = [1_800_000_000.0]
    ctl = await wire(cluster, paper(), boot_timeout=600)
    ctl.clock = lambda: now[0]
    await until(lambda: len(ctl.pods.records) >= 7, what="cache")
    assert (await ctl.cycle())["nodes"] == ["cloud-1"]
    await until(lambda: any(e["kind"] == "scale-out" for e in ctl.events), what="VM cloud-1 started")
    now[0] += 86_400
    await until(lambda: not ctl._busy("boot:cloud-1"), what="the boot step")
    assert not any(e["kind"] == "boot-failed" for e in ctl.events), ctl.events
    assert {vm.id: vm.state for vm in await ctl.cloud.list()}["cloud-1"] == "running"
    assert [b for b in ctl.boot_seconds] and max(ctl.boot_seconds) < 600  # the boot's real time, not the step


async def test_users_waiting_for_a_node_whose_boot_fails_are_told(cluster_factory, wire):
    """The spawn page kept "cloud node cloud-1 is starting ... about 1 min" after its boot had failed."""
    cluster = await cluster_factory(cluster_config())
    await fill(cluster, [f"u{i}" for i in range(8)])  # on-prem full
    cluster.store.create("pods", server_pod("ann", "2Gi"))
    ctl = await wire(cluster, paper(), cloud=CloudPool(driver_with(cluster, NeverBoots)), boot_timeout=0.5,
                     boot_backoff=30)
    await until(lambda: len(ctl.pods.records) >= 9, what="cache")

    def told():
        events, _ = cluster.store.list("events", field_selector="involvedObject.name=jupyter-ann")
        return [e.get("message") for e in events if e.get("reason") == "ElasticHubWaiting"]
    assert (await ctl.cycle())["nodes"] == ["cloud-1"]
    await until(lambda: told(), what="told cloud-1 starts")
    await until(lambda: not ctl._busy("boot:cloud-1"), what="the boot step")
    await until(lambda: not ctl._busy("tell"), what="the last notices")
    await ctl.cycle()
    await until(lambda: len(told()) >= 2, what="told the boot failed")
    assert "cloud node cloud-1 was starting for the servers waiting but could not start" in told()[1], told()
