"""The hub calls made for every server of a node (a cloud node holds 30-60)
go a few servers at a time: never all at once at a hub that answers in
seconds (tornado's shared client fails the calls that wait for their turn),
never one by one (minutes before a drain starts). Counted, not timed."""

from __future__ import annotations

import asyncio

import pytest
from podtools import server_pod
from test_unmovable import ELASTIC, STOCK, ServerHub

from elastichub.orchestrator.drain import Drain, DrainTimeouts, MoveAborted
from elastichub.orchestrator.fanout import HUB_FANOUT, each
from elastichub.orchestrator.movable import Movability
from elastichub.orchestrator.records import pod_record

pytestmark = [pytest.mark.timeout(60)]
SERVERS = 30


class CountingHub(ServerHub):
    """Each call answers after the event loop has run the others' once more: calls made
    at once overlap, and `most` counts how many were in flight together."""

    def __init__(self, kernels):
        super().__init__(kernels)
        self.now = self.most = 0
        self.asked: list[str] = []

    async def _slow(self):
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            for _ in range(3):
                await asyncio.sleep(0)
        finally:
            self.now -= 1

    async def server(self, user, name):
        self.asked.append(user)
        await self._slow()
        return await super().server(user, name)

    async def kernels(self, server):
        await self._slow()
        return await super().kernels(server)

    async def server_call(self, base, method, path, body=None, *, owner=None, timeout=None):
        await self._slow()
        return await super().server_call(base, method, path, body, owner=owner, timeout=timeout)


def pods(n: int = SERVERS) -> list:
    out = []
    for i in range(n):
        raw = server_pod(f"user{i}")
        out.append(pod_record(dict(raw, spec={**raw["spec"], "nodeName": "cloud-1"},
                                   metadata={**raw["metadata"], "uid": f"uid-{i}"},
                                   status={"phase": "Running"})))
    return out


async def test_the_pre_drain_check_and_its_re_reads_ask_a_few_servers_at_a_time():
    hub, here = CountingHub([ELASTIC, STOCK]), pods()
    movable = Movability(hub, clock=lambda: 1000.0, recheck=0)
    with pytest.raises(MoveAborted):
        await movable.check("cloud-1", here)
    assert sorted(hub.asked) == sorted(p.user for p in here) and len(movable.found) == SERVERS
    assert 1 < hub.most <= HUB_FANOUT, f"{hub.most} calls at once at the hub"
    hub.asked, hub.most = [], 0
    await movable.recheck()
    assert sorted(hub.asked) == sorted(p.user for p in here) and len(movable.found) == SERVERS
    assert 1 < hub.most <= HUB_FANOUT, f"{hub.most} calls at once at the hub"


async def test_a_drain_asks_every_server_whether_it_is_quiet_a_few_at_a_time():
    hub, here = CountingHub([ELASTIC]), pods()
    drain = Drain("cloud-1", None, kube=None, hub=hub, cloud=None, pods=lambda: here, timeouts=DrainTimeouts())
    await drain._all_quiet()
    assert sorted(hub.asked) == sorted(p.user for p in here)
    assert 1 < hub.most <= HUB_FANOUT, f"{hub.most} calls at once at the hub"


async def test_the_first_failure_ends_the_others_and_is_raised():
    started, cancelled = [], []

    async def call(i):
        started.append(i)
        if i == 1:
            raise MoveAborted("server 1 is busy")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    with pytest.raises(MoveAborted, match="server 1 is busy"):
        await each(call, range(10), limit=3)
    assert started == [0, 1, 2] and sorted(cancelled) == [0, 2], "nothing started after the failure"
    assert await each(lambda i: asyncio.sleep(0, result=i * i), range(7), limit=3) == [i * i for i in range(7)]


async def test_a_cancelled_caller_leaves_no_call_running():
    running, cancelled = [], []

    async def call(i):
        running.append(i)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    caller = asyncio.ensure_future(each(call, range(10), limit=3))
    while len(running) < 3:
        await asyncio.sleep(0)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert running == [0, 1, 2] and sorted(cancelled) == [0, 1, 2]

