"""End to end: ElasticSpawner under a real JupyterHub and configurable-http-proxy
on the local cluster, with the Elastic Python kernel in the single-user servers
(talked to through the proxy, kernel websocket included)."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest
from hubtools import open_notebook
from localcluster.lc_clustertools import wait_for

from elastichub import podmeta, podspec
from elastichub.localcluster.config import default_config
from elastichub.spawner import STATE_KEY

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def elastic_config(tmp_path, extra: str = "") -> str:
    """Hub settings every test here shares: the kernel's checkpoints on a
    directory all "nodes" see (on the local cluster a pod is a local process,
    so the filesystem is the shared volume); POST .../server answers at once
    (202), so the test can follow the spawn's progress stream."""
    env = {"ELASTICHUB_CHECKPOINT_DIR": str(tmp_path / "checkpoints"), "ELASTICHUB_DISK_SPEED_MBPS": "500",
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    return (f"c.KubeSpawner.environment = {env!r}\n"
            'c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 0}\n' + extra)


def pod_of(cluster, user: str) -> dict:
    pods, _ = cluster.store.list("pods", "default", label_selector=f"{podmeta.MANAGED_LABEL}=true")
    mine = [p for p in pods if p["metadata"]["annotations"].get(podmeta.USER_ANNOTATION) == user
            and not p["metadata"].get("deletionTimestamp")]
    assert len(mine) == 1, [p["metadata"]["name"] for p in mine]
    return mine[0]


def cordon(cluster, node: str) -> None:
    cluster.store.update("nodes", node, lambda n: n["spec"].__setitem__("unschedulable", True))


def mark_moving(cluster, user: str) -> None:
    """What a drain writes on the pod just before its stop: only then is the next start a move."""
    pod = pod_of(cluster, user)
    cluster.store.update("pods", pod["metadata"]["name"], lambda p: p["metadata"]["annotations"].__setitem__(
        podmeta.MOVING_ANNOTATION, pod["spec"]["nodeName"]), namespace=pod["metadata"]["namespace"])


def last_checkpoint(state: dict) -> dict:
    return state[STATE_KEY]["last_checkpoint"]


CELLS = [
    "import numpy as np, pandas as pd\nrng = np.random.default_rng()\n"
    "a = rng.random((300, 200))\nb = rng.integers(0, 1_000_000, size=20_000)",
    "df = pd.DataFrame({'x': rng.random(2000), 'label': [f'row{i}' for i in range(2000)]})\n"
    "df['y'] = df.x * 3",
    "def poly(x, k=3):\n    return x ** k + 2 * x - 1",
]
# Everything the user defined, by value: content hashes, the generator's state,
# the function's result, and the names in the namespace.
FINGERPRINT = (
    "import hashlib as _h\n"
    "(sorted(n for n in dir() if not n.startswith('_') and n not in ('In', 'Out', 'exit', 'quit', 'get_ipython')),"
    " _h.sha256(a.tobytes()).hexdigest(), _h.sha256(b.tobytes()).hexdigest(),"
    " _h.sha256(pd.util.hash_pandas_object(df).values.tobytes()).hexdigest(), list(df.columns), str(df.dtypes.to_dict()),"
    " repr(rng.bit_generator.state), poly(7), poly(2, k=5))"
)


async def test_a_moved_server_comes_back_on_another_node_with_every_variable(cluster_factory, hub_factory, tmp_path):
    cluster = await cluster_factory(default_config().replace(boot_delay=0.2))
    # cleanup_servers off: the hub is restarted in the middle, the server must outlive it.
    hub = await hub_factory(cluster, elastic_config(tmp_path, "c.JupyterHub.cleanup_servers = False\n"),
                            spawner_class="elastic")
    await hub.start_server("alice")
    first = pod_of(cluster, "alice")
    old_node = first["spec"]["nodeName"]
    assert old_node.startswith("onprem-")

    nb = await open_notebook(hub, "alice", "work.ipynb")
    for cell in CELLS:
        out = await nb.run(cell)
        assert out["status"] == "ok", out
    before = await nb.run(FINGERPRINT)
    assert before["status"] == "ok" and before["results"], before
    nb.close()

    # A hub restart between start and stop: the spawner no longer holds the
    # server's token in memory, and must still checkpoint before the stop.
    await hub.restart()
    assert (await hub.server("alice") or {}).get("ready"), hub.log_text()

    cordon(cluster, old_node)
    mark_moving(cluster, "alice")  # the drain's stop, as the orchestrator makes it
    await hub.stop_server("alice")
    state = await hub.spawner_state("alice")
    saved = last_checkpoint(state)
    assert saved["status"] == "saved" and saved["kernels"] == 1 and saved["bytes"] > 500_000, saved
    assert state[STATE_KEY]["node"] == old_node

    code, body = await hub.api("POST", "/hub/api/users/alice/server")
    assert code == 202, (code, body)
    events = await hub.progress("alice")
    await hub.wait_server("alice", ready=True)
    new_node = pod_of(cluster, "alice")["spec"]["nodeName"]
    assert new_node != old_node and new_node.startswith("onprem-"), (old_node, new_node)

    messages = [e.get("message", "") for e in events]
    moving = f"Moving your server from {old_node} to {new_node}"
    restoring = podspec.restore_message(1, saved["bytes"])
    assert moving in messages and restoring in messages, messages
    assert messages.index(moving) < messages.index(restoring) < len(messages) - 1  # before "Server ready"
    # The cluster's events are the new pod's only, not the old one's of the same name.
    assert any(m.endswith(f"Successfully assigned default/jupyter-alice to {new_node}") for m in messages), messages
    assert not any(old_node in m for m in messages if m != moving), messages
    assert events[-1].get("ready") is True

    # The notebook, opened again for the same path, gets a kernel that restored it all.
    nb = await open_notebook(hub, "alice", "work.ipynb")
    after = await nb.run(FINGERPRINT)
    nb.close()
    assert after["status"] == "ok", after
    assert after["results"] == before["results"], (before, after)
    assert "Traceback" not in hub.log_text(10**6), hub.log_text()


async def test_on_prem_first_then_a_ready_cloud_node_never_a_cordoned_one(cluster_factory, hub_factory, tmp_path):
    cluster = await cluster_factory(default_config().replace(boot_delay=0.2))
    driver = cluster.cloud_driver()
    for vm in await asyncio.to_thread(driver.list_nodes):
        await asyncio.to_thread(driver.start_node, vm)
    ready = lambda name: cluster.store.get("nodes", name)["status"]["conditions"][0]["status"] == "True"  # noqa: E731
    await wait_for(lambda: ready("cloud-1") and ready("cloud-2"), timeout=20, what="both cloud nodes Ready")
    # One server fills a node (8 GiB each); the cordoned on-prem and cloud nodes have room but must stay empty.
    cordon(cluster, "onprem-1")
    cordon(cluster, "cloud-1")
    hub = await hub_factory(cluster, elastic_config(tmp_path, 'c.KubeSpawner.mem_guarantee = "6G"\n'),
                            spawner_class="elastic")

    await hub.start_server("alice")
    assert pod_of(cluster, "alice")["spec"]["nodeName"] == "onprem-2"  # on-prem while there is room
    await hub.start_server("bob")
    bob = pod_of(cluster, "bob")
    assert bob["spec"]["nodeName"] == "cloud-2"  # on-prem full: the Ready, schedulable cloud node

    affinity = bob["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert [(t["weight"], t["preference"]["matchExpressions"][0]["values"]) for t in affinity] == [
        (10, ["on-prem"]), (1, ["cloud"])]
    assert bob["metadata"]["labels"][podmeta.MIGRATABLE_LABEL] == "true"
    assert bob["metadata"]["annotations"][podmeta.SERVER_NAME_ANNOTATION] == ""

    # No kernel ran: the stop has nothing to save, and says so.
    await hub.stop_server("alice")
    outcome = last_checkpoint(await hub.spawner_state("alice"))
    assert (outcome["status"], outcome["reason"]) == ("nothing-to-save", "no kernel running")
    assert "Traceback" not in hub.log_text(10**6), hub.log_text()


async def test_a_server_without_the_kernel_package_stops_and_starts_like_kubespawners(
        cluster_factory, hub_factory, tmp_path):
    cluster = await cluster_factory()
    # A "plain" profile: pinned (migratable false), and its servers run without
    # the kernel package's server extension, as an image without it would.
    plain_config = tmp_path / "plain-jupyter-config"
    plain_config.mkdir()
    (plain_config / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"elastichub_kernel.serverext": False}}}))
    profiles = [
        {"display_name": "Elastic", "slug": "elastic", "default": True},  # what the other tests run
        {"display_name": "Plain, pinned", "slug": "plain", "kubespawner_override": {
            "migratable": False, "environment": {"JUPYTER_CONFIG_DIR": str(plain_config)}}},
    ]
    hub = await hub_factory(cluster, elastic_config(tmp_path, f"c.KubeSpawner.profile_list = {profiles!r}\n"),
                            spawner_class="elastic")

    await hub.start_server("carol", {"profile": "plain"})
    assert pod_of(cluster, "carol")["metadata"]["labels"][podmeta.MIGRATABLE_LABEL] == "false"
    code, _ = await hub.api("GET", "/user/carol/api/elastichub/status")
    assert code == 404  # really a server without the endpoint
    await hub.stop_server("carol")
    outcome = last_checkpoint(await hub.spawner_state("carol"))
    assert outcome["status"] == "unsupported" and "not installed" in outcome["reason"], outcome

    # Started again like any KubeSpawner server: no ElasticHub events, ready.
    code, _ = await hub.api("POST", "/hub/api/users/carol/server", {"profile": "plain"})
    assert code == 202
    events = await hub.progress("carol")
    assert events[-1].get("ready") is True
    assert not [e for e in events if "variables" in e.get("message", "") or "Moving" in e.get("message", "")]
    await hub.stop_server("carol")
    assert "Traceback" not in hub.log_text(10**6), hub.log_text()


