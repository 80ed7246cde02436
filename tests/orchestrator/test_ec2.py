"""The EC2 path: the orchestrator starts and stops instances through libcloud's
own EC2 driver, against moto_server (a wire-level EC2 fake, started here).
The Kubernetes side is the local cluster; a small glue task plays the part of
the instance's kubelet (Ready when the instance runs, gone when it stops)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from podtools import cluster_config, server_pod, until

from elastichub.orchestrator.cloud import RUNNING, STOPPED, CloudPool, load_driver
from elastichub.policy import PolicyConfig, make_strategy

pytestmark = [pytest.mark.timeout(90)]
POOL_TAG = {"elastichub.io/pool": "cloud"}


@pytest.fixture
def moto_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).parent / "moto_server"
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "1"})
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                import time
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def ec2(moto_port, monkeypatch):
    import libcloud.compute.drivers.ec2 as ec2_module

    # moto answers in the EC2 namespace without its trailing slash (a moto quirk, see the field notes).
    monkeypatch.setattr(ec2_module, "NAMESPACE", ec2_module.NAMESPACE.rstrip("/"))
    return load_driver("ec2", ["AKIDEXAMPLE", "SECRET"], {"region": "us-east-1", "host": "127.0.0.1",
                                                          "port": moto_port, "secure": False,
                                                          "signature_version": "4"})


def make_pool_instances(driver, names):
    image = driver.list_images(ex_owner="amazon")[0]
    size = next(s for s in driver.list_sizes() if s.id == "t3.medium")
    for name in names:
        node = driver.create_node(name=f"vm-{name}", size=size, image=image,
                                  ex_metadata={**POOL_TAG, "elastichub.io/node": name})
        driver.stop_node(node)
    # An instance outside the pool: never touched.
    driver.create_node(name="db-server", size=size, image=image)


async def kubelet_glue(cluster, driver, stop: asyncio.Event):
    """Power a node on when its instance runs, off when it stops (what a real VM's kubelet does)."""
    while not stop.is_set():
        for vm in await asyncio.to_thread(driver.list_nodes):
            name = (vm.extra.get("tags") or {}).get("elastichub.io/node")
            kubelet = cluster.kubelets.get(name or "")
            if kubelet is None:
                continue
            if vm.state == "running" and not kubelet.powered_on:
                await kubelet.power_on()
            elif vm.state == "stopped" and kubelet.powered_on:
                await kubelet.power_off()
        await asyncio.sleep(0.1)


async def test_scale_out_and_in_through_the_ec2_driver(cluster_factory, wire, ec2):
    cluster = await cluster_factory(cluster_config(onprem=2, cloud=2))
    await asyncio.to_thread(make_pool_instances, ec2, ["cloud-1", "cloud-2"])
    pool = CloudPool(ec2, mapping="tag:elastichub.io/node", tags=POOL_TAG)
    vms = await pool.list()
    assert sorted((v.node_name, v.state) for v in vms) == [("cloud-1", STOPPED), ("cloud-2", STOPPED)]

    for i in range(7):  # 14 of 16 GiB on-prem
        cluster.store.create("pods", server_pod(f"u{i}"))
    strategy = make_strategy("paper", PolicyConfig(theta_out=80, tmon=0.2, tcool=0))
    ctl = await wire(cluster, strategy, cloud=pool, boot_timeout=20)
    await until(lambda: len([p for p in ctl.pods.records.values() if p.node]) == 7, what="pods bound")
    stop = asyncio.Event()
    glue = asyncio.create_task(kubelet_glue(cluster, ec2, stop))
    try:
        decision = await ctl.cycle()
        assert decision["action"] == "scale-out" and decision["nodes"] == ["cloud-1"], decision
        await until(lambda: any(e["kind"] == "node-ready" for e in ctl.events), what="cloud-1 Ready")
        states = {v.node_name: v.state for v in await pool.list()}
        assert states == {"cloud-1": RUNNING, "cloud-2": STOPPED}
        assert not cluster.store.get("nodes", "cloud-1")["spec"].get("unschedulable")

        # Load falls: the (empty) cloud node goes, its instance is stopped through EC2.
        for i in range(7):
            cluster.store.delete("pods", f"jupyter-u{i}", "default")
        await until(lambda: not ctl.pods.records, what="pods gone")
        decision = await ctl.cycle()
        assert decision["action"] == "scale-in" and decision["nodes"] == ["cloud-1"], decision

        async def stopped():
            return {v.node_name: v.state for v in await pool.list()} == {"cloud-1": STOPPED, "cloud-2": STOPPED}
        await until(stopped, what="cloud-1's instance stopped")
    finally:
        stop.set()
        await glue
    others = [n for n in await asyncio.to_thread(ec2.list_nodes) if n.name == "db-server"]
    assert [n.state for n in others] == ["running"]  # outside the pool: untouched
