"""A server no checkpoint can move (a stock kernel beside Elastic ones, or
kernels in an image without ElasticHub's server extension) is found before
its node is cordoned: the node is not drained, the policy stops planning
it, until the server's kernels change or it restarts. Against the local
cluster (real informers, libcloud driver, policy) and a hub that answers
as such a server does."""

from __future__ import annotations

import dataclasses

import pytest
from podtools import server_pod, until
from test_scale_out import alice_on_cloud_1, paper

from elastichub.checkpoint_client import FAILED, UNSUPPORTED, CheckpointOutcome
from elastichub.orchestrator.hub import HubError, HubServer
from elastichub.orchestrator.movable import Movability

pytestmark = [pytest.mark.timeout(60)]

ELASTIC = {"id": "k1", "name": "elastic-python", "execution_state": "idle"}
STOCK = {"id": "k2", "name": "python3", "execution_state": "idle"}


class ServerHub:
    """alice's server, idle; `extension` False: its image has no ElasticHub server extension."""

    def __init__(self, kernels, extension=True):
        self.kernel_list, self.extension, self.calls = list(kernels), extension, []

    async def server(self, user, name):
        return HubServer(user, name, True, None, f"/user/{user}/", {}, None, None)

    def proxy_base(self, server):
        return f"http://proxy{server.url}"

    async def kernels(self, server):
        return self.kernel_list

    async def terminals(self, server):
        return []

    async def server_call(self, base, method, path, body=None, *, owner=None, timeout=None):
        self.calls.append((method, path))
        if not self.extension and path.startswith("/api/elastichub/"):
            raise HubError(f"{method} {path} at {base}: 404 Not Found", 404)
        if path == "/api/sessions":
            return [{"id": f"s-{k['id']}", "path": f"{k['id']}.ipynb", "name": f"{k['id']}.ipynb", "type": "notebook",
                     "kernel": {"id": k["id"], "name": k["name"]}} for k in self.kernel_list]
        results = [{"kernel_id": k["id"], "kernel_name": k["name"], "elastic": k["name"] != "python3",
                    "ok": k["name"] != "python3"} for k in self.kernel_list]
        if path == "/api/elastichub/status?ask_kernels=0":  # what each kernel is, without asking it
            return {"version": "1", "kernels": results}
        return [dict(r, error="kernel 'python3' is not an Elastic Python kernel") if not r["ok"] else r
                for r in results]  # a live phase

    async def checkpoint(self, server, timeout, hold_s=None):
        self.calls.append(("checkpoint", server.user))
        if not self.extension:
            return CheckpointOutcome(UNSUPPORTED, reason="the server has no checkpoint endpoint")
        return CheckpointOutcome(FAILED, kernels=1, unsaved=1, reason="kernel k2: kernel 'python3' is not an "
                                 "Elastic Python kernel: it cannot checkpoint")

    async def stop(self, user, name):
        self.calls.append(("stop", user))

    async def start(self, user, name, options):
        self.calls.append(("start", user))