async def test_a_bad_setting_found_at_hub_start_refuses_starts_and_leaves_running_servers(
        cluster_factory, hub_factory, tmp_path):
    """A bad setting is one line naming it, never a traceback. JupyterHub
    builds the running servers' spawners at its start: a value out of range
    there used to stop the whole hub."""
    cluster = await cluster_factory(default_config())
    hub = await hub_factory(cluster, elastic_config(tmp_path, "c.JupyterHub.cleanup_servers = False\n"),
                            spawner_class="elastic")
    await hub.start_server("erin")
    await hub.stop()
    hub.config_path.write_text(hub.config_path.read_text() + "c.ElasticSpawner.cloud_weight = 500\n")
    await hub.start()
    assert (await hub.server("erin") or {}).get("ready"), hub.log_text()
    words = "ElasticSpawner.cloud_weight: 500 is outside 1..100"
    assert hub.log_text(10**6).count(words) == 1, hub.log_text()
    await hub.api("POST", "/hub/api/users/frank")
    code, body = await hub.api("POST", "/hub/api/users/frank/server")
    assert code == 500 and body["message"].startswith("Bad ElasticHub configuration: " + words), body
    await hub.stop_server("erin")  # stops as usual, its checkpoint first
    assert last_checkpoint(await hub.spawner_state("erin"))["status"] == "nothing-to-save"
    assert "Traceback" not in hub.log_text(10**6), hub.log_text()


