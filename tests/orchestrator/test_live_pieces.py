"""The pure pieces of a live move: the destination pod, names, and how the
orchestrator reads the servers' answers (tested without a cluster)."""

from __future__ import annotations

import json
import re

import pytest

from elastichub import podmeta
from elastichub.orchestrator.live import (LiveMoveFailed, adoption, destination_manifest, destination_name,
                                          failures, pod_base, pod_ready, session_list)


def _source() -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "jupyter-alice", "namespace": "jhub", "uid": "u-1", "resourceVersion": "42",
                     "creationTimestamp": "2026-12-01T07:00:00Z",
                     "labels": {podmeta.MANAGED_LABEL: "true", "component": "singleuser-server"},
                     "annotations": {podmeta.USER_ANNOTATION: "alice", podmeta.ROUTE_ANNOTATION: "switched"}},
        "spec": {"nodeName": "cloud-1", "containers": [
            {"name": "notebook", "image": "img", "env": [{"name": "JUPYTERHUB_API_TOKEN", "value": "t"},
                                                        {"name": podmeta.ADOPT_SESSIONS_ENV, "value": "[]"}],
             "ports": [{"name": "notebook-port", "containerPort": 8888}]}]},
        "status": {"phase": "Running", "podIP": "10.0.0.7"},
    }


