"""A drain's move of one server against a hub that answers as scripted: the
steps before any pod is touched (no cluster, no hub process)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest
from podtools import cache, until

from elastichub import podmeta
from elastichub.orchestrator.drain import Drain, DrainTimeouts, MoveAborted
from elastichub.orchestrator.hub import HubServer
from elastichub.orchestrator.kube import KubePods
from elastichub.orchestrator.records import pod_record

pytestmark = [pytest.mark.timeout(30)]


class ScriptedHub:
    """`server()` answers from `answers` in turn, the last one for ever."""

    def __init__(self, *answers):
        self.answers, self.asked = list(answers), 0

    async def server(self, user, name):
        self.asked += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def hub_server(pending=None, ready=False):
    return HubServer("carol", "", ready, pending, "/user/carol/", {}, None, None)


def carol_pod(node="cloud-1"):
    return pod_record({"metadata": {"name": "jupyter-carol", "namespace": "jh",
                                    "labels": {podmeta.MANAGED_LABEL: "true"},
                                    "annotations": {podmeta.USER_ANNOTATION: "carol"}},
                       "spec": {"nodeName": node, "containers": [{"name": "n"}]}, "status": {"phase": "Running"}})


def job(hub, pods=(), start=0.3):
    reports = []
    drain = Drain("cloud-1", None, kube=None, hub=hub, cloud=None, pods=lambda: list(pods),
                     timeouts=DrainTimeouts(start=start, stop=0.3, poll=0.02), on_move=reports.append)
    return drain, reports


async def test_a_server_the_hub_is_still_starting_is_waited_for_and_the_cause_named():
    """Its pod runs, the hub has not finished the spawn: the move used to
    take it for a server the hub does not run, wait the whole stop timeout
    for its pod to go, and report that; and the move stayed "in flight"."""
    hub = ScriptedHub(hub_server(pending="spawn"))
    drain, reports = job(hub, pods=[carol_pod()])
    with pytest.raises(MoveAborted, match="carol is still starting in the hub after 0.3 s"):
        await drain._move(carol_pod())
    assert reports[-1].outcome == "aborted" and "still starting" in reports[-1].error
    assert hub.asked > 3  # it asked again while it waited


async def test_a_start_that_fails_while_waited_for_is_a_server_the_hub_no_longer_runs():
    hub = ScriptedHub(hub_server(pending="spawn"), hub_server(pending="spawn"), None)
    drain, reports = job(hub)  # its pod is gone too
    await drain._move(carol_pod())
    assert (reports[-1].outcome, reports[-1].error) == ("skipped", "not running in the hub")


async def test_a_pod_that_outlives_the_stop_wait_ends_the_move_as_aborted_not_in_flight():
    drain, reports = job(ScriptedHub(None), pods=[carol_pod()])
    with pytest.raises(MoveAborted, match="pod jh/jupyter-carol is still on cloud-1 after 0.3 s"):
        await drain._move(carol_pod())
    assert reports[-1].outcome == "aborted"


async def test_a_drain_resumed_at_its_vm_stop_never_stops_a_vm_that_hosts_servers_again():
    """Resumed after a restart at "stopping-vm", with the VM started anew
    meanwhile and a server on it: the stop would end carol's session unsaved."""
    class Kube:
        saved, ended = [], []

        async def record_drain(self, node, record):
            self.saved.append(dict(record))
            return {}  # the Node, as written

        async def end_drain(self, node, uncordon):
            self.ended.append(uncordon)

        async def uncordon(self, node):
            pass

    class Cloud:
        stopped = []

        async def stop(self, vm_id):
            self.stopped.append(vm_id)

    kube, cloud = Kube(), Cloud()
    drain = Drain("cloud-1", "i-1", kube=kube, hub=ScriptedHub(None), cloud=cloud, pods=lambda: [carol_pod()],
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), on_move=lambda r: None)
    outcome = await drain.resume('{"v": 1, "state": "stopping-vm", "servers": {}}')
    assert cloud.stopped == [] and outcome == "rolled-back", outcome
    assert kube.ended == [True]  # uncordoned: the node is in use
    assert "carol run on cloud-1 again" in kube.saved[-1]["why"]


