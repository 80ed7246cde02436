#!/usr/bin/env python
"""Latency of the local cluster's API server at the load test's size, one run.

The API server runs in its own process (as under `elastichub localcluster`)
holding 200 pods shaped like KubeSpawner's, on 4 nodes; the client is
kubernetes_asyncio. Figures (medians of ``--runs``), each also given as a
ratio to a reference measured in the same run, GET /version (one tiny
request round trip):

- list of the 200 pods: raw JSON (as KubeSpawner's reflector reads it) and
  decoded into V1PodList models; also with a label selector
  (component=singleuser-server) and a field selector (spec.nodeName=...);
- the same raw list while 200 watches are open on the pods;
- watch fan-out: one pod created until all 200 watches have its ADDED event.

Usage: python benchmarks/localcluster_bench.py [--pods 200] [--watches 200] [--runs 30] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import sys
import time

NODES = ["onprem-1", "onprem-2", "cloud-1", "cloud-2"]


def kubespawner_like_pod(i: int) -> dict:
    name = f"jupyter-user{i}"
    return {
        "metadata": {"name": name, "labels": {"component": "singleuser-server", "app": "jupyterhub",
                                              "hub.jupyter.org/username": f"user{i}",
                                              "hub.jupyter.org/servername": "", "heritage": "jupyterhub"},
                     "annotations": {"hub.jupyter.org/username": f"user{i}", "hub.jupyter.org/servername": ""}},
        "spec": {
            "nodeName": NODES[i % len(NODES)],
            "containers": [{
                "name": "notebook", "image": "quay.io/jupyterhub/singleuser:latest",
                "args": ["jupyterhub-singleuser", "--ip=0.0.0.0", "--port=8888"],
                "ports": [{"containerPort": 8888, "name": "notebook-port"}],
                "env": [{"name": k, "value": f"value-{i}-{k}"} for k in (
                    "JUPYTERHUB_API_TOKEN", "JUPYTERHUB_CLIENT_ID", "JUPYTERHUB_HOST", "JUPYTERHUB_OAUTH_CALLBACK_URL",
                    "JUPYTERHUB_SERVICE_PREFIX", "JUPYTERHUB_SERVICE_URL", "JUPYTERHUB_USER", "JUPYTER_IMAGE")],
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
                "securityContext": {"runAsUser": 1000, "allowPrivilegeEscalation": False},
                "volumeMounts": [],
            }],
            "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [
                    {"key": "elastichub.io/tier", "operator": "In", "values": ["on-prem"]}]}},
                {"weight": 1, "preference": {"matchExpressions": [
                    {"key": "elastichub.io/tier", "operator": "In", "values": ["cloud"]}]}}]}},
            "restartPolicy": "OnFailure", "automountServiceAccountToken": False,
        },
    }


def serve(port_pipe, pods: int) -> None:
    """The server process: a store with nodes and pods, the API on an ephemeral port."""
    import tornado.httpserver
    import tornado.ioloop
    import tornado.netutil

    from elastichub.localcluster.apiserver import make_app
    from elastichub.localcluster.store import Store
    from elastichub.localcluster.validation import default_pod

    async def main():
        store = Store()
        for n in NODES:
            store.create("nodes", {"metadata": {"name": n, "labels": {"elastichub.io/tier": n.split("-")[0]}},
                                   "status": {"allocatable": {"cpu": "64", "memory": "256Gi"}}})
        for i in range(pods):
            store.create("pods", default_pod(kubespawner_like_pod(i)))
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1", family=socket.AF_INET)
        server = tornado.httpserver.HTTPServer(make_app(store))
        server.add_sockets(sockets)
        port_pipe.send(sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    asyncio.run(main())


async def timed(fn, runs: int) -> float:
    """Median seconds of `fn()` over `runs` calls, after one warm-up."""
    await fn()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


async def bench(port: int, args) -> dict:
    from kubernetes_asyncio import client, watch
    from kubernetes_asyncio.client import Configuration

    conf = Configuration(host=f"http://127.0.0.1:{port}")
    conf.connection_pool_maxsize = args.watches + 10
    api = client.ApiClient(conf)
    v1, version = client.CoreV1Api(api), client.VersionApi(api)

    async def version_call():
        await version.get_code()

    async def list_raw(**kw):
        resp = await v1.list_namespaced_pod("default", _preload_content=False, **kw)
        return (await resp.json())["items"]

    assert len(await list_raw()) == args.pods
    out = {"pods": args.pods, "watches": args.watches, "runs": args.runs}
    out["version_s"] = await timed(version_call, args.runs)
    out["list_raw_s"] = await timed(list_raw, args.runs)
    out["list_models_s"] = await timed(lambda: v1.list_namespaced_pod("default"), args.runs)
    out["list_label_selector_s"] = await timed(lambda: list_raw(label_selector="component=singleuser-server"),
                                               args.runs)
    out["list_field_selector_s"] = await timed(lambda: list_raw(field_selector="spec.nodeName=onprem-1"), args.runs)

    rv = (await v1.list_namespaced_pod("default", limit=1)).metadata.resource_version
    decoder = client.ApiClient()  # one decoder for all watches (each Watch would load the CA bundle)
    watch.watch.ApiClient = lambda: decoder
    seen: dict[str, int] = {}
    arrived: dict[str, asyncio.Event] = {}

    async def watcher():
        w = watch.Watch(return_type="object")
        async with w.stream(v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=600) as s:
            async for ev in s:
                name = ev["raw_object"]["metadata"]["name"]
                if ev["type"] == "ADDED":
                    seen[name] = seen.get(name, 0) + 1
                    if seen[name] == args.watches:
                        arrived[name].set()

    watchers = [asyncio.create_task(watcher()) for _ in range(args.watches)]
    await asyncio.sleep(1.0)  # let every watch connect
    out["list_raw_with_watches_s"] = await timed(list_raw, args.runs)
    fanout, n = [], 0

    async def create_one():
        nonlocal n
        name = f"fanout-{n}"
        n += 1
        arrived[name] = asyncio.Event()
        t0 = time.perf_counter()
        await v1.create_namespaced_pod("default", {"metadata": {"name": name}, "spec": {
            "containers": [{"name": "c", "image": "local"}]}})
        await asyncio.wait_for(arrived[name].wait(), 60)
        fanout.append(time.perf_counter() - t0)

    for _ in range(max(5, args.runs // 3)):
        await create_one()
    out["watch_fanout_s"] = statistics.median(fanout)
    for t in watchers:
        t.cancel()
    await asyncio.gather(*watchers, return_exceptions=True)
    await api.close()
    await decoder.close()
    ref = out["version_s"]
    for key in [k for k in out if k.endswith("_s") and k != "version_s"]:
        out[key.replace("_s", "_vs_version")] = out[key] / ref
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--watches", type=int, default=200)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=serve, args=(child, args.pods), daemon=True)
    proc.start()
    try:
        if not parent.poll(60):
            print("the API server process did not start", file=sys.stderr)
            return 1
        out = asyncio.run(bench(parent.recv(), args))
    finally:
        proc.terminate()
        proc.join(10)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"local API server, {out['pods']} pods, {out['watches']} watches, median of {out['runs']} runs "
          f"(reference: GET /version {out['version_s'] * 1e3:.2f} ms)")
    labels = {"list_raw_s": "list pods (raw JSON)", "list_models_s": "list pods (V1PodList models)",
              "list_label_selector_s": "list pods, labelSelector", "list_field_selector_s": "list pods, fieldSelector",
              "list_raw_with_watches_s": f"list pods (raw), {out['watches']} watches open",
              "watch_fanout_s": f"create pod -> ADDED at all {out['watches']} watches"}
    for key, label in labels.items():
        print(f"  {label:<44} {out[key] * 1e3:8.2f} ms  ({out[key.replace('_s', '_vs_version')]:.1f}x /version)")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
