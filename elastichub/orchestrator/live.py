"""A live move (make-before-break): the user's server is moved while it serves.

  sessions    read the source's notebook sessions (Jupyter Server's /api/sessions)
  pre-copy    every kernel checkpoints while the user works (short pauses only)
  destination a second pod of the same server (the source pod's spec, not bound
              to a node; the drained node is cordoned) re-creates those sessions
              and kernels under the same ids, each restoring the pre-copy
  freeze      the source kernels finish their running cell (bounded), hold new
              ones, and write what changed since the pre-copy (the delta)
  apply       the destination kernels load the delta: now identical
  retire      the source kernels refuse to run anything more (unless a cell
              arrived while frozen: then they thaw, the cell runs there, and
              freeze/apply/retire is tried again; the last try goes ahead and
              tells such a cell it did not run)
  route       the hub's ElasticSpawner switches the server to the destination
              pod (proxy route, the hub's record)
  release     the source closes its clients' kernel websockets: JupyterLab's
              own reconnect lands on the same kernel ids at the destination
  source      the source pod is deleted

The user's pause runs from `freeze` to `route`. Until the route switched,
the source serves and anything unexpected undoes the move: the source kernels
thaw (they also thaw by themselves when a lease runs out), the destination
pod is deleted, nothing is lost. The Node's drain record names both pods
before the destination exists, so a restarted orchestrator finishes a switched
move or undoes one that was not (`recover`): the destination's annotation
says, or, that pod gone, the hub's record of which pod serves the server.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import re
import secrets
import time
from typing import Callable
from urllib.parse import urlsplit

from kubernetes_asyncio.client.exceptions import ApiException

from .. import podmeta
from ..podspec import NOTEBOOK_CONTAINER, delete_grace
from .hub import HubClient, HubError, HubServer
from .kube import KubePods, error_line
from .records import PodRecord

log = logging.getLogger(__name__)

LIVE, ROUTE = "live", "route"  # record steps: destination may exist / route switch asked
_MOVE_SUFFIX = re.compile(r"-m[0-9a-f]{6}$")
FINAL_ATTEMPTS = 3  # pauses tried; the last one goes ahead even if a cell arrived
DEST_GONE = "the destination pod is gone"


class LiveMoveFailed(Exception):
    """The live move cannot go on; the source keeps serving."""


class LiveMoveBusy(LiveMoveFailed):
    """The user is at work: a cell runs, or a notebook was opened or closed
    during the move. Undone as any failure, but a restart move would do no
    better (it waits for the cell too, and costs the user their kernels):
    the server's next move is live again."""


class LiveMoveStock(LiveMoveBusy):
    """A kernel the server runs is no Elastic Python kernel (a stock
    `python3` opened since the pre-drain check): no checkpoint can move it,
    live or by a restart. That lasts only while the kernel runs, so the
    server's next move is chosen on what it runs then (the next drain's
    check pins it while that kernel runs), not a restart for good."""


class LiveUnsupported(Exception):
    """The server has no live-move endpoint (no Elastic kernel package in its
    image): nothing was changed; a restart move is the way for it."""


def destination_name(source: str, token: str | None = None) -> str:
    """`jupyter-alice` -> `jupyter-alice-m1a2b3c`; a moved pod's own suffix is
    replaced, so names do not grow move after move."""
    # Cut to fit a hostname (63), never ending in "." ("jupyter-a.b." + "-m..." is no valid pod name).
    base = _MOVE_SUFFIX.sub("", source)[:55].rstrip(".-")
    return f"{base}-m{token or secrets.token_hex(3)}"


