"""Bad input gets Kubernetes Status errors with the right code, never a 500."""

from __future__ import annotations

import copy
import random

import pytest
from lc_apitools import call, make_node, make_pod

pytestmark = pytest.mark.timeout(60)


def assert_status(code_body, code: int, reason: str, message_part: str = "") -> dict:
    got_code, body, _ = code_body
    assert got_code == code, body
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert body["code"] == code and body["reason"] == reason
    assert message_part in body["message"]
    return body


PODS = "/api/v1/namespaces/default/pods"


async def test_malformed_and_mistyped_bodies(api_server):
    assert_status(await call(api_server, "POST", PODS, raw=b'{"metadata": {"name": "x"'), 400, "BadRequest",
                  "not valid JSON")
    assert_status(await call(api_server, "POST", PODS, body=[1, 2]), 400, "BadRequest", "JSON object")
    assert_status(await call(api_server, "POST", PODS, body={"metadata": {"name": "x"}, "spec": "nope"}),
                  400, "BadRequest", "cannot unmarshal string into Go struct field spec")
    assert_status(await call(api_server, "POST", PODS, body=dict(make_pod("x"), kind="Node")), 400, "BadRequest")
    assert_status(await call(api_server, "POST", PODS, body=make_pod("x"), content_type="application/yaml"),
                  415, "UnsupportedMediaType")


async def test_unknown_fields_warn_by_default_and_fail_when_strict(api_server):
    pod = make_pod("extra")
    pod["spec"]["bogusField"] = 1
    pod["spec"]["containers"][0]["alsoBogus"] = True
    code, body, headers = await call(api_server, "POST", PODS, body=pod)
    assert code == 201
    warnings = headers.get_list("Warning")
    assert any('unknown field \\"spec.bogusField\\"' in w for w in warnings), warnings
    assert any("spec.containers[0].alsoBogus" in w for w in warnings), warnings
    assert "bogusField" not in api_server.store.get("pods", "extra")["spec"]  # dropped, as the real server does
    pod["metadata"]["name"] = "strict"
    assert_status(await call(api_server, "POST", PODS + "?fieldValidation=Strict", body=pod), 400, "BadRequest",
                  'strict decoding error: unknown field "spec.')
    assert 'unknown field "spec.bogusField"' in (await call(api_server, "POST", PODS + "?fieldValidation=Strict",
                                                            body=pod))[1]["message"]
    code, _, headers = await call(api_server, "POST", PODS + "?fieldValidation=Ignore", body=pod)
    assert code == 201 and not headers.get_list("Warning")
    assert_status(await call(api_server, "POST", PODS + "?fieldValidation=Loud", body=pod), 400, "BadRequest")


