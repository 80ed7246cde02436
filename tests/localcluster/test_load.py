"""Load: 200 pods and 200 concurrent kubernetes_asyncio watches, no lost or duplicated events.

The bound is the test's timeout, not a timed assertion; the list latency at
this size is measured in benchmarks/localcluster_bench.py.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest
from kubernetes_asyncio import client, config, watch
from lc_apitools import make_pod

PODS, WATCHES = 200, 200
pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


async def new_core_api(kubeconfig: str, pool: int) -> client.CoreV1Api:
    conf = client.Configuration()
    await config.load_kube_config(config_file=kubeconfig, client_configuration=conf)
    conf.connection_pool_maxsize = pool  # aiohttp's default pool would queue most of the watches
    return client.CoreV1Api(client.ApiClient(conf))


async def watch_all(v1: client.CoreV1Api, rv: str, selector: str | None, expected: int) -> list[tuple[str, str, int]]:
    """(type, pod name, resourceVersion) of every event until `expected` arrived."""
    got = []
    w = watch.Watch(return_type="object")  # plain dicts: the client's model decoding would dominate the test
    async with w.stream(v1.list_namespaced_pod, "default", resource_version=rv, label_selector=selector,
                        timeout_seconds=200) as stream:
        async for ev in stream:
            meta = ev["raw_object"]["metadata"]
            got.append((ev["type"], meta["name"], int(meta["resourceVersion"])))
            if len(got) >= expected:
                break
    return got


async def test_200_pods_200_watches_no_lost_or_duplicated_events(api_server, monkeypatch):
    store = api_server.store
    # Each Watch builds an ApiClient (loading the system CA bundle, ~0.1 s) only to
    # decode objects; one shared decoder keeps 200 watches about the server, not that.
    decoder = client.ApiClient()
    monkeypatch.setattr(watch.watch, "ApiClient", lambda: decoder)
    producer = await new_core_api(api_server.kubeconfig, 20)
    watchers_api = await new_core_api(api_server.kubeconfig, WATCHES + 10)
    try:
        rv = (await producer.list_namespaced_pod("default")).metadata.resource_version
        groups = {i: f"g{i % 4}" for i in range(PODS)}
        # A quarter of the watchers see every pod, the others one group of four (a label
        # selector); each pod makes 3 events (about 52,000 deliveries in all).
        selectors = [None if j % 4 == 0 else f"group=g{j % 4}" for j in range(WATCHES)]
        per_pod = 3
        expected = [per_pod * (PODS if s is None else sum(1 for g in groups.values() if f"group={g}" == s))
                    for s in selectors]
        watchers = [asyncio.create_task(watch_all(watchers_api, rv, s, n)) for s, n in zip(selectors, expected)]

        async def each(fn, concurrency=10):
            sem = asyncio.Semaphore(concurrency)

            async def one(i):
                async with sem:
                    await fn(i)
            await asyncio.gather(*(one(i) for i in range(PODS)))

        await each(lambda i: producer.create_namespaced_pod("default", make_pod(f"load-{i}", {"group": groups[i]})))
        await each(lambda i: producer.patch_namespaced_pod_status(
            f"load-{i}", "default", {"status": {"phase": "Pending", "message": f"update {i}"}}))
        listed = await producer.list_namespaced_pod("default", _preload_content=False)
        assert len((await listed.json())["items"]) == PODS
        await asyncio.sleep(0.5)
        assert len(store._subscribers["pods"]) == WATCHES  # all watches are open at once
        await each(lambda i: producer.delete_namespaced_pod(f"load-{i}", "default"))

        results = await asyncio.wait_for(asyncio.gather(*watchers), 200)
        for selector, events, n in zip(selectors, results, expected):
            assert len(events) == n
            assert len(set(events)) == n, f"duplicated events for watcher {selector}"
            versions = [v for _, _, v in events]
            assert versions == sorted(versions) and len(set(versions)) == n
            by_pod = defaultdict(list)
            for type_, name, _ in events:
                by_pod[name].append(type_)
            want_names = {f"load-{i}" for i in range(PODS) if selector in (None, f"group={groups[i]}")}
            assert set(by_pod) == want_names, f"lost pods for watcher {selector}"
            assert all(types == ["ADDED", "MODIFIED", "DELETED"] for types in by_pod.values())
        assert store.list("pods")[0] == []
    finally:
        await producer.api_client.close()
        await watchers_api.api_client.close()
        await decoder.close()
