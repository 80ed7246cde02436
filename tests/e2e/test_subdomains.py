"""A hub with per-user subdomains (c.JupyterHub.subdomain_host, as hubs that
isolate users' origins run): each server is served at a host of its user's
(http://alice.hub.test/user/alice/), and the proxy routes by Host and path
(configurable-http-proxy --host-routing, which JupyterHub turns on). The
orchestrator still reaches each server through proxy_url, naming its host:
a drain moves a student's server off the cloud node with its state."""

from __future__ import annotations

import pytest
from orchestratortools import DIGEST, ORCHESTRATOR_SERVICE, STATE, boot, drain_cloud_1, filler
from podtools import cluster_config, node_of, until
from tornado.httpclient import AsyncHTTPClient
from tornado.netutil import DefaultLoopResolver, OverrideResolver, Resolver

from elastichub.demo.notebook import Notebook

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

DOMAIN = "hub.test"  # nothing resolves it: the student's browser is pointed at the proxy (below)


@pytest.fixture
def students_dns(request):
    """`students_dns(port)`: http://USER.hub.test (port 80) leads to the proxy at 127.0.0.1:port, as the
    wildcard DNS record of a subdomain hub leads a browser to its proxy (the notebook client's requests
    and websockets resolve through tornado's Resolver)."""
    def point(port: int) -> None:
        mapping = {(f"alice.{DOMAIN}", 80): ("127.0.0.1", port)}
        Resolver.configure(OverrideResolver, resolver=DefaultLoopResolver(), mapping=mapping)
    yield point
    Resolver.configure(None)


async def _notebook(hub, user: str) -> Notebook:
    nb = Notebook(f"http://{user}.{DOMAIN}", user, hub.token, f"{user}.ipynb")
    nb.http = AsyncHTTPClient(force_instance=True)  # made after students_dns: resolves through it
    return await nb.open()


@pytest.mark.parametrize("move_method", ["live", "restart"])
async def test_a_server_at_its_users_subdomain_moves_with_its_state(cluster_factory, hub_factory, wire,
                                                                     students_dns, move_method):
    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1, stop_delay=1.0))
    hub = await hub_factory(cluster, ORCHESTRATOR_SERVICE + f"c.JupyterHub.subdomain_host = 'http://{DOMAIN}'\n",
                            spawner_class="elastic")
    students_dns(hub.proxy_port)
    cluster.store.create("pods", filler("7Gi"))
    await until(lambda: cluster.store.get("pods", "filler", "default")["status"].get("phase") == "Running",
                what="filler running")
    await boot(cluster, "cloud-1")
    started = (await hub.start_server("alice"))["started"]
    assert (await hub.server("alice"))["url"] == f"http://alice.{DOMAIN}/user/alice/"  # the hub's URL of it
    assert node_of(cluster.store, "jupyter-alice") == "cloud-1"
    nb = await _notebook(hub, "alice")
    assert (await nb.run(STATE))["status"] == "ok"
    digest = (await nb.run(DIGEST))["stdout"]
    nb.close()

    cluster.store.delete("pods", "filler", "default")
    ctl = await drain_cloud_1(cluster, hub, wire, move_method)

    assert [(m.server, m.method, m.outcome, m.destination) for m in ctl.moves] == [
        ("alice", move_method, "moved", "onprem-1")], [m.to_json() for m in ctl.moves]
    pods = [p for p in cluster.store.list("pods", "default")[0]
            if (p["metadata"].get("annotations") or {}).get("elastichub.io/user") == "alice"]
    assert [p["spec"]["nodeName"] for p in pods] == ["onprem-1"]
    server = await hub.server("alice")
    assert server["ready"] and (server["started"] == started) is (move_method == "live")
    nb = await _notebook(hub, "alice")  # at her subdomain, where the proxy now routes to the new pod
    assert (await nb.run(DIGEST))["stdout"] == digest
    nb.close()