@pytest.mark.parametrize("obstacle, kernels, extension, said", [
    ("a stock kernel", [ELASTIC, STOCK], True, "kernel(s) 'python3' (k2) not Elastic Python"),
    ("no server extension", [STOCK], False, "no ElasticHub server extension (checkpoint endpoint 404)"),
])
@pytest.mark.parametrize("move_method", ["restart", "live"])
async def test_a_node_whose_server_no_checkpoint_can_move_is_never_cordoned_and_not_planned_again(
        cluster_factory, wire, obstacle, kernels, extension, said, move_method):
    """Each drain of cloud-1 cordoned it, wrote its record, checkpointed (or pre-copied) alice's
    kernels and rolled back on the stock one, again after every back-off."""
    cluster = await alice_on_cloud_1(cluster_factory)
    hub = ServerHub(kernels, extension)
    ctl = await wire(cluster, paper(theta=101), hub=hub, move_method=move_method)
    await until(lambda: any(p.node == "cloud-1" and p.phase == "Running" for p in ctl.pods.records.values()),
                what="alice running on cloud-1")
    await until(lambda: ctl.nodes.records.get("cloud-1") and ctl.nodes.records["cloud-1"].ready, what="cloud-1")
    marked = []
    mark_drain = ctl.kube.mark_drain

    async def recording_mark(node, record):
        marked.append(node)
        return await mark_drain(node, record)

    ctl.kube.mark_drain = recording_mark
    first = await ctl.cycle()
    assert (first["action"], first["nodes"]) == ("scale-in", ["cloud-1"]), first
    await until(lambda: not ctl._busy("drain:cloud-1"), what="the drain's end")
    assert marked == [], f"{obstacle}: cloud-1 was cordoned for a drain that cannot succeed"
    assert not [c for c in hub.calls if c[0] in ("checkpoint", "POST", "stop")], hub.calls
    assert not cluster.store.get("nodes", "cloud-1")["spec"].get("unschedulable")
    assert any(e["kind"] == "drain" and "not started" in e["message"] and said in e["message"]
               for e in ctl.events), ctl.events
    assert said in ctl.status()["unmovable"]["alice"]
    for _ in range(3):  # pinned for the policy, as migratable: false: no futile drain, no wasted cool-down
        again = await ctl.cycle()
        assert again["action"] != "scale-in", again
    assert marked == [] and not ctl._busy("drain:cloud-1")


async def test_a_finding_ends_when_the_servers_kernels_change_or_it_restarts():
    """Until then its node is pinned; then it is probed afresh at the next drain."""
    from elastichub.orchestrator.drain import MoveAborted
    from elastichub.orchestrator.records import pod_record
    from elastichub.policy import ClusterSnapshot, Node, Resources, Tier

    pod = pod_record(dict(server_pod("alice", "1Gi"), spec={**server_pod("alice")["spec"], "nodeName": "cloud-1"},
                          metadata={**server_pod("alice")["metadata"], "uid": "u1"}))
    hub, clock = ServerHub([ELASTIC, STOCK]), [0.0]
    movable = Movability(hub, clock=lambda: clock[0], recheck=60)
    with pytest.raises(MoveAborted, match="alice: kernel.s. 'python3' .k2. not Elastic Python"):
        await movable.check("cloud-1", [pod])
    snap = ClusterSnapshot((Node("cloud-1", Tier.CLOUD, Resources(4, 8e9), servers=(pod.as_server,)),))
    assert [s.movable for s in movable.pin(snap).nodes[0].servers] == [False]
    assert not movable.update([pod]), "re-read only every `recheck` seconds"
    clock[0] = 61
    assert movable.update([pod])
    await movable.recheck()  # the same kernels: kept
    assert list(movable.found) == ["alice"]
    hub.kernel_list = [ELASTIC]  # the student shut the stock kernel down
    clock[0] = 200
    assert movable.update([pod])
    await movable.recheck()
    assert movable.found == {} and movable.pin(snap) is snap
    await movable.check("cloud-1", [pod])  # probed afresh: movable now
    hub.kernel_list = [ELASTIC, STOCK]
    with pytest.raises(MoveAborted):
        await movable.check("cloud-1", [pod])
    restarted = dataclasses.replace(pod, uid="u2")
    assert not movable.update([restarted]) and movable.found == {}, "a restart ends the finding"


async def test_a_server_without_the_extension_that_runs_no_kernel_is_movable():
    from elastichub.orchestrator.records import pod_record

    pod = pod_record(dict(server_pod("alice"), spec={**server_pod("alice")["spec"], "nodeName": "cloud-1"}))
    movable = Movability(ServerHub([], extension=False))
    await movable.check("cloud-1", [pod])  # nothing to lose: a restart move stops it as KubeSpawner would
    assert movable.found == {}
