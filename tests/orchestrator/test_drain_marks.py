"""What a restart move tells ElasticSpawner: its stop is the drain's (podmeta.MOVING_ANNOTATION), so that
the next start says "Moving your server" after a move ElasticHub made, never after its user's own restart."""

from __future__ import annotations

import pytest
from test_drain_moves import MovingHub, Recorder, carol_pod, hub_server, move_carol

from elastichub import podmeta
from elastichub.orchestrator.drain import Drain, DrainTimeouts, MoveAborted
from elastichub.orchestrator.hub import HubError

pytestmark = [pytest.mark.timeout(30)]


class Pods(Recorder):
    def __init__(self, hub):
        super().__init__()
        self.hub = hub

    async def annotate(self, namespace, name, annotations):
        self.hub.events.append(("annotate", name, annotations))


class Hub(MovingHub):
    async def server(self, user, name):
        return None if self.events and self.events[-1] == "stop" else hub_server(ready=True)


async def test_a_restart_move_marks_the_pod_just_before_its_stop():
    hub = Hub()
    _, reports = await move_carol(hub, kube_pods=Pods(hub))
    assert hub.events[:3] == ["checkpoint", ("annotate", "jupyter-carol", {podmeta.MOVING_ANNOTATION: "cloud-1"}),
                              "stop"], hub.events
    assert reports[-1].outcome == "moved"


async def test_a_stop_the_hub_refuses_takes_the_mark_off_again():
    """Else its user's own stop, later, would be told as a move."""
    class Refuses(Hub):
        async def stop(self, user, name):
            raise HubError("stop: 500", code=500)

    hub = Refuses()
    with pytest.raises(MoveAborted):
        await move_carol(hub, kube_pods=Pods(hub))
    marks = [e[2] for e in hub.events if isinstance(e, tuple)]
    assert marks == [{podmeta.MOVING_ANNOTATION: "cloud-1"}, {podmeta.MOVING_ANNOTATION: None}], hub.events


def test_the_pod_of_a_move_is_known_by_its_mark():
    from elastichub import podspec

    assert not podspec.drain_moving({"metadata": {"annotations": {}}}) and not podspec.drain_moving(None)
    assert podspec.drain_moving({"metadata": {"annotations": {podmeta.MOVING_ANNOTATION: "cloud-1"}}})


async def test_a_resumed_drain_takes_the_mark_off_a_server_whose_stop_was_never_sent():
    """Marked, then the orchestrator died before the hub had the stop: the server runs on with the mark,
    and its user's own stop, later, would be told as a move (the loop marks it again if it moves it)."""
    hub = Hub()
    drain = Drain("cloud-1", None, kube=Recorder(), hub=hub, cloud=None, pods=lambda: [carol_pod()],
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), kube_pods=Pods(hub))
    drain.record = {"v": 1, "state": "draining", "servers": {
        "carol": {"user": "carol", "name": "", "step": "restart", "options": {}, "stop_sent": True}}}
    await drain._restart_pending()
    assert hub.events == [("annotate", "jupyter-carol", {podmeta.MOVING_ANNOTATION: None})]
