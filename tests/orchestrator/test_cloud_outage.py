"""The cloud's listing failing for an hour (its credentials expired): tried after a back-off that doubles, not
every Tmon; said when it starts, reminded now and then, said when it ends; nothing started while it lasts, and
the VM the waiting servers need started once, after it. The real CloudPool, around a libcloud driver."""

from __future__ import annotations

from libcloud.common.types import InvalidCredsError
from libcloud.compute.base import Node
from libcloud.compute.drivers.dummy import DummyNodeDriver
from libcloud.compute.types import NodeState
from podtools import cache, server_pod, until

from elastichub import podmeta
from elastichub.orchestrator.cloud import CloudPool
from elastichub.orchestrator.controller import Controller, Settings
from elastichub.orchestrator.records import node_record, pod_record
from elastichub.policy import PolicyConfig, make_strategy

NOW = 1_800_000_000.0


class ExpiringDriver(DummyNodeDriver):
    def __init__(self):
        super().__init__(0)
        self.down, self.lists, self.started = False, 0, []
        self.vm = Node("i-1", "cloud-1", NodeState.STOPPED, [], [], self)

    def list_nodes(self):
        self.lists += 1
        if self.down:
            raise InvalidCredsError("the security token included in the request is expired")
        return [self.vm]

    def start_node(self, node):
        self.started.append(node.id)
        self.vm = Node("i-1", "cloud-1", NodeState.PENDING, [], [], self)
        return True


def _node(name: str, tier: str, ready: bool = True) -> object:
    return node_record({"metadata": {"name": name, "labels": {podmeta.TIER_LABEL: tier}, "annotations": {}},
                        "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"},
                                               "conditions": [{"type": "Ready", "status": str(ready)}]}})


async def test_a_failing_cloud_listing_backs_off_is_said_on_changes_and_starts_nothing_until_it_answers():
    now = [NOW]
    driver = ExpiringDriver()
    driver.down = True
    full = server_pod("bob", "8Gi")
    full["spec"]["nodeName"] = "onprem-1"
    pods = {p["metadata"]["name"]: pod_record(p) for p in (full, server_pod("ann"))}  # ann waits for room
    ctl = Controller(make_strategy("paper", PolicyConfig(theta_out=80, tmon=15, tcool=600)),
                     cache({"onprem-1": _node("onprem-1", "on-prem")}), cache(pods), None, None,
                     CloudPool(driver), Settings(tmon=15, poll=0.05), clock=lambda: now[0],
                     monotonic=lambda: now[0])
    try:
        for _ in range(240):  # an hour of Tmon
            await ctl.cycle()
            now[0] += 15
        assert driver.started == []
        assert driver.lists <= 20  # after 15, 30, ... 240 s, every 300 s (at most): not 240 tries
        said = [e["message"] for e in ctl.events if "cannot be listed" in e["message"] or "cannot list" in
                e["message"]]
        assert said[0].startswith("cannot list the cloud's VMs: list VMs: InvalidCredsError: ")
        assert 2 <= len(said) <= 5 and all("still cannot be listed" in m for m in said[1:])  # every 15 min
        assert ctl.status()["backoff"]["cloud:list"]["failures"] == driver.lists
        driver.down = False
        for _ in range(21):  # the back-off ends within 300 s: then listed, and cloud-1 started for ann, once
            await ctl.cycle()
            now[0] += 15
        await until(lambda: driver.started, what="the start")
        assert driver.started == ["i-1"]
        assert [e["message"] for e in ctl.events if e["kind"] == "cloud"] == [
            "the cloud's VMs are listed again: scaling resumes"]
    finally:
        await ctl.close()