async def test_a_server_moved_to_another_node_mounts_the_same_per_user_claim(cluster_factory, hub_factory, tmp_path):
    """KubeSpawner's storage_pvc_ensure: the local cluster had no claims (404:
    no server of such a hub started). Moved, a server must get its claim back,
    not a new, empty one."""
    cluster = await cluster_factory(default_config().replace(boot_delay=0.2))
    hub = await hub_factory(cluster, elastic_config(tmp_path, """
c.KubeSpawner.storage_pvc_ensure = True
c.KubeSpawner.storage_capacity = "10Gi"
c.KubeSpawner.volumes = [{"name": "home", "persistentVolumeClaim": {"claimName": "{pvc_name}"}}]
c.KubeSpawner.volume_mounts = [{"name": "home", "mountPath": "/home/jovyan"}]
"""), spawner_class="elastic")  # as zero-to-jupyterhub's dynamic storage writes it

    def claims_of(pod: dict) -> list[str]:
        return [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"].get("volumes") or []
                if v.get("persistentVolumeClaim")]

    await hub.start_server("bob")
    first = pod_of(cluster, "bob")
    old_node, claim = first["spec"]["nodeName"], claims_of(first)
    assert claim == ["claim-bob"], first["spec"].get("volumes")
    cordon(cluster, old_node)
    await hub.stop_server("bob")
    await hub.start_server("bob")
    moved = pod_of(cluster, "bob")
    assert moved["spec"]["nodeName"] != old_node and claims_of(moved) == claim
    stored, _ = cluster.store.list("persistentvolumeclaims", "default")
    assert [c["metadata"]["name"] for c in stored] == claim and stored[0]["status"]["phase"] == "Bound"


