"""What a user waiting for a server is told (notices.py): once per situation."""

from __future__ import annotations

from podtools import cache

from elastichub.orchestrator.notices import boot_estimate, notices
from elastichub.orchestrator.records import PodRecord
from elastichub.policy import ClusterSnapshot, GiB, Node, NodeStatus, Resources, Tier

NOW = 1_800_000_000.0


def nodes(*cloud: NodeStatus) -> ClusterSnapshot:
    full = Node("onprem-1", Tier.ONPREM, Resources(4, 8 * GiB), Resources(4, 8 * GiB))
    return ClusterSnapshot((full, *(Node(f"cloud-{i}", Tier.CLOUD, Resources(4, 8 * GiB), status=s)
                                    for i, s in enumerate(cloud, 1))))


def waiting(*users: str) -> list[PodRecord]:
    return [PodRecord(f"jh/jupyter-{u}", None, "Pending", 1, GiB, False, True, True, user=u, server=u, uid=f"uid-{u}")
            for u in users]


def test_a_booting_cloud_node_is_named_with_the_time_left_once_per_situation():
    snap = nodes(NodeStatus.BOOTING, NodeStatus.STOPPED)
    send, told = notices(snap, waiting("ann", "bob"), {"cloud-1": NOW - 60}, 290, NOW, {})
    assert [p.user for p, _ in send] == ["ann", "bob"]
    # The estimate is the node's boot (the server's image and start follow): said of the node, not the server.
    assert send[0][1] == ("ElasticHub: the on-premises nodes are full, so cloud node cloud-1 is starting for the "
                          "servers waiting; this server starts as soon as there is room (the node should be ready "
                          "in about 4 min).")
    # The next cycle, the same situation: nothing again, however the estimate ticks down; a newcomer is told.
    again, told = notices(snap, waiting("ann", "bob", "cy"), {"cloud-1": NOW - 60}, 290, NOW + 60, told)
    assert [p.user for p, _ in again] == ["cy"] and "(the node should be ready in about 3 min)" in again[0][1]
    # A second node starts: everyone hears of it.
    more, _ = notices(nodes(NodeStatus.BOOTING, NodeStatus.BOOTING), waiting("ann"),
                      {"cloud-1": NOW - 60, "cloud-2": NOW}, 290, NOW + 75, told)
    assert "cloud nodes cloud-1, cloud-2 are starting" in more[0][1] and "(the first node should be" in more[0][1]


def test_no_estimate_without_a_boot_time_and_never_below_a_minute():
    send, _ = notices(nodes(NodeStatus.BOOTING), waiting("ann"), {"cloud-1": NOW - 1000}, None, NOW, {})
    assert send[0][1].endswith("as soon as there is room.")
    soon, _ = notices(nodes(NodeStatus.BOOTING), waiting("ann"), {"cloud-1": NOW - 280}, 290, NOW, {})
    assert soon[0][1].endswith("(the node should be ready in about 1 min).")


def test_a_boot_past_its_estimate_tells_no_time_left():
    """A boot 1000 s along with 290 s expected told a newcomer "(about 1 min)": untrue, and nobody knows."""
    late, _ = notices(nodes(NodeStatus.BOOTING), waiting("ann"), {"cloud-1": NOW - 1000}, 290, NOW, {})
    assert late[0][1].endswith("as soon as there is room (the node is taking longer than usual to start).")
    assert "min)" not in late[0][1]
    # Told "about 4 min" at the boot's start, a user hears again once those minutes have passed, once.
    told = notices(nodes(NodeStatus.BOOTING), waiting("ann"), {"cloud-1": NOW - 60}, 290, NOW, {})[1]
    again, told = notices(nodes(NodeStatus.BOOTING), waiting("ann"), {"cloud-1": NOW - 60}, 290, NOW + 300, told)
    assert [m for _, m in again] == [late[0][1]]
    assert notices(nodes(NodeStatus.BOOTING), waiting("ann"), {"cloud-1": NOW - 60}, 290, NOW + 360, told)[0] == []