class Recorder:
    """The kube side of a drain: records what it was asked to write."""

    def __init__(self):
        self.saved, self.ended, self.annotated = [], [], []

    async def record_drain(self, node, record):
        self.saved.append(dict(record))
        return {}  # the Node, as written (None: it is gone)

    async def end_drain(self, node, uncordon):
        self.ended.append(uncordon)

    async def annotate(self, namespace, name, annotations):
        self.annotated.append((namespace, name, annotations))


async def test_a_server_its_user_stopped_before_the_drain_stopped_it_stays_stopped():
    """The record says "restart" before the hub is asked to stop the server;
    the orchestrator died there, and alice stopped her server herself. The
    next run used to start it again, saying it had stopped it."""
    class Hub:
        started = []

        async def server(self, user, name):
            return hub_server(ready=True) if self.started else None

        async def start(self, user, name, options):
            self.started.append(user)

    kube, hub, reports = Recorder(), Hub(), []
    drain = Drain("cloud-1", None, kube=kube, hub=hub, cloud=None, pods=lambda: [],
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), on_move=reports.append)
    record = {"v": 1, "state": "draining", "servers": {
        "alice": {"user": "alice", "name": "", "step": "restart", "options": {}, "stop_sent": False}}}
    assert await drain.resume(json.dumps(record)) == "stopped"
    assert hub.started == [] and kube.saved[0]["servers"] == {}
    assert [(r.server, r.outcome, r.error) for r in reports] == [
        ("alice", "skipped", "stopped by its user during the move")]
    # Once the stop was sent, a server found stopped was stopped by the drain: it is started again.
    record["servers"]["alice"]["stop_sent"] = True
    drain = Drain("cloud-1", None, kube=Recorder(), hub=hub, cloud=None, pods=lambda: [],
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), on_move=reports.append)
    await drain.resume(json.dumps(record))
    assert hub.started == ["alice"]


async def test_a_restarted_servers_new_pod_keeps_when_it_was_asked_for_and_first_started():
    """Else a restarted orchestrator's history took the new pod's start for
    the session's: its wait swallowed all the time before the move."""
    kube = Recorder()
    drain = Drain("cloud-1", None, kube=kube, hub=None, cloud=None, pods=lambda: [],
                  timeouts=DrainTimeouts(), on_move=lambda r: None, kube_pods=kube)
    await drain._keep_times(carol_pod("onprem-1"), {"asked": "2027-01-15T08:00:00Z",
                                                    "started": "2027-01-15T08:00:04Z"})
    assert kube.annotated == [("jh", "jupyter-carol", {podmeta.ASKED_ANNOTATION: "2027-01-15T08:00:00Z",
                                                       podmeta.STARTED_ANNOTATION: "2027-01-15T08:00:04Z"})]


async def test_a_roll_back_opens_the_node_before_it_restarts_the_servers_it_stopped():
    """bob was stopped for his move, and carol took the last room on-prem:
    his pod could only go back to the node being drained, cordoned. The
    roll-back waited for him for ever, and resumed every cycle to wait again."""
    class Kube(Recorder):
        order = []

        async def uncordon(self, name):
            self.order.append("uncordon")

        async def end_drain(self, node, uncordon):
            self.order.append(f"end_drain(uncordon={uncordon})")

    class Hub:
        started = False

        async def server(self, user, name):
            return hub_server(ready=True) if self.started else None

        async def start(self, user, name, options):
            Kube.order.append("start")
            self.started = True

    kube = Kube()
    drain = Drain("cloud-1", None, kube=kube, hub=Hub(), cloud=None, pods=lambda: [],
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), on_move=lambda r: None)
    record = {"v": 1, "state": "aborting", "why": "bob did not start again", "servers": {
        "bob": {"user": "bob", "name": "", "step": "restart", "options": {}, "stop_sent": True}}}
    assert await drain.resume(json.dumps(record)) == "rolled-back"
    assert Kube.order == ["uncordon", "start", "end_drain(uncordon=True)"], Kube.order


