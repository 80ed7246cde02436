#!/usr/bin/env python
"""The orchestrator's pods informer on a shared cluster full of finished batch pods.

`--finished` pods (Succeeded or Failed, a batch namespace), `--running` pods not finished, on the local
cluster's API server through kubernetes_asyncio. The informer as app.py builds it (a field selector leaving
finished pods out: kube.UNFINISHED_PODS) against the reference, same run: the same informer watching every
pod. Each reports the list's time, the records it keeps, the memory they take (tracemalloc) and the watch
events it receives while `--churn` more batch pods start and finish (two changes each) and as many finished
ones are deleted (a job's ttlSecondsAfterFinished).

Usage: python benchmarks/informer_bench.py [--finished 2000] [--running 50] [--churn 200] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import tracemalloc


def batch_pod(name: str, phase: str) -> dict:
    """A batch job's pod, bound to a node no kubelet runs: its phase stays as written."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "batch"},
            "spec": {"nodeName": "batch-1", "containers": [{"name": "c", "image": "etl", "resources": {
                "requests": {"cpu": "10m", "memory": "64Mi"}}}]}, "status": {"phase": phase}}


async def measure(cluster, selector: str | None, churn: int, tag: str, first: int) -> dict:
    from kubernetes_asyncio import client, config

    from elastichub.orchestrator.kube import Informer, object_key
    from elastichub.orchestrator.records import pod_record

    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=cfg)
    api = client.ApiClient(configuration=cfg)
    informer = Informer("pods", client.CoreV1Api(api).list_pod_for_all_namespaces, pod_record, object_key,
                        watch_timeout=30, **({"field_selector": selector} if selector else {}))
    tracemalloc.start()
    start = time.perf_counter()
    task = asyncio.create_task(informer.run())
    await informer.synced.wait()
    listed = time.perf_counter() - start
    memory = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    records, version = len(informer.records), informer.version
    for i in range(churn):  # batch pods start and finish meanwhile, finished ones are cleaned up (a job's TTL)
        cluster.store.create("pods", batch_pod(f"churn-{tag}-{i}", "Running"))
        cluster.store.update("pods", f"churn-{tag}-{i}", lambda p: p["status"].__setitem__("phase", "Succeeded"),
                             namespace="batch")
        cluster.store.delete("pods", f"job-{first + i}", namespace="batch")
    seen = -1
    while seen != informer.version:  # until the watch has been quiet for a moment
        seen = informer.version
        await asyncio.sleep(0.5)
    events = informer.version - version
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await api.close()
    return {"list_s": round(listed, 3), "records": records, "records_kib": round(memory / 1024),
            "events": events, "records_after_churn": len(informer.records)}


async def main(args) -> dict:
    from elastichub.localcluster.cluster import LocalCluster
    from elastichub.localcluster.config import ClusterConfig, NodeConfig
    from elastichub.orchestrator.kube import UNFINISHED_PODS

    with tempfile.TemporaryDirectory() as tmp:
        cfg = ClusterConfig(nodes=(NodeConfig("onprem-1", "on-prem", "64", "256Gi"),), port=0,
                            kubeconfig=f"{tmp}/kubeconfig", workdir=tmp)
        cluster = LocalCluster(cfg)
        await cluster.start()
        try:
            cluster.store.create("namespaces", {"metadata": {"name": "batch"}})
            for i in range(args.finished):
                cluster.store.create("pods", batch_pod(f"job-{i}", ("Succeeded", "Failed")[i % 2]))
            for i in range(args.running):
                cluster.store.create("pods", batch_pod(f"run-{i}", "Running"))
            every = await measure(cluster, None, args.churn, "a", 0)
            unfinished = await measure(cluster, UNFINISHED_PODS, args.churn, "b", args.churn)
        finally:
            await cluster.stop()
    return {"pods": {"finished": args.finished, "running": args.running, "churn": args.churn},
            "every_pod (reference)": every, "unfinished_only": unfinished}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--finished", type=int, default=2000)
    parser.add_argument("--running", type=int, default=50)
    parser.add_argument("--churn", type=int, default=200, help="at most half of --finished")
    parser.add_argument("--json", action="store_true")
    report = asyncio.run(main(parser.parse_args()))
    if parser.parse_args().json:
        print(json.dumps(report))
    else:
        for name, row in report.items():
            print(f"{name}: {row}")