def destination_manifest(source: dict, name: str, sessions: list) -> dict:
    """The destination pod: the source's spec as the spawner built it, not bound
    to a node, under a new name, told which sessions to re-create."""
    meta = source.get("metadata") or {}
    spec = copy.deepcopy(source.get("spec") or {})
    spec.pop("nodeName", None)
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k not in (podmeta.ROUTE_ANNOTATION, podmeta.MOVE_OF_ANNOTATION)}
    annotations[podmeta.MOVE_OF_ANNOTATION] = meta.get("name", "")
    started = (meta.get("annotations") or {}).get(podmeta.STARTED_ANNOTATION) or (
        source.get("status") or {}).get("startTime")
    if started:
        annotations[podmeta.STARTED_ANNOTATION] = started
    asked = (meta.get("annotations") or {}).get(podmeta.ASKED_ANNOTATION) or meta.get("creationTimestamp")
    if asked:
        annotations[podmeta.ASKED_ANNOTATION] = asked
    containers = spec.get("containers") or []
    target = next((c for c in containers if c.get("name") == NOTEBOOK_CONTAINER), containers[0] if containers else None)
    if target is None:
        raise LiveMoveFailed(f"pod {meta.get('name')} has no container")
    env = [e for e in target.get("env") or [] if e.get("name") != podmeta.ADOPT_SESSIONS_ENV]
    env.append({"name": podmeta.ADOPT_SESSIONS_ENV, "value": json.dumps(sessions, separators=(",", ":"))})
    target["env"] = env
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": meta.get("namespace"), "labels": dict(meta.get("labels") or {}),
                         "annotations": annotations},
            "spec": spec}


def pod_base(pod: dict, prefix: str) -> str | None:
    """The single-user server of one pod, directly: http://IP:PORT/PREFIX/. `prefix`: the server's path,
    or the hub's whole URL of it (subdomain_host: https://alice.hub.example.org/user/alice/), whose path it is."""
    ip = (pod.get("status") or {}).get("podIP")
    ports = [p.get("containerPort") for c in (pod.get("spec") or {}).get("containers") or []
             for p in c.get("ports") or [] if p.get("name") == "notebook-port"]
    if not ip or not ports:
        return None
    return f"http://{ip}:{ports[0]}/{urlsplit(prefix).path.strip('/')}/"


def pod_ready(pod: dict | None) -> bool:
    status = (pod or {}).get("status") or {}
    return (status.get("phase") == "Running" and bool(status.get("podIP"))
            and not (pod.get("metadata") or {}).get("deletionTimestamp")
            and all(cs.get("ready") for cs in status.get("containerStatuses") or [{}]))


def pod_waiting(pod: dict) -> str | None:
    """Why a pod does not run yet, as Kubernetes says it: not scheduled (no
    node has room for the server's requests) or a container waiting (its
    image, a crash); None when it says nothing."""
    status = pod.get("status") or {}
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return f"the destination pod is not scheduled: {c.get('message') or c.get('reason') or 'no reason given'}"
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") and waiting["reason"] not in ("ContainerCreating", "PodInitializing"):
            why = f"{waiting['reason']}: {waiting['message']}" if waiting.get("message") else waiting["reason"]
            return f"the destination pod's container {cs.get('name')} is waiting ({why})"
    return None


def session_list(payload) -> list[dict]:
    """Jupyter Server's /api/sessions, checked: each with an id and a kernel."""
    if not isinstance(payload, list):
        raise LiveMoveFailed(f"/api/sessions answered {str(payload)[:120]!r}, not a list")
    sessions = []
    for s in payload:
        kernel = s.get("kernel") if isinstance(s, dict) else None
        if not isinstance(kernel, dict) or not kernel.get("id") or not s.get("id"):
            raise LiveMoveFailed(f"/api/sessions holds a session without an id or a kernel: {str(s)[:120]}")
        sessions.append({"id": s["id"], "path": s.get("path"), "name": s.get("name"), "type": s.get("type"),
                         "kernel": {"id": kernel["id"], "name": kernel.get("name")}})
    return sessions


def failures(results, phase: str) -> list[str]:
    """The kernels a phase failed on, each with its error; a malformed answer is one failure."""
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        return [f"{phase}: malformed answer {str(results)[:120]!r}"]
    return [f"{_about(r)}: {r.get('error') or 'failed'}" for r in results if r.get("ok") is not True]


def _about(result: dict) -> str:
    """Whom a phase's result is about: its kernel, or (no kernel id) the server as a whole, e.g. a retire
    refused while a kernel start is still under way (a kernel not yet listed would escape the move)."""
    return f"kernel {result['kernel_id']}" if result.get("kernel_id") else "the server"