async def test_a_move_an_api_error_interrupts_is_said_not_left_in_flight():
    """A Kubernetes error writing the record mid-move: the status page
    listed the move as in flight for ever."""
    from kubernetes_asyncio.client.exceptions import ApiException

    class Kube(Recorder):
        async def record_drain(self, node, record):
            raise ApiException(status=500, reason="Internal Server Error")

    reports = []
    drain = Drain("cloud-1", None, kube=Kube(), hub=MovingHub(), cloud=None, pods=lambda: [carol_pod()],
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), on_move=reports.append)
    drain.record = {"v": 1, "state": "draining", "servers": {}}
    with pytest.raises(ApiException):
        await drain._move(carol_pod())
    assert (reports[-1].outcome, reports[-1].error) == ("interrupted", "(500) Reason: Internal Server Error")


def _resumed_restart(hub, reports):
    """A drain resumed with carol's server stopped by it ("stop_sent") and not yet started again."""
    kube = Recorder()
    kube.uncordon = lambda node: _nothing()
    drain = Drain("cloud-1", None, kube=kube, hub=hub, cloud=None, pods=lambda: [],
                  timeouts=DrainTimeouts(start=0.5, stop=0.3, poll=0.02), on_move=reports.append)
    record = {"v": 1, "state": "draining", "servers": {
        "carol": {"user": "carol", "name": "", "step": "restart", "options": {}, "stop_sent": True}}}
    return drain, kube, json.dumps(record)


async def _nothing():
    return None


async def test_a_server_whose_user_was_deleted_mid_drain_does_not_hold_the_drain_for_ever():
    """An admin deleted carol while the drain had her server stopped: the
    start answered 404 every cycle, the record stayed, and the node could
    never be drained or its VM stopped."""
    from elastichub.orchestrator.hub import HubError

    class Hub:
        posts = 0

        async def server(self, user, name):
            return None

        async def start(self, user, name, options):
            self.posts += 1
            raise HubError("POST /users/carol/server: 404 No such user: carol", code=404)

    hub, reports = Hub(), []
    drain, kube, record = _resumed_restart(hub, reports)
    assert await drain.resume(record) == "stopped"
    assert hub.posts == 1 and kube.saved[-1]["servers"] == {}
    assert [(r.server, r.outcome) for r in reports] == [("carol", "skipped")]
    assert "its user is gone" in reports[0].error


async def test_a_server_its_user_stops_after_the_drains_start_is_not_started_again():
    """The drain started carol's server; she cancelled the start (or deleted
    the named server). A second POST would override her, and re-create a
    deleted named server."""
    class Hub:
        posts, reads = 0, 0

        async def server(self, user, name):
            self.reads += 1
            return hub_server(pending="spawn") if self.posts and self.reads == 2 else None

        async def start(self, user, name, options):
            self.posts += 1

    hub, reports = Hub(), []
    drain, kube, record = _resumed_restart(hub, reports)
    assert await drain.resume(record) == "stopped"
    assert hub.posts == 1 and kube.saved[-1]["servers"] == {}
    assert [(r.server, r.outcome) for r in reports] == [("carol", "skipped")]
    assert "its checkpoint restores at its next start" in reports[0].error


class MovingHub:
    """A hub whose server carol runs, is checkpointed, stopped and started,
    each step in `events`; a test overrides what it scripts."""

    def __init__(self):
        self.events = []

    async def server(self, user, name):
        return hub_server(ready=True)

    async def terminals(self, server):
        return []

    async def kernels(self, server):
        return [{"id": "k", "execution_state": "idle"}]

    def proxy_base(self, server):
        return f"http://proxy{server.url}"

    async def server_call(self, base, method, path, body=None, *, owner=None, timeout=None):
        assert path.startswith("/api/elastichub/status"), path  # what a drain asks before it cordons the node
        return {"kernels": [{"kernel_id": "k", "kernel_name": "elastic-python", "elastic": True}]}

    async def checkpoint(self, server, timeout, hold_s=None):
        from elastichub.checkpoint_client import CheckpointOutcome

        self.events.append("checkpoint" if hold_s else "checkpoint (no hold)")
        return CheckpointOutcome("saved", kernels=1)

    async def end_hold(self, server):
        self.events.append("end hold")

    async def stop(self, user, name):
        self.events.append("stop")

    async def start(self, user, name, options):
        self.events.append("start")


