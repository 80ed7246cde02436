"""A drain's waits for a server to be quiet before its move: no cell running, no terminal in use. A part
of the Drain (its base class), apart from the moves' steps for its size."""

from __future__ import annotations

import asyncio
import time

from .drainterms import MoveAborted
from .hub import HubError, HubServer
from .records import parse_time


class QuietWaits:
    """The Drain's waits (it has the hub, the timeouts `t` and the `clock`)."""

    async def _wait_idle(self, server: HubServer) -> list[dict]:
        """The server's kernels once none is busy; MoveAborted after `busy` s."""
        return await self._wait_quiet(server, self.hub.kernels, "kernel", "still running a cell", lambda kernels: [
            str(k.get("id")) for k in kernels if k.get("execution_state") == "busy"])

    async def _wait_terminals_quiet(self, server: HubServer) -> None:
        """Until no terminal of the server is in use (a process started from
        its shell, or input or output within `terminal_quiet` s): a process
        running in one cannot move with the server, so it is waited for as
        a running cell is. A quiet terminal at its prompt is closed by the move."""
        await self._wait_quiet(server, self.hub.terminals, "terminal", "in use", self._terminals_in_use)

    def _terminals_in_use(self, terminals: list[dict]) -> list[str]:
        recent = self.clock() - self.t.terminal_quiet
        busy = []
        for t in terminals:
            running = [p.get("command") or str(p.get("pid")) for p in t.get("processes") or []
                       if isinstance(p, dict)]
            if running:
                busy.append(f"{t.get('name')}: running {', '.join(running[:3])}")
            elif (parse_time(t.get("last_activity")) or self.clock()) > recent:
                busy.append(str(t.get("name")))
        return busy

    async def _wait_quiet(self, server: HubServer, read, what: str, state: str, busy_of) -> list[dict]:
        """`read(server)` once `busy_of` finds nothing busy in it; MoveAborted
        after `busy` s (the node is given up for now), or if it cannot be read."""
        deadline = time.monotonic() + self.t.busy
        while True:
            try:
                items = await read(server)
            except HubError as e:
                raise MoveAborted(f"cannot read the {what}s of {server.key}: {e}") from None
            busy = busy_of(items)
            if not busy:
                return items
            if time.monotonic() > deadline:
                raise MoveAborted(f"{server.key} has a {what} {state} ({', '.join(busy)}) after {self.t.busy:g} s")
            await asyncio.sleep(self.t.poll)
