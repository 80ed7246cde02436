"""The server extension's gate on kernel starts during a live move (servermoving.py), without a server:
a retire that meets a kernel start still under way refuses, and says so in an answer the orchestrator
reads as about the server (no kernel id) and as the user's doing (busy), not a failed move."""

from __future__ import annotations

import asyncio
import logging

from elastichub_kernel import servermoving


class StartingKernels:
    """A kernel manager whose start runs until `started` is set (a kernel restoring a large state)."""

    def __init__(self):
        self.started = asyncio.Event()

    def __contains__(self, kernel_id):
        return False

    async def start_kernel(self, kernel_id=None, **kwargs):
        await self.started.wait()
        return "k-new"

    async def restart_kernel(self, kernel_id):
        return None


async def test_a_retire_that_outwaits_a_kernel_start_names_it_as_the_servers_and_busy(tmp_path, monkeypatch):
    monkeypatch.setattr(servermoving, "START_WAIT_S", 0.05)
    km = StartingKernels()
    gate = servermoving.MoveGate(logging.getLogger("test"), str(tmp_path))
    assert gate.wrap(km)
    start = asyncio.ensure_future(km.start_kernel())
    await asyncio.sleep(0)  # the start is under way
    answer = await gate.close()
    assert answer == [{"kernel_id": None, "ok": False, "phase": "retire", "busy": True,
                       "error": "1 kernel start(s) still under way after 0.05 s; not retired"}]
    km.started.set()
    assert await start == "k-new"
    assert await gate.close() == []  # none under way: the retire goes on
