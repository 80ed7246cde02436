"""A live move whose destination pod is gone once the route was asked for
(deleted, evicted), decided on a real API server by the hub's record of the
server. It used to be taken for "never switched": the move was undone, the
retired source thawed and left running with no owner, and at its deletion
its kernels wrote their older state over the destination's checkpoint."""

from __future__ import annotations

import logging

import pytest
from podtools import server_pod

from elastichub.orchestrator.drain import DrainTimeouts
from elastichub.orchestrator.hub import HubError, parse_server
from elastichub.orchestrator.kube import KubePods
from elastichub.orchestrator.live import LiveMove

pytestmark = [pytest.mark.timeout(60)]

SOURCE, DEST = "jupyter-alice", "jupyter-alice-m000001"


class Hub:
    """The hub's REST answers: alice's server model as the hub writes it
    (`raw`, None: not running), and the source's kernels answering a thaw."""

    def __init__(self, raw: dict | None, before=None):
        self.raw, self.before, self.phases = raw, before, []

    async def server(self, user, name):
        if self.before is not None:
            self.before()
        return None if self.raw is None else parse_server(user, name, self.raw)

    def proxy_base(self, server):
        return "http://proxy/user/alice/"

    async def server_call(self, base, method, path, body=None, timeout=None, owner=None):
        self.phases.append(body["phase"])
        return [{"kernel_id": "k1", "ok": True, "was": "retired", "delta_removed": True}]


def _model(pod_name: str | None, *, state: bool = True) -> dict:
    model = {"ready": True, "pending": None, "url": "/user/alice/"}
    if state:
        model["state"] = {"pod_name": pod_name, "namespace": "default", "dns_name": f"{pod_name}.default"}
    return model


def _move(api, hub: Hub) -> LiveMove:
    async def save(needed=True):
        pass

    entry = {"user": "alice", "name": "", "ns": "default", "source": SOURCE, "dest": DEST, "step": "route",
             "prefix": "/user/alice/", "to": "onprem-1"}
    return LiveMove(hub=hub, pods=KubePods(api), timeouts=DrainTimeouts(route=0.3), entry=entry, save=save,
                    poll=0.02)


def _source_left(cluster) -> dict | None:
    pod = cluster.store.get("pods", SOURCE, namespace="default")
    return None if pod is None or pod["metadata"].get("deletionTimestamp") else pod


@pytest.mark.parametrize("hub_serves, outcome, thawed, source_stays", [
    (DEST, "done", False, False),  # switched, then the destination was evicted: the retired source goes
    (SOURCE, "undone", True, True),  # never switched: the source serves on, thawed
    (None, "stopped", False, False),  # the hub stopped the server since: nobody owns the source
])
async def test_a_destination_gone_after_the_route_request_is_decided_by_the_hubs_record(
        core, caplog, hub_serves, outcome, thawed, source_stays):
    cluster, api = core
    cluster.store.create("pods", server_pod("alice"))  # the source; the destination is gone
    hub = Hub(None if hub_serves is None else _model(hub_serves))
    with caplog.at_level(logging.WARNING, logger="elastichub.orchestrator.live"):
        assert await _move(api, hub).recover() == outcome
    assert (hub.phases == ["thaw"]) is thawed, "a retired kernel thawed in a pod the hub no longer serves"
    assert (_source_left(cluster) is not None) is source_stays, "the source pod left running with no owner"
    if thawed:  # a retired kernel thawed is said
        assert "kernel(s) k1 had been retired; thawed, as the hub still serves the source" in caplog.text


async def test_without_the_hubs_record_nothing_is_guessed(core):
    """A role without admin:server_state: the hub's model holds no state.
    Neither thawed nor deleted; the error names the scope (the record stays)."""
    cluster, api = core
    cluster.store.create("pods", server_pod("alice"))
    hub = Hub(_model(None, state=False))
    with pytest.raises(HubError, match="holds no spawner state .*needs the scope admin:server_state"):
        await _move(api, hub).recover()
    assert hub.phases == [] and _source_left(cluster) is not None


async def test_a_server_started_afresh_under_the_sources_name_is_not_deleted(core):
    """The hub stopped the server and starts it again under the pod name the
    source had (KubeSpawner replaces a pod of that name): only the source
    read before the hub's answer is deleted, never the new pod."""
    cluster, api = core
    cluster.store.create("pods", server_pod("alice"))

    def restarted():  # between the orchestrator's read of the source and the hub's answer
        cluster.store.delete("pods", SOURCE, "default")
        cluster.store.create("pods", server_pod("alice"))

    fresh = Hub(None, before=restarted)
    assert await _move(api, fresh).recover() == "stopped"
    pod = _source_left(cluster)
    assert pod is not None and fresh.phases == []


async def test_a_destination_no_node_has_room_for_is_named_not_just_late(core):
    """The destination pod asks what the server asked (the state's RAM); no
    node has that room: the move was undone with "the destination pod did
    not start within 600 s", saying nothing of why. The scheduler's answer is said."""
    from elastichub.orchestrator.live import LiveMoveFailed

    cluster, api = core
    cluster.store.create("pods", server_pod("alice", memory="900Gi", migratable=True) | {
        "metadata": dict(server_pod("alice")["metadata"], name=DEST)})
    move = _move(api, Hub(_model(SOURCE)))
    move.t = DrainTimeouts(start=1.0)
    with pytest.raises(LiveMoveFailed, match="the destination pod is not scheduled: .*[Ii]nsufficient memory"):
        await move._wait_destination({"k1"}, "/user/alice/")
