"""ElasticSpawner without a cluster: its traits, its pod manifest, its state,
and that JupyterHub finds it by name. (Async tests: KubeSpawner makes its
API client, which needs a running event loop, when it is built.)"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from tornado import web
from traitlets.config import Config

from elastichub import podmeta, podspec
from elastichub.checkpoint_client import CheckpointOutcome
from elastichub.spawner import STATE_KEY, ElasticSpawner
from spawnertools import said as _said
from spawnertools import spawner


async def _in_profile(override: dict) -> ElasticSpawner:
    """A spawner whose user picked a profile with this kubespawner_override."""
    s = spawner(profile_list=[{"display_name": "Course", "slug": "course", "kubespawner_override": override}])
    s.user_options = {"profile": "course"}
    await s.load_user_options()
    return s


def _preferred(pod) -> list[tuple[int, str, list[str]]]:
    """The preferred node-affinity terms as they go on the wire."""
    from kubernetes_asyncio.client import ApiClient

    wire = ApiClient.__new__(ApiClient).sanitize_for_serialization(pod)
    terms = wire["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    return [(t["weight"], t["preference"]["matchExpressions"][0]["key"],
             t["preference"]["matchExpressions"][0]["values"]) for t in terms]


async def test_the_pod_prefers_on_prem_then_cloud_and_carries_the_orchestrators_labels():
    pod = await spawner().get_pod_manifest()
    assert _preferred(pod) == [(10, "elastichub.io/tier", ["on-prem"]), (1, "elastichub.io/tier", ["cloud"])]
    labels, ann = pod.metadata.labels, pod.metadata.annotations
    assert labels[podmeta.MANAGED_LABEL] == "true" and labels[podmeta.MIGRATABLE_LABEL] == "true"
    assert labels["component"] == "singleuser-server"  # KubeSpawner's own labels stay
    assert ann[podmeta.USER_ANNOTATION] == "mock@name" and ann[podmeta.SERVER_NAME_ANNOTATION] == ""
    assert ann[podmeta.VERSION_ANNOTATION] == "0.1.0"


async def test_the_admins_own_preferences_come_first_and_still_apply():
    own = {"weight": 50, "preference": {"matchExpressions": [
        {"key": "gpu", "operator": "In", "values": ["a100"]}]}}
    pod = await spawner(node_affinity_preferred=[own], tier_label="example.org/pool", onprem_tier="campus",
                        cloud_tier="burst", onprem_weight=100, cloud_weight=2).get_pod_manifest()
    assert _preferred(pod) == [(50, "gpu", ["a100"]), (100, "example.org/pool", ["campus"]),
                               (2, "example.org/pool", ["burst"])]


async def test_an_affinity_in_extra_pod_config_is_kept_and_extended():
    """KubeSpawner copies extra_pod_config in as the admin's dict: the tier
    preferences go next to its terms (it used to end every start in an
    AttributeError)."""
    required = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "arch", "operator": "In", "values": ["amd64"]}]}]}
    own = {"weight": 5, "preference": {"matchExpressions": [{"key": "hw", "operator": "In", "values": ["cpu"]}]}}
    pod = await spawner(extra_pod_config={"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": required,
        "preferredDuringSchedulingIgnoredDuringExecution": [own]}}}).get_pod_manifest()
    assert _preferred(pod) == [(5, "hw", ["cpu"]), (10, "elastichub.io/tier", ["on-prem"]),
                               (1, "elastichub.io/tier", ["cloud"])]
    assert pod.spec.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == required


async def test_placement_settings_extra_pod_config_replaces_on_the_pod_are_warned_once(monkeypatch, caplog):
    """KubeSpawner puts extra_pod_config's affinity (its help says "merged")
    in place of the one it builds: a profile's required GPU affinity, or
    zero-to-jupyterhub's node-purpose term, were silently not on the pod."""
    monkeypatch.setattr(ElasticSpawner, "_warned_replaced", set())
    anti = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {
        "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"course": "db"}}}}]}}
    gpu = [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]
    s = spawner(extra_pod_config={"affinity": anti, "node_selector": {"zone": "a"}}, profile_list=[
        {"display_name": "GPU", "slug": "gpu", "kubespawner_override": {"node_affinity_required": gpu,
                                                                        "node_selector": {"disk": "ssd"}}}])
    s.user_options = {"profile": "gpu"}
    await s.load_user_options()
    for _ in range(2):
        pod = await s.get_pod_manifest()
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in pod.spec.affinity["nodeAffinity"]  # KubeSpawner's
    warned = [r.getMessage() for r in caplog.records if "replaces, on the pod" in r.getMessage()]
    assert warned == [
        "ElasticHub: extra_pod_config's affinity replaces, on the pod, the one KubeSpawner builds from "
        "node_affinity_required (the hub's or a profile's): it is not on the pods, so the scheduler and "
        "ElasticHub's placement checks never see it; write it into extra_pod_config's affinity instead (first seen "
        "on the pod of mock@name)",
        "ElasticHub: extra_pod_config's node_selector replaces, on the pod, the one KubeSpawner builds from "
        "node_selector (the hub's or a profile's): it is not on the pods, so the scheduler and ElasticHub's "
        "placement checks never see it; write it into extra_pod_config's node_selector instead (first seen on the "
        "pod of mock@name)"], warned
    caplog.clear()  # Either alone is no loss: nothing said.
    await spawner(extra_pod_config={"affinity": anti}, tolerations=[]).get_pod_manifest()
    await spawner(node_affinity_required=gpu, extra_pod_config={"restartPolicy": "Never"}).get_pod_manifest()
    assert not [r for r in caplog.records if "replaces, on the pod" in r.getMessage()]


def _zone_hook(spawner, pod):
    """A modify_pod_hook written for KubeSpawner, whose pod is client models."""
    from kubernetes_asyncio.client import (V1Affinity, V1NodeAffinity, V1NodeSelectorRequirement, V1NodeSelectorTerm,
                                           V1PreferredSchedulingTerm)

    pod.spec.affinity = pod.spec.affinity or V1Affinity()
    node = pod.spec.affinity.node_affinity = pod.spec.affinity.node_affinity or V1NodeAffinity()
    node.preferred_during_scheduling_ignored_during_execution.append(V1PreferredSchedulingTerm(
        weight=3, preference=V1NodeSelectorTerm(match_expressions=[
            V1NodeSelectorRequirement(key="zone", operator="In", values=["a"])])))
    return pod


@pytest.mark.parametrize("settings", [{}, {"node_affinity_required": [
    {"matchExpressions": [{"key": "arch", "operator": "In", "values": ["amd64"]}]}]}])
async def test_a_modify_pod_hook_written_for_kubespawner_finds_the_affinity_as_kubespawner_makes_it(settings):
    """The hook runs on the pod get_pod_manifest returns: an affinity turned
    into a dict failed every start (AttributeError: 'dict' object has no
    attribute 'node_affinity')."""
    s = spawner(modify_pod_hook=_zone_hook, **settings)
    pod = s.modify_pod_hook(s, await s.get_pod_manifest())
    assert _preferred(pod) == [(10, "elastichub.io/tier", ["on-prem"]), (1, "elastichub.io/tier", ["cloud"]),
                               (3, "zone", ["a"])]
    ours = pod.spec.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution[1]
    assert ours.preference.match_expressions[0].values == ["cloud"]  # models all the way down, as a hook reads them
    required = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    assert (required is not None) == bool(settings)


def _own_affinity_hook(spawner, pod):
    """A hook that sets the affinity it wants, as one may on KubeSpawner (whose pods have none), and drops a label."""
    from kubernetes_asyncio.client import V1Affinity, V1NodeAffinity, V1NodeSelector

    pod.spec.affinity = V1Affinity(node_affinity=V1NodeAffinity(
        required_during_scheduling_ignored_during_execution=V1NodeSelector(node_selector_terms=[
            {"matchExpressions": [{"key": "arch", "operator": "In", "values": ["amd64"]}]}])))
    del pod.metadata.labels[podmeta.MANAGED_LABEL]
    return pod


async def test_what_a_modify_pod_hook_took_off_the_pod_is_put_back_and_said(monkeypatch, caplog):
    """The hook runs after get_pod_manifest: its own affinity silently
    dropped on-prem first, a dropped label hid the server from the orchestrator."""
    s = spawner(modify_pod_hook=_own_affinity_hook)
    created = []

    async def create(namespace, pod):
        created.append(pod)

    monkeypatch.setattr(s.api, "create_namespaced_pod", create)
    pod = s.modify_pod_hook(s, await s.get_pod_manifest())
    for _ in range(2):  # KubeSpawner retries the request with the same pod
        assert await s._make_create_pod_request(pod, 5)
    sent = created[-1]
    assert _preferred(sent) == [(10, "elastichub.io/tier", ["on-prem"]), (1, "elastichub.io/tier", ["cloud"])]
    assert sent.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution  # the hook's stays
    assert sent.metadata.labels[podmeta.MANAGED_LABEL] == "true"
    warned = [r.getMessage() for r in caplog.records if "modify_pod_hook removed" in r.getMessage()]
    assert len(warned) == 1 and ("label elastichub.io/managed, the preferred node affinity on elastichub.io/tier"
                                 in warned[0]), warned
    caplog.clear()
    untouched = await spawner().get_pod_manifest()  # a pod no hook changed: nothing to put back, nothing said
    assert await s._make_create_pod_request(untouched, 5)
    assert len(_preferred(created[-1])) == 2 and "modify_pod_hook" not in caplog.text


async def test_an_admins_term_heavier_than_the_tiers_gap_is_warned_once(caplog):
    heavy = {"weight": 50, "preference": {"matchExpressions": [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge"]}]}}
    for _ in range(2):
        await spawner(node_affinity_preferred=[heavy]).get_pod_manifest()
    warned = [r.getMessage() for r in caplog.records if "outweighs" in r.getMessage()]
    assert len(warned) == 1 and "weight 50 outweighs ElasticSpawner.onprem_weight (10)" in warned[0], warned
    assert "raise onprem_weight to 52 or more" in warned[0]
    caplog.clear()
    await spawner(node_affinity_preferred=[heavy], onprem_weight=60).get_pod_manifest()
    assert not [r for r in caplog.records if "outweighs" in r.getMessage()]


async def test_a_term_no_onprem_weight_can_outweigh_is_told_the_fix_that_exists(caplog):
    """zero-to-jupyterhub's matchNodePurpose "prefer" is a term of weight 100:
    the warning said to raise onprem_weight (up to 100) above it, which no value can."""
    z2jh = {"weight": 100, "preference": {"matchExpressions": [
        {"key": "hub.jupyter.org/node-purpose", "operator": "In", "values": ["user"]}]}}
    await spawner(node_affinity_preferred=[z2jh]).get_pod_manifest()
    warned = [r.getMessage() for r in caplog.records if "outweighs" in r.getMessage()]
    assert len(warned) == 1 and "lower its weight below 9 (onprem_weight stops at 100)" in warned[0], warned
    assert "raise onprem_weight" not in warned[0] and "every node matches it alike" in warned[0]


async def test_a_profile_can_pin_its_servers():
    s = spawner(profile_list=[{"display_name": "Exam", "slug": "exam", "default": True,
                               "kubespawner_override": {"migratable": False}}])
    s.user_options = {"profile": "exam"}
    await s.load_user_options()
    pod = await s.get_pod_manifest()
    assert pod.metadata.labels[podmeta.MIGRATABLE_LABEL] == "false"


async def test_the_next_start_of_a_server_has_only_its_own_profiles_overrides():
    """JupyterHub keeps one spawner per server across starts: an exam's
    profile left the server pinned (and its environment) when the student
    next picked the plain notebook; a profile option's dict merge too."""
    memory = {"display_name": "Memory", "choices": {
        "small": {"display_name": "2G", "kubespawner_override": {"extra_resource_limits": {"example.com/fpga": "1"}}},
        "none": {"display_name": "-", "default": True}}}
    s = spawner(migratable=True, environment={"HUB": "x"}, profile_list=[
        {"display_name": "Notebook", "slug": "nb", "default": True, "profile_options": {"memory": memory}},
        {"display_name": "Exam", "slug": "exam", "kubespawner_override": {"migratable": False,
                                                                           "environment": {"EXAM": "1"}}}])
    for start, (options, migratable, environment, limits) in enumerate((
            ({"profile": "exam"}, "false", {"HUB": "x", "EXAM": "1"}, {}),
            ({"profile": "nb", "memory": "small"}, "true", {"HUB": "x"}, {"example.com/fpga": "1"}),
            ({"profile": "nb"}, "true", {"HUB": "x"}, {}),
            ({"profile": "exam"}, "false", {"HUB": "x", "EXAM": "1"}, {}))):
        s.clear_state()  # JupyterHub's, at every stop and before every start
        s.environment["TOKEN"] = f"token-{start}"  # a pre_spawn_hook's (after clear_state): this start's stands
        s.user_options = options
        await s.load_user_options()
        pod = await s.get_pod_manifest()
        assert pod.metadata.labels[podmeta.MIGRATABLE_LABEL] == migratable, options
        assert {e.name: e.value for e in pod.spec.containers[0].env
                if e.name in ("HUB", "EXAM", "TOKEN")} == {**environment, "TOKEN": f"token-{start}"}
        assert s.extra_resource_limits == limits, options


def _typed_into(option: str, settings: tuple[str, ...], typed: str) -> ElasticSpawner:
    """A spawner whose user typed `typed` into the free-form field ("Other...") of a profile option
    whose value goes into `settings`."""
    other = {"enabled": True, "kubespawner_override": {name: "{value}" for name in settings}}
    profile = {"display_name": "Custom", "slug": "custom", "profile_options": {
        option: {"display_name": option.title(), "unlisted_choice": other,
                 "choices": {"1": {"display_name": "1", "default": True, "kubespawner_override": {}}}}}}
    s = spawner(profile_list=[profile])
    s.user_options = {"profile": "custom", f"{option}--unlisted-choice": typed}
    return s


async def test_a_value_the_user_typed_into_an_option_is_the_users_mistake_not_the_admins():
    """KubeSpawner's free-form "Other..." field: a memory the student typed
    ("lots") was answered "Bad ElasticHub configuration", blaming the admin."""
    s = _typed_into("memory", ("mem_limit",), "lots")
    with pytest.raises(web.HTTPError) as err:
        await s.load_user_options()
    assert err.value.status_code == 400
    # What is wrong with the value, not the setting it went into ("The 'mem_limit' trait of an ElasticSpawner
    # instance: ..."), and what to do.
    assert err.value.jupyterhub_message.startswith("Your choice 'lots' for memory cannot be used: 'lots' is not a "
                                                   "memory size")
    assert "trait" not in err.value.jupyterhub_message and "ElasticSpawner" not in err.value.jupyterhub_message
    assert err.value.jupyterhub_message.endswith("Pick one of the listed choices, or type another value.")
    s = _typed_into("memory", ("mem_limit",), "4G")
    await s.load_user_options()
    assert s.mem_limit == 4 * 2**30


@pytest.mark.parametrize("profile_list", ["sync", "async"])
async def test_a_typed_choice_the_pods_checks_refuse_is_the_users_mistake_too(profile_list):
    """A profile_list callable (zero-to-jupyterhub's way to size profiles per
    user) whose GPU option takes a typed count: "two" passed every check of
    the override and was refused only with the pod, blaming the admin (500)."""
    gpus = {"display_name": "GPUs", "unlisted_choice": {
        "enabled": True, "kubespawner_override": {"extra_resource_limits": {"nvidia.com/gpu": "{value}"}}},
        "choices": {"one": {"display_name": "1", "kubespawner_override": {
            "extra_resource_limits": {"nvidia.com/gpu": "1"}}}}}
    profiles = [{"display_name": "GPU", "slug": "gpu", "profile_options": {"gpus": gpus}}]

    async def later(_):
        return profiles

    for typed, words in (("two", "'two' is not a quantity"), ("0.5", "'0.5' is not a whole number")):
        s = spawner(profile_list=(lambda _: profiles) if profile_list == "sync" else later)
        s.user_options = {"profile": "gpu", "gpus--unlisted-choice": typed}
        await s.load_user_options()
        with pytest.raises(web.HTTPError) as err:
            await s.get_pod_manifest()
        assert err.value.status_code == 400
        assert err.value.jupyterhub_message.startswith(f"Your choice {typed!r} for gpus cannot be used: {typed!r} "
                                                       "is not ")
        assert "extra_resource_limits" not in err.value.jupyterhub_message
        assert words in err.value.jupyterhub_message
    s = spawner(profile_list=(lambda _: profiles) if profile_list == "sync" else later)
    s.user_options = {"profile": "gpu", "gpus--unlisted-choice": "2"}
    await s.load_user_options()
    assert (await s.get_pod_manifest()).spec.containers[0].resources.limits == {"nvidia.com/gpu": "2"}


@pytest.mark.parametrize("override, words", [
    ({"migrateable": False}, "kubespawner_override key 'migrateable' is not a setting of ElasticSpawner (did you "
                             "mean 'migratable'?)"),
    ({"migratable": "false"}, "profile_list: kubespawner_override: The 'migratable' trait of an ElasticSpawner "
                              "instance expected a boolean, not the str 'false'"),
    ({"onprem_weight": 500}, "profile_list: kubespawner_override: ElasticSpawner.onprem_weight: 500 is outside"),
])
async def test_a_profiles_bad_override_is_one_error_naming_it(override, words):
    """A misspelt key would do nothing: an exam's servers, meant to be
    pinned, would stay movable."""
    s = spawner(profile_list=[{"display_name": "Exam", "slug": "exam", "kubespawner_override": override},
                              {"display_name": "Plain", "slug": "plain"}])
    s.user_options = {"profile": "exam"}
    with pytest.raises(web.HTTPError) as err:
        await s.load_user_options()
    _said(err, words)
    # The same spawner, started again with a good profile: the refused one left nothing behind.
    s.user_options = {"profile": "plain"}
    await s.load_user_options()
    assert s.onprem_weight == 10 and not s._config_problems


@pytest.mark.parametrize("setting, value, words", [
    ("extra_labels", {"elastichub.io/migratable": "false"},
     "extra_labels: 'elastichub.io/migratable' is ElasticHub's own (it writes every elastichub.io/ key on its pods "
     "itself); to pin servers set migratable = False"),
    ("extra_annotations", {"elastichub.io/user": "someone", "elastichub.io/move-of": "x"},
     "extra_annotations: 'elastichub.io/move-of', 'elastichub.io/user' are ElasticHub's own"),
])
@pytest.mark.parametrize("where", ["hub", "profile"])
async def test_an_extra_label_or_annotation_of_elastichubs_own_is_refused_not_overwritten(setting, value, words, where):
    """The spawner's own values used to win silently: an exam profile's
    extra label elastichub.io/migratable "false" left its servers movable."""
    if where == "hub":
        s = spawner(**{setting: value})
    else:
        s = await _in_profile({setting: value})
    with pytest.raises(web.HTTPError) as err:
        await s.get_pod_manifest()
    _said(err, words)
    fine = spawner(**{setting: {"course": "db101"}})  # anything else goes on the pod as KubeSpawner puts it
    pod = await fine.get_pod_manifest()
    assert (pod.metadata.labels if setting == "extra_labels" else pod.metadata.annotations)["course"] == "db101"


@pytest.mark.parametrize("weights", [{"onprem_weight": 1, "cloud_weight": 50}, {"onprem_weight": 5, "cloud_weight": 5}])
async def test_cloud_weighed_at_or_above_on_prem_is_refused(weights):
    with pytest.raises(web.HTTPError) as err:
        await spawner(**weights).get_pod_manifest()
    message = err.value.log_message % err.value.args
    assert message == (f"Bad ElasticHub configuration: ElasticSpawner.onprem_weight ({weights['onprem_weight']}) "
                       f"must be higher than cloud_weight ({weights['cloud_weight']}), or servers fill the cloud first")


@pytest.mark.parametrize("trait,value,words", [
    ("onprem_weight", 0, "ElasticSpawner.onprem_weight: 0 is outside 1..100"),
    ("cloud_weight", 101, "ElasticSpawner.cloud_weight: 101 is outside 1..100"),
    ("checkpoint_timeout", -1, "ElasticSpawner.checkpoint_timeout: -1"),
    ("checkpoint_timeout", float("nan"), "ElasticSpawner.checkpoint_timeout: nan"),
    ("checkpoint_timeout", float("inf"), "ElasticSpawner.checkpoint_timeout: inf is not a number of seconds"),
    ("start_timeout", 0, "ElasticSpawner.start_timeout: 0 is not a number of seconds"),
    ("onprem_tier", "on prem", "ElasticSpawner.onprem_tier: 'on prem' is not a Kubernetes label value"),
    ("cloud_tier", "on-prem", "ElasticSpawner.cloud_tier: 'on-prem' is the other tier's value too"),
    ("tier_label", "my tier", "ElasticSpawner.tier_label: 'my tier' is not a Kubernetes label key"),
])
async def test_a_bad_value_refuses_every_start_but_leaves_running_servers_alone(trait, value, words, caplog,
                                                                                monkeypatch):
    """JupyterHub builds a spawner for each running server at its own start:
    a value out of range must not stop the hub (it used to), only starts."""
    monkeypatch.setattr(ElasticSpawner, "_logged_problems", set())
    s, again = spawner(**{trait: value}), spawner(**{trait: value})  # two running servers
    assert getattr(s, trait) == getattr(again, trait) == ElasticSpawner.class_traits()[trait].default_value
    logged = [r.getMessage() for r in caplog.records if words in r.getMessage()]
    assert len(logged) == 1 and "servers already running go on" in logged[0], caplog.text
    with pytest.raises(web.HTTPError) as err:  # what the hub's API answers, without a traceback
        s.start()
    _said(err, words)


@pytest.mark.parametrize("trait,value,words", [
    ("cloud_weight", "heavy", "'cloud_weight' trait"),
    ("checkpoint_timeout", "soon", "'checkpoint_timeout' trait"),
])
def test_a_value_of_the_wrong_type_is_one_error_naming_the_trait(trait, value, words):
    with pytest.raises(web.HTTPError) as err:
        spawner(**{trait: value})
    _said(err, words)


@pytest.mark.parametrize("value, bytes_", [("1G", 2**30), ("512M", 512 * 2**20), ("2Gi", 2 * 2**30),
                                            ("512Mi", 512 * 2**20), ("1.5G", 3 * 2**29), (2**30, 2**30),
                                            (1.5e9, 1_500_000_000), ("1073741824", 2**30)])
async def test_memory_in_jupyterhubs_units_or_kubernetes_binary_ones(value, bytes_):
    """JupyterHub's K, M, G, T are powers of 1024, so Kubernetes' Ki, Mi, Gi,
    Ti mean the same: "2Gi" was refused, and only in a start's error."""
    c = Config()
    c.KubeSpawner.mem_limit = value  # as zero-to-jupyterhub writes singleuser.memory.limit
    pod = await ElasticSpawner(config=c, _mock=True).get_pod_manifest()
    assert pod.spec.containers[0].resources.limits["memory"] == bytes_
    s = spawner(profile_list=[{"display_name": "Big", "slug": "big", "kubespawner_override": {"mem_guarantee": value}}])
    s.user_options = {"profile": "big"}
    await s.load_user_options()
    assert (await s.get_pod_manifest()).spec.containers[0].resources.requests["memory"] == bytes_


@pytest.mark.parametrize("value", ["2GB", "lots", "-1G", [1], float("inf"), -5])
def test_a_memory_size_it_cannot_read_is_one_error_naming_the_trait(value):
    """JupyterHub's message named no setting ("2GB is not a valid memory
    specification"), and a list escaped as a bare TypeError."""
    with pytest.raises(web.HTTPError) as err:
        spawner(mem_limit=value)
    message = err.value.log_message % err.value.args
    assert message.startswith(f"Bad ElasticHub configuration: The 'mem_limit' trait of an ElasticSpawner instance: "
                              f"{value!r} is not a memory size") and "\n" not in message, message


async def test_a_profiles_own_bad_override_is_the_admins_whatever_the_user_typed():
    """A typed value was found the culprit by its characters in any refused override: "20" typed for
    memory, next to the profile's own onprem_weight of 200, told the student their choice was wrong."""
    s = _typed_into("memory", ("mem_limit",), "20")
    s.profile_list[0]["kubespawner_override"] = {"onprem_weight": 200}
    with pytest.raises(web.HTTPError) as err:
        await s.load_user_options()
    _said(err, "profile_list: kubespawner_override: ElasticSpawner.onprem_weight: 200 is outside 1..100")


async def test_a_cpu_count_the_user_typed_into_an_option_is_taken():
    """A profile option's "Other..." field gives `{value}` as text: every CPU
    count typed, "2" too, was refused as the user's mistake, with nothing said
    of what was wrong ("Your choice '2' for cpus cannot be used: '2'")."""
    for typed, cores in (("2", 2.0), ("0.5", 0.5), ("1500m", 1.5)):
        s = _typed_into("cpus", ("cpu_limit", "cpu_guarantee"), typed)
        await s.load_user_options()
        resources = (await s.get_pod_manifest()).spec.containers[0].resources
        assert resources.limits["cpu"] == resources.requests["cpu"] == cores, typed
    with pytest.raises(web.HTTPError) as err:
        await _typed_into("cpus", ("cpu_limit", "cpu_guarantee"), "many").load_user_options()
    assert err.value.status_code == 400
    assert err.value.jupyterhub_message.startswith("Your choice 'many' for cpus cannot be used: 'many' is not a "
                                                   "number of CPUs (e.g. 2, 0.5")


@pytest.mark.parametrize("value, words", [("2", None), ("250m", None), (-1, "-1 is not a number of CPUs"),
                                          (float("nan"), "nan is not a number of CPUs"),
                                          ("two", "'two' is not a number of CPUs")])
async def test_a_cpu_count_is_read_as_text_or_millicores_or_named_in_one_error(value, words):
    if words is None:
        assert spawner(cpu_limit=value).cpu_limit == {"2": 2.0, "250m": 0.25}[value]
        return
    with pytest.raises(web.HTTPError) as err:
        spawner(cpu_guarantee=value)
    assert (err.value.log_message % err.value.args).startswith(
        f"Bad ElasticHub configuration: The 'cpu_guarantee' trait of an ElasticSpawner instance: {words}")


@pytest.mark.parametrize("override, words", [
    ({"mem_guarantee": "4G"}, "mem_guarantee (4294967296) is above mem_limit (2147483648): Kubernetes refuses"),
    ({"cpu_guarantee": 4.0}, "cpu_guarantee (4.0) is above cpu_limit (2.0): Kubernetes refuses"),
])
async def test_a_guarantee_above_its_limit_is_one_error_naming_both(override, words):
    """A profile raising a guarantee above the hub's limit: the API server's
    422 came back with the whole pod in the log (the local cluster took it)."""
    s = spawner(mem_limit="2G", cpu_limit=2.0,
                profile_list=[{"display_name": "Big", "slug": "big", "kubespawner_override": override}])
    s.user_options = {"profile": "big"}
    await s.load_user_options()
    with pytest.raises(web.HTTPError) as err:
        await s.get_pod_manifest()
    _said(err, words)
    await spawner(mem_limit="2G", mem_guarantee="2G", cpu_limit=2.0, cpu_guarantee=2.0).get_pod_manifest()  # equal


@pytest.mark.parametrize("setting, value, words", [
    ("tolerations", {"key": "gpu", "operator": "Exists"}, "tolerations['key']: 'gpu' is not a dict: tolerations is a "
                                                          "list of Kubernetes objects written as dicts"),
    ("node_affinity_required", [{"matchExpressions": []}, "arch=amd64"], "node_affinity_required[1]: 'arch=amd64'"),
    ("volumes", {"home": ["nfs"]}, "volumes['home']: ['nfs'] is not a dict"),
    # KubeSpawner's ValueError named a client model, not the setting: "'V1Toleration' did not have an attribute
    # matching 'keys'"
    ("tolerations", [{"keys": "gpu", "operator": "Exists"}],
     "tolerations[0]: 'keys' is no field of a Kubernetes Toleration (did you mean 'key'?)"),
    ("node_affinity_required", [{"nodeSelectorTerms": [{"matchExpressions": []}]}],
     "node_affinity_required[0]: 'nodeSelectorTerms' is no field of a Kubernetes NodeSelectorTerm (its fields: "
     "matchExpressions, matchFields)"),
    ("extra_pod_config", {"tolerationz": []}, "extra_pod_config: 'tolerationz' is no field of a Kubernetes PodSpec "
                                              "(did you mean 'tolerations'?)"),
])
async def test_a_kubernetes_object_setting_of_the_wrong_shape_is_one_error_naming_it(setting, value, words):
    """One toleration not wrapped in a list: KubeSpawner's AttributeError
    ("Expected object of type 'dict' (or 'V1Toleration') but got 'str'")
    named no setting, and came with a traceback."""
    s = await _in_profile({setting: value})
    with pytest.raises(web.HTTPError) as err:
        await s.get_pod_manifest()
    _said(err, words)
    fine = {"tolerations": {"gpu": {"key": "gpu", "operator": "Exists"}},  # KubeSpawner's dict form, by name
            "volumes": [{"name": "home", "persistent_volume_claim": {"claimName": "x"}}],  # snake_case too
            "extra_pod_config": {"priorityClassName": "users"}}
    assert (await spawner(**fine).get_pod_manifest()).spec.tolerations[0].key == "gpu"


async def test_a_per_user_volume_one_node_mounts_is_said_once(monkeypatch, caplog):
    """KubeSpawner's default PVC (ReadWriteOnce) cannot follow a live move:
    nothing said it, and each move waited, then was undone."""
    monkeypatch.setattr(ElasticSpawner, "_warned_volumes", set())
    for _ in range(2):
        await spawner(storage_pvc_ensure=True).get_pod_manifest()
    warned = [r.getMessage() for r in caplog.records if "storage_pvc_ensure" in r.getMessage()]
    assert len(warned) == 1 and "is ReadWriteOnce: a live move" in warned[0] and "move_method = 'restart'" in warned[0]
    caplog.clear()
    await spawner(storage_pvc_ensure=True, storage_access_modes=["ReadWriteMany"]).get_pod_manifest()
    await spawner(storage_pvc_ensure=True, storage_access_modes=["ReadWriteOncePod"],
                  migratable=False).get_pod_manifest()  # pinned: never moved
    await spawner().get_pod_manifest()
    assert "storage_pvc_ensure" not in caplog.text


async def test_state_round_trips_and_survives_clear_state():
    s = spawner()
    s.last_checkpoint = CheckpointOutcome("saved", kernels=1, bytes=2_000_000, seconds=0.5, at=1.0)
    s.last_node = "cloud-1"
    state = s.get_state()
    s.last_stop_moved = True
    state = s.get_state()
    assert state[STATE_KEY] == {"version": 1, "node": "cloud-1", "last_checkpoint": s.last_checkpoint.to_dict(),
                                "moved": True}
    assert state["pod_name"]  # KubeSpawner's own state is still there
    s.clear_state()  # the hub calls it after a stop: what the next start announces must stay
    assert s.get_state()[STATE_KEY]["node"] == "cloud-1"

    fresh = spawner()
    fresh.load_state(state)
    assert (fresh.last_checkpoint, fresh.last_node, fresh.last_stop_moved) == (s.last_checkpoint, "cloud-1", True)
    del state[STATE_KEY]["moved"]  # an older spawner's state: no move is said
    fresh.load_state(state)
    assert fresh.last_stop_moved is False


@pytest.mark.parametrize("mine", [{"version": 99, "node": "x"}, "garbage", None,
                                  {"version": 1, "node": 7, "last_checkpoint": {"status": "??"}}])
async def test_a_state_it_does_not_understand_loads_as_nothing(mine):
    s = spawner()
    s.load_state({"pod_name": "jupyter-x", STATE_KEY: mine})
    assert (s.last_checkpoint, s.last_node) == (None, None)
    assert s.pod_name == "jupyter-x"


async def test_the_start_announces_a_restore_only_after_a_saved_checkpoint():
    s = spawner()
    s.last_node, s.last_stop_moved = "cloud-1", True
    for status, kernels, announced in (("saved", 1, True), ("nothing-to-save", 0, False), ("unsupported", 0, False),
                                       ("failed", 0, False), ("failed", 1, True)):  # a stock kernel beside
        s.last_checkpoint = CheckpointOutcome(status, kernels=kernels, bytes=10 * kernels, unsaved=status == "failed")
        s._plan_announcements()
        assert (s._restoring is not None, s._moved_from == "cloud-1") == (announced, announced)


async def test_the_move_is_told_once_the_new_pod_has_a_node_then_the_restore(monkeypatch):
    s = spawner()
    s.last_node, s.last_checkpoint = "cloud-1", CheckpointOutcome("saved", kernels=2, bytes=3_000_000)
    s.last_stop_moved = True  # a drain stopped it
    s._plan_announcements()
    pod = {"spec": {}}
    monkeypatch.setattr(s, "_current_pod", lambda: pod)
    announced: set[str] = set()
    assert list(s._elastic_events(announced, final=False)) == []  # not scheduled yet
    pod["spec"]["nodeName"] = "onprem-2"
    assert [e["message"] for e in s._elastic_events(announced, final=False)] == [
        "Moving your server from cloud-1 to onprem-2",
        "Your variables will be restored when the notebook's kernel starts (2 kernels, 3.0 MB saved)"]
    assert list(s._elastic_events(announced, final=True)) == []  # each is told once


async def test_same_node_no_move_message_and_the_restore_is_told_at_the_end(monkeypatch):
    s = spawner()
    s.last_node, s.last_checkpoint = "onprem-1", CheckpointOutcome("saved", kernels=1, bytes=10)
    s._plan_announcements()
    monkeypatch.setattr(s, "_current_pod", lambda: None)
    assert [e["message"] for e in s._elastic_events(set(), final=True)] == [
        "Your variables will be restored when the notebook's kernel starts (1 kernel, less than 0.1 MB saved)"]


async def test_the_example_config_gives_a_valid_spawner():
    example = Path(__file__).resolve().parents[2] / "jupyterhub_config_example.py"
    c = Config()
    exec(compile(example.read_text(), str(example), "exec"), {"get_config": lambda: c, "__file__": str(example)})
    assert c.JupyterHub.spawner_class == "elastic"
    s = ElasticSpawner(config=c, _mock=True)
    assert _preferred(await s.get_pod_manifest())[-2:] == [(10, "elastichub.io/tier", ["on-prem"]),
                                                            (1, "elastichub.io/tier", ["cloud"])]
    s.user_options = {"profile": "exam"}
    await s.load_user_options()
    assert s.migratable is False


@pytest.mark.slow
def test_the_entry_point_loads_the_class_and_help_all_lists_its_traits():
    from jupyterhub.app import JupyterHub

    hub = JupyterHub()
    hub.spawner_class = "elastic"
    assert hub.spawner_class is ElasticSpawner
    out = subprocess.run([sys.executable, "-m", "jupyterhub", "--help-all"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    for trait in ("tier_label", "onprem_tier", "cloud_tier", "onprem_weight", "cloud_weight", "migratable",
                  "checkpoint_timeout"):
        assert f"--ElasticSpawner.{trait}=" in out


@pytest.fixture
async def stoppable(monkeypatch):
    """A spawner whose server runs on onprem-1, with KubeSpawner's own stop
    (the pod deletion) and the pod watch replaced by records."""
    from types import SimpleNamespace

    from kubespawner import KubeSpawner

    s = spawner()
    calls = []

    async def deleted(self, now=False):
        calls.append(("delete", now))

    async def nothing(*args, **kwargs):
        return None

    monkeypatch.setattr(KubeSpawner, "stop", deleted)
    monkeypatch.setattr(s, "_start_watching_pods", nothing)
    monkeypatch.setattr(s, "_current_pod", lambda: {"spec": {"nodeName": "onprem-1"}})
    monkeypatch.setattr(s, "is_pod_running", lambda pod: True)
    monkeypatch.setattr(ElasticSpawner, "server", property(lambda self: SimpleNamespace(url="http://x/user/a/")))
    return s, calls


def _checkpoints_save(s, calls, monkeypatch) -> None:
    async def checkpoint(url, purpose):
        calls.append(("checkpoint",))
        return CheckpointOutcome("saved", kernels=1, bytes=5)

    monkeypatch.setattr(s, "_checkpoint", checkpoint)


async def test_a_stop_checkpoints_first_then_deletes_the_pod(stoppable, monkeypatch):
    s, calls = stoppable
    _checkpoints_save(s, calls, monkeypatch)
    await s.stop()
    assert calls == [("checkpoint",), ("delete", False)]
    assert s.last_checkpoint.status == "saved" and s.last_node == "onprem-1"


async def test_a_server_running_across_a_hub_restart_stops_under_its_profile(monkeypatch, caplog):
    """The hub rebuilds a running server's spawner from its own settings: a
    big-kernel profile's checkpoint_timeout and delete_grace_period were
    gone, and the stop cut the checkpoint (and the kernels' own, at the
    pod's deletion) short."""
    from types import SimpleNamespace

    from kubespawner import KubeSpawner

    big = {"display_name": "Big", "slug": "big", "kubespawner_override": {"checkpoint_timeout": 600,
                                                                          "delete_grace_period": 90}}
    used = []

    async def checkpoint(self, url, purpose):
        used.append(("checkpoint", self.checkpoint_timeout))
        return CheckpointOutcome("saved", kernels=1, bytes=5)

    async def deleted(self, now=False):
        used.append(("delete", self.delete_grace_period))

    async def nothing(*args, **kwargs):
        return None

    monkeypatch.setattr(KubeSpawner, "stop", deleted)
    monkeypatch.setattr(ElasticSpawner, "_checkpoint", checkpoint)
    monkeypatch.setattr(ElasticSpawner, "_start_watching_pods", nothing)
    monkeypatch.setattr(ElasticSpawner, "_current_pod", lambda self: {"spec": {"nodeName": "onprem-1"}})
    monkeypatch.setattr(ElasticSpawner, "is_pod_running", lambda self, pod: True)
    monkeypatch.setattr(ElasticSpawner, "server", property(lambda self: SimpleNamespace(url="http://x/user/a/")))

    async def profiles(spawner):
        return [{"display_name": "Plain", "slug": "plain"}, big]

    for profile_list in ([{"display_name": "Plain", "slug": "plain"}, big], profiles):
        used.clear()
        c = Config()
        c.ElasticSpawner.profile_list = profile_list
        s = ElasticSpawner(config=c, _mock=True, user_options={"profile": "big"})  # as the hub builds it
        await s.stop()
        assert used == [("checkpoint", 600), ("delete", 90)]
        s.clear_state()  # after the stop: the hub's own settings again
        assert (s.checkpoint_timeout, s.delete_grace_period) == (120, 1)
    # A profile that is gone since: the stop goes on with the hub's settings, and says so.
    used.clear()
    s = spawner(profile_list=[{"display_name": "Plain", "slug": "plain"}])
    s.user_options = {"profile": "big"}
    await s.stop()
    assert used == [("checkpoint", 120), ("delete", 1)]
    assert "the profile of mock@name (big) cannot be applied to the running server" in caplog.text
    # A profile_list callable that hangs (it asks another service) does not hold the stop up.
    monkeypatch.setattr("elastichub.spawner.PROFILE_AGAIN_TIMEOUT", 0.1)

    async def hung(spawner):
        await asyncio.sleep(3600)

    used.clear()
    s = spawner(profile_list=hung)
    s.user_options = {"profile": "big"}
    await s.stop()
    assert used == [("checkpoint", 120), ("delete", 1)]
    assert "cannot be applied to the running server: profile_list took more than 0.1 s" in caplog.text


async def test_a_server_running_across_a_hub_restart_keeps_its_profile_for_all_the_hub_does_with_it(monkeypatch):
    """Only the stop re-applied the profile of a server that ran across a hub
    restart. Before it, the restarted hub's first look (poll, then get_url)
    and a live move's route request ran under the hub's own settings: a
    profile's services_enabled (its server reached through a Service of the
    pod's name) was gone, the hub rewrote the server's URL to the pod's IP,
    and a live move that profile cannot take was switched to."""
    from types import SimpleNamespace

    from kubespawner import KubeSpawner

    async def running(self):
        return None

    monkeypatch.setattr(KubeSpawner, "poll", running)
    monkeypatch.setattr(ElasticSpawner, "_watch_route_requests", lambda self: None)
    monkeypatch.setattr(ElasticSpawner, "server", property(lambda self: SimpleNamespace(host="http://10.0.0.5:8888")))
    monkeypatch.setattr(ElasticSpawner, "pending", None)
    c = Config()
    c.ElasticSpawner.profile_list = [{"display_name": "Notebook", "slug": "notebook"},
                                     {"display_name": "Dashboard", "slug": "dash",
                                      "kubespawner_override": {"services_enabled": True}}]

    def rebuilt() -> ElasticSpawner:  # as the restarted hub builds the spawner of a running server
        return ElasticSpawner(config=c, _mock=True, user_options={"profile": "dash"})

    s = rebuilt()
    pod = {"metadata": {"name": "jupyter-m-1", "uid": "u1", "labels": {podmeta.MANAGED_LABEL: "true"},
                        "annotations": {podmeta.USER_ANNOTATION: s.user.name, podmeta.MOVE_OF_ANNOTATION: s.pod_name,
                                        podmeta.ROUTE_ANNOTATION: podmeta.ROUTE_REQUESTED}},
           "status": {"podIP": "10.0.0.9"},
           "spec": {"containers": [{"name": "notebook", "ports": [{"name": "notebook-port", "containerPort": 8888}]}]}}
    assert await s.poll() is None
    assert s._get_pod_url(pod) == f"http://{s.dns_name}:8888"  # what the hub's get_url then reads

    # A profile_list callable whose service is down at the hub's start: its first poll goes on without
    # the profile, the next ones do not ask again, and the route request that follows does.
    asked = []

    async def profiles(spawner):
        asked.append(spawner.name)
        if len(asked) == 1:
            raise OSError("profile service unavailable")
        return profile_list

    profile_list, c.ElasticSpawner.profile_list = c.ElasticSpawner.profile_list, profiles
    s, answers = rebuilt(), []
    assert await s.poll() is None and await s.poll() is None
    assert len(asked) == 1 and s._get_pod_url(pod) == "http://10.0.0.9:8888"

    async def swap(name, expected, answer):
        answers.append(answer)
        return True

    async def switch(pod):
        answers.append("switched to " + pod["metadata"]["name"])

    monkeypatch.setattr(s, "_swap_route", swap)
    monkeypatch.setattr(s, "_switch_to", switch)
    monkeypatch.setattr(s, "is_pod_running", lambda pod: True)
    await s._answer_route_request(pod)
    assert answers == [f"{podmeta.ROUTE_REFUSED}: live moves do not support services_enabled or internal_ssl (use "
                       "move_method 'restart')"]


@pytest.mark.parametrize("marked_at", [None, "before", "during"])
async def test_only_a_drain_s_stop_makes_the_next_start_on_another_node_a_move(stoppable, monkeypatch, marked_at):
    """Its user's own stop and start, landing on another node, was told "Moving your server from onprem-1 to
    cloud-1": ElasticHub moved nothing. A drain marks the pod just before its stop (the pod cache may show it
    only once the stop's checkpoint is under way)."""
    from elastichub import podmeta

    s, calls = stoppable
    pod = {"metadata": {"annotations": {}}, "spec": {"nodeName": "onprem-1"}}
    mark = {podmeta.MOVING_ANNOTATION: "onprem-1"}
    if marked_at == "before":
        pod["metadata"]["annotations"].update(mark)

    async def checkpoint(url, purpose):
        if marked_at == "during":
            pod["metadata"]["annotations"].update(mark)
        return CheckpointOutcome("saved", kernels=1, bytes=5)
    monkeypatch.setattr(s, "_current_pod", lambda: pod)
    monkeypatch.setattr(s, "_checkpoint", checkpoint)
    await s.stop()
    s.load_state(s.get_state())  # the hub may restart between the stop and the start
    s._plan_announcements()
    monkeypatch.setattr(s, "_current_pod", lambda: {"spec": {"nodeName": "cloud-1"}})
    told = [e["message"] for e in s._elastic_events(set(), final=False)]
    moving = ["Moving your server from onprem-1 to cloud-1"] if marked_at else []
    assert told == [*moving, "Your variables will be restored when the notebook's kernel starts (1 kernel, less "
                               "than 0.1 MB saved)"]


async def test_a_stop_goes_ahead_when_the_checkpoint_itself_breaks(stoppable, monkeypatch):
    s, calls = stoppable

    async def broken(url, purpose):
        raise RuntimeError("database is locked")

    monkeypatch.setattr(s, "_checkpoint", broken)
    await s.stop()
    assert calls == [("delete", False)]
    assert (s.last_checkpoint.status, s.last_checkpoint.reason) == ("failed", "RuntimeError: database is locked")


async def test_stop_now_and_a_pod_not_running_skip_the_checkpoint(stoppable, monkeypatch):
    s, calls = stoppable

    async def checkpoint(url, purpose):
        raise AssertionError("no checkpoint expected")

    monkeypatch.setattr(s, "_checkpoint", checkpoint)
    await s.stop(now=True)  # KubeSpawner's cleanup of a pod that already ended
    monkeypatch.setattr(s, "is_pod_running", lambda pod: False)
    await s.stop()
    assert calls == [("delete", True), ("delete", False)] and s.last_checkpoint is None


def _running_pod(name: str, annotations: dict, labels: dict) -> dict:
    return {"metadata": {"name": name, "namespace": "default", "uid": "u1", "labels": labels,
                         "annotations": annotations},
            "spec": {"nodeName": "cloud-1"},
            "status": {"phase": "Running", "podIP": "10.0.0.5", "containerStatuses": [{"ready": True}]}}


@pytest.mark.parametrize("case", ["started by KubeSpawner before the hub used ElasticSpawner",
                                  "its user renamed by an admin while it ran"])
async def test_a_pod_without_elastichub_annotations_is_still_checkpointed_before_the_stop(case, monkeypatch):
    """The pod KubeSpawner deletes (the one of its pod name) is the pod asked
    for a checkpoint, whatever ElasticHub's annotations say."""
    from types import SimpleNamespace

    from kubespawner import KubeSpawner

    s = spawner()
    if case.startswith("started"):
        pod = _running_pod(s.pod_name, {}, {"component": "singleuser-server"})
    else:
        pod = _running_pod(s.pod_name, {podmeta.USER_ANNOTATION: "old-name", podmeta.SERVER_NAME_ANNOTATION: ""},
                           {podmeta.MANAGED_LABEL: podmeta.TRUE})
    reflector = SimpleNamespace(pods={f"{s.namespace}/{s.pod_name}": pod})
    monkeypatch.setattr(ElasticSpawner, "pod_reflector", property(lambda self: reflector))
    calls = []

    async def nothing(*args, **kwargs):
        return None

    async def deleted(self, now=False):
        calls.append("delete")

    async def checkpoint(url, purpose):
        calls.append("checkpoint")
        return CheckpointOutcome("saved", kernels=1)

    monkeypatch.setattr(s, "_start_watching_pods", nothing)
    monkeypatch.setattr(KubeSpawner, "stop", deleted)
    monkeypatch.setattr(ElasticSpawner, "server", property(lambda self: SimpleNamespace(url="http://x/user/a/")))
    monkeypatch.setattr(s, "_checkpoint", checkpoint)
    await s.stop()
    assert calls == ["checkpoint", "delete"] and s.last_node == "cloud-1"


@pytest.mark.parametrize("sidecar", [
    {"name": "log-shipper", "ready": False, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
    {"name": "proxy", "ready": False, "state": {"running": {}}},  # its readiness probe failing
])
async def test_a_server_whose_sidecar_is_not_ready_is_still_checkpointed_before_the_stop(sidecar, stoppable,
                                                                                        monkeypatch):
    """KubeSpawner's is_pod_running wants every container ready: a sidecar of
    extra_containers not ready made the stop skip the checkpoint ("its pod
    ... is not running") while the notebook container served the kernels."""
    from kubespawner import KubeSpawner

    s, calls = stoppable
    pod = _running_pod(s.pod_name, {}, {})
    pod["status"]["containerStatuses"] = [{"name": "notebook", "ready": True, "state": {"running": {}}}, sidecar]
    monkeypatch.setattr(s, "_current_pod", lambda: pod)
    monkeypatch.setattr(s, "is_pod_running", lambda pod: KubeSpawner.is_pod_running(s, pod))
    _checkpoints_save(s, calls, monkeypatch)
    await s.stop()
    assert calls == [("checkpoint",), ("delete", False)]
    calls.clear()
    pod["status"]["containerStatuses"][0].update(ready=False, state={"terminated": {"exitCode": 1}})
    await s.stop()  # the notebook container itself down: nothing to ask
    assert calls == [("delete", False)]


async def test_a_stop_without_a_pod_to_ask_says_so(stoppable, monkeypatch, caplog):
    s, calls = stoppable
    monkeypatch.setattr(s, "_current_pod", lambda: None)
    s.log = __import__("logging").getLogger("elastichub-test-stop")
    with caplog.at_level("WARNING", logger="elastichub-test-stop"):
        await s.stop()
    assert calls == [("delete", False)]
    assert "without a checkpoint: no pod was found" in caplog.text


async def test_a_server_may_wait_for_a_cloud_nodes_boot_unless_the_admin_says_otherwise():
    """JupyterHub's 60 s start_timeout would fail every user who came with
    on-prem full: their pod waits for a cloud node's boot."""
    assert spawner().start_timeout == 600
    shown = ElasticSpawner.class_get_help()  # what `jupyterhub --help-all` prints
    shown = shown[shown.index("--ElasticSpawner.start_timeout"):]
    assert shown[:shown.index("\n--")].rstrip().endswith("Default: 600"), shown[:600]
    c = Config()
    c.KubeSpawner.start_timeout = 300  # zero-to-jupyterhub's singleuser.startTimeout
    assert ElasticSpawner(config=c, _mock=True).start_timeout == 300


async def test_a_profile_that_lengthens_start_timeout_is_told_the_hub_does_not_wait_longer(monkeypatch, caplog):
    """JupyterHub reads start_timeout before KubeSpawner applies the profile
    (inside start): a cloud-burst profile's longer timeout changed nothing, silently."""
    monkeypatch.setattr(ElasticSpawner, "_warned_start_timeouts", set())
    profiles = [{"display_name": "Burst", "slug": "burst", "kubespawner_override": {"start_timeout": 1200}},
                {"display_name": "Quick", "slug": "quick", "kubespawner_override": {"start_timeout": 120}}]
    for slug in ("burst", "burst", "quick"):
        s = spawner(profile_list=profiles)
        s.user_options = {"profile": slug}
        await s.load_user_options()
    warned = [r.getMessage() for r in caplog.records if "start_timeout" in r.getMessage()]
    assert warned == ["ElasticHub: a profile's start_timeout (1200) does not lengthen the hub's wait for a server: "
                      "JupyterHub waits 600 s, read before the profile applies; set c.KubeSpawner.start_timeout to "
                      "the longest any profile needs"], warned


@pytest.mark.parametrize("capacity, words", [
    (None, "storage_pvc_ensure is on but storage_capacity is not set: Kubernetes refuses a claim without a size"),
    ("10GB", "storage_capacity: '10GB' is not a quantity"),
])
async def test_a_per_user_claim_without_a_readable_size_is_one_error_naming_the_setting(capacity, words):
    """KubeSpawner creates the claim first: the API server's 422 ended every
    start in a traceback (storage_capacity has no default outside z2jh)."""
    s = spawner(storage_pvc_ensure=True, **({"storage_capacity": capacity} if capacity else {}))
    with pytest.raises(web.HTTPError) as err:
        s.get_pvc_manifest()
    _said(err, words)
    claim = spawner(storage_pvc_ensure=True, storage_capacity="10Gi").get_pvc_manifest()
    assert claim.spec.resources.requests["storage"] == "10Gi"


@pytest.mark.parametrize("tolerations", [
    [{"operator": "Exists"}],
    {"all": {"operator": "Exists", "effect": "NoSchedule"}},
    [{"key": "gpu", "operator": "Exists"}, {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
])
async def test_a_toleration_of_the_cordon_is_refused_in_one_line(tolerations):
    """A toleration of every taint lets the scheduler place a server on a
    cordoned node: the orchestrator cordons a node to drain it, and a server
    it moved off by a restart could land back on it, silently."""
    with pytest.raises(web.HTTPError) as err:
        await spawner(tolerations=tolerations).get_pod_manifest()
    message = err.value.log_message % err.value.args
    assert ("tolerates node.kubernetes.io/unschedulable, a cordoned node's taint: servers would be placed on the "
            "nodes ElasticHub cordons to drain them") in message, message
    keyed = [{"key": "gpu", "operator": "Exists"}, {"key": "dedicated", "value": "user", "effect": "NoSchedule"}]
    assert len((await spawner(tolerations=keyed).get_pod_manifest()).spec.tolerations) == 2  # z2jh's kind: fine


async def test_a_toleration_of_the_cordon_in_extra_pod_config_is_refused_too():
    """extra_pod_config's tolerations replace the setting's on the pod: one
    that tolerates every taint went on the pod unchecked."""
    with pytest.raises(web.HTTPError) as err:
        await spawner(tolerations=[{"key": "gpu", "operator": "Exists"}],
                      extra_pod_config={"tolerations": [{"operator": "Exists"}]}).get_pod_manifest()
    _said(err, "extra_pod_config: tolerations: {'operator': 'Exists'} tolerates node.kubernetes.io/unschedulable")
    keyed = {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "user", "effect": "NoSchedule"}]}
    pod = await spawner(extra_pod_config=keyed).get_pod_manifest()
    assert podspec.plain(pod.spec)["tolerations"] == keyed["tolerations"]


@pytest.mark.parametrize("settings, words", [
    # KubeSpawner's own help shows a GPU asked for this way: the API server refused the pod (422, with the whole
    # pod in a traceback) for want of a limit.
    ({"extra_resource_guarantees": {"nvidia.com/gpu": "1"}},
     "extra_resource_guarantees: 'nvidia.com/gpu' (1) has no limit: Kubernetes refuses a pod whose nvidia.com/gpu "
     "is not limited to exactly what it requests; set extra_resource_limits {'nvidia.com/gpu': '1'} too"),
    ({"extra_resource_guarantees": {"nvidia.com/gpu": 1}, "extra_resource_limits": {"nvidia.com/gpu": 2}},
     "'nvidia.com/gpu' (1) differs from its limit in extra_resource_limits (2)"),
    ({"extra_resource_limits": {"nvidia.com/gpu": "0.5"}}, "extra_resource_limits: 'nvidia.com/gpu': '0.5' is not a "
                                                            "whole number"),
    ({"extra_resource_limits": {"gpu": 1}}, "extra_resource_limits: 'gpu' is no resource a container can ask for"),
    ({"extra_resource_limits": {"nvidia.com/gpu": "one"}}, "extra_resource_limits: 'nvidia.com/gpu': 'one' is not "
                                                            "a quantity"),
    ({"mem_guarantee": "1G", "extra_resource_limits": {"memory": "512Mi"}},
     "mem_guarantee: 'memory' (1073741824) is above its limit in extra_resource_limits (512Mi)"),
    ({"extra_containers": [{"name": "side", "image": "x", "resources": {"requests": {"nvidia.com/gpu": 1}}}]},
     "extra_containers[0].resources.requests: 'nvidia.com/gpu' (1) has no limit"),
])
async def test_resources_kubernetes_would_refuse_are_one_error_naming_the_setting(settings, words):
    with pytest.raises(web.HTTPError) as err:
        await spawner(**settings).get_pod_manifest()
    _said(err, words)


async def test_a_gpu_limited_as_kubernetes_takes_it_goes_on_the_pod():
    pod = await spawner(cpu_guarantee=1.0, cpu_limit=2.0, extra_resource_limits={"nvidia.com/gpu": "1"},
                        extra_resource_guarantees={"nvidia.com/gpu": 1}).get_pod_manifest()
    resources = pod.spec.containers[0].resources
    assert resources.limits["nvidia.com/gpu"] == "1" and resources.requests["nvidia.com/gpu"] == 1
