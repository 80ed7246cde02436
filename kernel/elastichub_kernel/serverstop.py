"""Jupyter's shutdown and restart of an Elastic kernel ask for its checkpoint first.

Jupyter stops a kernel (closing its notebook, Shut Down, Restart, culling,
the server stopping) with ``shutdown_request``, then SIGTERM after
``KernelManager.shutdown_wait_time / 2`` (2.5 s) and SIGKILL after
``shutdown_wait_time`` (5 s). The kernel's own checkpoint at shutdown must
fit in that time, and a large state's does not (900 MB took longer): it was
killed mid-write and the work was lost.

So the extension wraps the server's kernel manager: before Jupyter's
shutdown of an Elastic kernel starts that clock, it asks the kernel for its
checkpoint on the control channel, as the checkpoint endpoint does, and
waits for the reply (up to ``ElasticHubExtension.shutdown_checkpoint_timeout``)
while nothing tears the kernel down. Jupyter's shutdown then follows, and the
kernel's own checkpoint only confirms the one just written. A running cell is
interrupted first, as Jupyter's shutdown would do next; a cell that goes on
running is not waited for past the kernel's ``shutdown_busy_timeout``, and
the kernel then checkpoints at shutdown as before.

The orchestrator's stop (the endpoint, then the pod's SIGTERM and grace
period) goes the same way: its checkpoint is confirmed at once here.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any


def checkpoint_before_shutdown(ext: Any) -> bool:
    """Wrap the server's kernel manager (its shutdown, the path the server's
    own stop takes, and restart). False where it offers no such methods."""
    km = getattr(ext.serverapp, "kernel_manager", None)
    wrapped = False
    # shutdown_kernel: the REST API, sessions, culling; _async_shutdown_kernel:
    # shutdown_all (the server stopping) calls it by that name.
    for name in ("shutdown_kernel", "_async_shutdown_kernel", "restart_kernel"):
        original = getattr(km, name, None)
        if not inspect.iscoroutinefunction(original) or getattr(original, "_elastichub", False):
            continue  # a synchronous manager's callers would not await us
        setattr(km, name, _wrap(ext, original))
        wrapped = True
    if not wrapped:
        ext.log.warning("elastichub: this server's kernel manager cannot be asked to checkpoint Elastic kernels "
                        "before it shuts them down: they have only its shutdown_wait_time for it")
    return wrapped


def _wrap(ext: Any, original):
    @functools.wraps(original)
    async def wrapper(kernel_id, *args, **kwargs):
        now = kwargs.get("now", args[0] if args else False)
        if not now:  # "now" kills at once: nothing to ask
            await checkpoint_first(ext, kernel_id)
        return await original(kernel_id, *args, **kwargs)

    wrapper._elastichub = True  # type: ignore[attr-defined]
    return wrapper


async def checkpoint_first(ext: Any, kernel_id: str) -> dict | None:
    """Ask an Elastic kernel for its shutdown checkpoint; never raises (the
    shutdown goes on whatever the answer)."""
    from .serverext import _maybe_await, is_elastic_kernelspec

    timeout = ext.shutdown_checkpoint_timeout
    try:
        km = ext.serverapp.kernel_manager
        if timeout <= 0 or kernel_id not in km:
            return None
        kernel = km.get_kernel(kernel_id)
        # A kernel still starting has run nothing (and answers only once its restore is done).
        if not is_elastic_kernelspec(ext._spec(kernel)) or getattr(kernel, "execution_state", None) == "starting":
            return None
        if not await kernel.is_alive():
            return None
        if getattr(kernel, "execution_state", None) == "busy":
            await _maybe_await(kernel.interrupt_kernel())  # what Jupyter's shutdown does first
        result = await ext.checkpoint(kernel_id, kernel, {"shutdown": True}, timeout)
    except Exception as exc:  # never in the way of a shutdown
        ext.log.warning("elastichub: checkpoint of kernel %s before its shutdown failed: %s: %s", kernel_id,
                        type(exc).__name__, exc)
        return None
    if not result["ok"]:
        ext.log.warning("elastichub: kernel %s is shut down without the checkpoint asked for first (%s); "
                        "it checkpoints within Jupyter's shutdown_wait_time", kernel_id, result.get("error"))
    return result
