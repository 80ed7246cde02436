"""The local API server against the real kubernetes_asyncio client."""

from __future__ import annotations

import asyncio
import json

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.rest import ApiException
from lc_apitools import make_node, make_pod, start_api_server

from elastichub.localcluster.store import Store

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def v1(api_server):
    api = await config.new_client_from_config(api_server.kubeconfig)
    yield client.CoreV1Api(api)
    await api.close()


async def collect(stream_fn, *args, until=None, **kwargs) -> list[tuple[str, str, str]]:
    """(type, name, resourceVersion) of watch events, until `until` or the server ends the stream."""
    out = []
    w = watch.Watch()
    async with w.stream(stream_fn, *args, **kwargs) as stream:
        async for ev in stream:
            meta = ev["object"].metadata
            out.append((ev["type"], meta.name, meta.resource_version))
            if until and until(out):
                break
    return out


async def test_discovery_and_version(v1, api_server):
    version = await client.VersionApi(v1.api_client).get_code()
    assert version.major == "1" and version.git_version.startswith("v1.")
    resources = await v1.get_api_resources()
    names = {r.name for r in resources.resources}
    assert {"pods", "pods/status", "pods/log", "nodes", "nodes/status", "namespaces", "events"} <= names
    namespaces = await v1.list_namespace()
    assert "default" in {n.metadata.name for n in namespaces.items}


async def test_list_with_label_and_field_selectors(v1, api_server):
    store = api_server.store
    store.create("nodes", make_node("op-1"))
    store.create("nodes", make_node("cloud-1", "cloud"))
    for name, node in (("a", "op-1"), ("b", "cloud-1"), ("c", None)):
        await v1.create_namespaced_pod("default", make_pod(name, {"component": "singleuser-server"}, node))
    await v1.create_namespaced_pod("default", make_pod("other", {"component": "hub"}))
    cloud = await v1.list_node(label_selector="elastichub.io/tier=cloud")
    assert [n.metadata.name for n in cloud.items] == ["cloud-1"]
    not_cloud = await v1.list_node(label_selector="elastichub.io/tier notin (cloud)")
    assert [n.metadata.name for n in not_cloud.items] == ["op-1"]
    on_node = await v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=op-1")
    assert [p.metadata.name for p in on_node.items] == ["a"]
    unbound = await v1.list_namespaced_pod("default", field_selector="spec.nodeName=",
                                           label_selector="component=singleuser-server")
    assert [p.metadata.name for p in unbound.items] == ["c"]
    users = await v1.list_namespaced_pod("default", label_selector="component in (singleuser-server)",
                                         resource_version="0", resource_version_match="NotOlderThan")
    assert sorted(p.metadata.name for p in users.items) == ["a", "b", "c"]
    assert int(users.metadata.resource_version) == int(store.resource_version)
    with pytest.raises(ApiException) as e:
        await v1.list_namespaced_pod("default", field_selector="spec.bogus=1")
    assert e.value.status == 400 and "field label not supported" in json.loads(e.value.body)["message"]


async def test_watch_sees_every_change_in_order_and_ends_at_timeout(v1, api_server):
    listed = await v1.list_namespaced_pod("default")
    rv = listed.metadata.resource_version

    async def changes():
        await asyncio.sleep(0.1)
        await v1.create_namespaced_pod("default", make_pod("w1", {"app": "w"}))
        await v1.patch_namespaced_pod("w1", "default", {"metadata": {"labels": {"extra": "1"}}})
        await v1.create_namespaced_pod("default", make_pod("ignored", {"app": "not-w"}))
        await v1.delete_namespaced_pod("w1", "default")  # unbound: deleted at once

    task = asyncio.create_task(changes())
    loop = asyncio.get_running_loop()
    started = loop.time()
    events = await collect(v1.list_namespaced_pod, "default", label_selector="app=w", resource_version=rv,
                           timeout_seconds=1)
    await task
    assert [(t, n) for t, n, _ in events] == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]
    versions = [int(v) for _, _, v in events]
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert loop.time() - started >= 0.9  # the server, not the client, ended the stream


