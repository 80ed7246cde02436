"""End to end: unmodified KubeSpawner under a real JupyterHub and configurable-http-proxy,
against the local cluster. A user's server starts as a pod, answers through the proxy, stops."""

from __future__ import annotations

import asyncio

import pytest
from localcluster.lc_clustertools import alive, event_reasons, wait_for

pytestmark = [pytest.mark.timeout(150), pytest.mark.slow]


@pytest.fixture
async def hub(cluster_factory, hub_factory):
    cluster = await cluster_factory()
    hub = await hub_factory(cluster)
    return cluster, hub.api, hub.log_path


async def test_a_users_server_starts_as_a_pod_answers_through_the_proxy_and_stops(hub):
    cluster, api, hub_log = hub
    store = cluster.store
    code, _ = await api("POST", "/hub/api/users/alice")
    assert code == 201
    code, _ = await api("POST", "/hub/api/users/alice/server")
    assert code in (201, 202), hub_log.read_text()[-3000:]

    async def ready() -> bool:
        code, user = await api("GET", "/hub/api/users/alice")
        server = (user.get("servers") or {}).get("")
        return bool(server and server.get("ready"))

    for _ in range(600):
        if await ready():
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the server never became ready:\n" + hub_log.read_text()[-4000:])

    pod = store.get("pods", "jupyter-alice", "default")
    ip = pod["status"]["podIP"]
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"].startswith("onprem-")
    assert ip.startswith("127.0.") and ip.split(".")[2] not in ("0", "1")
    assert {"Scheduled", "Created", "Started"} <= set(event_reasons(store, "jupyter-alice"))

    # Through the proxy, authenticated with the tester's token (access:servers).
    code, status = await api("GET", "/user/alice/api/status")
    assert code == 200, status
    assert "started" in status and "kernels" in status
    log = cluster._read_log("default", "jupyter-alice", "notebook")
    port = pod["spec"]["containers"][0]["ports"][0]["containerPort"]
    assert f"http://{ip}:{port}/user/alice/" in log  # jupyter-server says where it listens: the pod IP
    pid = int(pod["status"]["containerStatuses"][0]["containerID"].split("//")[1])
    assert alive(pid)

    code, _ = await api("DELETE", "/hub/api/users/alice/server")
    assert code in (202, 204)
    await wait_for(lambda: not store.list("pods", field_selector="metadata.name=jupyter-alice")[0],
                   timeout=40, what="the pod to be deleted")
    for _ in range(300):
        code, user = await api("GET", "/hub/api/users/alice")
        if not user.get("servers"):
            break
        await asyncio.sleep(0.1)
    assert not user.get("servers")
    assert not alive(pid)
    assert "Killing" in event_reasons(store, "jupyter-alice")
    assert "Traceback" not in hub_log.read_text(), hub_log.read_text()[-4000:]