async def move_carol(hub, move_method: str = "restart", **settings):
    """Drain carol's server off cloud-1 by `move_method`: the drain's Recorder and the move reports."""
    kube, reports = Recorder(), []
    drain = Drain("cloud-1", None, kube=kube, hub=hub, cloud=None, pods=lambda: [], move_method=move_method,
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), on_move=reports.append, **settings)
    drain.record = {"v": 1, "state": "draining", "servers": {}}
    await drain._move(carol_pod())
    return kube, reports


async def test_a_terminal_command_started_during_the_checkpoint_is_waited_for_before_the_stop():
    """Terminals were read once, before the wait for idle kernels and the
    checkpoint: `python train.py` started meanwhile was killed by the stop."""
    class Hub(MovingHub):
        terminal_reads = 0

        async def server(self, user, name):
            return hub_server(ready=True) if not self.events or self.events[-1] != "stop" else None

        async def terminals(self, server):
            self.terminal_reads += 1
            if self.terminal_reads == 2:  # after the first checkpoint: a command runs
                return [{"name": "1", "last_activity": None, "processes": [{"pid": 7, "command": "python train.py"}]}]
            return [{"name": "1", "last_activity": "2020-01-01T00:00:00Z", "processes": []}]

    hub = Hub()
    _, reports = await move_carol(hub)
    assert hub.events == ["checkpoint", "end hold", "checkpoint", "stop", "start"], hub.events
    assert reports[-1].outcome == "moved"


async def test_a_restart_moves_checkpoint_holds_new_cells_until_the_stop_and_lets_a_waiting_one_run():
    """A cell sent between the drain's last look and the hub's stop ran past
    the checkpoint, and the stop interrupted it, its side effects half done.
    The checkpoint now holds new cells (for freeze_lease at most) until the
    stop; a cell seen waiting is let run, and the server checkpointed again."""
    class Hub(MovingHub):
        reads = 0

        async def server(self, user, name):
            return hub_server(ready=True) if not self.events or self.events[-1] != "stop" else None

        async def kernels(self, server):
            self.reads += 1  # the read after the first checkpoint: a cell sent since, held
            return [{"id": "k", "execution_state": "busy" if self.reads == 2 else "idle"}]

    hub = Hub()
    _, reports = await move_carol(hub)
    assert hub.events == ["checkpoint", "end hold", "checkpoint", "stop", "start"], hub.events
    assert reports[-1].outcome == "moved"


async def test_a_resumed_drain_that_finds_the_server_still_stopping_starts_it_once_it_stopped():
    """Killed just after the hub was asked to stop carol: the next run found
    the stop still under way, and took the server's going for a dropped start."""
    class Hub:
        posts, reads = 0, 0

        async def server(self, user, name):
            self.reads += 1
            if self.posts:
                return hub_server(ready=True)
            return hub_server(pending="stop") if self.reads <= 2 else None

        async def start(self, user, name, options):
            self.posts += 1

    hub, reports = Hub(), []
    drain, kube, record = _resumed_restart(hub, reports)
    assert await drain.resume(record) == "stopped"
    assert hub.posts == 1 and [(r.server, r.outcome) for r in reports] == [("carol", "moved")]


async def test_a_server_its_user_stops_between_the_checkpoint_and_the_drains_stop_stays_stopped():
    """Carol (or jupyterhub-idle-culler) stopped her server after the move's
    checkpoint, before the drain's own stop: the hub answers that stop 204
    all the same, and the drain started her server again, overriding her."""
    class Hub(MovingHub):
        async def server(self, user, name):
            return None if "user stop" in self.events else hub_server(ready=True)

        async def terminals(self, server):
            if "checkpoint" in self.events and "user stop" not in self.events:  # after the drain's checkpoint
                self.events.append("user stop")
            return []

    hub = Hub()
    kube, reports = await move_carol(hub)
    assert hub.events == ["checkpoint", "user stop"]  # neither stopped nor started by the drain
    assert (reports[-1].outcome, reports[-1].error) == ("skipped", "stopped by its user during the move")
    assert kube.saved[-1]["servers"] == {}  # the drain is not waiting to start it


