"""The hold a restart move's checkpoint puts on a server's new cells (HubClient.checkpoint's `hold_s`),
ended on every way out of the move that does not stop the server: a cell waiting there would otherwise
wait, unexplained, until the kernel's lease ends (freeze_lease, a minute by default)."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)

# How long an ending hold may hold up a move's way out (a roll-back, the orchestrator's shutdown): the
# kernels' lease ends the hold all the same.
END_HOLD_S = 10.0


class Hold:
    """`on` from the checkpoint asked with a hold (a cancel mid-request may leave it set) until the hub
    takes the stop, or the server is found stopping anyway (the hold then keeps its cells from a stop)."""

    def __init__(self, hub, server, on: bool = False):
        self.hub, self.server, self.on = hub, server, on

    async def end(self) -> None:
        """Let the held cells run, best effort and bounded (safe while the move is being cancelled)."""
        if not self.on:
            return
        self.on = False
        try:
            async with asyncio.timeout(END_HOLD_S):
                await self.hub.end_hold(self.server)
        except Exception as e:  # HubClient.end_hold logs its own errors; a timeout, or anything else, here
            log.info("the kernels of %s hold their cells until their lease ends: %s", self.server.key,
                     str(e) or f"no answer within {END_HOLD_S:g} s")
