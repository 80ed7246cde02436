#!/usr/bin/env python
"""What the local cluster adds to starting a process, and how fast it schedules.

1. Pod start: a pod whose container runs a small Python TCP server with a
   containerPort, created through the API with kubernetes_asyncio and
   watched until its Ready condition is True. Reference, same run: spawning
   the same command directly and polling its port until it accepts. The
   ratio is the emulator's overhead on top of the process start itself
   (API round trips, scheduling, status updates, the readiness probe).
2. Scheduling: a burst of `--burst` pending pods on 4 nodes (no kubelets),
   time until all are bound. Reference, same run: the pure `choose_node`
   calls for the same pods (the least work any scheduler of these rules does).

Usage: python benchmarks/localcluster_pods.py [--pods 10] [--burst 200] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time

SERVER = ("import os, socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
          "s.bind((os.environ['MY_IP'], 8000)); s.listen(); import time; time.sleep(600)")


async def port_open(ip: str, port: int) -> bool:
    try:
        _, w = await asyncio.open_connection(ip, port)
        w.close()
        return True
    except OSError:
        return False


async def reference_start(ip: str) -> float:
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", SERVER, env={"MY_IP": ip})
    while not await port_open(ip, 8000):
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - start
    proc.kill()
    await proc.wait()
    return elapsed


async def pod_start(v1, watch_mod, i: int) -> float:
    name = f"bench-{i}"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "main", "image": "ignored", "command": [sys.executable, "-c", SERVER],
                                    "ports": [{"containerPort": 8000}],
                                    "env": [{"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]}],
                    "terminationGracePeriodSeconds": 0}}
    w = watch_mod.Watch()
    start = time.perf_counter()
    await v1.create_namespaced_pod("default", pod)
    elapsed = None
    async for event in w.stream(v1.list_namespaced_pod, "default", field_selector=f"metadata.name={name}",
                                timeout_seconds=30):
        conds = {c.type: c.status for c in event["object"].status.conditions or []}
        if conds.get("Ready") == "True":
            elapsed = time.perf_counter() - start
            break
    await w.close()
    await v1.delete_namespaced_pod(name, "default", grace_period_seconds=0)
    if elapsed is None:
        raise RuntimeError(f"pod {name} never became Ready")
    return elapsed


async def bench_pods(n: int) -> dict:
    from kubernetes_asyncio import client, config, watch

    from elastichub.localcluster.cluster import LocalCluster
    from elastichub.localcluster.config import default_config

    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(default_config().replace(port=0, kubeconfig=f"{tmp}/kc", workdir=tmp))
        await cluster.start()
        try:
            refs = [await reference_start(f"127.0.200.{2 + i}") for i in range(n)]
            async with await config.new_client_from_config(config_file=f"{tmp}/kc") as api:
                v1 = client.CoreV1Api(api)
                pods = [await pod_start(v1, watch, i) for i in range(n)]
        finally:
            await cluster.stop()
    ref, pod = statistics.median(refs), statistics.median(pods)
    return {"pod_start_median_s": round(pod, 4), "reference_process_start_median_s": round(ref, 4),
            "ratio": round(pod / ref, 2), "overhead_s": round(pod - ref, 4), "samples": n}


async def bench_scheduling(burst: int) -> dict:
    from elastichub.localcluster.scheduler import Scheduler, Usage, choose_node, node_usage, pod_requests
    from elastichub.localcluster.store import Store

    def node(name: str, tier: str) -> dict:
        return {"metadata": {"name": name, "labels": {"elastichub.io/tier": tier}}, "spec": {},
                "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250"},
                           "conditions": [{"type": "Ready", "status": "True"}]}}

    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [
            {"key": "elastichub.io/tier", "operator": "In", "values": ["on-prem"]}]}}]}}
    pods = [{"metadata": {"name": f"p{i}"}, "status": {"phase": "Pending"},
             "spec": {"affinity": affinity, "containers": [{"name": "c", "resources": {
                 "requests": {"cpu": "100m", "memory": "1Gi"}}}]}} for i in range(burst)]
    nodes = [node("onprem-1", "on-prem"), node("onprem-2", "on-prem"), node("cloud-1", "cloud"),
             node("cloud-2", "cloud")]

    start = time.perf_counter()
    usage: dict[str, Usage] = node_usage([])
    for p in pods:
        chosen, _ = choose_node(p, nodes, usage)
        usage.setdefault(chosen, Usage()).add(pod_requests(p))
    reference = time.perf_counter() - start

    store = Store()
    for n in nodes:
        store.create("nodes", n)
    scheduler = Scheduler(store)
    await scheduler.start()
    start = time.perf_counter()
    for p in pods:
        store.create("pods", p)
    while any(not p["spec"].get("nodeName") for p in store.iter_objects("pods")):
        await asyncio.sleep(0.001)
    elapsed = time.perf_counter() - start
    await scheduler.stop()
    return {"burst_pods": burst, "all_bound_s": round(elapsed, 4), "reference_choose_node_s": round(reference, 4),
            "ratio": round(elapsed / reference, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=10, help="pods started one after another (default 10)")
    parser.add_argument("--burst", type=int, default=200, help="pending pods scheduled in one burst (default 200)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    report = {"pod_start": asyncio.run(bench_pods(args.pods)),
              "scheduling": asyncio.run(bench_scheduling(args.burst))}
    if args.json:
        print(json.dumps(report))
    else:
        p, s = report["pod_start"], report["scheduling"]
        print(f"pod create -> Ready (median of {p['samples']}): {p['pod_start_median_s'] * 1000:.0f} ms; "
              f"same process started directly: {p['reference_process_start_median_s'] * 1000:.0f} ms; "
              f"ratio {p['ratio']}x (+{p['overhead_s'] * 1000:.0f} ms)")
        print(f"{s['burst_pods']} pending pods bound in {s['all_bound_s'] * 1000:.0f} ms; "
              f"choose_node alone: {s['reference_choose_node_s'] * 1000:.0f} ms; ratio {s['ratio']}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