async def test_a_server_its_user_stops_during_a_live_move_is_skipped_not_a_failed_move(monkeypatch):
    """A failed live move marks the server for a restart move next time and
    rolls the drain back; one whose user (or a culler) stopped it meanwhile
    is no failure: nothing is left to move, and the drain goes on."""
    from elastichub.orchestrator.live import LiveMoveFailed

    class Hub(MovingHub):
        async def server(self, user, name):
            return None if "live move" in self.events else hub_server(ready=True)

        def proxy_base(self, server):
            return "http://proxy/user/carol/"

    class Move:
        phases = {}

        async def run(self, pod, server):
            hub.events.append("live move")
            raise LiveMoveFailed("the hub did not switch the route: refused: the server is stop in the hub")

    hub = Hub()
    monkeypatch.setattr(Drain, "_live", lambda self, entry: Move())
    kube, reports = await move_carol(hub, "live", kube_pods=object())
    assert hub.events == ["live move"]
    assert (reports[-1].method, reports[-1].outcome, reports[-1].error) == (
        "live", "skipped", "stopped by its user during the move")
    assert kube.saved[-1]["servers"] == {}


@pytest.mark.parametrize("checkpoint_answer", ["failed", "saved"])
async def test_a_server_its_user_stops_during_the_moves_checkpoint_is_skipped_not_an_aborted_drain(
        checkpoint_answer):
    """Stopped from the hub page while the drain checkpointed it: the
    checkpoint (or the kernel list after it) met the hub's 403 page or its
    424, the move was "aborted" with that page in its error and the whole
    drain rolled back; the hub's own stop had checkpointed the server."""
    from elastichub.checkpoint_client import CheckpointOutcome
    from elastichub.orchestrator.hub import HubError

    class Hub(MovingHub):
        async def server(self, user, name):
            return None if "user stop" in self.events else hub_server(ready=True)

        async def kernels(self, server):
            if "user stop" in self.events:
                raise HubError("kernels of carol: 424 JupyterHub server no longer running", 424)
            return await super().kernels(server)

        async def checkpoint(self, server, timeout, hold_s=None):
            self.events.append("user stop")
            return CheckpointOutcome(checkpoint_answer, kernels=1, reason="HTTP 403: <!DOCTYPE HTML>")

    hub = Hub()
    _, reports = await move_carol(hub)
    # A failed checkpoint: the kernels that saved hold no cell of the user's.
    assert hub.events == ["user stop"] + (["end hold"] if checkpoint_answer == "failed" else [])
    assert (reports[-1].outcome, reports[-1].error) == ("skipped", "stopped by its user during the move")


@pytest.mark.parametrize("code, message", [
    (429, "POST /users/carol/server: 429 Too many users trying to log in right now. Try again in 1 minute."),
    (0, "GET /users/carol: HTTP 599: Connection refused"),  # the hub restarting
    (503, "GET /users/carol: 503 Service Unavailable"),  # a proxy in front of it, meanwhile
])
async def test_a_start_the_hub_cannot_take_now_is_tried_again_not_given_up(code, message):
    """carol was stopped for her move; the hub then refused her start for a moment (its concurrent
    spawn limit, or a restart). The move failed, the drain rolled back and tried her start again only
    after a back-off: she stayed stopped meanwhile, though her start was seconds away."""
    from elastichub.orchestrator.hub import HubError

    class Hub:
        posts, refused, started = 0, 0, False

        async def server(self, user, name):
            if code != 429 and not self.refused:
                self.refused += 1
                raise HubError(message, code)
            return hub_server(ready=True) if self.started else None

        async def start(self, user, name, options):
            self.posts += 1
            if code == 429 and not self.refused:
                self.refused += 1
                raise HubError(message, code)
            self.started = True

    hub, reports = Hub(), []
    drain, kube, record = _resumed_restart(hub, reports)
    assert await drain.resume(record) == "stopped"
    assert [(r.server, r.outcome) for r in reports] == [("carol", "moved")]
    assert hub.refused == 1 and hub.posts == (2 if code == 429 else 1)


def server_pod(user, memory):
    return pod_record({"metadata": {"name": f"jupyter-{user}", "namespace": "jh",
                                    "labels": {podmeta.MANAGED_LABEL: "true"},
                                    "annotations": {podmeta.USER_ANNOTATION: user}},
                       "spec": {"nodeName": "cloud-1", "containers": [{"name": "n", "resources": {
                           "requests": {"memory": memory}}}]}, "status": {"phase": "Running"}})


