"""What a drain and those who start it share: the ways it stops short (its exceptions), its time
limits, and the report of each server's move (api/status, the metrics). Apart from drain.py so that
a caller reads them without the drain's steps."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


class MoveAborted(Exception):
    """This drain cannot go on (busy kernel, failed checkpoint, pinned server...): roll back."""


class NodeGone(MoveAborted):
    """The Node was deleted: the drain's record can no longer be written."""


class Paused(Exception):
    """The orchestrator is stopping: the drain ends between two moves (or before a move stops its
    server), its record left for the next run to resume."""


class Halted(Exception):
    """A move that ended at its last way out, nothing stopped: another move of its drain failed (drainpool)."""


class NotRestarted(Exception):
    """A server the drain stopped will not be started again by it (its user
    is gone, stopped it, or the hub dropped the start): reported, not retried."""


@dataclass(frozen=True)
class DrainTimeouts:
    busy: float = 300.0  # how long to wait for a busy kernel before giving the node up for now
    checkpoint: float = 1800.0
    stop: float = 180.0
    start: float = 600.0
    empty: float = 300.0  # for the node's last pods to go once every server moved
    poll: float = 1.0
    route: float = 30.0  # live moves: for the hub to switch a server to its destination pod
    freeze_lease: float = 60.0  # live moves: a frozen kernel thaws by itself after this
    terminal_quiet: float = 120.0  # a terminal with input or output more recent than this is in use
    concurrency: int = 1  # restart moves of one drain at once (drainpool.py); the app's drain_concurrency


@dataclass(eq=False)  # one report per move, updated in place: identity, not value, tells them apart
class MoveReport:
    server: str
    source: str
    outcome: str = "in-flight"  # moved | skipped | aborted | failed | interrupted (an API error mid-move)
    destination: str | None = None
    checkpoint: dict = field(default_factory=dict)
    downtime_s: float | None = None
    error: str = ""
    started_at: float = field(default_factory=time.time)
    method: str = "restart"  # restart | live
    phases: dict = field(default_factory=dict)  # live moves: seconds per step, delta bytes

    def to_json(self) -> dict:
        return {"server": self.server, "from": self.source, "to": self.destination, "outcome": self.outcome,
                "method": self.method, "checkpoint": self.checkpoint, "downtime_s": self.downtime_s,
                "phases": self.phases, "error": self.error, "started_at": self.started_at}