async def test_a_running_pod_the_hub_lost_track_of_is_checkpointed_before_it_makes_way(
        cluster_factory, hub_factory, tmp_path):
    """KubeSpawner, finding a pod of the server's name in the way of its start
    (409), deleted it at once, without grace or checkpoint: the kernels that
    ran there, which the hub no longer knew of, were lost."""
    cluster = await cluster_factory(default_config())
    hub = await hub_factory(cluster, elastic_config(tmp_path, "c.JupyterHub.cleanup_servers = False\n"),
                            spawner_class="elastic")
    await hub.start_server("alice")
    lost = pod_of(cluster, "alice")
    nb = await open_notebook(hub, "alice", "lost.ipynb")
    assert (await nb.run("x = 6 * 7"))["status"] == "ok"
    nb.close()
    # The hub loses track of the running server (its database restored from before the start).
    await hub.stop()
    db = sqlite3.connect(hub.workdir / "jupyterhub.sqlite")
    with db:
        db.execute("UPDATE spawners SET server_id = NULL")
        db.execute("DELETE FROM servers")
    db.close()
    await hub.start()
    assert await hub.server("alice") is None
    await hub.start_server("alice")
    assert pod_of(cluster, "alice")["metadata"]["uid"] != lost["metadata"]["uid"]
    nb = await open_notebook(hub, "alice", "lost.ipynb")
    out = await nb.run("x")
    nb.close()
    assert out["status"] == "ok" and "42" in json.dumps(out["results"]), out
    assert "checkpoint before deleting the running pod in the way of the start of alice: saved" in hub.log_text(10**6)


async def test_a_server_that_ran_across_a_hub_restart_stops_under_its_profile(cluster_factory, hub_factory, tmp_path):
    """The restarted hub rebuilt the server's spawner from its own settings:
    the big-kernel profile's delete_grace_period and checkpoint_timeout were
    gone, and the pod was deleted with KubeSpawner's 1 s, cutting short the
    checkpoint its kernels write as they shut down."""
    cluster = await cluster_factory(default_config())
    profiles = [{"display_name": "Notebook", "slug": "notebook", "default": True},
                {"display_name": "Big data", "slug": "big", "kubespawner_override": {
                    "delete_grace_period": 45, "checkpoint_timeout": 300}}]
    hub = await hub_factory(cluster, elastic_config(tmp_path, "c.JupyterHub.cleanup_servers = False\n"
                                                    f"c.KubeSpawner.profile_list = {profiles!r}\n"),
                            spawner_class="elastic")
    await hub.start_server("alice", {"profile": "big"})
    nb = await open_notebook(hub, "alice", "big.ipynb")
    assert (await nb.run("x = 6 * 7"))["status"] == "ok"
    nb.close()
    await hub.restart()
    graces = set()

    async def watch():
        while True:
            for pod in cluster.store.list("pods", "default")[0]:  # get() raises once the pod is gone
                graces.add(pod["metadata"].get("deletionGracePeriodSeconds"))
            await asyncio.sleep(0.01)

    watcher = asyncio.ensure_future(watch())
    try:
        await hub.stop_server("alice")
    finally:
        watcher.cancel()
    assert graces - {None} == {45}, graces
    assert last_checkpoint(await hub.spawner_state("alice"))["status"] == "saved"
    assert "cannot be applied to the running server" not in hub.log_text(10**6)
