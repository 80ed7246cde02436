"""The spawn pages at a class's start: hundreds open at once, each following
its pod's Kubernetes Events, against thousands of events in the namespace."""

from __future__ import annotations

import asyncio

from spawnertools import spawner

from elastichub.spawner import ElasticSpawner

PAGES, PER_POD, OTHERS = 30, 6, 800


class Events(dict):
    """KubeSpawner's EventReflector's `resources`, counting the passes over every event."""

    passes = 0

    def values(self):
        Events.passes += 1
        return super().values()


class Reflector:
    """What ElasticSpawner reads of KubeSpawner's EventReflector: `resources`, and `events` as it sorts them."""

    def __init__(self, resources: Events):
        self.resources = resources

    @property
    def events(self):
        return sorted(self.resources.values(), key=lambda e: e["lastTimestamp"] or e["eventTime"])


def reflector() -> Reflector:
    events = Events()
    for n in range(PAGES * PER_POD + OTHERS):
        pod = f"pod-{n % (PAGES + 100)}"  # interleaved, newest first: the grouping must sort
        events[f"e{n}"] = {"metadata": {"uid": f"e{n}"}, "involvedObject": {"uid": pod},
                           "lastTimestamp": f"2026-12-03T14:{59 - n // 60:02d}:{59 - n % 60:02d}Z",
                           "eventTime": None, "type": "Normal", "message": f"event {n} of {pod}"}
    return Reflector(events)


async def test_the_open_spawn_pages_look_through_the_namespaces_events_once_not_once_each(monkeypatch):
    """Each page sorted every event of the namespace at each look, four times a second: 300 pages and
    5,000 events took 4 s of the hub's one CPU per second."""
    events = reflector()
    monkeypatch.setattr(ElasticSpawner, "event_reflector", property(lambda self: events))
    monkeypatch.setattr(ElasticSpawner, "events_enabled", True)

    async def watching():
        pass

    pages = []
    for i in range(PAGES):
        s = spawner()
        s._start_watching_events = watching
        s._current_pod = lambda i=i: {"metadata": {"uid": f"pod-{i}"}}
        s._start_future = asyncio.get_running_loop().create_future()  # still starting
        pages.append(s.progress())
    Events.passes = 0
    try:
        first = [await page.__anext__() for page in pages]  # each page's first look
    finally:
        for page in pages:
            await page.aclose()
    assert Events.passes <= 2, f"{Events.passes} passes over every event for {PAGES} pages' looks"
    for i, said in enumerate(first):
        mine = sorted((e for e in events.resources.values() if e["involvedObject"]["uid"] == f"pod-{i}"),
                      key=lambda e: e["lastTimestamp"])
        assert said["raw_event"] is mine[0], "each page tells its own pod's oldest event first"
