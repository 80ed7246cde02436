"""A live move a student's work gets in the way of (a cell still running, a
notebook opened during the move) is undone and tried again later, live: a
restart move would wait for the same cell, and costs the student their
kernels (the tab sees them die). A real LiveMove and Drain against a hub
and pods that answer as scripted; the controller decides the next move."""

from __future__ import annotations

import pytest
from test_drain_moves import MovingHub, carol_pod

from elastichub.orchestrator.controller import Controller
from elastichub.orchestrator.drain import Drain, DrainTimeouts, MoveAborted

pytestmark = [pytest.mark.timeout(30)]

SESSION = {"id": "s1", "path": "a.ipynb", "name": "a.ipynb", "type": "notebook",
           "kernel": {"id": "k1", "name": "elastic-python"}}
BUSY = {"ok": False, "busy": True, "error": "a cell is still running after 300 s; not frozen"}


class Pods:
    """The source pod and a destination that is Running and ready at once."""

    def __init__(self):
        self.deleted, self.annotated = [], []

    async def get(self, namespace, name):
        return {"metadata": {"name": name, "namespace": namespace},
                "spec": {"nodeName": "onprem-1", "containers": [
                    {"name": "notebook", "ports": [{"name": "notebook-port", "containerPort": 8888}]}]},
                "status": {"phase": "Running", "podIP": "10.0.0.9", "containerStatuses": [{"ready": True}]}}

    async def create(self, namespace, manifest):
        pass

    async def delete(self, namespace, name, **kw):
        self.deleted.append(name)

    async def annotate(self, namespace, name, annotations):
        self.annotated.append(annotations)  # the route request: the hub never answers here


class LiveHub(MovingHub):
    """carol's server, one notebook: `kernels` and `answers[phase]` script what her work does."""

    def __init__(self, kernels, answers):
        super().__init__()
        self.kernel_list, self.answers, self.bodies = kernels, answers, []

    def proxy_base(self, server):
        return "http://proxy/user/carol/"

    async def kernels(self, server):
        return self.kernel_list

    sessions = [SESSION]

    async def server_call(self, base, method, path, body=None, *, owner=None, timeout=None):
        if path == "/api/sessions":
            return self.sessions
        if path == "/api/elastichub/status":
            return {"adopted": [{"kernel_id": s["kernel"]["id"], "state": "ready"} for s in self.sessions]}
        self.events.append(body["phase"])
        self.bodies.append(body)
        answer = self.answers.get(body["phase"], [{"kernel_id": "k1", "ok": True}])
        return answer(body) if callable(answer) else answer


async def _live_move(hub: LiveHub, **settings):
    """carol's live move off cloud-1; (the controller told of it, its report, the pods, what the move raised)."""
    pods, ctl, reports = Pods(), Controller(None, None, None, None, None, None, clock=lambda: 0.0), []
    timeouts = DrainTimeouts(**{"start": 1, "stop": 0.3, "poll": 0.02, "busy": 0.1, **settings})

    def on_move(report):
        reports.append(report)
        ctl._on_move(report)

    drain = Drain("cloud-1", None, kube=Kube(), hub=hub, cloud=None, pods=lambda: [], move_method="live",
                  kube_pods=pods, timeouts=timeouts, on_move=on_move)
    drain.record = {"v": 1, "state": "draining", "servers": {}}
    with pytest.raises(MoveAborted) as raised:
        await drain._move(carol_pod())
    assert len({id(r) for r in reports}) == 1, [r.to_json() for r in reports]
    return ctl, reports[-1], pods, raised.value


class Kube:
    async def record_drain(self, node, record):
        return {}  # the Node, as written


