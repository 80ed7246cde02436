"""A drain's moves, a few at a time.

A restart move is some 15 hub calls (checkpoint, stop, wait, start, wait...): one server at a time, a cloud
node of 30 servers behind a hub answering in 2 s took over 15 minutes, the node billed all along, at a class's
end the usual case. Restart moves now overlap, `concurrency` at most (DrainTimeouts); a live move runs alone
(it polls the API many times a second to keep its pause short). What the one-at-a-time drain guaranteed holds:

- each move keeps its own steps (checkpoint before any stop, the record written before each step), and the
  record's writes are serialized (Drain._save), so a resumed drain knows every server's state;
- a move starts only when the servers in flight and it fit together elsewhere (`fits_elsewhere`, as the
  policy's drain decision checks room), and always when none is in flight (the old pace, never stuck);
- the first failure (a refused checkpoint, a hub error, the shutdown) starts no other move; the moves not yet
  past their last way out (the checkpoint: nothing stopped) are cancelled, their holds ended; those that
  stopped their server finish (started elsewhere, or reported and left on the record), then the failure is
  raised as from one move: the roll-back starts what the record says was stopped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from .drainterms import Halted, MoveAborted, Paused
from .nodefit import misfit
from .records import NodeRecord, PodRecord, unmovable

log = logging.getLogger(__name__)


async def move_all(drain) -> None:
    """Move every server off `drain.node` (a Drain): RAM descending, `drain.t.concurrency` restart moves at once."""
    moving: dict[asyncio.Task, PodRecord] = {}
    ended: set[asyncio.Task] = set()  # cancelled once: a second cancel would cut its hold's end short
    try:
        while True:
            here = drain._servers_here()
            servers = {p.server for p in moving.values()}
            waiting = [p for p in here if p.server not in servers]
            if not waiting and not moving:
                return
            if drain.halting is None:
                if not all(p.migratable for p in here):
                    drain.halting = MoveAborted(unmovable(here))
                elif drain.closing:
                    drain.halting = Paused("the orchestrator is stopping")
            if drain.halting is not None:
                for task, pod in moving.items():  # nothing stopped yet: ended now, not after a wait for a cell
                    if task not in ended and pod.server not in drain.past_return and not drain.moves_live(pod):
                        ended.add(task)
                        task.cancel()
                if not moving:
                    if isinstance(drain.halting, Paused):  # said once the moves in flight are over
                        drain._pause_if_closing()
                    raise drain.halting
            elif waiting and _may_start(drain, waiting[0], list(moving.values())):
                task = asyncio.ensure_future(drain._move(waiting[0]))
                moving[task] = waiting[0]
                continue
            done, _ = await asyncio.wait(moving, timeout=drain.t.poll, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                pod = moving.pop(task)
                drain.past_return.discard(pod.server)
                error = None if task.cancelled() else task.exception()
                if error is None or isinstance(error, Halted):
                    continue
                if drain.halting is None:
                    drain.halting = error
                elif not isinstance(error, Paused):  # the first failure is the drain's; this one is on its report
                    log.warning("move of %s off %s, during the drain's halt: %s", pod.server, drain.node, error)
    finally:  # cancelled (the shutdown's grace is over): no move outlives its drain
        for task in moving:
            if task not in ended:
                task.cancel()
        await asyncio.gather(*moving, return_exceptions=True)


def _may_start(drain, pod: PodRecord, moving: list[PodRecord]) -> bool:
    if not moving:
        return True
    if len(moving) >= drain.t.concurrency or drain.moves_live(pod) or any(drain.moves_live(p) for p in moving):
        return False
    return drain.room is None or drain.room([*moving, pod])


def fits_elsewhere(node: str, nodes: Iterable[NodeRecord], pods: Iterable[PodRecord],
                   moving: list[PodRecord]) -> bool:
    """Could the servers of `moving` (pods on `node`) all start at once on the other nodes, over what their
    pods ask now? Ready, schedulable tier nodes only, each server where it fits (its constraints too) with the
    least RAM left, RAM descending, as the policy's drain decision places them. A server moved already (its
    new pod placed) is counted where it landed."""
    free = {n.name: [n.cpu, n.ram, n.offers] for n in nodes
            if n.tier is not None and n.ready and not n.unschedulable and not n.drain_taint and n.name != node}
    landed = set()
    for p in pods:
        if p.holds_resources and p.node in free:
            free[p.node][0] -= p.cpu
            free[p.node][1] -= p.ram
            if p.managed and p.server:
                landed.add(p.server)
    for pod in sorted((p for p in moving if p.server not in landed), key=lambda p: (-p.ram, -p.cpu, p.server)):
        fits = [(left[1] - pod.ram, name) for name, left in free.items() if left[0] >= pod.cpu and left[1] >= pod.ram
                and (pod.needs is None or left[2] is None or misfit(pod.needs, left[2]) is None)]
        if not fits:
            return False
        left = free[min(fits)[1]]
        left[0] -= pod.cpu
        left[1] -= pod.ram
    return True
