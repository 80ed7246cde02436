"""The pod pieces ElasticSpawner writes, without a cluster."""

from __future__ import annotations

import pytest

from elastichub import podmeta, podspec


def test_labels_mark_the_pod_managed_and_say_whether_it_may_move():
    assert podspec.pod_labels(True) == {podmeta.MANAGED_LABEL: "true", podmeta.MIGRATABLE_LABEL: "true"}
    assert podspec.pod_labels(False)[podmeta.MIGRATABLE_LABEL] == "false"


def test_annotations_carry_raw_names_that_no_label_could_hold():
    ann = podspec.pod_annotations("Zoë Ünïcode@example.org", "", "0.1.0")
    assert ann == {podmeta.USER_ANNOTATION: "Zoë Ünïcode@example.org",
                   podmeta.SERVER_NAME_ANNOTATION: "", podmeta.VERSION_ANNOTATION: "0.1.0",
                   podmeta.DELETE_GRACE_ANNOTATION: "1"}


def test_tier_preferences_are_one_weighted_term_per_tier():
    terms = podspec.tier_preferences("elastichub.io/tier", [("on-prem", 10), ("cloud", 1)])
    assert [t["weight"] for t in terms] == [10, 1]
    assert terms[0]["preference"]["matchExpressions"] == [
        {"key": "elastichub.io/tier", "operator": "In", "values": ["on-prem"]}]
    assert terms[1]["preference"]["matchExpressions"][0]["values"] == ["cloud"]


@pytest.mark.parametrize("value", ["", "-x", "x-", "a" * 64, "on prem", "é", None])
def test_bad_label_values_are_named(value):
    assert repr(value) in podspec.label_value_problem(value)


@pytest.mark.parametrize("value", ["on-prem", "cloud", "A1", "a" * 63, "x.y_z"])
def test_good_label_values_pass(value):
    assert podspec.label_value_problem(value) is None


def test_label_keys():
    assert podspec.label_key_problem("elastichub.io/tier") is None
    assert podspec.label_key_problem("tier") is None
    assert "not a Kubernetes label key" in podspec.label_key_problem("Elastic Hub/tier")


def _pod(name, user, server="", *, managed="true", created="2026-12-01T07:00:00Z", node=None, deleting=False):
    meta = {"name": name, "creationTimestamp": created,
            "labels": {podmeta.MANAGED_LABEL: managed},
            "annotations": {podmeta.USER_ANNOTATION: user, podmeta.SERVER_NAME_ANNOTATION: server}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T08:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


def test_a_servers_pods_are_found_by_labels_not_by_name():
    pods = [
        _pod("whatever-1", "alice", node="onprem-1", created="2026-12-01T07:00:00Z"),
        _pod("jupyter-alice", "alice", "gpu"),  # another server of alice's
        _pod("jupyter-bob", "bob"),
        _pod("jupyter-alice-2", "alice", managed="false"),  # not ElasticHub's
        _pod("whatever-2", "alice", node="cloud-1", created="2026-12-01T07:05:00Z"),
    ]
    assert [p["metadata"]["name"] for p in podspec.server_pods(pods, "alice", "")] == ["whatever-1", "whatever-2"]
    # two pods for one server: the one the spawner serves from, else the newer
    assert podspec.pod_node(podspec.current_pod(pods, "alice", "")) == "cloud-1"
    assert podspec.pod_node(podspec.current_pod(pods, "alice", "", serving="whatever-1")) == "onprem-1"
    assert podspec.pod_node(podspec.current_pod(pods, "alice", "", serving="gone")) == "cloud-1"
    assert podspec.current_pod(pods, "alice", "gpu")["metadata"]["name"] == "jupyter-alice"
    assert podspec.current_pod(pods, "carol", "") is None


def test_a_pod_being_deleted_is_not_current():
    pods = [_pod("a", "alice", node="n1"), _pod("b", "alice", node="n2", created="2026-12-01T09:00:00Z",
                                               deleting=True)]
    assert podspec.pod_node(podspec.current_pod(pods, "alice", "")) == "n1"
    assert podspec.pod_node(None) is None
    assert podspec.pod_node(_pod("c", "alice")) is None


def test_route_requests_are_destination_pods_of_the_same_server():
    dest = _pod("jupyter-alice-m0a1b2c", "alice", node="onprem-1")
    dest["metadata"]["annotations"].update({podmeta.MOVE_OF_ANNOTATION: "jupyter-alice",
                                            podmeta.ROUTE_ANNOTATION: podmeta.ROUTE_REQUESTED})
    answered = _pod("x", "alice")
    answered["metadata"]["annotations"][podmeta.ROUTE_ANNOTATION] = podmeta.ROUTE_SWITCHED
    deleting = _pod("y", "alice", deleting=True)
    deleting["metadata"]["annotations"][podmeta.ROUTE_ANNOTATION] = podmeta.ROUTE_REQUESTED
    claimed = _pod("w", "alice")  # a switch a hub began and never answered: its restart answers it
    claimed["metadata"]["annotations"][podmeta.ROUTE_ANNOTATION] = podmeta.ROUTE_SWITCHING
    withdrawn = _pod("v", "alice")
    withdrawn["metadata"]["annotations"][podmeta.ROUTE_ANNOTATION] = podmeta.ROUTE_WITHDRAWN
    assert podspec.route_requests([dest, answered, deleting, _pod("z", "bob"), claimed, withdrawn]) == [dest, claimed]
    assert podspec.route_request_problem(dest, "alice", "") is None
    assert "another server" in podspec.route_request_problem(dest, "alice", "gpu")
    assert "another server" in podspec.route_request_problem(dest, "bob", "")
    assert "not the destination of a move" in podspec.route_request_problem(_pod("p", "alice"), "alice", "")
    assert "not an ElasticHub pod" in podspec.route_request_problem(_pod("p", "alice", managed="false"),
                                                                    "alice", "")


def test_progress_messages():
    assert podspec.moving_message("cloud-1", "onprem-2") == "Moving your server from cloud-1 to onprem-2"
    assert podspec.restore_message(2, 12_500_000) == (
        "Your variables will be restored when the notebook's kernel starts (2 kernels, 12.5 MB saved)")
    assert "(1 kernel, " in podspec.restore_message(1, 10)
    # A few small variables: "0.0 MB saved" read as nothing saved.
    assert podspec.restore_message(1, 4_000).endswith("(1 kernel, less than 0.1 MB saved)")
    assert podspec.restore_message(1, 50_000).endswith("(1 kernel, 0.1 MB saved)")
    assert podspec.restore_message(1, 2_000_000, unsaved=1) == (
        "Your variables will be restored when the notebook's kernel starts (1 kernel, 2.0 MB saved; "
        "1 other kernel could not save its variables: run its notebook's cells again)")


def test_an_annotation_swap_tests_the_value_it_replaces():
    assert podspec.annotation_swap("elastichub.io/route", "requested", "switching") == [
        {"op": "test", "path": "/metadata/annotations/elastichub.io~1route", "value": "requested"},
        {"op": "replace", "path": "/metadata/annotations/elastichub.io~1route", "value": "switching"}]
