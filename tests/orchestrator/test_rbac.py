"""`elastichub rbac`: the roles a hub's service account needs, built and checked without a cluster."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
import yaml
from kubernetes_asyncio.client import ApiClient

from elastichub.orchestrator.rbac import manifests


def test_the_roles_bind_the_hubs_service_account_in_its_namespace():
    cluster_role, cluster_binding, role, role_binding = manifests("jhub", "hub")
    assert [o["kind"] for o in (cluster_role, cluster_binding, role, role_binding)] == [
        "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]
    for binding, ref in ((cluster_binding, cluster_role), (role_binding, role)):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "hub", "namespace": "jhub"}]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": ref["kind"],
                                      "name": ref["metadata"]["name"]}
    assert role["metadata"]["namespace"] == role_binding["metadata"]["namespace"] == "jhub"
    assert "namespace" not in cluster_role["metadata"]
    granted = {(r, v) for rule in cluster_role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert {("nodes", "patch"), ("pods", "watch")} <= granted and ("pods", "delete") not in granted
    local = {(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert ("pods", "patch") in local  # zero-to-jupyterhub's hub Role has no patch: a live move needs it
    assert ("events", "create") in local  # a waiting server's pod says why it waits


async def test_the_objects_are_what_the_kubernetes_api_reads():
    # Every field is one the Kubernetes client's models know: a misspelt one would not come back.
    async with ApiClient() as client:
        for obj in manifests("jhub"):
            model = client.deserialize(SimpleNamespace(data=json.dumps(obj)), f"V1{obj['kind']}")
            assert client.sanitize_for_serialization(model) == obj


def test_with_user_namespaces_every_rule_is_cluster_wide():
    objects = manifests("jhub", user_namespaces=True)
    assert [o["kind"] for o in objects] == ["ClusterRole", "ClusterRoleBinding"]
    granted = {(r, v) for rule in objects[0]["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert granted == {("nodes", v) for v in ("get", "list", "watch", "patch")} | {
        ("pods", v) for v in ("get", "list", "watch", "create", "patch", "delete")} | {("events", "create")}


@pytest.mark.parametrize("args, problem", [
    (("Jhub",), "namespace 'Jhub'"),
    (("jhub", "Hub_SA"), "service account 'Hub_SA'"),
    (("j" * 64,), "at most 63"),
])
def test_a_bad_name_is_refused_naming_it(args, problem):
    with pytest.raises(ValueError, match=problem):
        manifests(*args)


def test_the_command_prints_yaml_for_kubectl_apply():
    out = subprocess.run([sys.executable, "-m", "elastichub", "rbac", "--namespace", "jhub",
                          "--service-account", "jupyterhub-hub", "--name", "elastichub-prod"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "&id" not in out and "*id" not in out  # no YAML aliases: plain objects, as kubectl expects
    assert list(yaml.safe_load_all(out)) == manifests("jhub", "jupyterhub-hub", "elastichub-prod")
    bad = subprocess.run([sys.executable, "-m", "elastichub", "rbac", "--namespace", "J"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "namespace 'J' is not a valid Kubernetes name" in bad.stderr
    assert "Traceback" not in bad.stderr
