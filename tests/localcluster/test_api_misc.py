"""Smaller parts of the API: tables, health, namespaces, binding, dry runs, watch paths, disconnects."""

from __future__ import annotations

import asyncio
import json

import pytest
from lc_apitools import call, make_node, make_pod
from lc_clustertools import wait_for

pytestmark = pytest.mark.timeout(60)
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"


async def test_health_and_discovery(api_server):
    for path in ("/healthz", "/readyz", "/livez"):
        assert (await call(api_server, "GET", path))[:2] == (200, "ok")
    code, body, _ = await call(api_server, "GET", "/api")
    assert code == 200 and body["versions"] == ["v1"]
    code, body, _ = await call(api_server, "GET", "/apis")
    assert code == 200 and body["kind"] == "APIGroupList"
    code, body, _ = await call(api_server, "GET", "/openapi/v2")
    assert code == 404 and body["kind"] == "Status"  # clients treat this as "no OpenAPI"


async def test_table_output(api_server):
    api_server.store.create("nodes", make_node("n1"))
    api_server.store.update("nodes", "n1", lambda n: n["spec"].update(unschedulable=True))
    code, table, _ = await call(api_server, "GET", "/api/v1/nodes", accept=TABLE)
    assert code == 200 and table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:5] == ["Name", "Status", "Roles", "Age", "Version"]
    row = table["rows"][0]
    assert row["cells"][:2] == ["n1", "Ready,SchedulingDisabled"]
    # kubectl's printer: a Ready condition that is not True is NotReady, even when Unknown
    # (a powered-off cloud node); only a node without the condition is Unknown.
    api_server.store.create("nodes", make_node("off"))
    api_server.store.update("nodes", "off", lambda n: n["status"]["conditions"][0].update(status="Unknown"))
    api_server.store.create("nodes", make_node("new"))
    api_server.store.update("nodes", "new", lambda n: n["status"].update(conditions=[]))
    code, table, _ = await call(api_server, "GET", "/api/v1/nodes", accept=TABLE)
    assert {r["cells"][0]: r["cells"][1] for r in table["rows"]} == {
        "n1": "Ready,SchedulingDisabled", "off": "NotReady", "new": "Unknown"}
    assert row["object"]["kind"] == "PartialObjectMetadata" and row["object"]["metadata"]["name"] == "n1"
    code, table, _ = await call(api_server, "GET", "/api/v1/nodes/n1?includeObject=Object", accept=TABLE)
    assert table["rows"][0]["object"]["status"]["allocatable"]["cpu"] == "4"
    code, plain, _ = await call(api_server, "GET", "/api/v1/nodes")
    assert plain["kind"] == "NodeList" and plain["items"][0]["metadata"]["name"] == "n1"


async def test_a_claim_is_created_bound_and_listed_as_kubectl_shows_it(api_server):
    """KubeSpawner's storage_pvc_ensure creates a claim per user: it was a
    404, and no such hub could start a server."""
    claims = "/api/v1/namespaces/default/persistentvolumeclaims"
    claim = {"metadata": {"name": "claim-bob"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "std",
                                                         "resources": {"requests": {"storage": "10Gi"}}}}
    code, created, _ = await call(api_server, "POST", claims, body=claim)
    assert code == 201 and created["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                                                 "capacity": {"storage": "10Gi"}}
    assert (await call(api_server, "POST", claims, body=claim))[0] == 409  # KubeSpawner's "exists: use it"
    code, table, _ = await call(api_server, "GET", claims, accept=TABLE)
    assert code == 200 and table["rows"][0]["cells"][:6] == ["claim-bob", "Bound", "pvc-claim-bob", "10Gi", "RWO",
                                                              "std"]
    code, body, _ = await call(api_server, "GET", "/api/v1")
    assert {"name": "persistentvolumeclaims", "shortNames": ["pvc"]}.items() <= next(
        r for r in body["resources"] if r["name"] == "persistentvolumeclaims").items()
    assert (await call(api_server, "DELETE", claims + "/claim-bob"))[0] == 200


async def test_binding_dry_run_and_put(api_server):
    store = api_server.store
    store.create("nodes", make_node("n1"))
    code, body, _ = await call(api_server, "POST", "/api/v1/namespaces/default/pods?dryRun=All", body=make_pod("dry"))
    assert code == 201 and body["metadata"]["name"] == "dry"
    assert store.list("pods")[0] == []
    assert (await call(api_server, "POST", "/api/v1/namespaces/default/pods", body=make_pod("p")))[0] == 201
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}
    assert (await call(api_server, "POST", "/api/v1/namespaces/default/pods/p/binding", body=binding))[0] == 201
    assert store.get("pods", "p")["spec"]["nodeName"] == "n1"
    code, body, _ = await call(api_server, "POST", "/api/v1/namespaces/default/pods/p/binding", body=binding)
    assert code == 409 and body["reason"] == "Conflict"
    pod = store.get("pods", "p")
    pod["metadata"]["labels"] = {"changed": "yes"}
    pod["status"]["phase"] = "Succeeded"  # ignored: status changes only through /status
    code, body, _ = await call(api_server, "PUT", "/api/v1/namespaces/default/pods/p", body=pod)
    assert code == 200 and body["metadata"]["labels"] == {"changed": "yes"} and body["status"]["phase"] == "Pending"
    code, body, _ = await call(api_server, "PUT", "/api/v1/namespaces/default/pods/p/status", body=pod)
    assert code == 409  # pod carries the version from before the first PUT
    pod = store.get("pods", "p")
    pod["status"]["phase"] = "Succeeded"
    pod["metadata"]["labels"] = {"ignored": "on /status"}
    code, body, _ = await call(api_server, "PUT", "/api/v1/namespaces/default/pods/p/status", body=pod)
    assert code == 200 and body["status"]["phase"] == "Succeeded" and body["metadata"]["labels"] == {"changed": "yes"}
    code, body, _ = await call(api_server, "DELETE", "/api/v1/namespaces/default/pods/p?dryRun=All")
    assert code == 200 and store.get("pods", "p")
    code, body, _ = await call(api_server, "DELETE", "/api/v1/namespaces/default/pods/p",
                               body={"preconditions": {"uid": "someone-else"}})
    assert code == 409
    code, body, _ = await call(api_server, "DELETE", "/api/v1/namespaces/default/pods/p")
    assert code == 200 and store.list("pods")[0] == []  # Succeeded: no kubelet needed


