"""The loop: every Tmon observe, reconcile, decide, act.

Level-triggered like a Kubernetes controller. Each cycle reads the caches
and the cloud, then:

1. reconciles what the cluster says is in flight: a drain recorded on a
   Node with no task carrying it is resumed (or its roll-back finished); a
   VM that is on with a node not yet Ready and uncordoned gets a boot
   watcher (which stops it after `boot_timeout`; boot.py);
2. asks the policy (`decide`, the simulator's code) with the snapshot;
3. starts the work the action asks for as a background task: one boot per
   VM, at most one drain at a time.

Steps never block the loop, a failure of one is an event with a reason,
and nothing here is needed to be correct after a restart: the Node records
and the VMs' states are.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from dataclasses import dataclass, field, fields, replace
from typing import Callable

from kubernetes_asyncio.client.exceptions import ApiException

from ..policy import ControllerState, NodeStatus, ScaleIn, ScaleOut, Strategy, occupancy
from .boot import UNMAPPED, BootWatch
from .cloud import PENDING, RUNNING, UNKNOWN, CloudError, CloudPool
from .drain import Drain, DrainTimeouts, MoveAborted, MoveReport, Paused
from .drainpool import fits_elsewhere
from .history import HistoryFile, SessionTracker
from .hub import HubClient, HubError
from .kube import Informer, KubeNodes, KubePods, error_line
from .metrics import Metrics
from .movable import Movability
from .notices import REASON, boot_estimate, notices
from .observe import ObserveConfig, Observation, cloud_only_unserved_problem, observe
from .records import forget_gone, stale_marks
from .status import status_of
from .timetable import TimetableFile

log = logging.getLogger(__name__)
MAX_PROBLEM_EVENTS = 5  # new problems said per cycle (a bad rollout can make thousands)
# How far the wall clock may drift from the monotonic one between two cycles before it counts as stepped
# (NTP steps offsets over 128 ms; it slews at most 0.5 ms/s, far below this).
CLOCK_STEP_S = 1.0
# /health fails once the last cycle that read everything (cluster and cloud) is older than this many Tmon (at
# least HEALTH_MIN_S, plus one cloud call's timeout): one failed cycle is retried after 2 Tmon, and passes.
HEALTH_TMON = 4
HEALTH_MIN_S = 60.0
# The cloud's listing failing (credentials expired, its API down): tried again after a back-off doubling from Tmon
# up to this, not every Tmon; said when it starts and ends, and reminded every CLOUD_REMIND_S while it lasts.
LIST_VMS = "cloud:list"  # its key among the back-offs (no node name has a ":")
CLOUD_BACKOFF_MAX = 300.0
CLOUD_REMIND_S = 900.0
decision_log = logging.getLogger("elastichub.orchestrator.decisions")


@dataclass(frozen=True)
class Settings:
    tmon: float = 15.0
    boot_timeout: float = 600.0
    boot_backoff: float = 60.0  # first back-off after a failed boot; doubles per failure
    boot_backoff_max: float = 3600.0
    poll: float = 1.0  # how often a step re-reads what it waits for
    drain: DrainTimeouts = DrainTimeouts()
    move_method: str = "restart"
    observe: ObserveConfig = ObserveConfig()
    history: int = 200  # decisions, moves and events kept for the status page
    timeline_s: float = 6 * 3600.0
    dry_run: bool = False
    # At shutdown, how long a drain may take to finish the move in flight (a server it stopped is started
    # again): within the hub's 30 s from SIGINT to SIGTERM for a managed service, and a pod's 30 s grace.
    shutdown_grace: float = 20.0


@dataclass
class Backoff:
    failures: int = 0
    until: float = 0.0


@dataclass
class Controller(BootWatch):
    strategy: Strategy
    nodes: Informer
    pods: Informer
    kube: KubeNodes
    hub: HubClient
    cloud: CloudPool | None
    settings: Settings = field(default_factory=Settings)
    metrics: Metrics = field(default_factory=Metrics)
    clock: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic  # tells a step of `clock` from time passing
    kube_pods: KubePods | None = None  # live moves create and delete pods
    timetable: TimetableFile | None = None  # calendar_file, followed for edits (strategy: a TimetabledStrategy)
    history: HistoryFile | None = None  # history_file: each ended server session, as a simulator trace row

    def __post_init__(self) -> None:
        self.state = ControllerState()
        self.tasks: dict[str, asyncio.Task] = {}  # "boot:NODE" / "drain:NODE" -> task
        self.drain_jobs: dict[str, Drain] = {}  # node -> its drain (the last one started)
        self.boot_started: dict[str, float] = {}
        self.backoff: dict[str, Backoff] = {}
        n = self.settings.history
        self.decisions: deque[dict] = deque(maxlen=n)
        self.moves: deque[MoveReport] = deque(maxlen=n)
        self.events: deque[dict] = deque(maxlen=n)
        self.timeline: deque[dict] = deque(maxlen=max(10, int(self.settings.timeline_s / self.settings.tmon)))
        self.last: Observation | None = None
        self.last_cycle_at: float | None = None
        self.last_good: float | None = None  # monotonic time of the last cycle that read the cluster and the cloud
        self.failing = ""  # why the cycles since then were not (said by /health)
        self._cloud_said = 0.0  # when the failing cloud listing was last said
        self._began = self.monotonic()
        self._ticks: tuple[float, float] | None = None  # the last cycle's (clock, monotonic)
        self.billed_until: float | None = None  # the cloud bill counted up to here
        self.cycles = 0
        self.sessions = SessionTracker()
        self._history_failing = False
        self._problems: set[str] = set()  # subjects of the last cycle's problems
        self._tiers_told: set[tuple[str, str]] = set()  # (node, tier value) said not understood
        self._dry_before: set[str] = set()  # what the dry run said last cycle, and this one
        self._dry_now: set[str] = set()
        # Servers whose last live move failed -> why: their next move is a restart, so that a cause
        # that stays (a spawner that cannot switch routes, a kernel outside any session) neither keeps
        # a cloud node up nor pauses its user again at every drain.
        self.restart_next: dict[str, str] = {}
        self.told: dict[str, str] = {}  # waiting pod -> the situation its Event told (notices.py)
        self._tell_failing = False
        self.boot_seconds: deque[float] = deque(maxlen=5)  # the last boots, start to Ready
        self.booting_vms: set[str] = set()  # the VMs a boot step watches (under whichever node name)
        self.boot_failed: set[str] = set()  # cloud nodes whose last boot failed (boot.py), for notices
        self.movable = Movability(self.hub, self.monotonic)  # servers no checkpoint can move: pinned for the policy

    # -- the loop ------------------------------------------------------------------------

    async def run(self) -> None:
        """Cycle every Tmon until cancelled; a failed cycle is retried with back-off."""
        failures = 0
        while True:
            started = time.monotonic()
            try:
                await self.cycle()
                failures = 0
                delay = self.settings.tmon - (time.monotonic() - started)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # an API down, an answer we cannot read: never the end of the loop
                failures += 1
                self.metrics.cycle_errors.labels("cycle").inc()
                delay = min(self.settings.tmon * 2 ** min(failures, 6), 600.0)
                self.failing = f"the cycle fails ({type(e).__name__})"
                self.event("error", f"cycle failed ({type(e).__name__}: {error_line(e)}); retrying in {delay:.0f} s")
                log.exception("cycle failed")
            await asyncio.sleep(max(delay, 0.0))

    async def cycle(self) -> dict:
        now = self.clock()
        self._check_clock(now)
        self._dry_before, self._dry_now = self._dry_now, set()
        vms = None
        t0 = time.perf_counter()
        if self.cloud is not None:
            # Without the VMs' states no decision can be right (a VM started twice, one stopped under a
            # boot): while the listing fails, and until its back-off ends, observe only.
            held = self.backoff.get(LIST_VMS)
            if held is not None and held.until > now:
                return self._decided(now, None, f"the cloud's VMs are unknown (listed again in "
                                                f"{held.until - now:.0f} s)", t0)
            try:
                vms = await self.cloud.list()
            except CloudError as e:
                self.metrics.cycle_errors.labels("cloud").inc()
                self._cloud_failed(e, now)
                return self._decided(now, None, "the cloud's VMs are unknown this cycle", t0)
            if self.backoff.pop(LIST_VMS, None) is not None:
                self.event("cloud", "the cloud's VMs are listed again: scaling resumes")
        t0 = time.perf_counter()  # the cloud's round trip is not our decision's latency
        obs = observe(self.nodes.records.values(), self.pods.records.values(), vms, self.settings.observe, now,
                      self.boot_started)
        self.last = obs
        if vms == []:
            obs.problems.append(self.cloud.empty_problem())
        if getattr(self.strategy, "name", "") == "paper":  # the other strategies start a cloud node for them
            unserved = cloud_only_unserved_problem(obs.snapshot.pending)
            if unserved:
                obs.problems.append(unserved)
        self._report_problems(obs.problems)
        self._warn_unknown_tiers(obs.unknown_tiers)
        if self.history is not None:
            self._record_history(obs, now)
        self._account(obs, now)
        self._reconcile(obs, now)
        forget_gone(self.restart_next, self.pods.records.values(), obs.drains.values())  # stopped: live next
        if self.timetable is not None:
            self._reload_timetable()
        if self.movable.update(self.pods.records.values()) and not self._busy("movable"):
            self._spawn("movable", self.movable.recheck())
        snapshot = self.movable.pin(self._without_backed_off(obs.snapshot, now))
        action, self.state = self.strategy.decide(snapshot, self.state, now)
        record = self._decided(now, action, getattr(action, "reason", ""), t0)
        self._tell_waiting(obs, now)
        # Decided on caches that no longer follow the cluster (its API unreachable): not a cycle that worked.
        unread = [i.name for i in (self.nodes, self.pods) if i.last_error]
        if unread:
            self.failing = f"the Kubernetes API cannot be read ({' and '.join(unread)}): the caches are stale"
        else:
            self.last_good, self.failing = self.monotonic(), ""
        return record

    def health(self) -> tuple[bool, str]:
        """(healthy, why not): the caches synced, and a cycle that read the cluster and the cloud not long ago.
        The reason names no user or node (/health needs no login)."""
        if not (self.nodes.synced.is_set() and self.pods.synced.is_set()) or self.cycles == 0:
            return False, "starting: the caches of the nodes and pods are not synced, or no cycle ran yet"
        limit = max(HEALTH_TMON * self.settings.tmon, HEALTH_MIN_S) + (self.cloud.timeout if self.cloud else 0.0)
        age = self.monotonic() - (self.last_good if self.last_good is not None else self._began)
        if age <= limit:
            return True, ""
        return False, (f"no successful cycle for {age:.0f} s (the limit: {limit:g} s, Tmon {self.settings.tmon:g} s): "
                       f"{self.failing or 'the loop is stuck'}")

    def _cloud_failed(self, e: CloudError, now: float) -> None:
        """Said when the listing starts failing and every CLOUD_REMIND_S after, not at each try."""
        first = LIST_VMS not in self.backoff
        delay = self._back_off(LIST_VMS, self.settings.tmon, max(CLOUD_BACKOFF_MAX, self.settings.tmon))
        self.failing = "the cloud's VMs cannot be listed"
        if first:
            self._cloud_said = now
            self.event("error", f"cannot list the cloud's VMs: {e}; no scaling action is taken until it can; "
                                f"trying again in {delay:.0f} s, then less often (at most every "
                                f"{max(CLOUD_BACKOFF_MAX, self.settings.tmon):.0f} s)")
        elif now - self._cloud_said >= CLOUD_REMIND_S:
            self._cloud_said = now
            self.event("error", f"the cloud's VMs still cannot be listed ({self.backoff[LIST_VMS].failures} tries): "
                                f"{e}; no scaling action is taken until it can")
        else:
            log.debug("cannot list the cloud's VMs: %s; trying again in %.0f s", e, delay)

    def _check_clock(self, now: float) -> None:
        """The wall clock stepped (an NTP correction, either way) since the last cycle: the times remembered
        from before move with it, as if no time had passed, or Tcool and back-offs would hold as long as a
        step back, and a step forward would end them early (boots are timed apart). The wall clock stays
        the policy's `now`: the timetable is a calendar."""
        ticks, self._ticks = self._ticks, (now, self.monotonic())
        if ticks is None:
            return
        step = (now - ticks[0]) - (self._ticks[1] - ticks[1])
        if abs(step) <= CLOCK_STEP_S:
            return
        self.event("clock", f"the clock went {'forward' if step > 0 else 'back'} {abs(step):.0f} s: cool-down, "
                            "back-offs and boots count on from here as if it had not")
        times = {f.name: v for f in fields(self.state) if isinstance(v := getattr(self.state, f.name), (int, float))
                 and not isinstance(v, bool)}  # the policy state's times (the rest: names, None)
        self.state = replace(self.state, **{name: v + step for name, v in times.items()})
        for b in self.backoff.values():
            b.until += step
        for node in self.boot_started:
            self.boot_started[node] += step
        if self.billed_until is not None:  # the bill counts the VMs' real time, not the step
            self.billed_until += step

    def _decided(self, now: float, action, reason: str, t0: float) -> dict:
        seconds = time.perf_counter() - t0
        self.metrics.decision_seconds.observe(seconds)
        obs = self.last
        record = {
            "time": now,
            "action": "scale-out" if isinstance(action, ScaleOut) else "scale-in" if isinstance(action, ScaleIn)
            else "none",
            "nodes": list(action.nodes) if isinstance(action, ScaleOut) else [action.node] if action else [],
            "moves": [m.server.name for m in action.moves] if isinstance(action, ScaleIn) else [], "reason": reason,
            "occupancy_ram": round(occupancy(obs.snapshot.active_nodes, "ram"), 2) if obs else None,
            "pending": len(obs.snapshot.pending) if obs else None, "decide_ms": round(seconds * 1000, 3),
            "dry_run": self.settings.dry_run,
        }
        if action is not None:
            record["taken"] = self._act(action, now)
        self.decisions.append(record)
        self.cycles += 1
        self.last_cycle_at = now
        decision_log.info(json.dumps(record, sort_keys=True))
        return record

    # -- bookkeeping ---------------------------------------------------------------------

    def event(self, kind: str, message: str) -> None:
        self.events.append({"time": self.clock(), "kind": kind, "message": message})
        (log.warning if kind in ("error", "problem", "boot-failed", "drain-failed") else log.info)(
            "%s: %s", kind, message)

    def _dry_run_says(self, message: str) -> None:
        """What a dry run would do, said when it starts, not again every Tmon while it lasts (the
        decision log keeps every cycle's)."""
        self._dry_now.add(message)
        if message not in self._dry_before:
            self.event("dry-run", message)

    def _report_problems(self, problems: list[str]) -> None:
        """Each problem is an event when it appears, not every cycle. A
        problem names its subject before its first ': ' (a pod, a node, the
        servers without a memory request): the same subject with new details
        (one server more) is the same problem."""
        self.metrics.problems.set(len(problems))
        subjects = {p.split(": ", 1)[0]: p for p in problems}
        new = [p for subject, p in subjects.items() if subject not in self._problems]
        for problem in new[:MAX_PROBLEM_EVENTS]:
            self.event("problem", problem)
        if len(new) > MAX_PROBLEM_EVENTS:
            self.event("problem", f"and {len(new) - MAX_PROBLEM_EVENTS} more (api/status lists the first 20)")
        self._problems = set(subjects)

    def _warn_unknown_tiers(self, unknown: dict[str, str]) -> None:
        """A node whose tier label has a third value (a 'gpu' pool) is left out of every plan: said once per
        node and value, as a deliberate pool of the admin's it would be noise every Tmon."""
        cfg = self.settings.observe
        for node, value in sorted(unknown.items()):
            if (node, value) not in self._tiers_told:
                self._tiers_told.add((node, value))
                self.event("problem", f"node {node}: {cfg.tier_label}={value!r} is neither {cfg.onprem_tier!r} nor "
                                      f"{cfg.cloud_tier!r} (the values onprem_tier and cloud_tier understand): "
                                      "the node is left out of scaling, and its servers count nowhere")

    def _record_history(self, obs: Observation, now: float) -> None:
        rows = self.sessions.update(self.pods.records.values(), obs.drains.values(), now)
        if rows or self.history.unwritten:
            self._write_history(rows)

    def _write_history(self, rows: list[dict], stopped: tuple[float, int] | None = None) -> None:
        try:
            self.history.append(rows, stopped)
        except OSError as e:
            if not self._history_failing:  # said once, until a write succeeds again
                self.event("error", f"history_file {self.history.path}: cannot write ({e.strerror or e}); "
                                    "the rows are kept and written when it can be")
            self._history_failing = True
            return
        if self._history_failing:
            self.event("history", f"history_file {self.history.path} written again")
        self._history_failing = False

    def _reload_timetable(self) -> None:
        try:
            entries = self.timetable.changed()
        except (OSError, ValueError) as e:
            reason = f"cannot read {self.timetable.path} ({e.strerror or e})" if isinstance(e, OSError) else e
            self.event("error", f"calendar_file not reloaded, the timetable in force stays: {reason}")
            return
        if entries is not None:
            self.strategy.use_entries(entries)
            upcoming = self.strategy.next_class(self.clock())
            after = f"next class: {upcoming.name}" if upcoming else "no class from now on"
            self.event("timetable", f"calendar_file {self.timetable.path} reloaded: {len(entries)} row(s), {after}")

    def _on_move(self, report: MoveReport) -> None:
        if report not in self.moves:
            self.moves.append(report)
        if report.outcome == "failed" and report.method == "live" and report.server not in self.restart_next:
            self.restart_next[report.server] = report.error
            self.event("drain-failed", f"live move of {report.server} failed ({report.error}); "
                                       "its next move will be by a restart")
        elif report.outcome == "moved":
            self.restart_next.pop(report.server, None)
        if report.outcome != "in-flight":
            self.metrics.migrations.labels(report.outcome, report.method).inc()
            if report.downtime_s is not None:
                self.metrics.migration_downtime.labels(report.method).observe(report.downtime_s)

    def _tell_waiting(self, obs: Observation, now: float) -> None:
        """An Event on each waiting server's pod saying why it waits and for
        what (notices.py): the hub's spawn page shows it."""
        if not obs.waiting or self.kube_pods is None or self.settings.dry_run:
            self.told = {}
            return
        waiting = [obs.waiting[s.name] for s in obs.snapshot.pending]  # oldest first
        onprem_only = [(obs.waiting[name], why) for name, why in obs.onprem_only.items()]
        boot_s = boot_estimate(self.boot_seconds, getattr(self.strategy, "boot_s", None))
        send, told = notices(obs.snapshot, waiting, self.boot_started, boot_s, now, self.told, onprem_only,
                             self.boot_failed)
        if send and self._busy("tell"):
            return  # the last cycle's are still on their way: these go next cycle
        self.told = told
        if send:
            self._spawn("tell", self._send_notices(send))

    async def _send_notices(self, send: list) -> None:
        for pod, message in send:
            namespace, name = pod.key.split("/", 1)
            try:
                await self.kube_pods.event(namespace, name, pod.uid, REASON, message)
            except ApiException as e:
                if not self._tell_failing:
                    self.event("error", f"cannot write Events ({e.status} {e.reason}): users waiting for a "
                                        "server are not told why; `elastichub rbac` grants events create")
                self._tell_failing = True
                return
        self._tell_failing = False

    def _account(self, obs: Observation, now: float) -> None:
        snap = obs.snapshot
        on = sum(1 for vm in obs.vms.values() if vm.on)
        # Since the last count, not the last cycle: a cycle that could not list the VMs counts none.
        if self.billed_until is not None and now > self.billed_until:
            self.metrics.cloud_node_seconds.inc(on * (now - self.billed_until))
        self.billed_until = now
        ram = self.metrics.observed(snap, on, self.strategy.config.theta_out)
        self.timeline.append({"time": now, "cloud_on": on, "pending": len(snap.pending),
                              "occupancy_ram": round(ram, 2), "moving": self.draining() is not None,
                              "servers": sum(len(n.servers) for n in snap.nodes)})

    def draining(self) -> str | None:
        return next((key[6:] for key, t in self.tasks.items() if key.startswith("drain:") and not t.done()), None)

    def _busy(self, key: str) -> bool:
        return (task := self.tasks.get(key)) is not None and not task.done()

    def _spawn(self, key: str, coro) -> None:
        self.tasks[key] = asyncio.create_task(self._guarded(key, coro), name=key)

    async def _guarded(self, key: str, coro) -> None:
        """A background step: its failure is an event, never the loop's end."""
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self.metrics.cycle_errors.labels(key.split(":")[0]).inc()
            self.event("error", f"{key} failed ({type(e).__name__}: {error_line(e)}); the next cycles retry")
            log.debug("%s failed", key, exc_info=True)

    async def close(self) -> None:
        """Shutdown. Steps that only watch or tell end at once; a drain finishes the move in flight and
        begins no other, within `shutdown_grace`: cut mid-move, a user whose server it had stopped waited
        for the next run to start it (the record stays, and the next run resumes the drain)."""
        tasks = [t for t in self.tasks.values() if not t.done()]
        drains = [t for key, t in self.tasks.items() if key.startswith("drain:") and not t.done()]
        for job in self.drain_jobs.values():
            job.closing = True
        for t in tasks:
            if t not in drains:
                t.cancel()
        try:
            if drains:
                await asyncio.wait(drains, timeout=self.settings.shutdown_grace)
        finally:  # the grace over, or a second signal: the rest is resumed by the next run
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if self.history is not None:  # the rows it holds, and when it stopped watching
            self._write_history([], stopped=(self.clock(), self.sessions.running()))

    # -- reconcile -----------------------------------------------------------------------

    def _reconcile(self, obs: Observation, now: float) -> None:
        adopted = False
        for node, text in obs.drains.items():
            if not self._busy(f"drain:{node}") and now >= self.backoff.get(f"drain:{node}", Backoff()).until:
                self._start_drain(node, obs, resume=text, reason="resumed from the node's record")
                adopted = True
        for n in obs.snapshot.nodes:
            vm = obs.vms.get(n.name)
            if n.status is NodeStatus.BOOTING and not self._busy(f"boot:{n.name}") and \
                    not (vm is not None and vm.id in self.booting_vms):
                self.boot_started.setdefault(n.name, now)
                self._start_boot(n.name, vm.id if vm else None, start=False)
                adopted = True
        for vm in obs.unmapped:
            # On, and no node of its own to watch by name: the same watch, which finds its node if one
            # registers (by its providerID), and stops it once it has run `boot_timeout` with none.
            key = UNMAPPED + vm.id
            if vm.state in (RUNNING, PENDING, UNKNOWN) and not self._busy(f"boot:{key}") and \
                    vm.id not in self.booting_vms:
                self.boot_started.setdefault(key, now)
                self._start_boot(key, vm.id, start=False)
        if adopted and self.state.last_action_at is None:
            # A scaling action of an earlier run (this one restarted) is still under way, and its
            # time is lost with that run: Tcool counts from now, or a restart mid-boot would
            # start a second node within one cooldown.
            self.state = replace(self.state, last_action_at=now)
        # Our taint on a Ready node nobody is draining or booting (e.g. an
        # on-prem node of an interrupted roll-back): lift it.
        cordoned = {n.name for n in obs.snapshot.nodes if n.status is NodeStatus.CORDONED}
        for name in sorted((obs.tainted - set(obs.drains)) & cordoned):
            if not self._busy(f"boot:{name}"):
                if self.settings.dry_run:
                    self._dry_run_says(f"would uncordon {name} (our taint, no drain recorded)")
                else:
                    self._spawn(f"boot:{name}", self.kube.uncordon(name))
        stale = stale_marks(self.pods.records.values(), self.nodes.records, lambda n: self._busy(f"drain:{n}"))
        if stale and self.kube_pods is not None and not self.settings.dry_run and not self._busy("unmark"):
            self._spawn("unmark", self.kube_pods.unmark_moving(stale))

    # -- act -----------------------------------------------------------------------------

    def _act(self, action, now: float) -> str:
        obs = self.last
        if isinstance(action, ScaleOut):
            started = []
            for name in action.nodes:
                vm = obs.vms.get(name)
                if vm is None or self.cloud is None:
                    self.event("error", f"scale-out chose {name}, which has no VM in the cloud pool")
                    continue
                if self.settings.dry_run:
                    self._dry_run_says(f"would start VM {vm.id} for node {name}")
                    continue
                self.boot_started[name] = now
                self._start_boot(name, vm.id, start=True)
                started.append(name)
            if started:  # as a scale-in is: what was done, not what was decided (a dry run does nothing)
                self.metrics.actions.labels("scale-out").inc()
            return f"starting {', '.join(started)}" if started else "nothing started"
        # ScaleIn
        if self.draining() is not None:
            return f"not now: {self.draining()} is still being drained"
        held = self.backoff.get(f"drain:{action.node}")
        if held is not None and held.until > now:
            return f"not now: its last drain rolled back or was interrupted ({held.until - now:.0f} s more)"
        if self.cloud is None:  # moving its users would give nothing back
            return "no cloud_driver: no VM to stop, nothing drained"
        vm = obs.vms.get(action.node)
        if vm is None:
            self.event("error", f"scale-in chose {action.node}, which has no VM in the cloud pool")
            return "no VM to stop"
        if self.settings.dry_run:
            self._dry_run_says(f"would drain {action.node} ({len(action.moves)} server(s)) and stop its VM")
            return "dry run"
        self.metrics.actions.labels("scale-in").inc()
        self._start_drain(action.node, obs, reason=action.reason)
        return f"draining {action.node}"

    def _start_drain(self, node: str, obs: Observation, *, reason: str, resume: str | None = None) -> None:
        if self.settings.dry_run:
            self._dry_run_says(f"would {'resume' if resume else 'start'} the drain of {node}")
            return
        vm = obs.vms.get(node)
        # An earlier run's drain, its VM not in this run's pool (its tags or the pool's changed, or no
        # cloud_driver now): moving its servers would give nothing back.
        abandon = resume is not None and (vm is None or self.cloud is None)
        if abandon:
            reason = f"{node} has no VM in the cloud pool: nothing to give back, its servers stay"
        drain = Drain(node, vm.id if vm else None, kube=self.kube, hub=self.hub, cloud=self.cloud,
                      pods=lambda: list(self.pods.records.values()), timeouts=self.settings.drain, reason=reason,
                      clock=self.clock, on_move=self._on_move, move_method=self.settings.move_method,
                      kube_pods=self.kube_pods, restart_only=self.restart_next,
                      room=lambda moving: fits_elsewhere(node, self.nodes.records.values(),
                                                         self.pods.records.values(), moving))
        self.drain_jobs[node] = drain
        verb = "rolling back" if abandon else "resuming" if resume else "starting"
        self.event("drain", f"{verb} the drain of {node}: {reason}")

        async def run():
            try:
                if resume is None:  # a server no checkpoint can move: the node is left before its cordon
                    await self.movable.check(node, list(self.pods.records.values()))
                outcome = await (drain.resume(resume, abandon=reason if abandon else "") if resume is not None
                                 else drain.start())
            except MoveAborted as e:  # a server no checkpoint can move (movable.py), or the node vanished
                outcome = f"not started ({e})"
            except Paused as e:
                self.event("drain", f"drain of {node} paused: {e}")
                return
            except (HubError, CloudError, ApiException) as e:
                # Out of reach for now: resumed after a back-off that doubles, not every Tmon.
                delay = self._drain_backoff(node)
                self.event("drain-failed", f"drain of {node} interrupted: {error_line(e)}; resumed in {delay:.0f} s")
                return
            if outcome in ("rolled-back", "failed"):
                # Its users were disturbed for nothing: the node is not drained again at once (a hub
                # answering 503 made that every Tmon), but after a back-off that doubles.
                delay = self._drain_backoff(node)
                why = f" ({drain.record['why']})" if drain.record.get("why") else ""
                self.event("drain", f"drain of {node}: {outcome}{why}; not drained again for {delay:.0f} s")
                return
            self.backoff.pop(f"drain:{node}", None)
            self.event("drain", f"drain of {node}: {outcome}")
        self._spawn(f"drain:{node}", run())

    def _drain_backoff(self, node: str) -> float:
        return self._back_off(f"drain:{node}", 2 * self.settings.tmon, 300.0)

    def _back_off(self, key: str, first: float, most: float) -> float:
        """One more failure of `key` (a node's boot, "drain:NODE"): the delay before it is tried
        again, doubling from `first` up to `most`."""
        b = self.backoff.setdefault(key, Backoff())
        b.failures += 1
        delay = min(first * 2 ** (b.failures - 1), most)
        b.until = self.clock() + delay
        return delay

    # -- status --------------------------------------------------------------------------

    def status(self) -> dict:
        return status_of(self)
