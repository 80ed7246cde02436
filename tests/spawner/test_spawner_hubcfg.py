"""ElasticSpawner under settings a university hub's own config carries
(zero-to-jupyterhub style): each is honoured, or refused at the start in one
line that names it (not a traceback, not a failure later, mid-move)."""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client import ApiClient
from tornado import web

from elastichub import podmeta
from spawnertools import said, spawner


async def test_internal_ssl_is_started_as_kubespawner_starts_it(monkeypatch):
    """It was refused ("Bad ElasticHub configuration: JupyterHub.internal_ssl ..."): the checkpoint before a stop
    did not present the hub's certificate. It does now (test_spawner_internal_ssl.py): KubeSpawner's start makes
    the pod's certificate secret and Service."""
    from kubespawner import KubeSpawner

    monkeypatch.setattr(KubeSpawner, "start", lambda self: "KubeSpawner's start")
    s = spawner()
    s.internal_ssl = True  # not a setting of the spawner's: the hub passes its own when it builds one
    assert s.start() == "KubeSpawner's start"


@pytest.mark.parametrize("setting, value, words", [
    # KubeSpawner's ValueError named a client model, not the setting: "'V1Lifecycle' did not have an attribute
    # matching 'prestop'"
    ("lifecycle_hooks", {"prestop": {"exec": {"command": ["sleep", "5"]}}},
     "lifecycle_hooks: 'prestop' is no field of a Kubernetes Lifecycle (did you mean 'preStop'?)"),
    ("image_pull_secrets", ["campus-registry", {"nmae": "regcred"}],
     "image_pull_secrets[1]: 'nmae' is no field of a Kubernetes LocalObjectReference (did you mean 'name'?)"),
    # Went to the API server as written, which drops a field it does not know: the server ran as root.
    ("container_security_context", {"runAsUsr": 1000},
     "container_security_context: 'runAsUsr' is no field of a Kubernetes SecurityContext (did you mean 'runAsUser'?)"),
    ("pod_security_context", {"fsGrup": 100},
     "pod_security_context: 'fsGrup' is no field of a Kubernetes PodSecurityContext (did you mean 'fsGroup'?)"),
    # A client model's snake_case name: KubeSpawner's ValueError ("keys should have k8s camelCase names").
    ("pod_security_context", {"run_as_user": 1000},
     "pod_security_context: 'run_as_user' is a snake_case name; it takes the Kubernetes API's camelCase names "
     "(did you mean 'runAsUser'?)"),
    ("container_security_context", {"runAsNonRoot": True, "read_only_root_filesystem": True},
     "container_security_context: 'read_only_root_filesystem' is a snake_case name"),
])
async def test_a_misspelt_field_of_a_pod_setting_is_one_error_naming_the_setting(setting, value, words):
    with pytest.raises(web.HTTPError) as err:
        await spawner(**{setting: value}).get_pod_manifest()
    said(err, words)
    # Written right (a security context may be a callable, which KubeSpawner calls later), they reach the pod.
    pod = await spawner(lifecycle_hooks={"preStop": {"exec": {"command": ["sleep", "5"]}}},
                        image_pull_secrets=["campus-registry", {"name": "regcred"}],
                        container_security_context={"runAsUser": 1000},
                        pod_security_context=lambda spawner: {"fsGroup": 100}).get_pod_manifest()
    spec = ApiClient.__new__(ApiClient).sanitize_for_serialization(pod)["spec"]  # as it goes on the wire
    assert spec["imagePullSecrets"] == [{"name": "campus-registry"}, {"name": "regcred"}]
    assert spec["securityContext"] == {"fsGroup": 100}
    notebook = spec["containers"][0]
    assert notebook["securityContext"]["runAsUser"] == 1000
    assert notebook["lifecycle"] == {"preStop": {"exec": {"command": ["sleep", "5"]}}}


