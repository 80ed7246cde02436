"""Draining a cloud node: move each server off it with its kernel state, then stop its VM.

Each server moves live (make-before-break, `move_method = "live"`: live.py)
or by a restart (break-before-make, below; also the way for a server whose
image lacks the kernel package's endpoint). The restart protocol, RAM
descending, `concurrency` servers at a time as far as the other nodes have
room for them together (drainpool.py; a live move runs alone):

  cordon + taint + record          (the node takes no new server)
  per server: kernels idle?        (a running cell is never killed: wait, bounded, else roll back)
              checkpoint           (the kernel package's endpoint; any failure: roll back)
              record "restart"     (from here a crash must end with the server started again)
              stop via the hub     (wait until the hub has it stopped)
              start via the hub    (same user_options: same profile; lands elsewhere, the node is cordoned)
              record "done"        (with the node it landed on)
  no single-user pod left: record "stopping-vm", stop the VM, forget the record (the node stays cordoned).

Rolling back: servers waiting for their restart are started, the record is
dropped and the node uncordoned. Every record is written on the Node before
the step it announces, so `resume` continues a drain (or finishes a roll
back) from the cluster alone after a crash, never repeating a finished step.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Container

from .. import podmeta
from ..checkpoint_client import UNSUPPORTED
from .cloud import STOPPED, CloudError, CloudPool
from .drainpool import move_all
from .drainquiet import QuietWaits
from .drainterms import DrainTimeouts, Halted, MoveAborted, MoveReport, NodeGone, NotRestarted, Paused
from .fanout import each
from .hold import Hold
from .hub import HubClient, HubError, HubServer
from .kube import KubeNodes, KubePods
from .live import LIVE, ROUTE, LiveMove, LiveMoveBusy, LiveMoveFailed, LiveUnsupported, destination_name
from .records import DRAIN_RECORD_VERSION, PodRecord, format_time, load_drain

log = logging.getLogger(__name__)

DRAINING, STOPPING_VM, ABORTING = "draining", "stopping-vm", "aborting"
RESTART, DONE = "restart", "done"  # a server's steps in the record
USER_STOPPED = "stopped by its user during the move"  # a move's report: skipped, for this reason
HUB_STOPPED = "stopped during the move: the hub serves it from neither pod (its pod was lost)"
TRY_AGAIN = (0, 429, 502, 503, 504)  # hub answers (0: none) that a moment later can be different


class Drain(QuietWaits):
    """One node's drain. `pods()` reads the pod cache; `on_move` is told of
    every server move (for the status page and the metrics). `restart_only`:
    servers to move by a restart even when `move_method` is live (their
    last live move failed)."""

    def __init__(self, node: str, vm_id: str | None, *, kube: KubeNodes, hub: HubClient, cloud: CloudPool | None,
                 pods: Callable[[], list[PodRecord]], timeouts: DrainTimeouts, reason: str = "",
                 clock: Callable[[], float] = time.time, on_move: Callable[[MoveReport], None] = lambda r: None,
                 move_method: str = "restart", kube_pods: KubePods | None = None,
                 restart_only: Container[str] = (), room: Callable[[list[PodRecord]], bool] | None = None):
        self.node, self.vm_id = node, vm_id
        self.kube, self.hub, self.cloud = kube, hub, cloud
        self.move_method, self.kube_pods, self.restart_only = move_method, kube_pods, restart_only
        self.pods, self.t, self.reason = pods, timeouts, reason
        self.clock, self.on_move = clock, on_move
        self.record: dict = {}
        self.outcome = "in-flight"  # stopped | rolled-back | failed
        self.closing = False  # set at shutdown: finish the moves past their checkpoint, begin no other
        self.holds_unknown = False  # resumed: a server checkpointed by the last run may hold its cells
        # Moves in flight together (drainpool.py): whether these servers fit elsewhere at once; the first
        # failure, which ends the moves not yet `past_return` (stopped, or about to be).
        self.room, self.halting, self.past_return = room, None, set()
        self._writing = asyncio.Lock()  # one record write at a time: an older one never lands after a newer
        self._changes = self._written = 0  # the record's changes saved, and written (one write carries many)
        self._on_node = True

    # -- the record on the Node ---------------------------------------------------------

    async def _save(self, needed: bool = True) -> None:
        """Write the record on the Node. A Node deleted meanwhile takes no record, and without one a crash
        would leave the servers this drain stops stopped: a `needed` write (one a next step relies on)
        ends the drain then (NodeGone: the roll-back starts what it stopped); one made while rolling back,
        or after the step it was for, goes on with the record held here alone."""
        self._changes += 1
        change = self._changes
        async with self._writing:  # the record as it is when its turn comes: the last write is the newest
            if self._written < change:  # else a write begun since this change carried it (concurrent moves)
                ahead = self._changes
                self._on_node = await self.kube.record_drain(self.node, self.record) is not None
                self._written = ahead
        if self._on_node:
            return
        if needed and self.record.get("state") != ABORTING:
            raise NodeGone(f"node {self.node} is gone (deleted mid-drain): its drain record cannot be written")
        log.warning("node %s is gone: the record of its drain is kept in memory only", self.node)

    def _servers_here(self) -> list[PodRecord]:
        """Single-user pods still on the node (not finished), RAM descending."""
        here = [p for p in self.pods() if p.managed and p.node == self.node and p.holds_resources]
        return sorted(here, key=lambda p: (-p.ram, -p.cpu, p.server))

    # -- entry points -------------------------------------------------------------------

    async def start(self) -> str:
        self.record = {"v": DRAIN_RECORD_VERSION, "state": DRAINING, "started": self.clock(), "reason": self.reason,
                       "servers": {}}
        if await self.kube.mark_drain(self.node, self.record) is None:
            raise MoveAborted(f"node {self.node} is gone")
        return await self._run()

    async def resume(self, text: str, abandon: str = "") -> str:
        """Go on with a drain from its record; `abandon`: why it is rolled back instead."""
        self.record = load_drain(text) or {}
        self.record.setdefault("servers", {})
        self.holds_unknown = True
        log.info("resuming the drain of %s (state %s)", self.node, self.record.get("state"))
        if abandon or self.record.get("state") == ABORTING:
            await self._roll_back(abandon or "finishing a roll-back left unfinished (a restart, or the hub or "
                                             "cloud out of reach)")
            return self.outcome
        return await self._run()

    async def _run(self) -> str:
        try:
            if self.record.get("state") != STOPPING_VM:
                await self._restart_pending()
                await self._all_quiet()
                await move_all(self)
            await self._stop_vm()
        except MoveAborted as e:
            await self._roll_back(str(e))
        return self.outcome

    async def _all_quiet(self) -> None:
        """Before anyone moves, every server here that will move by a restart
        without a running cell, none with a terminal in use, and no pod left
        that the hub runs no server for: one that outlasted `busy` after
        others had moved rolled the drain back, and they were paused for
        nothing (a live move waits for a cell itself). A few servers at a time: one by one, 30 servers
        at a hub answering in 2 s took minutes, and the first ones could be busy again by the last."""
        here = self._servers_here()
        if all(p.migratable for p in here):  # else the loop refuses the drain before any move
            await each(self._quiet, here)

    async def _quiet(self, pod: PodRecord) -> None:
        server = await self.hub.server(pod.user, pod.server_name)
        try:
            if server is None:  # refused before anyone moves, as a busy kernel is
                await self._refuse_orphan(pod)
            if server is None or not server.ready or server.pending:
                return  # not running in the hub: no move waits for it
            if self.move_method != "live" or self.kube_pods is None or pod.server in self.restart_only:
                await self._wait_idle(server)
            await self._wait_terminals_quiet(server)
        except MoveAborted as e:  # its move ends before it began, and says why (the status page)
            self.on_move(MoveReport(pod.server, self.node, outcome="aborted", error=str(e)))
            raise

    # -- one server ---------------------------------------------------------------------

    async def _move(self, pod: PodRecord) -> None:
        if pod.terminating:  # already going (e.g. the source of a live move finished after a restart)
            await self._wait_pod_gone(pod.key, self.t.stop)
            return
        report = MoveReport(pod.server, self.node)
        self.on_move(report)
        log.info("moving %s (pod %s) off %s", pod.server, pod.key, self.node)
        try:
            await self._move_steps(pod, report)
        except (Exception, asyncio.CancelledError) as e:  # the Kubernetes API or the cloud, mid-move, or a
            # halt (another move failed): said, not left "in flight"
            halted = (isinstance(e, (Halted, asyncio.CancelledError)) and self.halting is not None
                      and pod.server not in self.past_return)  # else cut by the shutdown: the next run ends it
            if report.outcome == "in-flight" and (halted or isinstance(e, Exception)):
                report.outcome, report.error = ("aborted", f"not moved: {_why(self.halting)}") if halted else (
                    "interrupted", _why(e))
                self.on_move(report)
            raise

    async def _move_steps(self, pod: PodRecord, report: MoveReport) -> None:
        try:
            server = await self.hub.server(pod.user, pod.server_name)
            if server is not None and server.pending == "spawn":
                # Its pod runs, the hub has not finished the start: the move waits for it.
                server = await self._wait_spawned(pod)
            if server is None or not server.ready:
                # A pod the hub does not count as running (stopping, or orphaned): wait for it to go.
                if server is None:
                    await self._refuse_orphan(pod)
                await self._wait_pod_gone(pod.key, self.t.stop, "the hub is stopping its server" if server else
                                          _no_server(pod))
                report.outcome, report.error = "skipped", "not running in the hub"
                self.on_move(report)
                return
            await self._wait_terminals_quiet(server)
        except MoveAborted as e:  # the move ends here, and says so (not left "in flight")
            report.outcome, report.error = "aborted", str(e)
            self.on_move(report)
            raise
        if self.moves_live(pod):
            try:
                await self._move_live(pod, server, report)
                return
            except LiveUnsupported as e:
                log.info("%s cannot move live (%s): moving it by a restart", pod.server, e)
                report.method = "restart"
        hold = Hold(self.hub, server)
        try:
            await self._move_restart(pod, server, report, hold)
        except BaseException:  # not stopped (a hub error, a roll-back, the orchestrator stopping): no cell waits
            await hold.end()
            raise

    async def _move_restart(self, pod: PodRecord, server: HubServer, report: MoveReport, hold: Hold) -> None:
        """Break-before-make; `hold` on from the checkpoint until the hub takes the stop."""
        try:
            while True:
                kernels = await self._wait_idle(server)
                hold.on = True
                outcome = await self.hub.checkpoint(server, self.t.checkpoint, hold_s=self.t.freeze_lease)
                report.checkpoint = outcome.to_dict()
                # A server without the kernel package is safe to move only when it runs no kernel.
                if not (outcome.ok or (outcome.status == UNSUPPORTED and not kernels)):
                    await hold.end()
                    raise MoveAborted(f"checkpoint of {pod.server}: {outcome.summary()}")
                # Held since (no cell runs on to be cut by the stop): a cell sent, to run now, or a terminal.
                busy = any(k.get("execution_state") == "busy" for k in await self.hub.kernels(server))
                if not busy and not self._terminals_in_use(await self.hub.terminals(server)):
                    break
                await hold.end()
                await self._wait_terminals_quiet(server)
        except (MoveAborted, HubError) as e:
            # Stopped from the hub page (or culled) meanwhile: the hub's stop checkpointed it, and the
            # server's answers were the hub's (a 403 page, a 424) rather than the server's.
            if await self._stopped_meanwhile(pod):
                hold.on = False  # stopping: its cells are kept from the stop
                await self._skip_stopped(pod, report)
                return
            report.outcome, report.error = "aborted", str(e)
            self.on_move(report)
            if isinstance(e, MoveAborted):
                raise
            raise MoveAborted(f"{pod.server}: {e}") from None

        self._pause_if_closing()  # checkpointed for nothing, but not stopped on the way out
        self.past_return.add(pod.server)  # from here its move ends with the server started (or on the record)
        entry = self.record["servers"][pod.server] = {
            "user": pod.user, "name": pod.server_name, "step": RESTART, "options": server.user_options,
            "checkpoint": report.checkpoint, "stop_sent": False}
        # Its new pod keeps both (_keep_times): no new arrival, and one history row with its real wait.
        if pod.created is not None:
            entry["asked"] = format_time(pod.created)
        if pod.started is not None:
            entry["started"] = format_time(pod.started)
        await self._save()
        down = time.monotonic()
        try:
            # Its user (or jupyterhub-idle-culler) may have stopped it since the checkpoint: the hub
            # answers our stop 204 all the same, and our start would override them.
            if await self._stopped_meanwhile(pod):
                raise NotRestarted(await self._left_stopped(pod.server))
            # Saved before the stop is sent, not after: a write that failed after it would leave the
            # record saying no stop was sent, and a resumed drain would leave the server stopped.
            entry["stop_sent"] = True  # from here a server found stopped may have been stopped by us
            await self._save()
            # Asked again after the write's round trip, just before the stop: the hub answers a stop
            # already pending or done (its user's) as it answers ours, and can never tell us later.
            if await self._stopped_meanwhile(pod):
                raise NotRestarted(await self._left_stopped(pod.server))
            await self._mark_moving(pod)
            await self.hub.stop(pod.user, pod.server_name)
            hold.on = False  # the stop is under way: a cell sent now is answered "did not run"
            await self._wait_stopped(pod)
            report.destination = await self._start(pod.server)
        except NotRestarted as e:  # off this node all the same: the drain goes on
            hold.on = False
            report.outcome, report.error = "skipped", str(e)
            self.on_move(report)
            return
        except HubError as e:
            if hold.on:  # the stop itself failed: a later stop by its user is no move
                await self._mark_moving(pod, on=False)
            report.outcome, report.error = "failed", str(e)
            self.on_move(report)
            raise MoveAborted(f"moving {pod.server}: {e}") from None
        report.downtime_s = round(time.monotonic() - down, 3)
        report.outcome = "moved"
        self.on_move(report)

    def moves_live(self, pod: PodRecord) -> bool:
        return self.move_method == "live" and self.kube_pods is not None and pod.server not in self.restart_only

    def _pause_if_closing(self) -> None:
        if self.halting is not None and not isinstance(self.halting, Paused):
            raise Halted(f"not moved: {_why(self.halting)}")
        if self.closing:
            raise Paused(f"the orchestrator is stopping: {len(self._servers_here())} server(s) left on {self.node}, "
                         "moved when the next run resumes the drain")

    def _live(self, entry: dict) -> LiveMove:
        return LiveMove(hub=self.hub, pods=self.kube_pods, timeouts=self.t, entry=entry, save=self._save,
                        poll=min(self.t.poll, 0.1), terminals_in_use=self._terminals_in_use)

    async def _move_live(self, pod: PodRecord, server: HubServer, report: MoveReport) -> None:
        """Make-before-break (live.py). A failed live move leaves the source
        serving and rolls the drain back, as a failed checkpoint does."""
        namespace, name = pod.key.split("/", 1)
        entry = {"user": pod.user, "name": pod.server_name, "step": LIVE, "ns": namespace, "source": name,
                 "dest": destination_name(name), "prefix": server.url}
        report.method = "live"
        self.record["servers"][pod.server] = entry
        await self._save()
        move = self._live(entry)
        try:
            report.destination = await move.run(pod, server)
        except (LiveMoveFailed, LiveUnsupported) as e:
            report.phases = move.phases
            del self.record["servers"][pod.server]
            await self._save(needed=False)
            if isinstance(e, LiveUnsupported):
                raise
            if await self._stopped_meanwhile(pod):  # no failure: nothing is left to move
                await self._skip_stopped(pod, report)
                return
            report.outcome, report.error = "aborted" if isinstance(e, LiveMoveBusy) else "failed", str(e)
            self.on_move(report)
            raise MoveAborted(f"live move of {pod.server}: {e}") from None
        except HubError as e:  # the undo itself failed: the record stays, the next cycle's resume finishes it
            report.outcome, report.error, report.phases = "failed", f"undoing the move: {e}", move.phases
            self.on_move(report)
            raise
        report.phases = move.phases
        report.downtime_s = move.phases.get("pause_s")
        report.outcome = "moved"
        self.on_move(report)
        await self._wait_pod_gone(pod.key, self.t.stop)

    async def _wait_spawned(self, pod: PodRecord) -> HubServer | None:
        """The server once the hub has finished starting it (None if the
        start failed: it is no longer the hub's)."""
        deadline = time.monotonic() + self.t.start
        while True:
            server = await self.hub.server(pod.user, pod.server_name)
            if server is None or server.pending != "spawn":
                return server
            if time.monotonic() > deadline:
                raise MoveAborted(f"{pod.server} is still starting in the hub after {self.t.start:g} s")
            await asyncio.sleep(self.t.poll / 4)

    async def _server(self, user: str, name: str, deadline: float) -> HubServer | None:
        """The hub's model of a server the drain stopped, or is stopping. An answer that a moment later
        can be different (TRY_AGAIN: a hub restarting, its spawn limits) is asked again until `deadline`,
        less often each time: the server is down, and a roll-back would try only after a back-off."""
        wait = self.t.poll / 4
        while True:
            try:
                return await self.hub.server(user, name)
            except HubError as e:
                if e.code not in TRY_AGAIN or time.monotonic() + wait > deadline:
                    raise
                log.info("the hub's model of %s: %s; asking again in %.1f s", user, e, wait)
            await asyncio.sleep(wait)
            wait = min(wait * 2, 30.0)

    async def _refuse_orphan(self, pod: PodRecord) -> None:
        """MoveAborted when the API server (not the cache, which may lag)
        shows the pod of a server the hub does not run on this node, not
        being deleted: the hub's stop ends once the pod is deleted, so this
        one is nobody's to stop, and waiting `stop` s for it would only hold the drain."""
        if self.kube_pods is not None and await self.kube_pods.stays_on(*pod.key.split("/", 1), self.node):
            raise MoveAborted(f"pod {pod.key} stays on {self.node}, not deleted: {_no_server(pod)}")

    async def _wait_stopped(self, pod: PodRecord) -> None:
        deadline = time.monotonic() + self.t.stop
        while await self._server(pod.user, pod.server_name, deadline) is not None:
            if time.monotonic() > deadline:
                raise HubError(f"{pod.server} did not stop within {self.t.stop:g} s")
            await asyncio.sleep(self.t.poll / 4)
        await self._wait_pod_gone(pod.key, self.t.stop)

    async def _wait_pod_gone(self, key: str, timeout: float, why: str = "") -> None:
        """Until the pod cache shows the pod `key` off this node: a pod we
        just deleted may still look alive in the cache for a moment. `why`
        it should go, said if it does not."""
        deadline = time.monotonic() + timeout
        while any(p.key == key and p.node == self.node and p.holds_resources for p in self.pods()):
            if time.monotonic() > deadline:
                said = f"; {why}" if why else ""
                raise MoveAborted(f"pod {key} is still on {self.node} after {timeout:g} s{said}")
            await asyncio.sleep(self.t.poll / 4)

    async def _start(self, key: str) -> str | None:
        """Start a server the record says we stopped; wait until it answers.
        Returns the node it landed on; the record marks it done. Started
        once: a start the hub then drops failed, or its user (or an admin)
        stopped or deleted it, and a second start would override them;
        either way its checkpoint restores at its next start (NotRestarted)."""
        entry = self.record["servers"][key]
        user, name = entry["user"], entry["name"]
        deadline = time.monotonic() + self.t.start
        posted = False
        while True:
            current = await self._server(user, name, deadline)
            if current is not None and current.ready:
                break
            if current is None and posted:
                await self._not_restarted(key, "the hub dropped its start: it failed, or its user stopped it; "
                                               "left stopped, its checkpoint restores at its next start")
            if current is None:  # stopped (a stop still under way when a resumed drain got here is waited for)
                try:
                    await self.hub.start(user, name, entry.get("options") or {})
                    posted = True
                except HubError as e:
                    if e.code == 404:  # its user is gone (deleted by an admin): nobody to start it for
                        await self._not_restarted(key, f"its user is gone ({e})")
                    if e.code not in TRY_AGAIN or time.monotonic() > deadline:
                        raise
                    log.info("starting %s again: %s; trying again", key, e)
                    await asyncio.sleep(min(self.t.poll * 4, max(deadline - time.monotonic(), 0)))
            if time.monotonic() > deadline:
                raise HubError(f"{key} did not start again within {self.t.start:g} s")
            await asyncio.sleep(self.t.poll / 4)
        landed = next((p for p in self.pods() if p.managed and p.server == key and p.holds_resources
                       and p.node), None)
        if landed is not None:
            await self._keep_times(landed, entry)
        entry.update(step=DONE, to=landed.node if landed else None)
        await self._save(needed=False)  # the server runs again
        return entry["to"]

    async def _not_restarted(self, key: str, why: str):
        """The server will not be started again by this drain: off its
        record (the drain can end), and raised to the caller to report."""
        del self.record["servers"][key]
        await self._save(needed=False)
        log.warning("%s was not started again after the drain of %s stopped it: %s", key, self.node, why)
        raise NotRestarted(why)

    async def _stopped_meanwhile(self, pod: PodRecord) -> bool:
        """Has its user (or a culler) stopped the server, or begun to (or
        stopped and started it again: not the server the move was about)?"""
        try:
            server = await self.hub.server(pod.user, pod.server_name)
        except HubError:  # unknown: the move goes on as if not
            return False
        return server is None or not server.ready

    async def _skip_stopped(self, pod: PodRecord, report: MoveReport) -> None:
        """The move of a server its user stopped before the drain did: said,
        and over once the hub's stop has taken its pod."""
        report.outcome, report.error = "skipped", USER_STOPPED
        self.on_move(report)
        await self._wait_pod_gone(pod.key, self.t.stop)

    async def _left_stopped(self, key: str, why: str = USER_STOPPED) -> str:
        """A server its user (or a culler, or the hub) stopped before the drain
        did: off the record, never started by the drain. Returns why, for its report."""
        log.info("%s was %s (drain of %s): left stopped", key, why, self.node)
        del self.record["servers"][key]
        await self._save(needed=False)
        return why

    async def _mark_moving(self, pod: PodRecord, on: bool = True) -> None:
        """Say on the pod that this stop is the drain's (ElasticSpawner's stop reads it: only then does the
        next start tell its user "Moving your server"), or unsay it when the stop failed. Best effort."""
        if self.kube_pods is not None:
            try:
                await self.kube_pods.annotate(*pod.key.split("/", 1), {podmeta.MOVING_ANNOTATION: self.node if on
                                                                      else None})
            except Exception as e:  # costs the line on the spawn page alone
                log.warning("could not %smark pod %s as moved off %s: %s", "" if on else "un", pod.key, self.node, e)

    async def _keep_times(self, pod: PodRecord, entry: dict) -> None:
        """Write on a restarted server's new pod when its user asked for it
        and when it first started, as a live move's destination carries
        them. Until then the drain record says them; a failure only costs that."""
        times = {key: entry[field] for key, field in ((podmeta.ASKED_ANNOTATION, "asked"),
                                                       (podmeta.STARTED_ANNOTATION, "started")) if entry.get(field)}
        if self.kube_pods is None or not times:
            return
        namespace, name = pod.key.split("/", 1)
        try:
            await self.kube_pods.annotate(namespace, name, times)
        except Exception as e:  # the move itself succeeded
            log.warning("could not mark pod %s with when %s was asked for and started: %s", pod.key, pod.server, e)

    async def _restart_pending(self) -> None:
        """Servers a previous run stopped (or began to stop) and had not
        started again: the hub says whether the stop happened."""
        for key, entry in list(self.record["servers"].items()):
            if entry.get("step") in (LIVE, ROUTE) and self.kube_pods is not None:
                log.info("live move of %s interrupted by a restart: finishing or undoing it", key)
                report = MoveReport(key, self.node, method="live")
                recovered = await self._live(entry).recover()
                if recovered == "done":
                    report.destination, report.outcome = entry.get("to"), "moved"
                    await self._wait_pod_gone(f"{entry['ns']}/{entry['source']}", self.t.stop)
                elif recovered == "stopped":  # and its pod gone with it: nothing is left to move
                    report.outcome, report.error = "skipped", await self._left_stopped(key, HUB_STOPPED)
                else:
                    del self.record["servers"][key]
                    await self._save(needed=False)
                    # Aborted, not failed: the crash was ours, the server can move live next time.
                    report.outcome, report.error = "aborted", "interrupted before the route switched: undone"
                self.on_move(report)
        # Up to `concurrency` stopped by the last run: started again as many at a time, not one by one.
        await each(self._restart_one, [(key, entry) for key, entry in list(self.record["servers"].items())
                                       if entry.get("step") == RESTART], limit=self.t.concurrency)
        self.holds_unknown = False  # this run's own moves end their holds

    async def _restart_one(self, item: tuple[str, dict]) -> None:
        key, entry = item
        here = [p for p in self.pods() if p.managed and p.server == key and p.node == self.node
                and p.holds_resources]
        server = await self._server(entry["user"], entry["name"], time.monotonic() + self.t.start)
        if server is not None and server.ready and here and not any(p.terminating for p in here):
            # Never stopped: the loop moves it again from the start (checkpoint included). Its
            # checkpoint's hold may still keep a cell waiting (the last run ended, or crashed, after it),
            # its pod the mark of a stop never sent (its user's own stop is no move).
            await Hold(self.hub, server, on=self.holds_unknown).end()
            if entry.get("stop_sent"):
                await self._mark_moving(here[0], on=False)
            return
        report = MoveReport(key, self.node)
        if entry.get("stop_sent") is False and server is None and not here:
            # We never asked the hub to stop it: its user (or a culler) did. Not ours to start.
            report.outcome, report.error = "skipped", await self._left_stopped(key)
            self.on_move(report)
            return
        log.info("starting %s again: a previous run stopped it for the drain of %s", key, self.node)
        if here:
            await self._wait_pod_gone(here[0].key, self.t.stop)
        try:
            report.destination = await self._start(key)
            report.outcome = "moved"
        except NotRestarted as e:
            report.outcome, report.error = "skipped", str(e)
        self.on_move(report)

    # -- the VM and the end -------------------------------------------------------------

    async def _stop_vm(self) -> None:
        here = [p.server for p in self._servers_here()]
        if not here and self.kube_pods is not None:  # the cache may be stale: the API server says
            here = sorted({(m.get("annotations") or {}).get(podmeta.USER_ANNOTATION) or m.get("name")
                           for m in ((p.get("metadata") or {}) for p in await self.kube_pods.servers_on(self.node))})
        if here:
            # Resumed at this step after a restart, and its VM hosts servers again (started anew
            # meanwhile): stopping it would end their sessions unsaved.
            raise MoveAborted(f"{', '.join(here)} run on {self.node} again")
        self.record["state"] = STOPPING_VM
        await self._save(needed=False)  # no Node: its VM still stops
        if self.cloud is not None and self.vm_id is not None:
            await self.cloud.stop(self.vm_id)
            deadline = time.monotonic() + self.t.stop
            while True:
                vm = next((v for v in await self.cloud.list() if v.id == self.vm_id), None)
                if vm is None or vm.state == STOPPED:
                    break
                if time.monotonic() > deadline:  # the record stays: the next cycle's resume tries again
                    raise CloudError(f"VM {self.vm_id} did not stop within {self.t.stop:g} s")
                await asyncio.sleep(self.t.poll)
        await self.kube.end_drain(self.node, uncordon=False)
        self.outcome = "stopped"
        log.info("drained %s: %s", self.node, "VM stopped" if self.cloud is not None and self.vm_id is not None
                 else "no VM to stop")

    async def _roll_back(self, why: str) -> None:
        log.warning("rolling back the drain of %s: %s", self.node, why)
        self.record["state"] = ABORTING
        self.record["why"] = why
        await self._save()
        # Open the node again first (the record stays until the end): a stopped server whose only
        # room is this node waited for it for ever, and the roll-back with it.
        await self.kube.uncordon(self.node)
        try:
            await self._restart_pending()
        except HubError as e:  # keep the record: the next cycle's resume tries again
            self.outcome = "failed"
            log.error("roll-back of %s could not restart every server: %s", self.node, e)
            return
        await self.kube.end_drain(self.node, uncordon=True)
        self.outcome = "rolled-back"


def _why(e: BaseException) -> str:
    return " ".join(str(e).split())[:300]


def _no_server(pod: PodRecord) -> str:
    return (f"the hub runs no server {pod.server} (an orphan pod, or a user the orchestrator's token may not see: "
            "its role's scopes filtered, e.g. servers!group=..., the hub answers 404)")