@pytest.mark.parametrize("work, kernels, answers, said", [
    ("a cell runs at the pre-copy", [{"id": "k1", "execution_state": "busy"}],
     {"precopy": [dict(BUSY, kernel_id="k1")]}, "pre-copy: kernel k1: a cell is still running"),
    ("a cell runs at the pause", [{"id": "k1", "execution_state": "busy"}], {},
     "kernel(s) k1 still running a cell after"),
    ("a cell starts just before the freeze", [{"id": "k1", "execution_state": "idle"}],
     {"freeze": [dict(BUSY, kernel_id="k1")]}, "freeze: kernel k1: a cell is still running"),
    ("a notebook opened during the pre-copy", [{"id": "k1", "execution_state": "idle"}],
     {"freeze": [{"kernel_id": "k1", "ok": True}, {"kernel_id": "k2", "ok": True}]},
     "freeze: kernel k2: started since the move began"),
])
async def test_a_live_move_the_students_work_undoes_is_tried_live_again(work, kernels, answers, said):
    hub = LiveHub(kernels, answers)
    ctl, report, pods, raised = await _live_move(hub)
    assert said in str(raised), (work, raised)
    assert pods.deleted and pods.deleted[-1].startswith("jupyter-carol-m"), "the destination must go"
    assert hub.events[-1] == "thaw" and "checkpoint" not in hub.events, hub.events
    assert report.method == "live" and said in report.error, (work, report.to_json())
    assert report.outcome == "aborted", f"{work}: a student at work is no failed live move ({report.error})"
    assert ctl.restart_next == {}, f"{work}: carol's next move must be live again"


@pytest.mark.parametrize("stock", [
    {"kernel_id": "k1", "ok": False, "elastic": False, "error": "kernel 'python3' is not an Elastic Python kernel"},
    {"kernel_id": "k1", "ok": False, "error": "kernel 'python3' is not an Elastic Python kernel"},  # older extension
])
async def test_a_live_move_a_stock_kernel_undoes_is_chosen_next_on_what_the_server_runs_then(stock):
    """A stock kernel (opened since the pre-drain check) makes every move by a
    checkpoint fail, live or restart; it lasts only while it runs: the next
    move is not a restart for good (the next drain's check pins the server
    while that kernel runs, and once it is closed the move is live again)."""
    busy = dict(BUSY, kernel_id="k2")  # a busy kernel beside it changes nothing
    hub = LiveHub([{"id": "k1", "execution_state": "idle"}], {"precopy": [stock, busy]})
    ctl, report, _, raised = await _live_move(hub)
    assert "not an Elastic Python kernel" in str(raised)
    assert report.outcome == "aborted" and ctl.restart_next == {}, report.to_json()


async def test_a_live_move_that_fails_for_a_cause_of_its_own_still_moves_next_by_a_restart():
    """A destination that cannot re-create a kernel: that may stay, so the next move is a restart."""
    hub = LiveHub([{"id": "k1", "execution_state": "idle"}], {"apply": [
        {"kernel_id": "k1", "ok": False, "error": "these variables could not be loaded here: x"}]})
    ctl, report, _, raised = await _live_move(hub)
    assert "could not be loaded here" in str(raised)
    assert report.outcome == "failed" and list(ctl.restart_next) == ["carol"], report.to_json()


async def test_a_cell_started_in_one_notebook_just_before_the_freeze_does_not_outwait_the_others_lease():
    """Two notebooks; a 100 s cell starts in the second just as the pause
    begins. The freeze waited for it up to `busy` (300 s) while the first
    notebook's kernel was frozen on its 60 s lease: that kernel thawed by
    itself (its delta removed), its user paused a minute for nothing, and
    the move failed on the apply, so the next move was a restart. The wait
    now ends within the lease: undone as the student's work, live next time."""
    cell_s, thawed = 100.0, []

    def freeze(body):  # what the two kernels answer, from the wait and lease asked for
        if cell_s > body["wait_s"]:
            return [{"kernel_id": "k1", "ok": True, "delta_id": "d1"}, dict(BUSY, kernel_id="k2")]
        if cell_s > body["lease_s"]:
            thawed.append("k1")  # its lease ran out while the freeze waited for k2's cell
        return [{"kernel_id": "k1", "ok": True, "delta_id": "d1"}, {"kernel_id": "k2", "ok": True, "delta_id": "d2"}]

    def apply(body):
        if body["kernel_id"] in thawed:
            return [{"kernel_id": body["kernel_id"], "ok": False, "error": "delta d1 not found"}]
        return [{"kernel_id": body["kernel_id"], "ok": True}]

    hub = LiveHub([{"id": "k1", "execution_state": "idle"}, {"id": "k2", "execution_state": "idle"}],
                  {"freeze": freeze, "apply": apply})
    hub.sessions = [SESSION, dict(SESSION, id="s2", path="b.ipynb", kernel={"id": "k2", "name": "elastic-python"})]
    ctl, report, _, raised = await _live_move(hub, busy=300, freeze_lease=60)
    assert "freeze: kernel k2: a cell is still running" in str(raised), raised
    assert thawed == [] and report.outcome == "aborted" and ctl.restart_next == {}, report.to_json()