def understood(results) -> bool:
    """A phase's answer is a list of per-kernel results (else `failures` says it is malformed)."""
    return isinstance(results, list) and all(isinstance(r, dict) for r in results)


def refuse(results, phase: str, extra: list[str] = ()) -> None:
    """LiveMoveFailed naming what a phase failed on and `extra` problems;
    LiveMoveBusy when it is the user's doing: `extra` (kernel drift: a
    notebook opened or closed), or each failed kernel answered busy (its cell still runs);
    LiveMoveStock when a failed kernel is no Elastic Python kernel."""
    bad = failures(results, phase)
    if not bad and not extra:
        return
    failed = [r for r in results if r.get("ok") is not True] if understood(results) else []
    busy = understood(results) and (bool(extra) or all(r.get("busy") is True for r in failed))
    kind = LiveMoveStock if any(map(_stock, failed)) else LiveMoveBusy if busy else LiveMoveFailed
    raise kind(f"{phase}: " + "; ".join(bad + list(extra)))


def _stock(result: dict) -> bool:
    """A kernel's answer that it is no Elastic Python kernel (an extension before the
    `elastic` field says so in its error only)."""
    return result.get("elastic") is False or "not an Elastic Python kernel" in str(result.get("error"))


def kernel_drift(frozen: list, kernels: set) -> list[str]:
    """The source's kernels that differ from those the destination re-created
    (the freeze goes to every kernel the source runs now). One shut down
    since (its notebook closed, its last state saved) would live on at the
    destination with the older pre-copy state; one started since would have
    no kernel there: either way the move is undone and tried afresh."""
    frozen_ids = {r["kernel_id"] for r in frozen if r.get("kernel_id")}  # none: about the server, no kernel
    return ([f"kernel {k}: shut down since the move began" for k in sorted(kernels - frozen_ids)]
            + [f"kernel {k}: started since the move began" for k in sorted(map(str, frozen_ids - kernels))])


def adoption(status, kernel_ids: set) -> tuple[bool, str | None]:
    """(every session re-created and restored?, a failure) from the
    destination's /api/elastichub/status."""
    adopted = status.get("adopted") if isinstance(status, dict) else None
    if not isinstance(adopted, list):
        return False, None
    by_kernel = {a.get("kernel_id"): a for a in adopted if isinstance(a, dict)}
    for kid in kernel_ids:
        entry = by_kernel.get(kid)
        if entry is not None and entry.get("state") == "failed":
            return False, f"kernel {kid}: {entry.get('error') or 'could not be re-created'}"
    return all(by_kernel.get(k, {}).get("state") == "ready" for k in kernel_ids), None


