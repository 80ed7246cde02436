"""A drain's move of one server against a hub that answers as scripted: the
steps before any pod is touched (no cluster, no hub process)."""

from __future__ import annotations

import pytest

from elastichub import podmeta
from elastichub.orchestrator.drain import Drain, DrainTimeouts, MoveAborted
from elastichub.orchestrator.hub import HubServer
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