def test_the_destination_is_the_source_spec_unbound_renamed_and_told_its_sessions():
    source = _source()
    sessions = [{"id": "s1", "path": "a.ipynb", "name": "a.ipynb", "type": "notebook",
                 "kernel": {"id": "k1", "name": "elastic-python"}}]
    pod = destination_manifest(source, "jupyter-alice-m000001", sessions)
    assert pod["metadata"] == {
        "name": "jupyter-alice-m000001", "namespace": "jhub", "labels": source["metadata"]["labels"],
        "annotations": {podmeta.USER_ANNOTATION: "alice", podmeta.MOVE_OF_ANNOTATION: "jupyter-alice",
                        podmeta.ASKED_ANNOTATION: "2026-12-01T07:00:00Z"}}  # the source's creation
    assert "nodeName" not in pod["spec"] and "status" not in pod
    env = pod["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == ["JUPYTERHUB_API_TOKEN", podmeta.ADOPT_SESSIONS_ENV]
    assert json.loads(env[1]["value"]) == sessions
    assert source["spec"]["nodeName"] == "cloud-1", "the source manifest must not be changed"
    # The server keeps its first start across moves: the source's own, or the one it carried.
    source["status"]["startTime"] = "2026-12-01T07:00:05Z"
    assert destination_manifest(source, "d", [])["metadata"]["annotations"][podmeta.STARTED_ANNOTATION] == \
        "2026-12-01T07:00:05Z"
    source["metadata"]["annotations"][podmeta.STARTED_ANNOTATION] = "2026-11-30T09:00:00Z"
    assert destination_manifest(source, "d", [])["metadata"]["annotations"][podmeta.STARTED_ANNOTATION] == \
        "2026-11-30T09:00:00Z"
    # ... and when its user asked for it: the first pod's creation, carried from move to move.
    source["metadata"]["annotations"][podmeta.ASKED_ANNOTATION] = "2026-11-30T08:59:50Z"
    assert destination_manifest(source, "d", [])["metadata"]["annotations"][podmeta.ASKED_ANNOTATION] == \
        "2026-11-30T08:59:50Z"
    with pytest.raises(LiveMoveFailed, match="no container"):
        destination_manifest({"metadata": {"name": "p"}, "spec": {}}, "q", [])


def test_destination_names_do_not_grow_move_after_move():
    first = destination_name("jupyter-alice")
    assert first.startswith("jupyter-alice-m") and len(first) == len("jupyter-alice-m") + 6
    assert destination_name(first, "abcdef") == "jupyter-alice-mabcdef"
    assert len(destination_name("x" * 80)) <= 63


def test_a_destination_name_cut_at_a_dot_is_still_a_pod_name():
    # A pod_name_template with the user's e-mail: the cut at 55 characters may end at a dot.
    source = "jupyter-" + "a" * 46 + ".uni.example.org"
    name = destination_name(source, "abcdef")
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", name), name
    assert name == "jupyter-" + "a" * 46 + "-mabcdef" and len(name) <= 63


def test_pod_base_and_readiness():
    pod = _source()
    assert pod_base(pod, "/user/alice/") == "http://10.0.0.7:8888/user/alice/"
    assert pod_base({"status": {}, "spec": pod["spec"]}, "/user/alice/") is None
    assert not pod_ready(pod), "no container status yet: not ready"
    pod["status"]["containerStatuses"] = [{"ready": True}]
    assert pod_ready(pod)
    pod["status"]["containerStatuses"] = [{"ready": False}]
    assert not pod_ready(pod)
    assert not pod_ready(None)


def test_sessions_answers_are_checked():
    good = [{"id": "s", "path": "p", "name": "n", "type": "notebook", "kernel": {"id": "k", "name": "e"},
             "extra": 1}]
    assert session_list(good) == [{"id": "s", "path": "p", "name": "n", "type": "notebook",
                                   "kernel": {"id": "k", "name": "e"}}]
    with pytest.raises(LiveMoveFailed, match="not a list"):
        session_list({"message": "nope"})
    with pytest.raises(LiveMoveFailed, match="without an id or a kernel"):
        session_list([{"id": "s", "kernel": None}])


def test_phase_failures_and_adoption():
    assert failures([{"kernel_id": "k", "ok": True}], "freeze") == []
    assert failures([{"kernel_id": "k", "ok": False, "error": "busy"}], "freeze") == ["kernel k: busy"]
    assert failures([{"kernel_id": "k", "ok": "yes"}], "freeze") == ["kernel k: failed"]
    assert failures({"oops": 1}, "apply")[0].startswith("apply: malformed answer")
    assert adoption({"adopted": [{"kernel_id": "k", "state": "ready"}]}, {"k"}) == (True, None)
    assert adoption({"adopted": [{"kernel_id": "k", "state": "starting"}]}, {"k"}) == (False, None)
    assert adoption({"adopted": []}, {"k"}) == (False, None)
    assert adoption({}, {"k"}) == (False, None)
    assert adoption({"adopted": [{"kernel_id": "k", "state": "failed", "error": "no spec"}]}, {"k"}) == (
        False, "kernel k: no spec")


def test_a_server_whose_live_move_failed_moves_next_by_a_restart_then_live_again():
    from elastichub.orchestrator.controller import Controller
    from elastichub.orchestrator.drain import MoveReport

    ctl = Controller(None, None, None, None, None, None, clock=lambda: 0.0)
    ctl._on_move(MoveReport("bob", "cloud-1", method="live", outcome="aborted",
                            error="interrupted before the route switched: undone"))  # our crash, not bob's
    assert ctl.restart_next == {}
    failed = MoveReport("alice", "cloud-1", method="live", outcome="failed", error="the hub did not switch the route")
    ctl._on_move(failed)
    ctl._on_move(failed)  # the same report again (reports are updated in place): said once
    assert ctl.restart_next == {"alice": "the hub did not switch the route"}
    assert [e["message"] for e in ctl.events] == [
        "live move of alice failed (the hub did not switch the route); its next move will be by a restart"]
    assert ctl.status()["restart_next"] == {"alice": "the hub did not switch the route"}
    ctl._on_move(MoveReport("alice", "cloud-1", method="restart", outcome="moved"))
    assert ctl.restart_next == {}


async def test_a_server_stopped_since_its_live_move_failed_is_forgotten():
    """Its next start is a new pod, tried live again; kept, the map (and api/status) grew with every
    server whose live move ever failed. One a drain is restarting (in its record) is kept."""
    import json

    from podtools import cache, server_pod

    from elastichub import podmeta
    from elastichub.orchestrator.controller import Controller, Settings
    from elastichub.orchestrator.records import node_record, pod_record
    from elastichub.policy import PolicyConfig, make_strategy

    def node(name, tier, annotations=None):
        return node_record({"metadata": {"name": name, "labels": {podmeta.TIER_LABEL: tier},
                                         "annotations": annotations or {}},
                            "status": {"allocatable": {"cpu": "4", "memory": "8Gi"},
                                       "conditions": [{"type": "Ready", "status": "True"}]}})

    record = {"v": 1, "state": "draining", "servers": {"carol": {"user": "carol", "name": "", "step": "restart"}}}
    nodes = {"onprem-1": node("onprem-1", "on-prem"),
             "cloud-1": node("cloud-1", "cloud", {podmeta.DRAIN_ANNOTATION: json.dumps(record)})}
    bob = server_pod("bob")
    bob["spec"]["nodeName"] = "onprem-1"
    ctl = Controller(make_strategy("paper", PolicyConfig()), cache(nodes, "nodes"),
                     cache({"default/jupyter-bob": pod_record(bob)}, "pods"), None, None, None,
                     Settings(dry_run=True), clock=lambda: 1e9, monotonic=lambda: 0.0)
    ctl.restart_next.update(alice="the hub did not switch the route", bob="x", carol="y")
    await ctl.cycle()
    assert ctl.restart_next == {"bob": "x", "carol": "y"}


async def test_a_failed_read_of_the_hubs_answer_never_undoes_a_switched_move():
    """The hub had switched alice to the destination; the orchestrator's
    next read of that pod got a 500, and the move was "undone": the pod
    now serving alice was deleted, her server and its state with it."""
    from kubernetes_asyncio.client.exceptions import ApiException

    from elastichub.orchestrator.drain import DrainTimeouts
    from elastichub.orchestrator.hub import HubServer
    from elastichub.orchestrator.live import ROUTE, LiveMove

    source = _source()
    dest = {"metadata": {"name": "jupyter-alice-m1", "annotations": {podmeta.ROUTE_ANNOTATION: "switched"}},
            "spec": {"nodeName": "onprem-1"}}

    class Pods:
        deleted, reads_of_dest = [], 0

        async def get(self, namespace, name):
            if name == source["metadata"]["name"]:
                return source
            self.reads_of_dest += 1
            if self.reads_of_dest == 1:  # the API server errs once, after the switch
                raise ApiException(status=500, reason="Internal Server Error")
            return dest

        async def create(self, namespace, manifest):
            pass

        async def annotate(self, namespace, name, annotations):
            pass

        async def delete(self, namespace, name, grace_seconds=None):
            self.deleted.append(name)

    class Hub:
        def proxy_base(self, server):
            return "http://proxy/user/alice/"

        async def server_call(self, base, method, path, body=None, timeout=None, owner=None):
            return [] if path == "/api/sessions" or body.get("phase") == "precopy" else {}

        async def kernels(self, server):
            return []

        async def server(self, user, name):
            return HubServer("alice", "", True, None, "/user/alice/", {}, None, None)

    pods, saved = Pods(), []
    entry = {"user": "alice", "name": "", "ns": "jhub", "source": "jupyter-alice", "dest": "jupyter-alice-m1",
             "prefix": "/user/alice/", "to": "onprem-1"}

    async def save(needed=True):
        saved.append(entry["step"])

    move = LiveMove(hub=Hub(), pods=pods, timeouts=DrainTimeouts(route=5), entry=entry, save=save, poll=0.01)

    async def ready(kernels, prefix):
        return "http://10.0.0.8:8888/user/alice/"

    async def final_step(source_base, dest_base, kernels, lap, server=None):
        return 0.0

    move._wait_destination, move._final_step = ready, final_step
    server = await Hub().server("alice", "")
    assert await move.run(pod=None, server=server) == "onprem-1"
    assert pods.deleted == ["jupyter-alice"]  # the source went; the destination, which serves, stays
    assert saved == [ROUTE, "done"]


@pytest.mark.parametrize("annotation, grace", [("30", 30), (None, 1), ("soon", 1), ("-5", 1)])
async def test_a_live_moves_source_gets_the_grace_the_spawner_gives_a_stopping_pod(annotation, grace):
    """An admin's preStop hook (lifecycle_hooks) is given its time by
    c.KubeSpawner.delete_grace_period: the orchestrator deleted a live
    move's source after 1 s whatever it was, cutting the hook off."""
    from elastichub.orchestrator.drain import DrainTimeouts
    from elastichub.orchestrator.live import LiveMove

    source = _source()
    if annotation is not None:
        source["metadata"]["annotations"][podmeta.DELETE_GRACE_ANNOTATION] = annotation

    class Pods:
        deleted = []

        async def get(self, namespace, name):
            return source

        async def delete(self, namespace, name, grace_seconds=None):
            self.deleted.append((name, grace_seconds))

    async def save(needed=True):
        pass

    pods = Pods()
    entry = {"user": "alice", "name": "", "ns": "jhub", "source": "jupyter-alice", "dest": "jupyter-alice-m1"}
    await LiveMove(hub=None, pods=pods, timeouts=DrainTimeouts(), entry=entry, save=save, poll=0.01).finish()
    assert pods.deleted == [("jupyter-alice", grace)] and entry["step"] == "done"


async def test_undoing_a_live_move_whose_server_its_user_stopped_only_deletes_the_destination():
    """The user (or jupyterhub-idle-culler) stopped the server mid-move: the
    undo asked the stopping server through the proxy to thaw, got the hub's
    403 page, failed, and left the move for a resumed drain to undo again."""
    from elastichub.orchestrator.drain import DrainTimeouts
    from elastichub.orchestrator.hub import HubError, HubServer
    from elastichub.orchestrator.live import LiveMove

    class Pods:
        deleted = []

        async def delete(self, namespace, name, grace_seconds=None):
            self.deleted.append(name)

    class Hub:
        calls = []

        def proxy_base(self, server):
            return "http://proxy/user/alice/"

        async def server(self, user, name):
            return HubServer("alice", "", False, "stop", "/user/alice/", {}, None, None)

        async def server_call(self, base, method, path, body=None, timeout=None, owner=None):
            self.calls.append(body)
            raise HubError("POST /api/elastichub/live: 403 <!DOCTYPE HTML>", 403)

    async def save(needed=True):
        pass

    pods, hub = Pods(), Hub()
    entry = {"user": "alice", "name": "", "ns": "jhub", "source": "jupyter-alice", "dest": "jupyter-alice-m1"}
    await LiveMove(hub=hub, pods=pods, timeouts=DrainTimeouts(), entry=entry, save=save, poll=0.01).undo()
    assert hub.calls == [] and pods.deleted == ["jupyter-alice-m1"]


@pytest.mark.parametrize("frozen_ids, why", [(["k1"], "k2"), (["k1", "k2", "k3"], "k3")])
async def test_a_kernel_shut_down_or_started_during_a_live_move_undoes_it(frozen_ids, why):
    """alice closed notebook B (its kernel k2 shut down, saving its last
    state) while the destination started: the freeze answered for k1 only,
    the move went on, and the destination kept k2 as re-created from the
    older pre-copy: reopening B gave its older variables, and its next
    checkpoint overwrote the newer one. (A kernel started meanwhile has no
    destination kernel at all.) The freeze must answer for exactly the
    kernels the destination re-created, else the move is undone."""
    from elastichub.orchestrator.drain import DrainTimeouts
    from elastichub.orchestrator.hub import HubServer
    from elastichub.orchestrator.live import LiveMove

    source = _source()
    dest = {"metadata": {"name": "jupyter-alice-m1", "annotations": {}}, "spec": {"nodeName": "onprem-1"}}
    sessions = [{"id": f"s{k}", "path": f"{k}.ipynb", "kernel": {"id": k}} for k in ("k1", "k2")]

    class Pods:
        deleted = []

        async def get(self, namespace, name):
            return source if name == source["metadata"]["name"] else dest

        async def create(self, namespace, manifest):
            pass

        async def annotate(self, namespace, name, annotations):  # the hub switches at once
            dest["metadata"]["annotations"][podmeta.ROUTE_ANNOTATION] = "switched"

        async def delete(self, namespace, name, grace_seconds=None):
            self.deleted.append(name)

    class Hub:
        phases = []

        def proxy_base(self, server):
            return "http://proxy/user/alice/"

        async def server_call(self, base, method, path, body=None, timeout=None, owner=None):
            if path == "/api/sessions":
                return sessions
            self.phases.append(body["phase"])
            if body["phase"] == "freeze":
                return [{"kernel_id": k, "ok": True, "delta_id": f"d-{k}", "bytes": 1} for k in frozen_ids]
            if body["phase"] in ("apply", "thaw") and body.get("kernel_id"):
                return [{"kernel_id": body["kernel_id"], "ok": True}]
            return [{"kernel_id": k, "ok": True} for k in frozen_ids]

        async def kernels(self, server):
            return [{"id": "k1"}, {"id": "k2"}]

        async def server(self, user, name):
            return HubServer("alice", "", True, None, "/user/alice/", {}, None, None)

    async def save(needed=True):
        pass

    pods, hub = Pods(), Hub()
    entry = {"user": "alice", "name": "", "ns": "jhub", "source": "jupyter-alice", "dest": "jupyter-alice-m1",
             "prefix": "/user/alice/"}
    move = LiveMove(hub=hub, pods=pods, timeouts=DrainTimeouts(route=5), entry=entry, save=save, poll=0.01)

    async def ready(kernels, prefix):
        return "http://10.0.0.8:8888/user/alice/"

    move._wait_destination = ready
    with pytest.raises(LiveMoveFailed, match=why):
        await move.run(pod=None, server=await hub.server("alice", ""))
    assert "retire" not in hub.phases and hub.phases[-1] == "thaw"
    assert pods.deleted == ["jupyter-alice-m1"]  # the source serves on, with all its kernels


async def test_no_kernel_is_frozen_while_another_of_the_server_still_runs_a_cell():
    """Notebook B ran a long cell when the pause came: the freeze reached A
    and B at once, A froze at once and B waited for its cell, so A held its
    user's cells until its lease ran out, thawed (its delta gone) and the
    move failed. The freeze now waits until no kernel of the server is busy."""
    from elastichub.orchestrator.drain import DrainTimeouts
    from elastichub.orchestrator.hub import HubServer
    from elastichub.orchestrator.live import LiveMove

    class Hub:
        polls, busy_at_freeze = 0, None

        async def kernels(self, server):
            self.polls += 1
            return [{"id": "k1", "execution_state": "idle"},
                    {"id": "k2", "execution_state": "busy" if self.polls < 4 else "idle"}]

        async def server_call(self, base, method, path, body=None, timeout=None, owner=None):
            if body["phase"] == "freeze":
                self.busy_at_freeze = self.polls < 4
            return [{"kernel_id": k, "ok": True, "delta_id": f"d-{k}"} for k in ("k1", "k2")]

    hub = Hub()
    move = LiveMove(hub=hub, pods=None, timeouts=DrainTimeouts(), entry={"ns": "jhub", "user": "alice", "name": ""},
                    save=None, poll=0.001)
    server = HubServer("alice", "", True, None, "/user/alice/", {}, None, None)
    await move._final_step("http://src/", "http://dst/", {"k1", "k2"}, lambda name: None, server)
    assert hub.busy_at_freeze is False and move.phases["attempts"] == 1


def test_a_retire_refused_for_a_kernel_start_still_under_way_names_the_server_not_kernel_none():
    """The source's answer holds, besides its kernels' results, one about the server without a kernel
    id: the move's error read "kernel None: ...", and "kernel None: started since the move began"
    with every kernel "shut down since the move began"."""
    from elastichub.orchestrator.live import LiveMoveBusy, kernel_drift, refuse

    retired = [{"kernel_id": "k", "ok": True, "retired": True},
               {"kernel_id": None, "ok": False, "phase": "retire", "busy": True,
                "error": "1 kernel start(s) still under way after 60 s; not retired"}]
    assert failures(retired, "retire") == ["the server: 1 kernel start(s) still under way after 60 s; not retired"]
    assert kernel_drift(retired, {"k"}) == []
    with pytest.raises(LiveMoveBusy) as refused:  # the user's doing: the server can move live next time
        refuse(retired, "retire", kernel_drift(retired, {"k"}))
    assert str(refused.value) == "retire: the server: 1 kernel start(s) still under way after 60 s; not retired"
