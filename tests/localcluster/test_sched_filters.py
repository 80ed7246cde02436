"""The scheduler's filter and score functions, pure: no store, no server."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elastichub.localcluster.scheduler import (
    Usage,
    choose_node,
    filter_node,
    match_expression,
    node_usage,
    pod_extended,
    pod_requests,
)

from lc_apitools import make_node

TIER = "elastichub.io/tier"
# The spawner's preference, as the paper sets it: on-prem 10, cloud 1.
TIER_PREFERENCE = [
    {"weight": 10, "preference": {"matchExpressions": [{"key": TIER, "operator": "In", "values": ["on-prem"]}]}},
    {"weight": 1, "preference": {"matchExpressions": [{"key": TIER, "operator": "In", "values": ["cloud"]}]}},
]


def pod(cpu="100m", memory="1Gi", *, preferred=None, required=None, selector=None, tolerations=None, node=None,
        phase="Pending"):
    spec = {"containers": [{"name": "notebook", "image": "x",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    affinity = {}
    if preferred:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    if required:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": spec, "status": {"phase": phase}}


def node(name, tier="on-prem", **kw):
    n = make_node(name, tier, **{k: v for k, v in kw.items() if k in ("ready", "cpu", "memory")})
    if kw.get("cordoned"):
        n["spec"]["unschedulable"] = True
    if kw.get("taints"):
        n["spec"]["taints"] = kw["taints"]
    n["metadata"]["labels"].update(kw.get("labels", {}))
    return n


def test_on_prem_is_chosen_before_cloud_by_affinity_weight():
    nodes = [node("cloud-1", "cloud"), node("onprem-1")]
    # The cloud node is busier, so packing alone would pick it: the weight must win.
    usage = {"cloud-1": Usage(cpu=1000, memory=6 * 2**30, pods=3)}
    chosen, _ = choose_node(pod(preferred=TIER_PREFERENCE), nodes, usage)
    assert chosen == "onprem-1"
    assert choose_node(pod(), nodes, usage)[0] == "cloud-1"  # no preference: most allocated


def test_cloud_is_used_when_on_prem_is_full():
    nodes = [node("onprem-1", memory="4Gi"), node("cloud-1", "cloud")]
    usage = {"onprem-1": Usage(memory=3 * 2**30, pods=3)}
    assert choose_node(pod(memory="2Gi", preferred=TIER_PREFERENCE), nodes, usage)[0] == "cloud-1"
    assert choose_node(pod(memory="1Gi", preferred=TIER_PREFERENCE), nodes, usage)[0] == "onprem-1"


def test_most_allocated_packs_among_equal_weights():
    nodes = [node("a"), node("b"), node("c")]
    usage = {"a": Usage(memory=1 * 2**30), "b": Usage(memory=5 * 2**30), "c": Usage(memory=3 * 2**30)}
    assert choose_node(pod(preferred=TIER_PREFERENCE), nodes, usage)[0] == "b"
    # Equal scores: the alphabetically first node, so runs are reproducible.
    assert choose_node(pod(), [node("y"), node("x")], {})[0] == "x"


def test_resources_are_respected():
    n = node("n", cpu="2", memory="4Gi")
    assert filter_node(pod(cpu="1", memory="3Gi"), n, Usage(cpu=1000, memory=1 * 2**30), (1000, 3 * 2**30)) is None
    assert filter_node(pod(), n, Usage(cpu=1500), (600, 0)) == "Insufficient cpu"
    assert filter_node(pod(), n, Usage(memory=3 * 2**30), (0, 2**30 + 1)) == "Insufficient memory"
    chosen, message = choose_node(pod(memory="9Gi"), [node("a"), node("b")], {})
    assert chosen is None
    assert message == "0/2 nodes are available: 2 Insufficient memory."


def test_extended_resources_go_only_where_a_node_offers_them():
    """A GPU pod used to be bound to any node: a node offers an extended
    resource only when its allocatable names it, and never twice over."""
    gpu = pod()
    gpu["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    assert pod_extended(gpu) == {"nvidia.com/gpu": 1000}
    plain, offering = node("plain"), node("gpu-1")
    offering["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    chosen, _ = choose_node(gpu, [plain, offering], {})
    assert chosen == "gpu-1"
    taken = {"gpu-1": Usage(extended=Counter({"nvidia.com/gpu": 1000}))}
    chosen, message = choose_node(gpu, [plain, offering], taken)
    assert chosen is None and message == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.", message


def test_cordoned_and_not_ready_nodes_are_skipped():
    nodes = [node("a", cordoned=True), node("b", ready=False), node("c", memory="1Gi")]
    chosen, message = choose_node(pod(memory="512Mi"), nodes, {})
    assert chosen == "c"
    chosen, message = choose_node(pod(memory="2Gi"), nodes, {})
    assert chosen is None
    assert "1 node(s) were unschedulable" in message and "1 node(s) were not ready" in message
    assert "1 Insufficient memory" in message


def test_a_node_with_an_unreadable_allocatable_is_skipped_not_fatal():
    broken = node("broken")
    broken["status"]["allocatable"]["memory"] = "1e999999"  # passes the API's pattern, not the arithmetic
    chosen, _ = choose_node(pod(), [broken, node("fine")], {})
    assert chosen == "fine"
    chosen, message = choose_node(pod(), [broken], {})
    assert chosen is None and message == "0/1 nodes are available: 1 node(s) had an invalid allocatable."


def test_taints_need_tolerations():
    tainted = node("gpu", taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    soft = node("soft", taints=[{"key": "x", "effect": "PreferNoSchedule"}])
    assert "untolerated taint {nvidia.com/gpu=present: }" in filter_node(pod(), tainted, Usage(), (0, 0))
    assert filter_node(pod(), soft, Usage(), (0, 0)) is None
    for toleration in (
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists"},
        {"operator": "Exists"},
    ):
        assert filter_node(pod(tolerations=[toleration]), tainted, Usage(), (0, 0)) is None
    for toleration in (
        {"key": "nvidia.com/gpu", "value": "absent"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"},
    ):
        assert filter_node(pod(tolerations=[toleration]), tainted, Usage(), (0, 0)) is not None


@pytest.mark.parametrize("op, values, labels, expected", [
    ("In", ["a", "b"], {"k": "b"}, True), ("In", ["a"], {"k": "c"}, False), ("In", ["a"], {}, False),
    ("NotIn", ["a"], {"k": "b"}, True), ("NotIn", ["a"], {"k": "a"}, False), ("NotIn", ["a"], {}, True),
    ("Exists", [], {"k": ""}, True), ("Exists", [], {}, False),
    ("DoesNotExist", [], {}, True), ("DoesNotExist", [], {"k": "x"}, False),
    ("Gt", ["5"], {"k": "6"}, True), ("Gt", ["5"], {"k": "5"}, False), ("Gt", ["5"], {"k": "x"}, False),
    ("Lt", ["5"], {"k": "4"}, True), ("Lt", ["5"], {}, False), ("Bogus", ["a"], {"k": "a"}, False),
])
def test_node_selector_operators(op, values, labels, expected):
    assert match_expression({"key": "k", "operator": op, "values": values}, labels) is expected


def test_required_affinity_and_node_selector():
    nodes = [node("onprem-1"), node("cloud-1", "cloud", labels={"zone": "b"})]
    cloud_only = [{"matchExpressions": [{"key": TIER, "operator": "In", "values": ["cloud"]}]}]
    assert choose_node(pod(required=cloud_only), nodes, {})[0] == "cloud-1"
    # Terms are ORed; expressions inside one term are ANDed.
    either = [{"matchExpressions": [{"key": TIER, "operator": "In", "values": ["cloud"]},
                                    {"key": "zone", "operator": "In", "values": ["a"]}]},
              {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["onprem-1"]}]}]
    assert choose_node(pod(required=either), nodes, {})[0] == "onprem-1"
    assert choose_node(pod(selector={"zone": "b"}), nodes, {})[0] == "cloud-1"
    chosen, message = choose_node(pod(selector={"zone": "c"}), nodes, {})
    assert chosen is None and "2 node(s) didn't match Pod's node affinity/selector" in message


def test_requests_and_usage():
    p = pod(cpu="250m", memory="1Gi")
    p["spec"]["containers"].append({"name": "side", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})
    p["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "2"}}}]
    # A limit without a request is the request; init containers need their max.
    assert pod_requests(p) == (2000, 2 * 2**30)
    pods = [pod(cpu="1", node="a", phase="Running"), pod(cpu="1", node="a", phase="Pending"),
            pod(cpu="1", node="a", phase="Succeeded"), pod(cpu="1", node="b", phase="Failed"), pod(cpu="1")]
    usage = node_usage(pods)
    assert usage["a"].cpu == 2000 and usage["a"].pods == 2 and "b" not in usage
    bad = pod(memory="plenty")
    assert choose_node(bad, [node("a")], {}) == (None, "invalid resource request: 'plenty' is not a quantity "
                                                        "(expected e.g. '500m', '2', '512Mi', '1G')")


@settings(max_examples=60, deadline=None)
@given(
    used=st.lists(st.tuples(st.integers(0, 8), st.booleans(), st.booleans()), min_size=1, max_size=6),
    want=st.integers(1, 8),
)
def test_chosen_node_fits_and_is_the_best_fitting(used, want):
    """Whatever the cluster state: the choice passes every filter, and no
    feasible node has a higher (affinity, packing) score."""
    nodes, usage = [], {}
    for i, (gib, cloud, cordoned) in enumerate(used):
        name = f"n{i}"
        nodes.append(node(name, "cloud" if cloud else "on-prem", memory="8Gi", cordoned=cordoned))
        usage[name] = Usage(memory=gib * 2**30)
    p = pod(cpu="0", memory=f"{want}Gi", preferred=TIER_PREFERENCE)
    chosen, message = choose_node(p, nodes, usage)
    feasible = [n for n in nodes if not n["spec"].get("unschedulable") and usage[n["metadata"]["name"]].memory
                + want * 2**30 <= 8 * 2**30]
    if not feasible:
        assert chosen is None and message.startswith(f"0/{len(nodes)} nodes are available")
        return

    def score(n):
        name = n["metadata"]["name"]
        weight = 10 if n["metadata"]["labels"][TIER] == "on-prem" else 1
        return (weight, usage[name].memory)

    assert chosen in {n["metadata"]["name"] for n in feasible}
    best = max(score(n) for n in feasible)
    assert score(next(n for n in nodes if n["metadata"]["name"] == chosen)) == best


@pytest.mark.parametrize("toleration, placed", [
    ({"operator": "Exists"}, True),  # tolerates every taint
    ({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}, True),
    ({"key": "gpu", "operator": "Exists"}, False),
    ({"operator": "Exists", "effect": "NoExecute"}, False),
])
def test_a_pod_tolerating_the_cordons_taint_is_placed_on_a_cordoned_node_as_on_kubernetes(toleration, placed):
    """Kubernetes' NodeUnschedulable filter lets such a pod on: here a cordon
    stopped every pod, and hid what such a toleration does to a drain."""
    assert (filter_node(pod(tolerations=[toleration]), node("n", cordoned=True), Usage(), (100, 2**30)) is None) \
        == placed