def test_every_node_full_and_while_the_policy_may_still_start_one_nothing():
    send, told = notices(nodes(NodeStatus.READY), waiting("ann"), {}, 290, NOW, {})
    # "as soon as another one ends", after "every node": a node ending, for a student; it is a server stopping.
    assert send[0][1] == ("ElasticHub: every node is full, cloud nodes included; this server starts as soon as "
                          "another server stops.")
    onprem_only_hub, _ = notices(nodes(), waiting("ann"), {}, 290, NOW, {})
    assert onprem_only_hub[0][1].startswith("ElasticHub: every node is full; ")
    # A stopped cloud node and nothing booting: the policy may start one (or wait for departures on purpose).
    quiet, kept = notices(nodes(NodeStatus.STOPPED), waiting("ann"), {}, 290, NOW, told)
    assert quiet == [] and kept == told


def test_a_server_no_cloud_node_can_run_is_told_why():
    """In plain words: it was told Kubernetes' ("... cannot run it (required node affinity)"), which the
    admin reads on the status page."""
    gpu = waiting("gpu")[0]
    for why in ("node selector gpu=a100", "required node affinity", "taint gpu=yes:NoSchedule"):
        send, told = notices(nodes(NodeStatus.STOPPED), [], {}, 290, NOW, {}, [(gpu, why)])
        assert send == [(gpu, "ElasticHub: this server can run only on some of the on-premises nodes (its "
                              "settings), not on cloud nodes, and those are full; it starts as soon as one of them "
                              "has room.")]
    assert notices(nodes(NodeStatus.STOPPED), [], {}, 290, NOW, told, [(gpu, "node selector gpu=a100")])[0] == []


def test_the_boot_estimate_is_the_median_of_the_boots_seen():
    assert boot_estimate([200, 400, 260], 290) == 260
    assert boot_estimate([], 290) == 290 and boot_estimate([], None) is None


def test_a_server_only_cloud_nodes_take_is_told_why_a_node_starts_for_it():
    """On-prem may have room: "the on-premises nodes are full" would be untrue."""
    from dataclasses import replace

    from elastichub.policy import Server

    snap = nodes(NodeStatus.BOOTING)
    snap = replace(snap, pending=(Server("ann", Resources(1, GiB), cloud_only=True), Server("bob", Resources(1, GiB))))
    send, _ = notices(snap, waiting("ann", "bob"), {"cloud-1": NOW - 60}, 290, NOW, {})
    assert dict((p.user, m) for p, m in send) == {
        "ann": "ElasticHub: this server runs on cloud nodes only (its settings), and cloud node cloud-1 is starting; "
               "it starts as soon as there is room (the node should be ready in about 4 min).",
        "bob": "ElasticHub: the on-premises nodes are full, so cloud node cloud-1 is starting for the servers "
               "waiting; this server starts as soon as there is room (the node should be ready in about 4 min)."}


async def test_with_a_timetable_a_waiting_user_is_told_the_boot_estimate_too(tmp_path):
    """The calendar's strategy (a timetable around `elastic`) did not read as having a `boot_s`: before
    the first boot was measured, a user waiting for a booting node was told no time at all."""
    import asyncio

    from podtools import server_pod

    from elastichub import podmeta
    from elastichub.orchestrator.app import ElasticOrchestrator
    from elastichub.orchestrator.cloud import RUNNING, VM
    from elastichub.orchestrator.controller import Controller, Settings
    from elastichub.orchestrator.records import node_record, pod_record

    def node(name, tier, ready):
        return node_record({"metadata": {"name": name, "labels": {podmeta.TIER_LABEL: tier}},
                            "status": {"allocatable": {"cpu": "4", "memory": "8Gi"},
                                       "conditions": [{"type": "Ready", "status": str(ready)}]}})

    class Cloud:
        async def list(self):
            return [VM("cloud-1", "cloud-1", RUNNING, "cloud-1")]

    class Events:
        told: list = []

        async def event(self, namespace, name, uid, reason, message):
            self.told.append(message)

    (tmp_path / "t.csv").write_text("day,time,users,cpu,ram_gib\nMon,10:00,10,1,2\n")
    strategy = ElasticOrchestrator(policy="calendar", calendar_file=str(tmp_path / "t.csv"),
                                   policy_options={"boot_s": 240}).build_strategy(now=NOW)
    full = server_pod("bob", "8Gi")
    full["spec"]["nodeName"] = "onprem-1"
    pods = {p["metadata"]["name"]: pod_record(p) for p in (full, server_pod("ann"))}
    ctl = Controller(strategy, cache({"onprem-1": node("onprem-1", "on-prem", True),
                                      "cloud-1": node("cloud-1", "cloud", False)}),
                     cache(pods), None, None, Cloud(), Settings(tmon=15), kube_pods=Events(),
                     clock=lambda: NOW, monotonic=lambda: NOW)
    try:
        await ctl.cycle()
        await asyncio.wait_for(ctl.tasks["tell"], 5)
    finally:
        await ctl.close()
    assert Events.told == ["ElasticHub: the on-premises nodes are full, so cloud node cloud-1 is starting for the "
                           "servers waiting; this server starts as soon as there is room (the node should be "
                           "ready in about 4 min)."]


