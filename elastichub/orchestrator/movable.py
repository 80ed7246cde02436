"""Servers no drain can move, found before the drain cordons anything.

A server moves by a checkpoint (live or restart) only when every kernel it
runs is an Elastic Python kernel and its image has the ElasticHub server
extension. A stock kernel beside Elastic ones (`python3`), or kernels in an
image without the extension, make every move of it fail: the drain rolled
back after cordoning the node, writing its record and pre-copying every
Elastic kernel on it, and did it again after each back-off.

Before a drain starts, each server on the node is asked what it runs (the
extension's status endpoint, as a live move reads it; a 404 means no
extension: then any running kernel stops it). A finding holds until the
server's kernels change or it restarts (a new pod): re-read every `recheck`
seconds from the plain kernel list (a GET, nothing paused or written). Until
then its server counts as pinned for the policy (`Server.movable` False, as
`migratable: false`): its node is not planned for a scale-in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..policy import ClusterSnapshot
from .drainterms import MoveAborted
from .fanout import each
from .hub import HubClient, HubError, HubServer
from .records import PodRecord

log = logging.getLogger(__name__)

STATUS = "/api/elastichub/status?ask_kernels=0"  # what each kernel is; asked, a kernel running a cell answers late
RECHECK_S = 300.0  # as long as the longest drain back-off: a finding costs no more than a failed drain did
PROBE_TIMEOUT_S = 30.0


class Unmovable(MoveAborted):
    """A server on the node cannot be moved by a checkpoint: the drain is not started."""


@dataclass(frozen=True)
class Finding:
    user: str
    name: str
    uid: str  # its pod's: a restart (a new pod, maybe a new image) ends the finding
    kernels: frozenset  # kernel ids at the probe: any change (the stock kernel shut down) ends it
    why: str


def _ids(kernels) -> frozenset:
    return frozenset(str(k.get("id") if "id" in k else k.get("kernel_id")) for k in kernels if isinstance(k, dict))


async def probe(hub: HubClient, server: HubServer) -> tuple[str, frozenset] | None:
    """(why `server` cannot be moved by a checkpoint, its kernel ids), or
    None when it can or it cannot be told now (the drain finds out as before)."""
    try:
        status = await hub.server_call(hub.proxy_base(server), "GET", STATUS, owner=(server.user, server.name),
                                       timeout=PROBE_TIMEOUT_S)
    except HubError as e:
        if e.code != 404:
            return None
        try:  # no extension: safe to move only while it runs no kernel (nothing to lose)
            kernels = await hub.kernels(server)
        except HubError:
            return None
        if not kernels:
            return None
        return (f"its image has no ElasticHub server extension (checkpoint endpoint 404) and it runs "
                f"{len(kernels)} kernel(s)", _ids(kernels))
    kernels = status.get("kernels") if isinstance(status, dict) else None
    if not isinstance(kernels, list):
        return None  # an answer we cannot read: not a finding
    stock = [k for k in kernels if isinstance(k, dict) and k.get("elastic") is False]
    if not stock:
        return None
    names = ", ".join(f"{k.get('kernel_name')!r} ({k.get('kernel_id')})" for k in stock)
    return f"kernel(s) {names} not Elastic Python: they cannot checkpoint", _ids(kernels)


class Movability:
    """The findings, per server key; `clock` times the re-reads (monotonic: a wall clock step moves none)."""

    def __init__(self, hub: HubClient, clock: Callable[[], float] = time.monotonic, recheck: float = RECHECK_S):
        self.hub, self.clock, self.recheck_s = hub, clock, recheck
        self.found: dict[str, Finding] = {}
        self.checked_at = 0.0

    def reasons(self) -> dict[str, str]:
        return {key: f.why for key, f in sorted(self.found.items())}

    def update(self, pods: Iterable[PodRecord]) -> bool:
        """Forget the findings of servers whose pod is gone or another (restarted); True when the
        rest are due for a re-read of their kernels."""
        if not self.found:
            return False
        current = {p.uid for p in pods if p.managed and p.holds_resources}
        for key in [k for k, f in self.found.items() if f.uid not in current]:
            log.info("%s restarted or stopped: it may be movable again", key)
            del self.found[key]
        return bool(self.found) and self.clock() >= self.checked_at + self.recheck_s

    def pin(self, snapshot: ClusterSnapshot) -> ClusterSnapshot:
        """The snapshot with each server found unmovable pinned, as `migratable: false` pins one."""
        if not self.found:
            return snapshot
        nodes = tuple(replace(n, servers=tuple(replace(s, movable=False) if s.name in self.found else s
                                               for s in n.servers))
                      if any(s.name in self.found for s in n.servers) else n for n in snapshot.nodes)
        return ClusterSnapshot(nodes, snapshot.pending)

    async def recheck(self) -> None:
        """Re-read the kernels of each server found unmovable: changed, its finding ends."""
        self.checked_at = self.clock()
        await each(self._recheck, list(self.found.items()))

    async def _recheck(self, item: tuple[str, Finding]) -> None:
        key, f = item
        try:
            server = await self.hub.server(f.user, f.name)
            kernels = None if server is None or not server.ready else _ids(await self.hub.kernels(server))
        except HubError:
            return  # unknown now: kept
        if kernels != f.kernels and self.found.get(key) is f:  # not one found afresh meanwhile
            log.info("%s: its kernels changed: it may be movable again", key)
            del self.found[key]

    async def check(self, node: str, pods: Iterable[PodRecord]) -> None:
        """Unmovable (before anything is cordoned or written) when a server on `node` cannot be
        moved by a checkpoint; each one found is kept (the policy no longer plans the node)."""
        here = [p for p in pods if p.managed and p.migratable and p.node == node and p.holds_resources
                and not p.terminating]
        found = await each(self._check, here)  # a few at a time (fanout.py)
        blocked = [f"{p.server}: {f.why}" for p, f in zip(here, found) if f is not None]
        if blocked:
            raise Unmovable(f"{'; '.join(blocked)}; {node} stays until their kernels change or they restart")

    async def _check(self, pod: PodRecord) -> Finding | None:
        known = self.found.get(pod.server)
        if known is not None and known.uid == pod.uid:
            return known
        try:
            server = await self.hub.server(pod.user, pod.server_name)
        except HubError:
            return None
        if server is None or not server.ready or server.pending:
            return None  # the drain decides (stopping, orphaned, starting)
        result = await probe(self.hub, server)
        if result is None:
            return None
        finding = Finding(pod.user, pod.server_name, pod.uid, result[1], result[0])
        if not self.found:  # the re-reads count from the first finding
            self.checked_at = self.clock()
        self.found[pod.server] = finding
        log.warning("%s cannot be moved by a checkpoint: %s", pod.server, finding.why)
        return finding