@pytest.mark.parametrize("environment, words", [
    # KubeSpawner's "TypeError: expected string or bytes-like object, got 'int'" named no variable.
    ({"OMP_NUM_THREADS": 1}, "environment['OMP_NUM_THREADS']: 1 is an int, not a string"),
    ({"COURSE": lambda spawner: ["ds100"]}, "environment['COURSE']: ['ds100'] (what its callable returned) is a list"),
    ({"TOKEN": {"valueFrm": {"secretKeyRef": {"name": "a", "key": "b"}}}},
     "environment['TOKEN']: 'valueFrm' is no field of a Kubernetes EnvVar (did you mean 'valueFrom'?)"),
])
async def test_an_environment_value_the_pod_cannot_hold_is_one_error_naming_the_variable(environment, words):
    with pytest.raises(web.HTTPError) as err:
        await spawner(environment=environment).get_pod_manifest()
    said(err, words)
    # Strings, callables returning them, a Kubernetes EnvVar's fields, and None (os.environ.get) reach the pod.
    fine = {"OMP_NUM_THREADS": "1", "HOME_OF": lambda spawner: f"/home/{spawner.user.name}", "UNSET": None,
            "TOKEN": {"valueFrom": {"secretKeyRef": {"name": "a", "key": "b"}}}}
    pod = await spawner(environment=fine).get_pod_manifest()
    env = {e["name"]: e for e in ApiClient.__new__(ApiClient).sanitize_for_serialization(pod)["spec"]["containers"][0][
        "env"]}
    assert env["OMP_NUM_THREADS"]["value"] == "1" and env["HOME_OF"]["value"] == "/home/mock@name"
    assert "value" not in env["UNSET"] and env["TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "b"


async def test_the_pod_says_how_long_a_stopping_pod_is_given():
    """The orchestrator deletes a live move's source itself: it gives it the same time."""
    pod = await spawner(delete_grace_period=45).get_pod_manifest()
    assert pod.metadata.annotations[podmeta.DELETE_GRACE_ANNOTATION] == "45"


@pytest.mark.parametrize("template, refused", [
    ("jupyter-{username}", True), ("jupyter-{escaped_username}", True),
    ("jupyter-{username}--{servername}", False), ("nb-{user_server}", False), ("{safe_user_server}", False)])
async def test_a_pod_name_template_without_the_server_name_is_refused_for_a_named_server(
        monkeypatch, template, refused):
    """Every server of a user got one pod name: KubeSpawner, finding the pod
    of the user's running server in the way (409), deleted it, without a
    checkpoint, to start the named one."""
    from kubespawner import KubeSpawner

    monkeypatch.setattr(KubeSpawner, "start", lambda self: "started")
    s = spawner(pod_name_template=template)
    assert s.start() == "started"  # the default server: its name is the user's own
    monkeypatch.setattr(type(s), "name", "gpu")  # JupyterHub's property reads the database's row
    if not refused:
        assert s.start() == "started"
        return
    with pytest.raises(web.HTTPError) as err:
        s.start()
    said(err, f"pod_name_template {template!r} names no server")


async def test_a_profiles_pod_name_template_without_the_server_name_is_refused_for_a_named_server(monkeypatch):
    """The hub-level check read only the hub's own template: a profile's
    kubespawner_override gave the named server the pod name of the user's
    default server (from its next start on), whose pod KubeSpawner deleted."""
    s = spawner(profile_list=[
        {"display_name": "GPU", "slug": "gpu", "kubespawner_override": {"pod_name_template": "jupyter-{username}"}},
        {"display_name": "Plain", "slug": "plain"}])
    default_pod = s.pod_name
    monkeypatch.setattr(type(s), "name", "gpu")  # JupyterHub's property reads the database's row
    s.user_options = {"profile": "gpu"}
    with pytest.raises(web.HTTPError) as err:
        await s.load_user_options()
    said(err, "profile_list: kubespawner_override: pod_name_template 'jupyter-{username}' names no server")
    # The profile is refused whole: the hub's template stands, for this start and the next.
    s.user_options = {"profile": "plain"}
    await s.load_user_options()
    s.clear_state()
    assert s.pod_name != default_pod and "gpu" in s.pod_name


TIER = "elastichub.io/tier"


def _required(*expressions):
    return [{"matchExpressions": list(expressions)}]


@pytest.mark.parametrize("settings, words", [
    ({"node_selector": {TIER: "onprem"}}, f"the pod's node selector {TIER}: 'onprem' (from node_selector"),
    ({"extra_pod_config": {"nodeSelector": {TIER: "burst"}}}, f"the pod's node selector {TIER}: 'burst'"),
    ({"node_affinity_required": _required({"key": TIER, "operator": "In", "values": ["gpu"]})},
     f"the pod's required node affinity on {TIER} (from node_selector"),
    ({"node_affinity_required": _required({"key": TIER, "operator": "NotIn", "values": ["on-prem", "cloud"]})},
     "no node of either tier can take it (on-prem nodes have elastichub.io/tier=on-prem, cloud nodes "
     "elastichub.io/tier=cloud), so every server would wait unplaced until start_timeout"),
    ({"node_selector": {TIER: "cloud"}, "node_affinity_required": _required(
        {"key": TIER, "operator": "In", "values": ["on-prem"]})},
     f"the pod's node selector {TIER}: 'cloud' and required node affinity on {TIER}"),
])
async def test_a_placement_no_node_of_either_tier_matches_is_one_error(settings, words):
    """A typo in a tier ('onprem'): the pod waited Pending until start_timeout,
    and the orchestrator could start no node for it."""
    with pytest.raises(web.HTTPError) as err:
        await spawner(**settings).get_pod_manifest()
    said(err, words)


@pytest.mark.parametrize("settings", [
    {"node_selector": {TIER: "cloud", "gpu": "a100"}},  # a cloud-burst profile: docs/spawner.md
    {"node_affinity_required": _required({"key": TIER, "operator": "NotIn", "values": ["cloud"]})},
    # One term names no tier: a node of either may match it.
    {"node_affinity_required": _required({"key": TIER, "operator": "In", "values": ["x"]})
     + _required({"key": "gpu", "operator": "Exists"})},
])
async def test_a_placement_one_tier_matches_is_kept_as_the_admin_wrote_it(settings):
    pod = await spawner(**settings).get_pod_manifest()
    assert pod.spec.node_selector == settings.get("node_selector")


async def test_a_tier_the_user_typed_into_a_profile_option_is_the_users_mistake():
    """A "pick your pool" option with a free-form field: 'onprem' typed for
    'on-prem' was answered "Bad ElasticHub configuration" (500), blaming the admin."""
    pool = {"display_name": "Pool", "unlisted_choice": {
        "enabled": True, "kubespawner_override": {"node_selector": {TIER: "{value}"}}},
        "choices": {"cloud": {"display_name": "Cloud", "kubespawner_override": {"node_selector": {TIER: "cloud"}}}}}
    s = spawner(profile_list=[{"display_name": "Any", "slug": "any", "profile_options": {"pool": pool}}])
    s.user_options = {"profile": "any", "pool--unlisted-choice": "onprem"}
    await s.load_user_options()
    with pytest.raises(web.HTTPError) as err:
        await s.get_pod_manifest()
    assert err.value.status_code == 400
    assert err.value.jupyterhub_message.startswith(
        "Your choice 'onprem' for pool cannot be used: 'onprem' (from node_selector")
