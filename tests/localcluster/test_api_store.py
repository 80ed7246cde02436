"""Store, selectors and patch logic of the local cluster's API server (no HTTP)."""

from __future__ import annotations

import pytest

from elastichub.localcluster.patch import PatchError, apply_patch, json_merge_patch, json_patch, strategic_merge_patch
from elastichub.localcluster.selectors import SelectorError, parse_field_selector, parse_label_selector
from elastichub.localcluster.store import ApiError, Store

from lc_apitools import make_node, make_pod


def labelled(**labels) -> dict:
    return {"metadata": {"labels": labels}}


@pytest.mark.parametrize("selector, labels, expected", [
    ("app=x", {"app": "x"}, True),
    ("app==x", {"app": "y"}, False),
    ("app!=x", {}, True),
    ("app!=x", {"app": "x"}, False),
    ("app in (x, y)", {"app": "y"}, True),
    ("app in (x,y)", {}, False),
    ("app notin (x,y)", {}, True),
    ("app notin (x,y)", {"app": "x"}, False),
    ("app", {"app": ""}, True),
    ("!app", {"app": "x"}, False),
    ("!app", {"other": "x"}, True),
    ("elastichub.io/tier=cloud,app in (a,b),!gone", {"elastichub.io/tier": "cloud", "app": "b"}, True),
    ("elastichub.io/tier=cloud,app in (a,b),!gone", {"elastichub.io/tier": "cloud", "app": "b", "gone": "1"}, False),
    ("n>3", {"n": "4"}, True),
    ("n<3", {"n": "4"}, False),
    ("", {"any": "thing"}, True),
])
def test_label_selectors(selector, labels, expected):
    assert parse_label_selector(selector)(labelled(**labels)) is expected


@pytest.mark.parametrize("selector", ["app in x", "app=(", "=x", "app in ()", "a,,b", "app=x,", "bad key!=x",
                                      "app=" + "v" * 70, "a notin (x"])
def test_bad_label_selectors_are_rejected(selector):
    with pytest.raises(SelectorError):
        parse_label_selector(selector)


def test_field_selectors():
    pod = {"metadata": {"name": "p", "namespace": "default"}, "spec": {"nodeName": "n1"},
           "status": {"phase": "Running"}}
    assert parse_field_selector("spec.nodeName=n1,status.phase!=Failed", "pods")(pod)
    assert not parse_field_selector("spec.nodeName==n2", "pods")(pod)
    assert parse_field_selector("spec.nodeName=", "pods")({"metadata": {}, "spec": {}})  # unbound pods
    assert parse_field_selector("metadata.name=p,metadata.namespace=default", "pods")(pod)
    event = {"metadata": {}, "involvedObject": {"kind": "Pod", "name": "p"}}
    assert parse_field_selector("involvedObject.kind=Pod,involvedObject.name=p", "events")(event)
    assert parse_field_selector("spec.unschedulable=true", "nodes")({"spec": {"unschedulable": True}})
    with pytest.raises(SelectorError, match="field label not supported: spec.nodeName"):
        parse_field_selector("spec.nodeName=n1", "events")
    with pytest.raises(SelectorError):
        parse_field_selector("status.phase", "pods")