async def test_watch_resumes_from_a_version_and_answers_410_when_too_old(tmp_path):
    srv = start_api_server(tmp_path, Store(history_size=5))
    api = await config.new_client_from_config(srv.kubeconfig)
    v1 = client.CoreV1Api(api)
    try:
        await v1.create_namespaced_pod("default", make_pod("p0"))
        rv = (await v1.list_namespaced_pod("default")).metadata.resource_version
        for i in range(1, 4):
            await v1.create_namespaced_pod("default", make_pod(f"p{i}"))
        # Resume: exactly the changes after rv, nothing before, nothing twice.
        events = await collect(v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1)
        assert [(t, n) for t, n, _ in events] == [("ADDED", "p1"), ("ADDED", "p2"), ("ADDED", "p3")]
        for i in range(4, 10):
            await v1.create_namespaced_pod("default", make_pod(f"p{i}"))
        with pytest.raises(ApiException) as e:
            await collect(v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1)
        assert e.value.status == 410
        # What a client does next: re-list, then watch from the list's version.
        fresh = await v1.list_namespaced_pod("default")
        assert len(fresh.items) == 10
        resumed = asyncio.create_task(collect(v1.list_namespaced_pod, "default", timeout_seconds=20,
                                              resource_version=fresh.metadata.resource_version,
                                              until=lambda evs: len(evs) == 1))
        await asyncio.sleep(0.2)
        await v1.create_namespaced_pod("default", make_pod("after"))
        assert [(t, n) for t, n, _ in await resumed] == [("ADDED", "after")]
        with pytest.raises(ApiException) as e:  # an exact list at a version long gone
            await v1.list_namespaced_pod("default", resource_version=rv, resource_version_match="Exact")
        assert e.value.status == 410
    finally:
        await api.close()
        await srv.aclose()


async def test_watch_without_version_starts_with_current_objects(v1, api_server):
    await v1.create_namespaced_pod("default", make_pod("existing"))
    events = await collect(v1.list_namespaced_pod, "default", timeout_seconds=1)
    assert [(t, n) for t, n, _ in events] == [("ADDED", "existing")]


async def raw_watch_lines(url: str, seconds: float) -> list[dict]:
    import tornado.httpclient
    lines: list[bytes] = []
    buf = bytearray()

    def on_chunk(chunk: bytes) -> None:
        buf.extend(chunk)
        while b"\n" in buf:
            line, _, rest = bytes(buf).partition(b"\n")
            lines.append(line)
            buf[:] = rest

    req = tornado.httpclient.HTTPRequest(url + f"&timeoutSeconds={seconds}", streaming_callback=on_chunk,
                                         request_timeout=seconds + 5)
    await tornado.httpclient.AsyncHTTPClient().fetch(req)
    return [json.loads(line) for line in lines]


async def test_bookmarks_only_when_asked(tmp_path):
    srv = start_api_server(tmp_path, bookmark_interval=0.2)
    try:
        rv = srv.store.resource_version
        base = f"{srv.url}/api/v1/namespaces/default/pods?watch=True&resourceVersion={rv}"
        plain, asked = await asyncio.gather(raw_watch_lines(base, 1), raw_watch_lines(base + "&allowWatchBookmarks=true", 1))
        assert plain == []
        assert len(asked) >= 2 and {ev["type"] for ev in asked} == {"BOOKMARK"}
        assert asked[0]["object"]["kind"] == "Pod" and asked[0]["object"]["metadata"]["resourceVersion"] == rv
    finally:
        await srv.aclose()


