"""nodefit: could a waiting pod run on a node at all (selector, required
affinity, taints, extended resources)? Checked case by case, against the
local cluster's scheduler (written separately, as Kubernetes documents it)
on random pods and nodes, and on the manifest the real KubeSpawner makes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elastichub.localcluster.scheduler import matches_required_affinity, untolerated_taint
from elastichub.orchestrator.nodefit import misfit, node_template, pod_constraints


def template(labels=None, taints=(), allocatable=None, name="cloud-1"):
    return node_template(name, labels or {}, {"taints": list(taints)}, allocatable or {"cpu": "4", "memory": "8Gi"})


def needs(**spec):
    return pod_constraints({"containers": [{"name": "notebook"}], **spec})


def test_a_pod_without_constraints_fits_any_untainted_node():
    assert misfit(needs(), template({"any": "label"})) is None
    assert misfit(needs(), template(taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])) \
        == "taint dedicated=gpu:NoSchedule"


@pytest.mark.parametrize("spec, labels, why", [
    ({"nodeSelector": {"gpu": "true"}}, {"gpu": "false"}, "node selector gpu=true"),
    ({"nodeSelector": {"gpu": "true"}}, {"gpu": "true"}, None),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["campus"]}]},
        {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["32"]}]}]}}}},
     {"zone": "eu-west-1a", "cores": "16"}, "required node affinity"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["campus"]}]},
        {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["32"]}]}]}}}},
     {"zone": "eu-west-1a", "cores": "64"}, None),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "exam", "operator": "DoesNotExist"}],
         "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["cloud-1"]}]}]}}}},
     {}, "required node affinity"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{}]}}}}, {}, "required node affinity"),  # an empty term matches no node
])
def test_selector_and_required_affinity(spec, labels, why):
    assert misfit(needs(**spec), template(labels)) == why


def test_taints_need_tolerations_but_passing_ones_do_not():
    gpu_only = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    c = needs(nodeSelector={"pool": "burst"})
    assert misfit(c, template({"pool": "burst"}, [gpu_only])) == "taint nvidia.com/gpu=present:NoSchedule"
    tolerant = needs(nodeSelector={"pool": "burst"}, tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])
    assert misfit(tolerant, template({"pool": "burst"}, [gpu_only])) is None
    # Booting, cordoned, being drained by us, PreferNoSchedule: no lasting "no".
    passing = [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
               {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
               {"key": "elastichub.io/draining", "effect": "NoSchedule"},
               {"key": "spot", "effect": "PreferNoSchedule"}]
    assert misfit(c, template({"pool": "burst"}, passing)) is None


def test_extended_resources_need_a_node_that_offers_them():
    gpu = needs(containers=[{"name": "notebook", "resources": {"limits": {"nvidia.com/gpu": "1"}}}])
    assert gpu is not None and gpu.extended == ("nvidia.com/gpu",)
    assert misfit(gpu, template()) == "resource nvidia.com/gpu"
    assert misfit(gpu, template(allocatable={"cpu": "8", "nvidia.com/gpu": "0"})) == "resource nvidia.com/gpu"
    assert misfit(gpu, template(allocatable={"cpu": "8", "nvidia.com/gpu": "4"})) is None
    # cpu, memory, ephemeral storage and huge pages are room, not constraints
    plain = needs(containers=[{"name": "n", "resources": {"requests": {
        "cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi", "hugepages-2Mi": "4Mi"}}}])
    assert plain.extended == ()


# -- the same answer as the local cluster's scheduler -------------------------------------------

KEYS = st.sampled_from(["zone", "gpu", "pool", "cores"])
VALUES = st.sampled_from(["a", "b", "1", "64"])
EXPRESSION = st.builds(lambda k, op, vs: {"key": k, "operator": op, "values": vs}, KEYS,
                       st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
                       st.lists(VALUES, max_size=2))
TERM = st.builds(lambda e, f: {"matchExpressions": e, **({"matchFields": f} if f else {})},
                 st.lists(EXPRESSION, max_size=2),
                 st.lists(st.builds(lambda op, vs: {"key": "metadata.name", "operator": op, "values": vs},
                                    st.sampled_from(["In", "NotIn"]),
                                    st.lists(st.sampled_from(["cloud-1", "cloud-2"]), max_size=2)), max_size=1))
TAINT = st.builds(lambda k, v, e: {"key": k, "value": v, "effect": e}, KEYS, st.sampled_from(["", "a", "b"]),
                  st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]))
TOLERATION = st.builds(lambda k, op, v, e: {k_: x for k_, x in (("key", k), ("operator", op), ("value", v),
                                                                   ("effect", e)) if x is not None},
                       st.one_of(st.none(), KEYS), st.sampled_from([None, "Equal", "Exists"]),
                       st.sampled_from([None, "a", "b"]), st.sampled_from([None, "NoSchedule", "NoExecute"]))


@settings(max_examples=400, deadline=None)
@given(labels=st.dictionaries(KEYS, VALUES, max_size=4), selector=st.dictionaries(KEYS, VALUES, max_size=2),
       terms=st.lists(TERM, max_size=2), taints=st.lists(TAINT, max_size=2),
       tolerations=st.lists(TOLERATION, max_size=3), name=st.sampled_from(["cloud-1", "cloud-2"]))
def test_the_same_answer_as_the_local_clusters_scheduler(labels, selector, terms, taints, tolerations, name):
    spec = {"containers": [{"name": "n"}], "nodeSelector": selector, "tolerations": tolerations}
    if terms:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": terms}}}
    pod = {"spec": spec}
    node_obj = {"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}}
    scheduler_says = matches_required_affinity(pod, node_obj) and untolerated_taint(pod, node_obj) is None
    c = pod_constraints(spec)
    assert (misfit(c, template(labels, taints, name=name)) is None) == scheduler_says, (c, labels, taints)


# -- the real KubeSpawner's manifest ------------------------------------------------------------

async def test_a_gpu_profiles_pod_as_kubespawner_makes_it(monkeypatch):
    from kubernetes_asyncio.client import ApiClient
    from traitlets.config import Config

    from elastichub.spawner import ElasticSpawner

    monkeypatch.setattr("kubespawner.spawner.load_config", lambda **kw: None)
    c = Config()
    c.ElasticSpawner.node_selector = {"example.org/gpu": "a100"}
    c.ElasticSpawner.extra_resource_limits = {"nvidia.com/gpu": "1"}
    c.ElasticSpawner.tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pod = await ElasticSpawner(config=c, _mock=True).get_pod_manifest()
    spec = ApiClient.__new__(ApiClient).sanitize_for_serialization(pod)["spec"]
    need = pod_constraints(spec)
    cloud = template({"elastichub.io/tier": "cloud"})
    assert misfit(need, cloud) == "node selector example.org/gpu=a100"
    gpu_node = template({"elastichub.io/tier": "on-prem", "example.org/gpu": "a100"},
                        [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], {"cpu": "32", "nvidia.com/gpu": "4"})
    assert misfit(need, gpu_node) is None
    # The spawner's own preferences (on-prem first) are no constraint.
    plain = await ElasticSpawner(config=Config(), _mock=True).get_pod_manifest()
    assert misfit(pod_constraints(ApiClient.__new__(ApiClient).sanitize_for_serialization(plain)["spec"]),
                  cloud) is None