async def test_invalid_objects_are_422_with_causes(api_server):
    body = assert_status(await call(api_server, "POST", PODS, body=make_pod("Not_A_DNS_Name")), 422, "Invalid",
                         'Pod "Not_A_DNS_Name" is invalid: metadata.name')
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    no_containers = {"metadata": {"name": "empty"}, "spec": {"containers": []}}
    body = assert_status(await call(api_server, "POST", PODS, body=no_containers), 422, "Invalid", "spec.containers")
    no_image = {"metadata": {"name": "noimage"}, "spec": {"containers": [{"name": "c"}]}}
    assert_status(await call(api_server, "POST", PODS, body=no_image), 422, "Invalid", "spec.containers[0].image")
    no_spec = {"metadata": {"name": "nospec"}}
    assert_status(await call(api_server, "POST", PODS, body=no_spec), 422, "Invalid", "spec: Required value")
    bad_label = make_pod("badlabel", {"app": "has spaces"})
    assert_status(await call(api_server, "POST", PODS, body=bad_label), 422, "Invalid", "metadata.labels")
    bad_qty = make_pod("badqty")
    bad_qty["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    assert_status(await call(api_server, "POST", PODS, body=bad_qty), 422, "Invalid", "resources.requests[cpu]")
    above_limit = make_pod("abovelimit")  # a request above its limit, as a real API server refuses it
    above_limit["spec"]["containers"][0]["resources"] = {"requests": {"memory": 4 * 2**30}, "limits": {"memory": "2Gi"}}
    assert_status(await call(api_server, "POST", PODS, body=above_limit), 422, "Invalid",
                  "resources.requests[memory]: Invalid value: 4294967296: must be less than or equal to memory limit")
    no_storage = {"metadata": {"name": "claim-x"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    assert_status(await call(api_server, "POST", "/api/v1/namespaces/default/persistentvolumeclaims", body=no_storage),
                  422, "Invalid", "spec.resources[storage]: Required value")
    no_name = {"metadata": {}, "spec": make_pod("x")["spec"]}
    assert_status(await call(api_server, "POST", PODS, body=no_name), 422, "Invalid", "name or generateName")
    assert_status(await call(api_server, "POST", "/api/v1/namespaces", body={"metadata": {"name": "a.b"}}),
                  422, "Invalid", "RFC 1123 label")
    assert api_server.store.list("pods")[0] == []


async def test_conflicts_and_missing_things(api_server):
    assert (await call(api_server, "POST", PODS, body=make_pod("p")))[0] == 201
    assert_status(await call(api_server, "POST", PODS, body=make_pod("p")), 409, "AlreadyExists", 'pods "p" already exists')
    assert_status(await call(api_server, "GET", PODS + "/nope"), 404, "NotFound", 'pods "nope" not found')
    assert_status(await call(api_server, "DELETE", "/api/v1/namespaces/default/persistentvolumeclaims/claim-ada"),
                  404, "NotFound")
    assert_status(await call(api_server, "GET", "/no/such/path"), 404, "NotFound")
    assert_status(await call(api_server, "POST", "/api/v1/namespaces/ghost/pods", body=make_pod("p")), 404,
                  "NotFound", 'namespaces "ghost" not found')
    other_ns = dict(make_pod("q"), metadata={"name": "q", "namespace": "kube-system"})
    assert_status(await call(api_server, "POST", PODS, body=other_ns), 400, "BadRequest", "does not match")
    assert_status(await call(api_server, "DELETE", "/api/v1/namespaces/default"), 403, "Forbidden")
    current = api_server.store.get("pods", "p")
    stale = dict(current, metadata=dict(current["metadata"], resourceVersion="1"))
    assert_status(await call(api_server, "PUT", PODS + "/p", body=stale), 409, "Conflict", "has been modified")
    changed = dict(current, spec=dict(current["spec"], restartPolicy="Never"))
    assert_status(await call(api_server, "PUT", PODS + "/p", body=changed), 422, "Invalid",
                  "pod updates may not change fields")
    assert_status(await call(api_server, "PUT", PODS + "/other", body=current), 400, "BadRequest", "does not match")
    # Bodies that are not stored objects are typed too: a Binding, DeleteOptions.
    for target in ("n1", {"name": ["n1"]}):
        assert_status(await call(api_server, "POST", PODS + "/p/binding", body={"target": target}), 400,
                      "BadRequest", "cannot be handled as a Binding")
    assert_status(await call(api_server, "POST", PODS + "/p/binding", body={"target": {}}), 422, "Invalid",
                  "target.name")
    for options in ({"preconditions": "uid"}, {"gracePeriodSeconds": "5"}, []):
        assert_status(await call(api_server, "DELETE", PODS + "/p", body=options), 400, "BadRequest",
                      "DeleteOptions")
    assert api_server.store.get("pods", "p")["metadata"]["uid"] == current["metadata"]["uid"]
    # A grace period beyond any date: the deletion is marked at the last representable time.
    api_server.store.create("nodes", make_node("n1"))
    assert (await call(api_server, "POST", PODS, body=make_pod("bound", node="n1")))[0] == 201
    for grace in ("?gracePeriodSeconds=" + "9" * 30, "?gracePeriodSeconds=999999999999"):  # the shorter wins
        code, pod, _ = await call(api_server, "DELETE", PODS + "/bound" + grace)
        assert code == 200 and pod["metadata"]["deletionTimestamp"] == "9999-12-31T23:59:59Z", pod
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 999999999999


async def test_bad_requests_on_queries_methods_and_patches(api_server):
    api_server.store.create("nodes", make_node("n1"))
    assert_status(await call(api_server, "GET", PODS + "?labelSelector=app%20in%20x"), 400, "BadRequest",
                  "unable to parse requirement")
    assert_status(await call(api_server, "GET", PODS + "?watch=1&resourceVersion=abc"), 400, "BadRequest",
                  "resourceVersion")
    assert_status(await call(api_server, "GET", PODS + "?resourceVersionMatch=NotOlderThan"), 400, "BadRequest")
    assert_status(await call(api_server, "GET", PODS + "?timeoutSeconds=soon&watch=true"), 400, "BadRequest")
    assert_status(await call(api_server, "PUT", PODS, body={}), 405, "MethodNotAllowed")
    assert_status(await call(api_server, "OPTIONS", PODS), 405, "MethodNotAllowed")
    assert_status(await call(api_server, "PATCH", "/api/v1/nodes/n1", body={"spec": {}},
                             content_type="application/apply-patch+yaml"), 415, "UnsupportedMediaType")
    assert_status(await call(api_server, "PATCH", "/api/v1/nodes/n1", raw=b"{nope",
                             content_type="application/merge-patch+json"), 400, "BadRequest")
    assert_status(await call(api_server, "PATCH", "/api/v1/nodes/n1", body={"spec": {"unschedulable": "yes"}},
                             content_type="application/merge-patch+json"), 400, "BadRequest", "unschedulable")
    assert_status(await call(api_server, "PATCH", "/api/v1/nodes/n1", body={"metadata": {"name": "n2"}},
                             content_type="application/merge-patch+json"), 422, "Invalid", "immutable")
    assert_status(await call(api_server, "PATCH", "/api/v1/nodes/n1", body=[{"op": "jump", "path": "/x"}],
                             content_type="application/json-patch+json"), 400, "BadRequest")
    assert_status(await call(api_server, "PATCH", "/api/v1/nodes/n1",
                             body={"spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}},
                             content_type="application/strategic-merge-patch+json"), 422, "Invalid", "effect")
    assert api_server.store.get("nodes", "n1")["spec"] == {}  # nothing half-applied


async def test_mangled_pods_never_cause_a_server_error(api_server):
    """Random damage to a valid pod: every answer is a success or a 4xx Status."""
    rng = random.Random(7)
    junk = [None, 0, -1, 1.5, True, "", "x" * 300, [], [1], [None], {}, {"a": None}, "Bad Name!", 70000]

    def mangle(obj):
        if isinstance(obj, dict) and obj and rng.random() < 0.7:
            key = rng.choice(list(obj))
            obj[key] = mangle(obj[key])
            return obj
        if isinstance(obj, list) and obj and rng.random() < 0.7:
            i = rng.randrange(len(obj))
            obj[i] = mangle(obj[i])
            return obj
        return copy.deepcopy(rng.choice(junk))

    for i in range(150):
        pod = make_pod(f"p{i}", {"app": "x"}, "n1")
        pod["spec"]["containers"][0].update(ports=[{"containerPort": 8888, "name": "notebook-port"}],
                                            env=[{"name": "A", "value": "1"}],
                                            resources={"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}})
        for _ in range(rng.randint(1, 3)):
            pod = mangle(pod)
        code, body, _ = await call(api_server, "POST", PODS, body=pod)
        assert code in (201, 400, 404, 409, 422), (pod, body)
        if code != 201:
            assert body["kind"] == "Status" and body["code"] == code


async def test_mangled_patches_never_cause_a_server_error(api_server):
    """Random patches of all three types on a node: a success or a 4xx Status, and the
    node stays readable and well-formed afterwards."""
    rng = random.Random(7)
    api_server.store.create("nodes", make_node("n1"))
    junk = [None, 0, True, "", "x", [], [None], [{"key": "k", "effect": "NoSchedule"}], {}, {"a": None},
            {"$patch": "delete"}, {"$patch": "replace"}, [{"type": "Ready", "$patch": "delete"}]]
    paths = ["spec", "spec/unschedulable", "spec/taints", "metadata/labels", "metadata/labels/a", "status",
             "status/conditions", "status/conditions/0", "metadata", "spec/taints/-", "kind", "nope/deeper"]
    types = ["application/merge-patch+json", "application/strategic-merge-patch+json",
             "application/json-patch+json"]
    for _ in range(300):
        path, value, ctype = rng.choice(paths), copy.deepcopy(rng.choice(junk)), rng.choice(types)
        if ctype == "application/json-patch+json":
            body = [{"op": rng.choice(["add", "replace", "remove", "test"]), "path": "/" + path, "value": value}]
        else:
            body = value
            for part in reversed(path.split("/")):
                body = {part: body}
        code, resp, _ = await call(api_server, "PATCH", "/api/v1/nodes/n1", body=body, content_type=ctype)
        assert code in (200, 400, 409, 415, 422), (body, resp)
        code, node, _ = await call(api_server, "GET", "/api/v1/nodes/n1")
        assert code == 200 and node["metadata"]["name"] == "n1"
        code, _, _ = await call(api_server, "GET", "/api/v1/nodes?labelSelector=a%3Dx&fieldSelector=spec.unschedulable%3Dtrue")
        assert code == 200


async def test_absurdly_nested_bodies_are_rejected(api_server):
    for depth in (150, 100_000):
        raw = b"[" * depth + b"]" * depth
        assert_status(await call(api_server, "POST", PODS, raw=raw), 400, "BadRequest")
        nested = b'{"metadata":{"name":"deep"},"spec":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"
        assert_status(await call(api_server, "POST", PODS, raw=nested), 400, "BadRequest")
    assert (await call(api_server, "POST", PODS, raw=b"null"))[0] == 400  # null is not an object either