async def test_namespace_lifecycle(api_server):
    store = api_server.store
    code, ns, _ = await call(api_server, "POST", "/api/v1/namespaces", body={"metadata": {"name": "team-a"}})
    assert code == 201 and ns["status"]["phase"] == "Active"
    assert (await call(api_server, "POST", "/api/v1/namespaces/team-a/pods", body=make_pod("p")))[0] == 201
    store.create("events", {"metadata": {"name": "e", "namespace": "team-a"}, "involvedObject": {"kind": "Pod"},
                            "lastTimestamp": None, "eventTime": None})
    code, _, _ = await call(api_server, "DELETE", "/api/v1/namespaces/team-a")
    assert code == 200
    assert store.list("pods", "team-a")[0] == [] and store.list("events", "team-a")[0] == []
    assert (await call(api_server, "GET", "/api/v1/namespaces/team-a"))[0] == 404


async def test_legacy_watch_path_and_single_object_watch(api_server):
    store = api_server.store
    store.create("pods", make_pod("a"))
    store.create("pods", make_pod("b"))
    rv = store.resource_version

    async def later():
        await asyncio.sleep(0.2)
        store.update("pods", "a", lambda p: p["metadata"].update(labels={"x": "1"}))
        store.update("pods", "b", lambda p: p["metadata"].update(labels={"x": "1"}))
    task = asyncio.create_task(later())
    code, body, _ = await call(api_server, "GET", f"/api/v1/watch/namespaces/default/pods/b?resourceVersion={rv}"
                                                  "&timeoutSeconds=1")
    await task
    events = [json.loads(line) for line in body.splitlines()] if isinstance(body, str) else [body]
    assert code == 200 and [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("MODIFIED", "b")]


async def test_disconnected_watch_releases_its_subscription(api_server):
    reader, writer = await asyncio.open_connection("127.0.0.1", api_server.port)
    writer.write(b"GET /api/v1/namespaces/default/pods?watch=true&resourceVersion=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    assert b"200 OK" in await reader.readuntil(b"\r\n\r\n")
    await wait_for(lambda: len(api_server.store._subscribers["pods"]) == 1, what="the watch subscribed")
    writer.close()
    await wait_for(lambda: not api_server.store._subscribers["pods"], what="the subscription released")


async def test_server_shutdown_ends_watches(api_server):
    task = asyncio.create_task(call(api_server, "GET", "/api/v1/nodes?watch=1&resourceVersion=1&timeoutSeconds=30"))
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    api_server.store.close_subscriptions()
    code, _, _ = await asyncio.wait_for(task, 25)
    assert code == 200 and loop.time() - t0 < 20  # ended by the shutdown, not by its 30 s timeout


async def test_pod_log_follow(api_server):
    store = api_server.store
    store.create("nodes", make_node("n1"))
    store.create("pods", make_pod("p", node="n1"))
    store.update("pods", "p", lambda p: p["status"].update(phase="Running") if "status" in p
                 else p.update(status={"phase": "Running"}))
    log = ["first\n"]
    store.log_provider = lambda ns, name, container: "".join(log)

    async def more():
        await asyncio.sleep(0.3)
        log.append("second\n")
        await asyncio.sleep(0.3)
        store.update("pods", "p", lambda p: p["status"].update(phase="Succeeded"))
    task = asyncio.create_task(more())
    code, text, _ = await call(api_server, "GET", "/api/v1/namespaces/default/pods/p/log?follow=true")
    await task
    assert code == 200 and text == "first\nsecond\n"


async def test_table_watch_for_kubectl_get_watch(api_server):
    store = api_server.store
    store.create("pods", make_pod("a"))
    store.create("pods", make_pod("b"))
    code, body, _ = await call(api_server, "GET", "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1",
                               accept=TABLE)
    events = [json.loads(line) for line in body.splitlines()]
    assert code == 200 and [e["type"] for e in events] == ["ADDED", "ADDED"]
    first, second = events[0]["object"], events[1]["object"]
    assert first["kind"] == second["kind"] == "Table"
    assert first["columnDefinitions"] and not second["columnDefinitions"]  # headers once, as the real server
    assert [first["rows"][0]["cells"][0], second["rows"][0]["cells"][0]] == ["a", "b"]


def test_ages_read_like_kubectl():
    import datetime

    from elastichub.localcluster.tables import human_age
    now = datetime.datetime(2026, 1, 10, tzinfo=datetime.timezone.utc)

    def ago(**kw) -> str:
        return human_age((now - datetime.timedelta(**kw)).strftime("%Y-%m-%dT%H:%M:%SZ"), now)
    assert [ago(seconds=5), ago(seconds=150), ago(minutes=45), ago(hours=5, minutes=3), ago(hours=30),
            ago(days=3, hours=2), ago(days=20)] == ["5s", "2m30s", "45m", "5h3m", "30h", "3d2h", "20d"]
    assert human_age(None) == "<unknown>" and human_age("garbage") == "<invalid>"