def test_a_user_told_a_node_was_starting_hears_when_its_boot_fails():
    """Told "cloud node cloud-1 is starting ... about 4 min", a user heard nothing more when the boot failed:
    with the node backed off (stopped, no new situation) the page said so for as long as they waited."""
    told = notices(nodes(NodeStatus.BOOTING, NodeStatus.STOPPED), waiting("ann"), {"cloud-1": NOW - 60}, 290,
                   NOW, {})[1]
    # The boot failed: cloud-1 is stopped again, nothing else starts yet.
    send, told = notices(nodes(NodeStatus.STOPPED, NodeStatus.STOPPED), waiting("ann", "bob"), {}, 290, NOW + 600,
                         told, failed={"cloud-1"})
    assert send == [(waiting("ann")[0], "ElasticHub: cloud node cloud-1 was starting for the servers waiting but "
                                        "could not start (its boot failed). Another node may be started, or this "
                                        "server waits for one to have room. Keep this page open: the server starts "
                                        "by itself, there is nothing to do.")]
    # Said once; bob was never told of cloud-1 and hears nothing of it.
    again, told = notices(nodes(NodeStatus.STOPPED, NodeStatus.STOPPED), waiting("ann", "bob"), {}, 290,
                          NOW + 615, told, failed={"cloud-1"})
    assert again == []
    # Another node starts: the usual notice, once.
    other, told = notices(nodes(NodeStatus.STOPPED, NodeStatus.BOOTING), waiting("ann"), {"cloud-2": NOW + 620},
                          290, NOW + 630, told, failed={"cloud-1"})
    assert [m for _, m in other] == ["ElasticHub: the on-premises nodes are full, so cloud node cloud-2 is starting "
                                     "for the servers waiting; this server starts as soon as there is room (the node "
                                     "should be ready in about 5 min)."]


def test_a_failed_boot_with_another_node_starting_says_both_at_once():
    told = notices(nodes(NodeStatus.BOOTING, NodeStatus.STOPPED), waiting("ann"), {"cloud-1": NOW - 60}, 290,
                   NOW, {})[1]
    send, told = notices(nodes(NodeStatus.STOPPED, NodeStatus.BOOTING), waiting("ann"), {"cloud-2": NOW + 590},
                         290, NOW + 600, told, failed={"cloud-1"})
    assert [m for _, m in send] == [
        "ElasticHub: cloud node cloud-1 was starting for the servers waiting but could not start (its boot failed). "
        "The on-premises nodes are full, so cloud node cloud-2 is starting for the servers waiting; this server "
        "starts as soon as there is room (the node should be ready in about 5 min). Keep this page open: the "
        "server starts by itself, there is nothing to do."]
    assert notices(nodes(NodeStatus.STOPPED, NodeStatus.BOOTING), waiting("ann"), {"cloud-2": NOW + 590}, 290,
                   NOW + 615, told, failed={"cloud-1"})[0] == []
