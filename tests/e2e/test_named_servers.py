"""A hub as many admins run it: a base_url (/jhub/) and named servers. One
student (a login with an accent, an apostrophe and an @) runs her default server and a named one, the same notebook open in
both (one home, one checkpoint root), each with its own variables, both on
the cloud node. Load falls: the orchestrator moves both to on-prem and
stops the VM; each server keeps its own state, never the other's."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hubtools import open_notebook
from orchestratortools import DIGEST, ORCHESTRATOR_SERVICE, STATE, boot, drain_cloud_1, filler
from jupyterhub.utils import url_escape_path
from podtools import cluster_config, until


pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

# A user name as an institution's login gives it: escaped differently in pod
# names, URLs and label values, kept as is in the annotations.
USER = "zoë.o'neil@uni.edu"
NAMED = "gpu"
NOTEBOOK = "lab1.ipynb"


def _pods(cluster) -> dict[str, dict]:
    """USER's pods by server name ("" for the default server)."""
    pods = {}
    for pod in cluster.store.list("pods", "default")[0]:
        annotations = pod["metadata"].get("annotations") or {}
        if annotations.get("elastichub.io/user") == USER:
            pods.setdefault(annotations.get("elastichub.io/server-name", ""), []).append(pod)
    return pods


@pytest.mark.parametrize("move_method", ["live", "restart"])
async def test_a_named_server_and_the_default_one_move_each_with_its_own_state(
        cluster_factory, hub_factory, wire, move_method):
    cluster = await cluster_factory(cluster_config(onprem=1, cloud=1, stop_delay=1.0))
    hub = await hub_factory(cluster, ORCHESTRATOR_SERVICE + "c.JupyterHub.allow_named_servers = True\n",
                            spawner_class="elastic", base_url="/jhub/")
    cluster.store.create("pods", filler("7Gi"))
    await until(lambda: cluster.store.get("pods", "filler", "default")["status"].get("phase") == "Running",
                what="filler running")
    await boot(cluster, "cloud-1")
    digests, started = {}, {}
    for name in ("", NAMED):
        started[name] = (await hub.start_server(USER, name=name))["started"]
        nb = await open_notebook(hub, USER, NOTEBOOK, server_name=name)
        assert (await nb.run(STATE + f"\nwhich = {name!r}"))["status"] == "ok"
        digests[name] = (await nb.run(DIGEST + "; print(which)"))["stdout"]
        nb.close()
    assert digests[""] != digests[NAMED]  # random arrays: two states
    pods = _pods(cluster)
    assert {name: [p["spec"]["nodeName"] for p in ps] for name, ps in pods.items()} == {
        "": ["cloud-1"], NAMED: ["cloud-1"]}

    asked = {name: ps[0]["metadata"]["creationTimestamp"] for name, ps in pods.items()}
    cluster.store.delete("pods", "filler", "default")
    # The orchestrator's proxy_url is the hub's public URL, base_url included (hub_client).
    ctl = await drain_cloud_1(cluster, hub, wire, move_method)

    moves = sorted((m.server, m.method, m.outcome, m.destination) for m in ctl.moves)
    assert moves == [(USER, move_method, "moved", "onprem-1"), (f"{USER}/{NAMED}", move_method, "moved",
                                                                  "onprem-1")], [m.to_json() for m in ctl.moves]
    pods = _pods(cluster)
    assert {name: [p["spec"]["nodeName"] for p in ps] for name, ps in pods.items()} == {
        "": ["onprem-1"], NAMED: ["onprem-1"]}
    # Each new pod says when its user asked for the server: a moved server is no new arrival.
    assert {name: ps[0]["metadata"]["annotations"].get("elastichub.io/asked") for name, ps in pods.items()} == asked
    for name in ("", NAMED):
        server = await hub.server(USER, name)
        assert server["ready"] and server["url"] == f"/jhub/user/{url_escape_path(USER)}/" + (f"{NAMED}/" if name else "")
        # A live move keeps the hub's server (same start); a restart move is a new start.
        assert (server["started"] == started[name]) is (move_method == "live")
        nb = await open_notebook(hub, USER, NOTEBOOK, server_name=name)
        assert (await nb.run(DIGEST + "; print(which)"))["stdout"] == digests[name], f"server {name!r}"
        nb.close()
    await hub.api("DELETE", f"/hub/api/users/{quote(USER, safe='')}/servers/{NAMED}")
    await until(lambda: NAMED not in _pods(cluster), timeout=60, what="the named server's pod deleted")
    assert "" in _pods(cluster)