NOT_FROZEN = {"ok": False, "error": "the kernel is not frozen (thawed, or its lease ran out); not retired"}
SECOND = dict(SESSION, id="s2", path="b.ipynb", kernel={"id": "k2", "name": "elastic-python"})


@pytest.mark.parametrize("work, sessions, freeze, retire, said", [
    # Shut down between the freeze and the retire: the destination re-created it and would bring it back.
    ("a notebook closed during the pause", [SESSION, SECOND], ["k1", "k2"], [{"kernel_id": "k1", "ok": True}],
     "retire: kernel k2: shut down since the move began"),
    # Started after the freeze: not frozen, so its retire fails; the destination has no kernel for it.
    ("a notebook opened during the pause", [SESSION], ["k1"],
     [{"kernel_id": "k1", "ok": True}, dict(NOT_FROZEN, kernel_id="k2")],
     "kernel k2: started since the move began"),
])
async def test_a_notebook_opened_or_closed_during_the_pause_undoes_the_move_before_the_route(
        work, sessions, freeze, retire, said):
    hub = LiveHub([{"id": s["kernel"]["id"], "execution_state": "idle"} for s in sessions],
                  {"freeze": [{"kernel_id": k, "ok": True, "delta_id": f"d-{k}"} for k in freeze], "retire": retire})
    hub.sessions = sessions
    ctl, report, pods, raised = await _live_move(hub)
    assert said in str(raised), (work, raised)
    assert pods.annotated == [], f"{work}: the route must not be asked for"
    assert pods.deleted and hub.events[-1] == "thaw", (pods.deleted, hub.events)
    assert report.outcome == "aborted" and ctl.restart_next == {}, report.to_json()


async def test_a_malformed_retire_answer_undoes_the_move_and_says_so():
    hub = LiveHub([{"id": "k1", "execution_state": "idle"}], {"retire": {"message": "not a list"}})
    ctl, report, pods, raised = await _live_move(hub)
    assert "retire: malformed answer" in str(raised) and report.outcome == "failed", report.to_json()
    assert pods.annotated == [] and hub.events[-1] == "thaw"


@pytest.mark.parametrize("extension", ["current", "older"])
async def test_an_undone_move_gives_up_the_precopy_files(extension):
    """Undone, the move's pre-copy files (a full copy of each kernel's state)
    are given up with the thaw; a server extension that predates the field
    refuses it (400), and gets the plain thaw it knows."""
    from elastichub.orchestrator.hub import HubError

    class Hub(LiveHub):
        async def server_call(self, base, method, path, body=None, *, owner=None, timeout=None):
            if extension == "older" and isinstance(body, dict) and "abandon" in body:
                raise HubError("POST /api/elastichub/live: 400 unknown field(s) in the request body: abandon", 400)
            return await super().server_call(base, method, path, body, owner=owner, timeout=timeout)

    hub = Hub([{"id": "k1", "execution_state": "busy"}], {})  # busy at the pause: undone
    await _live_move(hub)
    thaws = [b for b in hub.bodies if b["phase"] == "thaw"]
    assert thaws == ([{"phase": "thaw", "abandon": True}] if extension == "current" else [{"phase": "thaw"}])


async def test_a_terminal_command_started_during_the_move_is_waited_for_before_the_pause():
    """The terminals were read once, before the move: `python train.py`
    started in a terminal during the pre-copy (or while the destination
    started) was ended by the source pod's deletion."""
    class Hub(LiveHub):
        async def terminals(self, server):
            if "precopy" not in self.events:
                return []
            return [{"name": "1", "last_activity": "2020-01-01T00:00:00Z",
                     "processes": [{"pid": 41, "command": "python train.py"}]}]

    hub = Hub([{"id": "k1", "execution_state": "idle"}], {})
    ctl, report, pods, raised = await _live_move(hub)
    assert "terminal(s) in use (1: running python train.py) after" in str(raised), raised
    assert "freeze" not in hub.events and pods.annotated == [], hub.events
    assert report.outcome == "aborted" and ctl.restart_next == {}, report.to_json()