class LiveMove:
    """One server's live move. `entry` is its part of the Node's drain record
    and `save(needed=True)` writes the record (the drain's: a write not
    `needed` survives a deleted Node); `phases` collects the seconds of each step."""

    def __init__(self, *, hub: HubClient, pods: KubePods, timeouts, entry: dict, save: Callable,
                 poll: float = 0.1, terminals_in_use: Callable[[list], list] | None = None):
        self.hub, self.pods, self.t = hub, pods, timeouts
        self.entry, self.save, self.poll = entry, save, poll
        self.terminals_in_use = terminals_in_use  # the drain's reading of /api/terminals: what is in use
        self.phases: dict = {}

    @property
    def namespace(self) -> str:
        return self.entry["ns"]

    def _server_call(self, base: str, method: str, path: str, body=None, **kw):
        """The moved server's API (either pod), with a token for that server only."""
        return self.hub.server_call(base, method, path, body, owner=(self.entry["user"], self.entry["name"]), **kw)

    async def run(self, pod: PodRecord, server: HubServer) -> str | None:
        """Move the server; returns the destination's node. LiveMoveFailed
        (after undoing) when it cannot: the source serves on. A cancellation
        (shutdown) undoes nothing: the record names both pods, and recover()
        decides after the restart."""
        source_base = self.hub.proxy_base(server)
        mark = time.monotonic()

        def lap(name: str) -> None:
            nonlocal mark
            now = time.monotonic()
            self.phases[name] = round(now - mark, 3)
            mark = now

        try:
            sessions = session_list(await self._server_call(source_base, "GET", "/api/sessions"))
            kernels = {s["kernel"]["id"] for s in sessions}
            running = await self.hub.kernels(server)
            lone = [k.get("id") for k in running if k.get("id") not in kernels]
            if lone:
                raise LiveMoveFailed(f"kernel(s) {', '.join(map(str, lone))} belong to no notebook session")
            try:
                precopy = await self._server_call(source_base, "POST", "/api/elastichub/live",
                                                     {"phase": "precopy"}, timeout=self.t.checkpoint)
            except HubError as e:
                if e.code == 404:
                    raise LiveUnsupported(str(e)) from None
                raise
            refuse(precopy, "pre-copy")
            lap("precopy_s")
            source = await self.pods.get(self.namespace, self.entry["source"])
            if source is None or (source.get("metadata") or {}).get("deletionTimestamp"):
                raise LiveMoveFailed(f"pod {self.entry['source']} is gone or going")
            await self.pods.create(self.namespace, destination_manifest(source, self.entry["dest"], sessions))
            dest_base = await self._wait_destination(kernels, server.url)
            lap("destination_s")
            # Recorded before the pause, not in it: recover() asks the pod whether the route switched.
            self.entry["step"] = ROUTE
            await self.save()
            paused = await self._final_step(source_base, dest_base, kernels, lap, server)
            await self.pods.annotate(self.namespace, self.entry["dest"],
                                     {podmeta.ROUTE_ANNOTATION: podmeta.ROUTE_REQUESTED})
            answer = await self._route_answer()
            if answer != podmeta.ROUTE_SWITCHED:
                raise LiveMoveFailed(f"the hub did not switch the route: {answer}")
            lap("switch_s")
            self.phases["pause_s"] = round(time.monotonic() - paused, 3)
        except (LiveMoveFailed, HubError, OSError, ApiException) as e:
            why = error_line(e)
            if self.entry.get("step") == ROUTE:
                # The route may have switched already (an error reading the answer, say): undone then,
                # the move would delete the pod that serves the user. The pod's answer decides.
                if await self.recover() == "done":
                    return self.entry.get("to")
            else:
                await self.undo()
            # Busy: the user's doing, said so (the server's next move is live again).
            raise (type(e) if isinstance(e, LiveMoveBusy) else LiveMoveFailed)(why) from None
        return await self.finish()

    async def _final_step(self, source_base: str, dest_base: str, kernels: set, lap, server=None) -> float:
        """freeze, apply, retire; returns when the pause began. A cell (or
        widget message) that arrives during the pause makes retire refuse:
        the source thaws and runs it, and the step is tried again (the
        destination stays and applies the new delta). The last of
        FINAL_ATTEMPTS tries retires anyway, so a user who is never quiet is
        moved too: a cell sent during that pause is answered "it did not run.
        Run it again" (never run twice, never lost silently)."""
        for attempt in range(1, FINAL_ATTEMPTS + 1):
            if server is not None:
                await self._wait_quiet(server)
            paused = time.monotonic()
            # Each kernel waits for a cell that started in between while the others are frozen, each on
            # its lease: a wait past it thaws them (their deltas gone), failing the move after pausing its
            # user for nothing. Half the lease is left for apply and retire.
            wait_s = min(self.t.busy, self.t.freeze_lease / 2)
            frozen = await self._server_call(source_base, "POST", "/api/elastichub/live", {
                "phase": "freeze", "wait_s": wait_s, "lease_s": self.t.freeze_lease},
                timeout=wait_s + self.t.checkpoint)
            refuse(frozen, "freeze", [] if failures(frozen, "freeze") else kernel_drift(frozen, kernels))
            self.phases["delta_bytes"] = sum(int(r.get("bytes") or 0) for r in frozen)
            lap("freeze_s")
            for r in frozen:
                bad = failures(await self._server_call(dest_base, "POST", "/api/elastichub/live", {
                    "phase": "apply", "kernel_id": r["kernel_id"], "delta_id": r.get("delta_id")},
                    timeout=self.t.checkpoint), "apply")
                if bad:
                    raise LiveMoveFailed("apply: " + "; ".join(bad))
            lap("apply_s")
            # The last try retires whatever arrived: each waiting cell is told it did not run.
            last = attempt == FINAL_ATTEMPTS
            retired = await self._server_call(source_base, "POST", "/api/elastichub/live",
                                                 {"phase": "retire", "force": last})
            bad = failures(retired, "retire")
            if not bad or not (understood(retired) and all(r.get("activity") for r in retired
                                                           if r.get("ok") is not True)):
                # Not a cell that arrived: a kernel opened since the freeze (it is not frozen) or closed
                # since (the destination would bring it back) is the user's doing; anything else fails.
                refuse(retired, "retire", kernel_drift(retired, kernels) if understood(retired) else [])
                lap("retire_s")
                self.phases["attempts"] = attempt
                self.phases["cells_not_run"] = last and any(r.get("activity") for r in retired)
                return paused
            await self._server_call(source_base, "POST", "/api/elastichub/live", {"phase": "thaw"})
            lap("retry_s")
        raise LiveMoveFailed("retire did not succeed")  # not reached: the last try forces it

    async def _wait_quiet(self, server: HubServer) -> None:
        """Until no kernel of the server runs a cell and no terminal is in
        use (at most the busy timeout). The freeze goes to every kernel at
        once, each waiting for its own cell: an idle kernel frozen beside a
        busy one would hold its user's cells until its lease ran out, thaw,
        and fail the move. A process started in a terminal since the move
        began (the pre-copy and the destination's start take a while) would
        end with the source pod: it is waited for as before the move."""
        deadline = time.monotonic() + self.t.busy
        while True:
            busy = [str(k.get("id")) for k in await self.hub.kernels(server) if k.get("execution_state") == "busy"]
            terminals = self.terminals_in_use(await self.hub.terminals(server)) if self.terminals_in_use else []
            problems = ([f"kernel(s) {', '.join(busy)} still running a cell"] if busy else []) + (
                [f"terminal(s) in use ({', '.join(terminals)})"] if terminals else [])
            if not problems:
                return
            if time.monotonic() > deadline:
                raise LiveMoveBusy(f"{' and '.join(problems)} after {self.t.busy:g} s")
            await asyncio.sleep(self.poll)

    async def _wait_destination(self, kernels: set, prefix: str) -> str:
        deadline = time.monotonic() + self.t.start
        problem = "the destination pod did not start"
        while time.monotonic() < deadline:
            pod = await self.pods.get(self.namespace, self.entry["dest"])
            if pod is None:
                raise LiveMoveFailed(f"pod {self.entry['dest']} vanished")
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Failed", "Succeeded"):
                raise LiveMoveFailed(f"pod {self.entry['dest']} ended ({phase}) before it served")
            base = pod_base(pod, prefix)
            problem = pod_waiting(pod) or problem
            if pod_ready(pod) and base:
                try:
                    status = await self._server_call(base, "GET", "/api/elastichub/status")
                except HubError as e:
                    problem = str(e)
                else:
                    ready, failed = adoption(status, kernels)
                    if failed:
                        raise LiveMoveFailed(f"the destination could not re-create {failed}")
                    if ready:
                        self.entry["to"] = (pod.get("spec") or {}).get("nodeName")
                        return base
                    problem = "the destination's kernels are still restoring (" + ", ".join(
                        f"{a.get('kernel_id')}: {a.get('state')}" for a in status.get("adopted") or []
                        if isinstance(a, dict)) + ")"
            await asyncio.sleep(self.poll)
        raise LiveMoveFailed(f"{problem} within {self.t.start:g} s")

    async def _dest(self) -> dict | None:
        """The destination pod, read again while the API server errs (5xx,
        429, no connection) for up to the route timeout: which pod serves
        the user is decided on what it says, never on a failed read."""
        deadline = time.monotonic() + self.t.route
        while True:
            try:
                return await self.pods.get(self.namespace, self.entry["dest"])
            except (ApiException, OSError, asyncio.TimeoutError) as e:
                if (isinstance(e, ApiException) and 400 <= (e.status or 0) < 500 and e.status != 429) \
                        or time.monotonic() > deadline:
                    raise
                log.info("live move of %s: reading pod %s again (%s)", self.entry.get("source"),
                         self.entry["dest"], error_line(e))
            await asyncio.sleep(self.poll)

    async def _route_answer(self) -> str:
        """The spawner's answer to the route request: "switched" or "refused: ...".
        Once the hub has claimed the request ("switching") only it answers:
        the proxy may already route to the destination, so that pod is
        waited for, however long, never deleted on a guess."""
        deadline = time.monotonic() + self.t.route
        while True:
            answer = _route_of(await self._dest())
            if answer not in (podmeta.ROUTE_REQUESTED, podmeta.ROUTE_SWITCHING):
                return answer or "the destination pod has no route annotation"
            if answer == podmeta.ROUTE_REQUESTED and time.monotonic() > deadline:
                # Withdrawn, so a hub that comes back later does not switch to a pod we delete; a hub
                # that claimed it in between has the last word instead.
                if await self.pods.swap_annotation(self.namespace, self.entry["dest"], podmeta.ROUTE_ANNOTATION,
                                                   podmeta.ROUTE_REQUESTED, podmeta.ROUTE_WITHDRAWN):
                    return f"no answer from the hub within {self.t.route:g} s (is the hub's spawner ElasticSpawner?)"
            elif answer == podmeta.ROUTE_SWITCHING and time.monotonic() > deadline:
                log.warning("live move of %s: the hub is still switching the route to %s after %g s; waiting "
                            "for its answer", self.entry.get("source"), self.entry["dest"], self.t.route)
                deadline = time.monotonic() + self.t.route
            await asyncio.sleep(self.poll / 2)

    async def finish(self) -> str | None:
        """The route switched: the source pod goes (its kernels are retired:
        they write no checkpoint over the destination's state)."""
        started = time.monotonic()
        source = await self.pods.get(self.namespace, self.entry["source"])
        base = pod_base(source, self.entry.get("prefix", "")) if source and self.entry.get("prefix") else None
        if base:
            # Straight to the source pod (the proxy routes to the destination now): its clients'
            # sockets close at once, and they reconnect to the destination.
            try:
                await self._server_call(base, "POST", "/api/elastichub/live", {"phase": "release"}, timeout=10)
            except HubError as e:  # they reconnect when the pod's process ends instead
                log.info("live move of %s: releasing the clients of the source: %s", self.entry["source"], e)
        # The time the hub's own stop gives it (an admin's preStop hook may need it).
        await self.pods.delete(self.namespace, self.entry["source"], grace_seconds=delete_grace(source))
        self.entry["step"] = "done"
        # Written after the fact: a Node deleted meanwhile takes no record, and the move is done all the same.
        await self.save(needed=False)
        self.phases["source_delete_s"] = round(time.monotonic() - started, 3)
        return self.entry.get("to")

    async def undo(self) -> None:
        """Before the switch: the source thaws and serves on, the destination goes."""
        try:
            server = await self.hub.server(self.entry["user"], self.entry["name"])
            # Not when its user (or a culler) is stopping it: the hub no longer routes to it, and the stop
            # checkpoints its kernels (a frozen kernel's state is the one the freeze wrote).
            if server is not None and server.ready:
                base = self.hub.proxy_base(server)
                try:  # given up: each kernel's pre-copy file (a full copy of its state) goes too
                    thawed = await self._server_call(base, "POST", "/api/elastichub/live",
                                                        {"phase": "thaw", "abandon": True})
                except HubError as e:
                    if e.code != 400:  # an older server extension refuses the field: a plain thaw
                        raise
                    thawed = await self._server_call(base, "POST", "/api/elastichub/live", {"phase": "thaw"})
                retired = [str(r.get("kernel_id")) for r in thawed if isinstance(r, dict)
                           and r.get("was") == "retired"] if isinstance(thawed, list) else []
                if retired:  # the one copy that serves: the destination, never switched to, goes now
                    log.warning("live move of %s: kernel(s) %s had been retired; thawed, as the hub still serves "
                                "the source (its state is the one the destination had applied)",
                                self.entry.get("source"), ", ".join(retired))
        except HubError as e:  # the kernels' lease thaws them anyway, unless retired: keep the record
            log.warning("live move of %s: thawing the source failed: %s", self.entry.get("source"), e)
            raise
        finally:
            await self.pods.delete(self.namespace, self.entry["dest"], grace_seconds=1)

    async def recover(self) -> str:
        """After a restart, or an error once the route was asked for: "done"
        when the switch had happened (finished now: the source goes, its
        retired kernels never thawed), "undone" when it had not (undone now),
        "stopped" when the hub serves the server from neither pod any more
        (both deleted, nothing thawed)."""
        pod = await self._dest()
        answer = _route_of(pod)
        if answer in (podmeta.ROUTE_REQUESTED, podmeta.ROUTE_SWITCHING):
            answer = await self._route_answer()
        if answer == DEST_GONE:
            # Its answer went with it (deleted, evicted), maybe after the switch: the hub's record says.
            # The source is read first: a pod the hub starts afresh under its name after that is not ours.
            source = await self.pods.get(self.namespace, self.entry["source"])
            owner = await self._hub_pod()
            if owner == self.entry["dest"]:
                answer = podmeta.ROUTE_SWITCHED
            elif owner != self.entry["source"]:
                await self._discard(owner, source)
                return "stopped"
        if answer == podmeta.ROUTE_SWITCHED:
            await self.finish()
            return "done"
        await self.undo()
        return "undone"

    async def _hub_pod(self) -> str | None:
        """The pod the hub serves the server from (its spawner's state:
        KubeSpawner's pod_name, which the route switch changes), None when
        the hub runs the server no more. HubError when the hub's answer
        cannot tell: a guess would either delete the pod that serves the
        user or thaw retired kernels in a pod nobody owns."""
        key, dest = f"{self.entry['user']}/{self.entry['name']}".rstrip("/"), self.entry["dest"]
        server = await self.hub.server(self.entry["user"], self.entry["name"])
        if server is None:
            return None
        if server.state is None:
            raise HubError(f"cannot tell whether the hub switched {key} to pod {dest}, gone since: the hub's "
                           "model of the server holds no spawner state (the orchestrator's role needs the scope "
                           "admin:server_state)", 403)
        name, namespace = server.state.get("pod_name"), server.state.get("namespace") or self.namespace
        if not isinstance(name, str) or not name:
            raise HubError(f"cannot tell whether the hub switched {key} to pod {dest}, gone since: the hub's "
                           f"state of the server names no pod (pod_name {name!r}; is its spawner a KubeSpawner?)")
        return name if namespace == self.namespace else f"{namespace}/{name}"

    async def _discard(self, owner: str | None, source: dict | None) -> None:
        """The hub serves the server from neither pod of the move (it was
        stopped, maybe started afresh): both go, the source's kernels not
        thawed (retired: the destination held the newer state; if not, the
        hub's stop checkpointed them when it still served the source)."""
        log.warning("live move of %s: the hub serves it from %s, neither the source nor the destination; "
                    "deleting both", self.entry.get("source"), f"pod {owner}" if owner else "no pod")
        await self.pods.delete(self.namespace, self.entry["dest"], grace_seconds=1)
        if source is not None:
            await self.pods.delete(self.namespace, self.entry["source"], grace_seconds=delete_grace(source),
                                   uid=(source.get("metadata") or {}).get("uid"))


def _route_of(pod: dict | None) -> str:
    """The route annotation of a destination pod ("" when it has none)."""
    if pod is None:
        return DEST_GONE
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(podmeta.ROUTE_ANNOTATION, "")