async def test_patch_nodes_with_all_three_patch_types(v1, api_server):
    created = api_server.store.create("nodes", make_node("n1"))
    # Watch from before the patches: the history replays them even if the
    # watch connects after they happened (no race with the patch calls).
    events = asyncio.create_task(collect(v1.list_node, field_selector="metadata.name=n1", timeout_seconds=2,
                                         resource_version=created["metadata"]["resourceVersion"],
                                         until=lambda evs: len(evs) == 3))
    node = await v1.patch_node("n1", {"spec": {"unschedulable": True}})  # a dict: strategic merge patch
    assert node.spec.unschedulable is True
    node = await v1.patch_node("n1", {"metadata": {"labels": {"elastichub.io/draining": "true"}}},
                               _content_type="application/merge-patch+json")
    assert node.metadata.labels["elastichub.io/draining"] == "true"
    node = await v1.patch_node("n1", [{"op": "add", "path": "/spec/taints",
                                       "value": [{"key": "elastichub.io/draining", "effect": "NoSchedule"}]}])
    assert node.spec.taints[0].key == "elastichub.io/draining" and node.spec.taints[0].effect == "NoSchedule"
    node = await v1.patch_node("n1", {"spec": {"unschedulable": None, "taints": None},
                                      "metadata": {"labels": {"elastichub.io/draining": None}}})
    assert not node.spec.unschedulable and not node.spec.taints
    assert "elastichub.io/draining" not in node.metadata.labels
    assert [t for t, _, _ in await events] == ["MODIFIED", "MODIFIED", "MODIFIED"]
    # the main resource never changes status; the status subresource does
    node = await v1.patch_node("n1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert node.status.conditions[0].status == "True"
    node = await v1.patch_node_status("n1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert node.status.conditions[0].status == "False" and node.status.conditions[0].reason == "KubeletReady"
    with pytest.raises(ApiException) as e:
        await v1.patch_node("n1", [{"op": "test", "path": "/spec/unschedulable", "value": True}])
    assert e.value.status == 422
    with pytest.raises(ApiException) as e:  # optimistic concurrency
        await v1.patch_node("n1", {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}})
    assert e.value.status == 409


async def test_pod_delete_grace_and_status(v1, api_server):
    store = api_server.store
    store.create("nodes", make_node("n1"))
    await v1.create_namespaced_pod("default", make_pod("bound", node="n1"))
    pod = await v1.patch_namespaced_pod_status("bound", "default", {"status": {"phase": "Running",
                                                                               "podIP": "127.0.3.4"}})
    assert pod.status.phase == "Running" and pod.status.pod_ip == "127.0.3.4"
    deleted = asyncio.create_task(collect(v1.list_namespaced_pod, "default", timeout_seconds=3,
                                          resource_version=pod.metadata.resource_version,
                                          until=lambda evs: evs[-1][0] == "DELETED"))
    pod = await v1.delete_namespaced_pod("bound", "default", grace_period_seconds=7)
    assert pod.metadata.deletion_timestamp is not None and pod.metadata.deletion_grace_period_seconds == 7
    assert (await v1.read_namespaced_pod("bound", "default")).metadata.deletion_timestamp is not None
    pod = await v1.delete_namespaced_pod("bound", "default", body=client.V1DeleteOptions(grace_period_seconds=1))
    assert pod.metadata.deletion_grace_period_seconds == 1  # a second delete may shorten the grace
    store.delete("pods", "bound")  # what the kubelet does once the process is gone
    assert [t for t, _, _ in await deleted] == ["MODIFIED", "MODIFIED", "DELETED"]
    with pytest.raises(ApiException) as e:
        await v1.read_namespaced_pod("bound", "default")
    assert e.value.status == 404
    await v1.create_namespaced_pod("default", make_pod("pending"))
    await v1.delete_namespaced_pod("pending", "default")  # never bound: gone at once
    assert (await v1.list_namespaced_pod("default")).items == []


async def test_pod_defaults_and_log(v1, api_server):
    pod = await v1.create_namespaced_pod("default", make_pod("p", node=None))
    assert pod.status.phase == "Pending" and pod.spec.restart_policy == "Always"
    assert pod.spec.termination_grace_period_seconds == 30 and pod.status.qos_class == "BestEffort"
    with pytest.raises(ApiException) as e:
        await v1.read_namespaced_pod_log("p", "default")
    assert e.value.status == 400
    api_server.store.log_provider = lambda ns, name, container: f"{ns}/{name}/{container}\nline 2\nline 3\n"
    assert await v1.read_namespaced_pod_log("p", "default") == "default/p/main\nline 2\nline 3\n"
    assert await v1.read_namespaced_pod_log("p", "default", tail_lines=1) == "line 3\n"
    with pytest.raises(ApiException) as e:
        await v1.read_namespaced_pod_log("p", "default", container="nope")
    assert e.value.status == 400


async def test_events_as_kubespawner_reads_them(v1, api_server):
    store = api_server.store
    pod = await v1.create_namespaced_pod("default", make_pod("jupyter-ada"))
    rv = (await v1.list_namespaced_event("default", field_selector="involvedObject.kind=Pod",
                                         resource_version="0", resource_version_match="NotOlderThan"
                                         )).metadata.resource_version
    store.create("events", {
        "metadata": {"name": "jupyter-ada.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "jupyter-ada", "namespace": "default", "uid": pod.metadata.uid},
        "reason": "Scheduled", "message": "Successfully assigned default/jupyter-ada to n1", "type": "Normal",
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z", "eventTime": None,
        "count": 1, "source": {"component": "default-scheduler"}})
    store.create("events", {
        "metadata": {"name": "n1.1", "namespace": "default"}, "involvedObject": {"kind": "Node", "name": "n1"},
        "reason": "NodeReady", "message": "", "type": "Normal", "lastTimestamp": None, "eventTime": None})
    events = await collect(v1.list_namespaced_event, "default", field_selector="involvedObject.kind=Pod",
                           resource_version=rv, timeout_seconds=1)
    assert [(t, n) for t, n, _ in events] == [("ADDED", "jupyter-ada.1")]
    raw = await v1.list_namespaced_event("default", field_selector="involvedObject.name=jupyter-ada",
                                         _preload_content=False)
    item = json.loads(await raw.read())["items"][0]
    assert "lastTimestamp" in item and "eventTime" in item and item["eventTime"] is None