async def test_a_cell_running_on_the_node_holds_the_drain_before_anyone_is_moved():
    """bob runs a long cell; alice (more RAM, so moved first) was checkpointed, stopped and started
    again, then bob's cell outlasted busy_timeout and the drain rolled back: alice was paused for
    nothing, and again at every later try while bob's cell ran."""
    from elastichub.checkpoint_client import CheckpointOutcome

    calls = []

    class Hub:
        async def server(self, user, name):
            return HubServer(user, "", True, None, f"/user/{user}/", {}, None, None)

        async def kernels(self, server):
            return [{"id": "k", "execution_state": "busy" if server.user == "bob" else "idle"}]

        async def terminals(self, server):
            return []

        async def checkpoint(self, server, timeout, hold_s=None):
            calls.append(("checkpoint", server.user))
            return CheckpointOutcome("saved", kernels=1)

        async def stop(self, user, name):
            calls.append(("stop", user))

        async def start(self, user, name, options):
            calls.append(("start", user))

    class Kube(Recorder):
        async def mark_drain(self, node, record):
            self.saved.append(dict(record))
            return {}

        async def uncordon(self, node):
            calls.append(("uncordon", node))

    pods, reports = [server_pod("alice", "4Gi"), server_pod("bob", "1Gi")], []
    drain = Drain("cloud-1", None, kube=Kube(), hub=Hub(), cloud=None, pods=lambda: list(pods),
                  timeouts=DrainTimeouts(busy=0.2, start=0.3, stop=0.3, poll=0.02), on_move=reports.append)
    assert await drain.start() == "rolled-back"
    assert calls == [("uncordon", "cloud-1")], calls
    assert "bob has a kernel still running a cell" in drain.record["why"]
    assert [(r.server, r.outcome) for r in reports] == [("bob", "aborted")]  # the status page says why


async def test_a_pod_of_a_server_the_hub_does_not_run_names_why_the_drain_gives_up():
    """The orchestrator's role filtered to a group (servers!group=...): the hub answers 404 for a user
    outside it, whose pod runs on the node. The drain gave up saying only that the pod stayed."""
    drain, reports = job(ScriptedHub(None), pods=[carol_pod()])
    with pytest.raises(MoveAborted, match="pod jh/jupyter-carol is still on cloud-1 after 0.3 s; the hub runs "
                                          "no server carol .*scopes filtered"):
        await drain._move(carol_pod())
    drain, reports = job(ScriptedHub(hub_server(pending="stop")), pods=[carol_pod()])
    with pytest.raises(MoveAborted, match="after 0.3 s; the hub is stopping its server"):
        await drain._move(carol_pod())


async def test_a_node_deleted_mid_drain_stops_no_server_it_could_not_record():
    """The Node was deleted while its drain ran: the record of carol's restart was not written
    (KubeNodes answers None), and the drain went on and stopped her server all the same; a crash
    then left it stopped, with no record for a next run to start it from."""
    hub = MovingHub()

    class Kube(Recorder):
        async def mark_drain(self, node, record):
            return {}

        async def record_drain(self, node, record):
            self.saved.append(dict(record))
            return None  # deleted since the drain began

        async def uncordon(self, node):
            return None

    reports = []
    drain = Drain("cloud-1", None, kube=Kube(), hub=hub, cloud=None, pods=lambda: [carol_pod()],
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), on_move=reports.append)
    assert await drain.start() == "rolled-back"
    assert not {"stop", "start"} & set(hub.events), hub.events  # carol's server runs on, untouched
    assert "node cloud-1 is gone" in drain.record["why"]
    assert (reports[-1].server, reports[-1].outcome) == ("carol", "interrupted")
    assert "cannot be written" in reports[-1].error


class OrphanPods(KubePods):
    """The API server's answer for a pod on cloud-1, `deleting` or not."""

    def __init__(self, deleting):
        super().__init__(None)
        self.deleting = deleting

    async def get(self, namespace, name):
        meta = {"name": name, "namespace": namespace}
        if self.deleting:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return {"metadata": meta, "spec": {"nodeName": "cloud-1"}, "status": {"phase": "Running"}}


