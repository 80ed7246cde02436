"""Servers in namespaces of their own (KubeSpawner's enable_user_namespaces):
the pods of a student live in `jupyter-<user>`, the hub in `default`. Load
falls: the orchestrator moves them live to on-prem, in their own namespaces,
and stops the VM. Every Kubernetes request is checked against the roles such
a hub has: KubeSpawner's (its pod verbs and namespace creation, granted
cluster-wide by the admin) plus `elastichub rbac --user-namespaces`."""

from __future__ import annotations

import pytest
from hubtools import open_notebook
from orchestratortools import DIGEST, ORCHESTRATOR_SERVICE, STATE, boot, drain_cloud_1, filler
from podtools import cluster_config, until
from rbactools import Z2JH_HUB_ROLE

from elastichub.orchestrator.rbac import cluster_rules

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

USERS = ("alice", "bob")


@pytest.fixture
def hub_roles():
    # KubeSpawner's role in every namespace, and namespaces to create; no Role in the hub's namespace at all.
    kubespawner = Z2JH_HUB_ROLE + ((("namespaces",), ("create",)),)
    return cluster_rules(user_namespaces=True) + kubespawner, ()


def _pods(cluster, user: str) -> list[dict]:
    return [p for p in cluster.store.list("pods")[0]
            if (p["metadata"].get("annotations") or {}).get("elastichub.io/user") == user]


async def test_servers_in_their_own_namespaces_move_live_with_their_state(cluster_factory, hub_factory, wire):
    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1, stop_delay=1.0))
    hub = await hub_factory(cluster, ORCHESTRATOR_SERVICE + "c.KubeSpawner.enable_user_namespaces = True\n"
                            "c.KubeSpawner.user_namespace_template = 'jupyter-{username}'\n",
                            spawner_class="elastic")
    cluster.store.create("pods", filler("7Gi"))
    await until(lambda: cluster.store.get("pods", "filler", "default")["status"].get("phase") == "Running",
                what="filler running")
    await boot(cluster, "cloud-1")
    digests, started = {}, {}
    for user in USERS:
        started[user] = (await hub.start_server(user))["started"]
        [pod] = _pods(cluster, user)
        assert (pod["metadata"]["namespace"], pod["spec"]["nodeName"]) == (f"jupyter-{user}", "cloud-1")
        nb = await open_notebook(hub, user, f"{user}.ipynb")
        assert (await nb.run(STATE))["status"] == "ok"
        digests[user] = (await nb.run(DIGEST))["stdout"]
        nb.close()

    cluster.store.delete("pods", "filler", "default")
    ctl = await drain_cloud_1(cluster, hub, wire, "live")

    assert sorted((m.server, m.method, m.outcome) for m in ctl.moves) == [
        (user, "live", "moved") for user in USERS], [m.to_json() for m in ctl.moves]
    for user in USERS:
        [pod] = _pods(cluster, user)
        assert (pod["metadata"]["namespace"], pod["spec"]["nodeName"]) == (f"jupyter-{user}", "onprem-1")
        server = await hub.server(user)
        assert server["ready"] and server["started"] == started[user]
        nb = await open_notebook(hub, user, f"{user}.ipynb")
        assert (await nb.run(DIGEST))["stdout"] == digests[user], f"{user}'s state differs after the move"
        nb.close()
    await hub.stop_server("bob")
    await until(lambda: not _pods(cluster, "bob"), timeout=60, what="bob's moved pod deleted by the hub's stop")
