"""The spawn pages at a class's start: one look of every open page at its pod's events.

Each open spawn page (ElasticSpawner.progress, the hub's progress stream)
looks for its pod's Kubernetes Events four times a second. Timed here: one
look of each of `--pages` pages (300 students waiting at a class's start),
through the real `progress()` generators, against a namespace holding
`--events` events (an hour's worth: 5,000). Reference in the same run: one
sort of every event by time, as KubeSpawner's `EventReflector.events` does
(what one page's look cost before). The ratio: about `--pages` when every
page sorts for itself, about 1 when the pages share one pass. Times four is
the share of the hub's CPU that the pages take each second.

    python benchmarks/spawn_pages_bench.py [--pages 300] [--events 5000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import kubespawner.spawner
from traitlets.config import Config

from elastichub.spawner import ElasticSpawner


class Reflector:
    """What ElasticSpawner reads of KubeSpawner's EventReflector."""

    def __init__(self, resources: dict):
        self.resources = resources

    @property
    def events(self):
        return sorted(self.resources.values(), key=lambda e: e["lastTimestamp"] or e["eventTime"])


def namespace_events(pages: int, events: int) -> dict:
    pods = max(pages, events // 6)
    return {f"e{n}": {"metadata": {"uid": f"e{n}"}, "involvedObject": {"uid": f"pod-{n % pods}"},
                      "lastTimestamp": f"2026-12-03T{8 + n // 3600 % 10:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
                      "eventTime": None, "type": "Normal", "message": f"event {n}"} for n in range(events)}


async def measure(args) -> dict:
    kubespawner.spawner.load_config = lambda **kw: None  # no cluster: nothing here calls it
    reflector = Reflector(namespace_events(args.pages, args.events))
    ElasticSpawner.event_reflector = property(lambda self: reflector)
    ElasticSpawner.events_enabled = True

    async def watching():
        pass

    looks, sorts = [], []
    for _ in range(args.repeat):
        pages = []
        for i in range(args.pages):
            s = ElasticSpawner(config=Config(), _mock=True)
            s._start_watching_events = watching
            s._current_pod = lambda i=i: {"metadata": {"uid": f"pod-{i}"}}
            s._start_future = asyncio.get_running_loop().create_future()
            pages.append(s.progress())
        await asyncio.sleep(0.3)  # the next look is a new one (the pages look every 0.25 s)
        t0 = time.perf_counter()
        for page in pages:
            await page.__anext__()
        looks.append(time.perf_counter() - t0)
        for page in pages:
            await page.aclose()
        t0 = time.perf_counter()
        reflector.events
        sorts.append(time.perf_counter() - t0)
    look, one = statistics.median(looks), statistics.median(sorts)
    return {"pages": args.pages, "events": args.events, "repeat": args.repeat,
            "all_pages_look_ms": round(look * 1e3, 2), "one_sort_ms": round(one * 1e3, 3),
            "ratio": round(look / one, 1),
            "hub_cpu_share_at_4_looks_per_s": round(4 * look, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = asyncio.run(measure(args))
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{args.pages} spawn pages open, {args.events} events in the namespace, median of {args.repeat}:")
    print(f"  one look of every page: {report['all_pages_look_ms']:.1f} ms "
          f"({report['hub_cpu_share_at_4_looks_per_s']:.0%} of the hub's CPU at four looks a second)")
    print(f"  reference, one sort of every event: {report['one_sort_ms']:.2f} ms "
          f"(the pages = {report['ratio']:.0f} sorts)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
