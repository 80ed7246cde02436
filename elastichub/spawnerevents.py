"""What the spawn pages show: the namespace's Kubernetes Events, grouped by the object they are about, in
words a student reads; the error a start that ran out of time ends with.

Each open spawn page (the hub's progress stream) looks for its pod's events
four times a second. Read through KubeSpawner's `EventReflector.events`,
each look sorted every event of the namespace: at a class's start, 300
pages open and 5,000 events kept (an hour's worth), that was 4 s of the
hub's one CPU per second, and the hub stopped answering. The events are
grouped and sorted here once per `max_age` for every page.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable


# What a student reads for the cluster's warnings: the scheduler's "0/9 nodes are available: 3 node(s) didn't
# match Pod's node affinity/selector" or the kubelet's "Back-off restarting failed container notebook in pod
# jupyter-ada_jhub(...)" name Kubernetes' parts and suggest a fault where most often there is only a wait.
# The event itself stays in `raw_event` (the progress API), and with `kubectl describe pod`, for the staff.
WAITING = "ElasticHub: your server is waiting for a node that can run it; it starts as soon as there is one."
TROUBLE = ("ElasticHub: something held up the start of your server (the cluster reports {reason!r}); it may still "
           "start. If it has not started within a few minutes, ask the course staff and mention {reason!r}.")


def page_message(event: dict) -> str:
    """The line a spawn page shows for `event`: the cluster's own words for its ordinary steps (the node
    chosen, the image pulled, the container started), plain ones for its warnings."""
    if event.get("type") != "Warning":
        return "%s [%s] %s" % (_when(event), event.get("type"), event.get("message"))
    if event.get("reason") == "FailedScheduling":
        return WAITING
    return TROUBLE.format(reason=str(event.get("reason") or "a warning"))


# KubeSpawner's "Server launch is taking longer than expected. Please be patient!" told a student whose server
# waits for a cloud node (minutes, and the page has just said about how many) that something was wrong.
STILL_STARTING = "Your server is still starting ({seconds} s so far); the event log below says what it waits for."
# With the hub's events_enabled off, the page has no event log to point to.
STILL_STARTING_NO_EVENTS = "Your server is still starting ({seconds} s so far)."


def pod_waiting(pod: dict | None) -> str | None:
    """WAITING when the scheduler found no node for `pod` (its PodScheduled
    condition, what the FailedScheduling event says): what a page without
    events (events_enabled off) can still tell, from the pod itself."""
    conditions = ((pod or {}).get("status") or {}).get("conditions") or []
    unplaced = any(c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
                   for c in conditions if isinstance(c, dict))
    return WAITING if unplaced else None


class NotStartedInTime(TimeoutError):
    """A TimeoutError, as the hub's own limit raises (its log line, its metrics' "timeout"), that says on
    the spawn page what happened: the hub's own is bare, and the page read "Spawn failed: " and nothing."""

    def __init__(self, seconds: float, pod: dict | None):
        waited = f"{round(seconds / 60)} minutes" if seconds >= 120 else f"{round(seconds)} s"
        phase = ((pod or {}).get("status") or {}).get("phase")
        if not ((pod or {}).get("spec") or {}).get("nodeName"):
            why = "it was still waiting for a node that can run it"
        elif phase == "Pending":
            why = "its node was still preparing it"
        else:
            why = "it was not yet answering"
        self.jupyterhub_message = (f"Your server did not start within {waited}: {why}. Try again in a few "
                                   "minutes; if it fails again, ask the course staff.")
        super().__init__(self.jupyterhub_message)


def spawn_age(orm_spawner) -> float:
    """Seconds since the hub began this start (0 when it does not say): a page opened, or reloaded, in
    the middle of a start counts from there, not from its own opening."""
    began = getattr(orm_spawner, "started", None)
    if not isinstance(began, datetime.datetime):
        return 0.0
    now = datetime.datetime.now(datetime.timezone.utc)
    began = began if began.tzinfo else began.replace(tzinfo=datetime.timezone.utc)  # the hub's naive UTC
    return max((now - began).total_seconds(), 0.0)


def _when(event: dict) -> str:
    return event.get("lastTimestamp") or event.get("eventTime") or ""


class EventIndex:
    """`of(reflector, uid)`: the events about the object `uid`, oldest first, as of at most `max_age` s
    ago (`fresh`: as of now, for a page's last look)."""

    def __init__(self, max_age: float = 0.25, clock: Callable[[], float] = time.monotonic):
        self.max_age, self.clock = max_age, clock
        self._reflector = None
        self._built = 0.0
        self._index: dict[str, list[dict]] = {}

    def of(self, reflector, uid: str, fresh: bool = False) -> list[dict]:
        now = self.clock()
        if fresh or reflector is not self._reflector or now - self._built >= self.max_age:
            index: dict[str, list[dict]] = {}
            for event in list(reflector.resources.values()):  # the watch may change it meanwhile
                index.setdefault((event.get("involvedObject") or {}).get("uid"), []).append(event)
            for events in index.values():
                events.sort(key=_when)
            self._reflector, self._built, self._index = reflector, now, index
        return self._index.get(uid, [])