async def test_a_pod_the_hub_runs_no_server_for_that_is_not_going_refuses_the_drain_at_once():
    """A user out of the reach of the orchestrator's token (the hub answers 404), whose pod runs on the
    node: the drain waited the whole stop timeout for a pod nobody deletes before it gave up."""
    for deleting in (False, True):
        polled, reports = [], []
        drain = Drain("cloud-1", None, kube=None, hub=ScriptedHub(None), cloud=None, kube_pods=OrphanPods(deleting),
                      pods=lambda: polled.append(1) or [carol_pod()], on_move=reports.append,
                      timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02))
        with pytest.raises(MoveAborted) as raised:
            await drain._move(carol_pod())
        if deleting:  # going: the hub's stop (or Kubernetes) is taking it, and that is waited for
            assert "is still on cloud-1 after 0.3 s" in str(raised.value) and polled
        else:
            assert str(raised.value).startswith("pod jh/jupyter-carol stays on cloud-1, not deleted: the hub runs "
                                                "no server carol"), raised.value
            assert polled == []  # refused without waiting for it
        assert reports[-1].outcome == "aborted"


async def test_a_pod_the_hub_runs_no_server_for_refuses_the_drain_before_anyone_is_moved():
    """alice (more RAM, moved first) was checkpointed, stopped and started again before the drain
    reached carol's pod, which the hub runs no server for, and gave the node up: alice paused for nothing."""
    calls = []

    class Hub:
        async def server(self, user, name):
            return HubServer(user, "", True, None, f"/user/{user}/", {}, None, None) if user == "alice" else None

        async def kernels(self, server):
            return []

        async def terminals(self, server):
            return []

        async def checkpoint(self, server, timeout, hold_s=None):
            calls.append(("checkpoint", server.user))
            raise AssertionError("nobody moves")

    class Kube(Recorder):
        async def mark_drain(self, node, record):
            return {}

        async def uncordon(self, node):
            return None

    reports = []
    drain = Drain("cloud-1", None, kube=Kube(), hub=Hub(), cloud=None, kube_pods=OrphanPods(False),
                  pods=lambda: [server_pod("alice", "4Gi"), server_pod("carol", "1Gi")], on_move=reports.append,
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02))
    assert await drain.start() == "rolled-back"
    assert calls == [] and "pod jh/jupyter-carol stays on cloud-1" in drain.record["why"], drain.record
    assert [(r.server, r.outcome) for r in reports] == [("carol", "aborted")]


async def test_a_stop_by_its_user_while_the_drain_records_its_own_is_not_overridden():
    """carol stopped her server while the drain wrote "stop_sent" on the Node: the hub answered the
    drain's stop 204 (nothing to stop), and the drain started her server again."""
    class Hub(MovingHub):
        stopped_by_carol = False

        async def server(self, user, name):
            return None if self.stopped_by_carol else hub_server(ready=True)

    hub = Hub()

    class Kube(Recorder):
        async def record_drain(self, node, record):
            if (record["servers"].get("carol") or {}).get("stop_sent"):
                hub.stopped_by_carol = True  # her click lands during this write
            return await super().record_drain(node, record)

    reports = []
    drain = Drain("cloud-1", None, kube=Kube(), hub=hub, cloud=None, pods=lambda: [],
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), on_move=reports.append)
    drain.record = {"v": 1, "state": "draining", "servers": {}}
    await drain._move(carol_pod())
    # neither our stop nor, above all, a start overriding hers
    assert not {"stop", "start"} & set(hub.events), hub.events
    assert drain.record["servers"] == {}
    assert (reports[-1].outcome, reports[-1].error) == ("skipped", "stopped by its user during the move")


