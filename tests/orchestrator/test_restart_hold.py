"""A restart move's checkpoint holds its server's new cells until the hub's stop: every way out of the
move that does not stop the server ends that hold, or a student's cell waited, unexplained, for the
kernels' lease (a minute)."""

from __future__ import annotations

import asyncio
import json

import pytest
from test_drain_moves import MovingHub, Recorder, carol_pod

from elastichub.orchestrator.drain import Drain, DrainTimeouts, MoveAborted
from elastichub.orchestrator.drainterms import Paused
from elastichub.orchestrator.hub import HubError

pytestmark = [pytest.mark.timeout(30)]


def carol_drain(hub, kube=None, pods=()):
    kube = kube or Recorder()
    drain = Drain("cloud-1", None, kube=kube, hub=hub, cloud=None, pods=lambda: list(pods),
                  timeouts=DrainTimeouts(start=0.3, stop=0.3, poll=0.02), on_move=lambda r: None)
    drain.record = {"v": 1, "state": "draining", "servers": {}}
    return drain, kube


async def test_the_orchestrator_stopping_after_the_checkpoint_ends_the_hold():
    """Shutdown asked during the checkpoint: the move stops before the hub's stop (Paused), and the
    kernels held their cells until the lease ran out."""
    class Hub(MovingHub):
        async def checkpoint(self, server, timeout, hold_s=None):
            drain.closing = True
            return await super().checkpoint(server, timeout, hold_s)

    hub = Hub()
    drain, _ = carol_drain(hub)
    with pytest.raises(Paused):
        await drain._move(carol_pod())
    assert hub.events == ["checkpoint", "end hold"]


async def test_a_hub_stop_that_fails_ends_the_hold():
    class Hub(MovingHub):
        async def stop(self, user, name):
            self.events.append("stop refused")
            raise HubError("DELETE /users/carol/server: 500 Internal Server Error", 500)

    hub = Hub()
    drain, _ = carol_drain(hub)
    with pytest.raises(MoveAborted, match="500"):
        await drain._move(carol_pod())
    assert hub.events == ["checkpoint", "stop refused", "end hold"]
    # A stop the hub took is under way, even one not done in time: a cell let run now would be cut off.
    hub = MovingHub()  # its server stays ready: the stop is never done
    drain, _ = carol_drain(hub)
    with pytest.raises(MoveAborted, match="did not stop within"):
        await drain._move(carol_pod())
    assert hub.events == ["checkpoint", "stop"]


@pytest.mark.parametrize("fails", ["kernels", "terminals"])
async def test_a_server_that_cannot_be_read_after_its_checkpoint_is_not_stopped_and_its_hold_ends(fails):
    """The drain rolls back (a hub error on the look after the checkpoint), the server still runs."""
    class Hub(MovingHub):
        async def kernels(self, server):
            if fails == "kernels" and "checkpoint" in self.events:
                raise HubError("kernels of carol: 502 Bad Gateway", 502)
            return await super().kernels(server)

        async def terminals(self, server):
            if fails == "terminals" and "checkpoint" in self.events:
                raise HubError("terminals of carol: 502 Bad Gateway", 502)
            return []

    hub = Hub()
    drain, _ = carol_drain(hub)
    with pytest.raises(MoveAborted, match="502"):
        await drain._move(carol_pod())
    assert hub.events == ["checkpoint", "end hold"]


async def test_a_node_deleted_before_the_record_of_the_stop_is_written_ends_the_hold():
    class Kube(Recorder):
        async def record_drain(self, node, record):
            return None  # the Node is gone

    hub = MovingHub()
    drain, _ = carol_drain(hub, Kube())
    with pytest.raises(MoveAborted, match="is gone"):
        await drain._move(carol_pod())
    assert hub.events == ["checkpoint", "end hold"]


async def test_a_move_cancelled_between_its_checkpoint_and_the_stop_ends_the_hold():
    """The orchestrator's shutdown grace over (or a second signal) while the record is written."""
    written = asyncio.Event()

    class Kube(Recorder):
        async def record_drain(self, node, record):
            written.set()
            await asyncio.Event().wait()  # an API server that does not answer

    hub = MovingHub()
    drain, _ = carol_drain(hub, Kube())
    move = asyncio.create_task(drain._move(carol_pod()))
    await written.wait()
    move.cancel()
    with pytest.raises(asyncio.CancelledError):
        await move
    assert hub.events == ["checkpoint", "end hold"]


async def test_a_resumed_drain_ends_the_hold_of_a_server_the_last_run_checkpointed_but_never_stopped():
    """The orchestrator crashed (or was killed) after a checkpoint with a hold, before the stop."""
    hub = MovingHub()
    drain, kube = carol_drain(hub, pods=[carol_pod()])
    record = {"v": 1, "state": "aborting", "why": "the orchestrator stopped", "servers": {
        "carol": {"user": "carol", "name": "", "step": "restart", "options": {}, "stop_sent": True}}}
    kube.uncordon = lambda node: asyncio.sleep(0)
    assert await drain.resume(json.dumps(record)) == "rolled-back"
    assert hub.events == ["end hold"]  # neither stopped nor started: it never stopped
