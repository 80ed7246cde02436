"""While a live move retires the server's kernels, no kernel starts or restarts here.

After ``retire`` the source's kernels run nothing more, and the orchestrator
asks the hub to switch the route to the destination (a second or more). A
notebook opened in that window started a kernel on the source, outside the
sessions the destination re-created: its cells ran there, the source pod
was deleted after the switch, and nothing brought that state over. A
restart of a retired kernel likewise made a fresh kernel here while the
destination serves the old one.

A kernel its user restarts just as a pre-copy is asked of it (restart
after restart, the kernel process swapped under the request) failed the
pre-copy, and with it the move. The gate knows which kernels are
restarting: the pre-copy waits for such a restart, and asks the new
process again if one swapped the process under it (its state is fresh).

A stop (its user's, the culler's) during a large pre-copy waited behind
it: the kernel serves one control message at a time, and the pre-copy
writes the whole state. A checkpoint asked of a kernel whose pre-copy is
under way now cancels it (a file the write looks for between chunks), and
the kernel removes the pre-copy file: the checkpoint follows at once.

So a server-wide ``retire`` first closes the server to kernel starts and
restarts (each refused with a 503 that says why and to try again: by then
the hub routes to the destination), waits for the starts already under way,
and only then lists the kernels it retires: one that started meanwhile is
not frozen, so its retire fails and the orchestrator undoes the move (as
for a notebook opened during the move). A server-wide ``thaw`` (the move
undone) opens it again; a switched move deletes this pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
from typing import Any

from tornado import web

MOVING = ("ElasticHub is moving this server to another node: no kernel can start or restart here now. "
          "Try again in a few seconds.")
START_WAIT_S = 60.0  # for kernel starts under way when the retire arrives (the kernel's process start)


class MoveGate:
    """Whether kernels may start; the starts and restarts under way."""

    def __init__(self, log: Any, runtime_dir: str):
        self.log, self.runtime_dir = log, runtime_dir
        self.closed = False
        self.starting = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.restarting: dict[str, asyncio.Event] = {}  # kernel id -> set once its restart is over
        self.precopying: dict[str, str] = {}  # kernel id -> the file that cancels its pre-copy

    @contextlib.contextmanager
    def precopy(self, kernel_id: str, content: dict):
        """The pre-copy request for `kernel_id`, with the file whose creation cancels it
        (`cancel_precopy`), while it runs."""
        flag = os.path.join(self.runtime_dir, f"elastichub-precopy-cancel-{kernel_id}")
        _unlink(flag)
        self.precopying[kernel_id] = flag
        try:
            yield dict(content, cancel_file=flag)
        finally:
            if self.precopying.get(kernel_id) == flag:
                del self.precopying[kernel_id]
            _unlink(flag)

    def cancel_precopy(self, kernel_id: str) -> bool:
        """A checkpoint of `kernel_id` is asked (the server stopping): a pre-copy under way
        holds the kernel for as long as it writes, so it is cancelled; whether one was."""
        flag = self.precopying.get(kernel_id)
        if flag is None:
            return False
        try:
            with open(flag, "x"):
                pass
        except FileExistsError:
            pass
        except OSError as exc:
            self.log.warning("elastichub: cannot cancel the pre-copy of kernel %s (%s)", kernel_id, exc)
            return False
        self.log.info("elastichub: the pre-copy of kernel %s is cancelled: a checkpoint is asked", kernel_id)
        return True

    async def settled(self, kernel_id: str) -> bool:
        """Once a restart of `kernel_id` under way is over (bounded); whether one was."""
        done = self.restarting.get(kernel_id)
        if done is None:
            return False
        try:
            async with asyncio.timeout(START_WAIT_S):
                await done.wait()
        except TimeoutError:
            self.log.warning("elastichub: kernel %s is still restarting after %g s", kernel_id, START_WAIT_S)
        return True

    def wrap(self, km: Any) -> bool:
        """Gate the kernel manager's start and restart; False where they are not coroutines."""
        done = False
        for name in ("start_kernel", "restart_kernel"):
            original = getattr(km, name, None)
            if not inspect.iscoroutinefunction(original) or getattr(original, "_elastichub_gate", False):
                continue  # a synchronous manager's callers would not await us
            setattr(km, name, self._gated(km, name, original))
            done = True
        return done

    def _gated(self, km: Any, name: str, original):
        @functools.wraps(original)
        async def gated(*args, **kwargs):
            kernel_id = kwargs.get("kernel_id", args[0] if args and name == "restart_kernel" else None)
            fresh = name == "start_kernel" and (kernel_id is None or kernel_id not in km)
            if not (fresh or name == "restart_kernel"):
                return await original(*args, **kwargs)  # a session joining a running kernel
            if self.closed:
                self.log.warning("elastichub: kernel %s refused: the server is being moved",
                                 "start" if fresh else f"restart of {kernel_id}")
                raise web.HTTPError(503, MOVING, reason="Server moving")
            self.starting += 1
            self._idle.clear()
            restarted = self.restarting.setdefault(kernel_id, asyncio.Event()) if name == "restart_kernel" else None
            try:
                return await original(*args, **kwargs)
            finally:
                self.starting -= 1
                if not self.starting:
                    self._idle.set()
                if restarted is not None and self.restarting.get(kernel_id) is restarted:
                    del self.restarting[kernel_id]
                    restarted.set()

        gated._elastichub_gate = True  # type: ignore[attr-defined]
        return gated

    async def close(self) -> list[dict]:
        """No kernel starts from now on; once those under way are done (bounded), []; else
        one failed result that says so (a kernel not yet listed would escape the retire)."""
        self.closed = True
        try:
            async with asyncio.timeout(START_WAIT_S):
                await self._idle.wait()
        except TimeoutError:
            self.log.warning("elastichub: %d kernel start(s) still under way at retire", self.starting)
            # The user's doing (a notebook opened, a kernel restarted), as a running cell is: "busy".
            return [{"kernel_id": None, "ok": False, "phase": "retire", "busy": True,
                     "error": f"{self.starting} kernel start(s) still under way after {START_WAIT_S:g} s; "
                              "not retired"}]
        return []

    def open(self) -> None:
        self.closed = False


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