async def test_a_node_deleted_after_a_live_moves_source_went_reports_it_moved(monkeypatch):
    """The Node was deleted just after carol's live move deleted her source
    pod: the record of the finished move could not be written, and the move,
    done (the destination on onprem-1 serves her), was reported "interrupted"."""
    from elastichub.orchestrator.live import ROUTE, LiveMove

    class Pods:
        deleted = []

        async def get(self, namespace, name):
            return None if name in self.deleted else {"metadata": {"name": name}, "spec": {"nodeName": "cloud-1"}}

        async def delete(self, namespace, name, grace_seconds=None):
            self.deleted.append(name)

    class Kube(Recorder):
        async def record_drain(self, node, record):
            self.saved.append(json.loads(json.dumps(record)))
            return None if pods.deleted else {}  # the Node went with the source

    class Switched(LiveMove):
        async def run(self, pod, server):  # the route switched: only the source is left to go
            self.entry.update(step=ROUTE, to="onprem-1")
            return await self.finish()

    pods, reports = Pods(), []
    hub = MovingHub()
    drain = Drain("cloud-1", None, kube=Kube(), hub=hub, cloud=None, pods=lambda: [], move_method="live",
                  kube_pods=pods, timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), on_move=reports.append)
    drain.record = {"v": 1, "state": "draining", "servers": {}}
    monkeypatch.setattr(Drain, "_live", lambda self, entry: Switched(
        hub=hub, pods=pods, timeouts=self.t, entry=entry, save=self._save, poll=0.01))
    await drain._move(carol_pod())
    assert pods.deleted == ["jupyter-carol"]
    assert (reports[-1].method, reports[-1].outcome, reports[-1].destination) == ("live", "moved", "onprem-1")


class GatedHub(MovingHub):
    """carol and dave run on cloud-1; a stop takes the server's pod off the cache once `release` is set."""

    def __init__(self, pods: dict):
        super().__init__()
        self.pods, self.release, self.running = pods, asyncio.Event(), {"carol", "dave"}

    async def server(self, user, name):
        return HubServer(user, "", True, None, f"/user/{user}/", {}, None, None) if user in self.running else None

    async def stop(self, user, name):
        self.events.append(f"stop {user}")
        await self.release.wait()
        self.running.discard(user)
        del self.pods[f"jh/jupyter-{user}"]

    async def start(self, user, name, options):
        self.events.append(f"start {user}")
        self.running.add(user)


def draining_controller(**settings):
    """A Controller draining cloud-1 (carol, then dave) through a GatedHub; (controller, hub, kube)."""

    from elastichub.orchestrator.controller import Controller, Settings
    from elastichub.orchestrator.observe import Observation
    from elastichub.policy import ClusterSnapshot

    class Kube(Recorder):
        async def mark_drain(self, node, record):
            return {}

    pods = {}
    for user in ("carol", "dave"):
        pod = carol_pod()
        pods[f"jh/jupyter-{user}"] = replace(pod, key=f"jh/jupyter-{user}", user=user, server=user)
    hub, kube = GatedHub(pods), Kube()
    ctl = Controller(None, cache({}), cache(pods), kube, hub, None,
                     Settings(drain=DrainTimeouts(start=5, stop=5, poll=0.02), **settings))
    ctl._start_drain("cloud-1", Observation(ClusterSnapshot(())), reason="servers fit elsewhere")
    return ctl, hub, kube


async def test_a_shutdown_mid_move_starts_the_server_it_stopped_and_moves_no_other():
    """SIGTERM (the hub stopping its service, a pod's rollout) while carol's server was stopped for her
    move: the drain was cancelled there, and her server stayed stopped until the orchestrator ran again."""
    ctl, hub, kube = draining_controller()
    await until(lambda: "stop carol" in hub.events, what="carol's stop sent")
    closing = asyncio.create_task(ctl.close())
    await asyncio.sleep(0.1)
    hub.release.set()
    await closing
    assert hub.events == ["checkpoint", "stop carol", "start carol"], hub.events  # dave: never paused
    assert kube.saved[-1]["state"] == "draining" and kube.saved[-1]["servers"]["carol"]["step"] == "done"
    assert any(e["kind"] == "drain" and e["message"].startswith(
        "drain of cloud-1 paused: the orchestrator is stopping: 1 server(s) left on cloud-1") for e in ctl.events)


async def test_a_shutdown_whose_grace_ends_mid_move_leaves_the_record_for_the_next_run():
    ctl, hub, kube = draining_controller(shutdown_grace=0.2)
    await until(lambda: "stop carol" in hub.events, what="carol's stop sent")
    await ctl.close()  # the stop never ends: cut after the grace
    assert ctl.tasks["drain:cloud-1"].cancelled()
    entry = kube.saved[-1]["servers"]["carol"]
    assert (entry["step"], entry["stop_sent"]) == ("restart", True)  # the next run starts her again
