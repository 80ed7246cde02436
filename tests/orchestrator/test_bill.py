"""The cloud bill (elastichub_cloud_node_seconds_total) counts every second
a pool VM runs, cycles whose cloud listing failed included."""

from __future__ import annotations

from podtools import cache

from elastichub import podmeta
from elastichub.orchestrator.cloud import RUNNING, VM, CloudError
from elastichub.orchestrator.controller import Controller, Settings
from elastichub.orchestrator.records import node_record
from elastichub.policy import PolicyConfig, make_strategy


def _node(name: str, tier: str) -> object:
    return node_record({"metadata": {"name": name, "labels": {podmeta.TIER_LABEL: tier}, "annotations": {}},
                        "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "16Gi"},
                                               "conditions": [{"type": "Ready", "status": "True"}]}})


class FlakyCloud:
    timeout = 30.0  # CloudPool's per call (/health allows for one)

    def __init__(self):
        self.down = False

    async def list(self):
        if self.down:
            raise CloudError("list VMs: timed out")
        return [VM("i-1", "cloud-1", RUNNING, "cloud-1")]


async def test_a_vm_running_through_a_cloud_outage_is_billed_for_all_of_it():
    now = [1000.0]
    cloud = FlakyCloud()
    nodes = cache({"onprem-1": _node("onprem-1", "on-prem"), "cloud-1": _node("cloud-1", "cloud")})
    ctl = Controller(make_strategy("paper", PolicyConfig(theta_out=80, tmon=15, tcool=1e9)), nodes,
                     cache({}), None, None, cloud, Settings(tmon=15), clock=lambda: now[0],
                     monotonic=lambda: now[0])
    await ctl.cycle()
    for minute in range(60):  # an hour; the cloud's API answers only in the last minute
        now[0] += 60
        cloud.down = minute < 59
        await ctl.cycle()
    assert ctl.metrics.cloud_node_seconds._value.get() == 3600
