"""The spawn pages at a class's start: hundreds open at once, each following
its pod's Kubernetes Events, against thousands of events in the namespace."""

from __future__ import annotations

import asyncio
import datetime
import re
from types import SimpleNamespace

import pytest
from jupyterhub.utils import format_exception
from kubespawner import KubeSpawner
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


async def _page_of(monkeypatch, pod_events: list[dict]) -> list[str]:
    """What one spawn page shows of its pod's `pod_events` (its start already done: one last look)."""
    events = Events({e["metadata"]["uid"]: {"involvedObject": {"uid": "pod-a"}, "eventTime": None, **e}
                     for e in pod_events})
    monkeypatch.setattr(ElasticSpawner, "event_reflector", property(lambda self: Reflector(events)))
    monkeypatch.setattr(ElasticSpawner, "events_enabled", True)

    async def watching():
        pass

    s = spawner()
    s._start_watching_events = watching
    s._current_pod = lambda: {"metadata": {"uid": "pod-a"}}
    s._start_future = asyncio.get_running_loop().create_future()
    s._start_future.set_result(None)
    return [e["message"] async for e in s.progress()]


async def test_a_spawn_page_shows_the_clusters_warnings_in_plain_words(monkeypatch):
    """The scheduler's "0/9 nodes are available: ... node affinity/selector" and the kubelet's back-off were
    shown as they are: Kubernetes' words, a [Warning], and the same wait told again at each of its tries."""
    shown = await _page_of(monkeypatch, [
        {"metadata": {"uid": "e1"}, "lastTimestamp": "2026-12-03T14:00:00Z", "type": "Warning",
         "reason": "FailedScheduling", "message": "0/9 nodes are available: 9 Insufficient memory. preemption: "
         "0/9 nodes are available: 9 No preemption victims found for incoming pod."},
        {"metadata": {"uid": "e2"}, "lastTimestamp": "2026-12-03T14:01:00Z", "type": "Warning",
         "reason": "FailedScheduling", "message": "0/10 nodes are available: 1 node(s) had untolerated taint "
         "{node.kubernetes.io/not-ready: }, 9 node(s) didn't match Pod's node affinity/selector."},
        {"metadata": {"uid": "e3"}, "lastTimestamp": "2026-12-03T14:04:00Z", "type": "Normal",
         "reason": "Scheduled", "message": "Successfully assigned jhub/jupyter-ada to cloud-1"},
        {"metadata": {"uid": "e4"}, "lastTimestamp": "2026-12-03T14:05:00Z", "type": "Warning",
         "reason": "BackOff", "message": "Back-off restarting failed container notebook in pod jupyter-ada_jhub"},
    ])
    assert len(shown) == 3, shown  # the scheduler's second try says nothing new to the student
    waiting, scheduled, trouble = shown
    assert "waiting for a node" in waiting and "starts as soon as" in waiting
    assert scheduled.endswith("[Normal] Successfully assigned jhub/jupyter-ada to cloud-1")
    assert "ask the course staff" in trouble and "BackOff" in trouble
    for line in (waiting, trouble):
        assert not any(word in line for word in ("Warning", "pod", "affinity", "Insufficient", "preemption")), line


async def test_a_page_opened_during_a_long_start_counts_from_the_start_and_does_not_call_the_wait_unexpected(
        monkeypatch):
    """KubeSpawner's patience line said "taking longer than expected" while a cloud node booted (minutes, and
    the page had just said about how many), and counted from the page's opening: reloaded after 4 minutes,
    it said "Current time spent waiting: 60 seconds"."""
    monkeypatch.setattr(ElasticSpawner, "events_enabled", False)
    s = spawner()
    began = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(seconds=240)
    s.orm_spawner = SimpleNamespace(server=None, started=began)  # the hub's record: naive UTC
    s._current_pod = lambda: None
    s._start_future = asyncio.get_running_loop().create_future()  # still starting
    page = s.progress()
    try:
        first = (await page.__anext__())["message"]
    finally:
        await page.aclose()
    assert "longer than expected" not in first and "still starting" in first, first
    seconds = int(re.search(r"(\d+) s so far", first).group(1))
    assert seconds >= 240, first


async def test_a_page_without_events_says_its_server_waits_for_room_and_points_to_no_event_log(monkeypatch):
    """With the hub's events_enabled off (zero-to-jupyterhub's singleuser.events), the page pointed to "the
    event log below", which it does not have, and a server waiting for room was never said to wait."""
    monkeypatch.setattr(ElasticSpawner, "events_enabled", False)
    s = spawner()
    began = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(seconds=120)
    s.orm_spawner = SimpleNamespace(server=None, started=began)
    s._current_pod = lambda: {"metadata": {"uid": "p"}, "spec": {}, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/4 nodes are available: 4 Insufficient memory."}]}}
    s._start_future = asyncio.get_running_loop().create_future()  # still starting
    page, said = s.progress(), []
    try:
        async with asyncio.timeout(5):  # each line comes at the page's first look
            for _ in range(2):
                said.append((await page.__anext__())["message"])
    except TimeoutError:
        pass
    finally:
        await page.aclose()
    assert len(said) == 2 and re.fullmatch(r"Your server is still starting \(\d+ s so far\)\.", said[0]), said
    assert said[1] == ("ElasticHub: your server is waiting for a node that can run it; it starts as soon as there "
                       "is one.")


@pytest.mark.parametrize("pod, why", [
    (None, "waiting for a node that can run it"),
    ({"metadata": {"uid": "p"}, "spec": {}, "status": {"phase": "Pending"}}, "waiting for a node that can run it"),
    ({"metadata": {"uid": "p"}, "spec": {"nodeName": "cloud-1"}, "status": {"phase": "Pending"}},
     "its node was still preparing it"),
])
async def test_a_start_that_runs_out_of_time_says_so_and_what_to_do(monkeypatch, pod, why):
    """The hub's own start_timeout cancels the start and raises a bare TimeoutError: after 10 minutes of
    waiting for room, the spawn page read "Spawn failed: " and nothing more."""
    async def never_ready(self):
        await asyncio.sleep(3600)

    monkeypatch.setattr(KubeSpawner, "_start", never_ready)
    s = spawner(start_timeout=1)
    s._current_pod = lambda: pod
    with pytest.raises(TimeoutError) as err:  # still one to the hub: its log line, its metrics
        async with asyncio.timeout(5):  # the hub's own limit, a little later than the spawner's clock
            await s._start()
    message, _ = format_exception(err.value)
    assert message.startswith("Your server did not start within 1 s: "), message
    assert why in message and "ask the course staff" in message, message