def test_create_get_list_update_delete_and_versions():
    store = Store()
    start = int(store.resource_version)
    node = store.create("nodes", make_node("n1"))
    assert node["metadata"]["resourceVersion"] == str(start + 1) and node["metadata"]["uid"]
    assert node["metadata"]["creationTimestamp"].endswith("Z")
    pod = store.create("pods", make_pod("p1", {"app": "x"}))
    assert pod["metadata"]["namespace"] == "default"
    pod["metadata"]["labels"]["app"] = "changed-copy"  # callers hold copies, never internals
    assert store.get("pods", "p1")["metadata"]["labels"]["app"] == "x"
    with pytest.raises(ApiError) as e:
        store.create("pods", make_pod("p1"))
    assert e.value.code == 409 and e.value.status()["reason"] == "AlreadyExists"
    items, rv = store.list("pods", "default", label_selector="app=x")
    assert [p["metadata"]["name"] for p in items] == ["p1"] and rv == store.resource_version
    unchanged = store.update("pods", "p1", lambda p: None)
    assert unchanged["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]
    changed = store.update("pods", "p1", lambda p: p["metadata"]["labels"].update(app="y"))
    assert int(changed["metadata"]["resourceVersion"]) > int(pod["metadata"]["resourceVersion"])
    with pytest.raises(ApiError) as e:
        store.update("pods", "p1", lambda p: p["metadata"].update(name="other"))
    assert e.value.code == 422
    gone = store.delete("pods", "p1")
    assert int(gone["metadata"]["resourceVersion"]) == int(store.resource_version)
    with pytest.raises(ApiError) as e:
        store.get("pods", "p1")
    assert e.value.code == 404 and e.value.status()["kind"] == "Status"
    with pytest.raises(ApiError) as e:
        store.create("pods", dict(make_pod("p2"), metadata={"name": "p2", "namespace": "nowhere"}))
    assert e.value.code == 404


def test_generate_name():
    store = Store()
    pod = store.create("pods", {"metadata": {"generateName": "jupyter-"}, "spec": {"containers": []}})
    assert pod["metadata"]["name"].startswith("jupyter-") and len(pod["metadata"]["name"]) == len("jupyter-") + 5


async def test_subscription_replay_filters_and_expiry():
    store = Store(history_size=4)
    store.create("pods", make_pod("a", {"app": "x"}))
    rv = store.resource_version
    live = store.subscribe("pods", label_selector="app=x")
    store.create("pods", make_pod("b", {"app": "x"}))
    store.update("pods", "b", lambda p: p["metadata"]["labels"].update(app="y"))  # leaves the selection
    store.update("pods", "b", lambda p: p["metadata"]["labels"].update(app="x"))  # comes back
    store.create("pods", make_pod("c", {"app": "other"}))
    got = [(t, o["metadata"]["name"]) for t, o in live.pending()]
    assert got == [("ADDED", "b"), ("DELETED", "b"), ("ADDED", "b")]
    replay = store.subscribe("pods", since=rv)
    assert [t for t, _ in replay.pending()] == ["ADDED", "MODIFIED", "MODIFIED", "ADDED"]
    store.delete("pods", "c")  # pushes the oldest change out of the 4-deep history
    with pytest.raises(ApiError) as e:
        store.subscribe("pods", since=rv)
    assert e.value.code == 410 and e.value.reason == "Expired"
    initial = store.subscribe("pods", initial=True)
    assert sorted(o["metadata"]["name"] for _, o in initial.pending()) == ["a", "b"]
    live.close()
    assert [ev async for ev in live] == []


async def test_slow_subscriber_is_cut_off():
    store = Store(max_backlog=3)
    sub = store.subscribe("pods")
    for i in range(5):
        store.create("pods", make_pod(f"p{i}"))
    assert sub.overflowed and sub.closed
    assert len([ev async for ev in sub]) == 3


def test_strategic_merge_patch():
    node = make_node("n1")
    node["spec"]["taints"] = [{"key": "a", "effect": "NoSchedule"}]
    out = strategic_merge_patch(node, {"spec": {"unschedulable": True, "taints": [{"key": "b", "effect": "NoExecute"}]},
                                       "metadata": {"labels": {"elastichub.io/tier": None, "x": "1"}},
                                       "status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert out["spec"] == {"unschedulable": True, "taints": [{"key": "b", "effect": "NoExecute"}]}  # replaced
    assert out["metadata"]["labels"] == {"kubernetes.io/hostname": "n1", "x": "1"}
    ready = out["status"]["conditions"][0]
    assert ready["status"] == "False" and ready["reason"] == "KubeletReady"  # merged by type
    pod = make_pod("p")
    pod["spec"]["containers"].append({"name": "side", "image": "i"})
    out = strategic_merge_patch(pod, {"spec": {"containers": [{"name": "main", "image": "new"},
                                                              {"name": "side", "$patch": "delete"}],
                                               "$setElementOrder/containers": [{"name": "main"}]}})
    assert out["spec"]["containers"] == [{"name": "main", "image": "new", "command": ["sleep", "1"]}]
    out = strategic_merge_patch({"metadata": {"finalizers": ["a"]}},
                                {"metadata": {"finalizers": ["b"], "$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert out["metadata"]["finalizers"] == ["b"]
    assert strategic_merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"$patch": "replace", "d": 3}}) == {"a": {"d": 3}}


def test_merge_and_json_patch():
    assert json_merge_patch({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None}, "l": [2]}) == {"a": {"c": 2}, "l": [2]}
    doc = {"metadata": {"labels": {"a/b": "1"}}, "spec": {"taints": []}}
    out = json_patch(doc, [
        {"op": "add", "path": "/spec/unschedulable", "value": True},
        {"op": "add", "path": "/spec/taints/-", "value": {"key": "k", "effect": "NoSchedule"}},
        {"op": "remove", "path": "/metadata/labels/a~1b"},
        {"op": "test", "path": "/spec/unschedulable", "value": True},
        {"op": "copy", "from": "/spec/unschedulable", "path": "/spec/copied"},
        {"op": "move", "from": "/spec/copied", "path": "/spec/moved"},
        {"op": "replace", "path": "/spec/moved", "value": False},
    ])
    assert out == {"metadata": {"labels": {}}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}],
                                                        "unschedulable": True, "moved": False}}
    assert doc["spec"] == {"taints": []}  # the original is untouched
    with pytest.raises(PatchError) as e:
        json_patch(doc, [{"op": "test", "path": "/spec/taints", "value": [1]}])
    assert e.value.code == 422
    with pytest.raises(PatchError) as e:
        json_patch(doc, [{"op": "remove", "path": "/nope/deeper"}])
    assert e.value.code == 422
    with pytest.raises(PatchError) as e:
        json_patch(doc, {"op": "add"})
    assert e.value.code == 400
    with pytest.raises(PatchError) as e:
        apply_patch("application/apply-patch+yaml", doc, {})
    assert e.value.code == 415
