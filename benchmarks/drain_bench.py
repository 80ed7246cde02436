"""A drain's restart moves of a node of N servers against a slow hub: one at a time, then a few at a time.

Each restart move is some 15 hub calls (the hub's model of the server, its kernels and terminals, the
checkpoint, the record, the stop, waits, the start, waits...). The real `Drain` runs every step against an
in-process fake hub (no HTTP) that answers each call after `--latency` s, a stopped server's pod leaving the
node and a started one landing elsewhere; the record's writes take `--latency` s too. Printed: the drain's
wall time (first cordon to the VM's stop) at `drain_concurrency` 1 and at `--concurrency`, and the ratio.

    python benchmarks/drain_bench.py [--servers 30] [--latency 0.05] [--concurrency 4] [--json]

The times scale with the latency (a hub answering in 2 s: multiply the figures at 0.05 s by 40).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from elastichub import podmeta
from elastichub.checkpoint_client import CheckpointOutcome
from elastichub.orchestrator.drain import Drain, DrainTimeouts
from elastichub.orchestrator.hub import HubServer
from elastichub.orchestrator.records import pod_record


def pod(user: str, node: str):
    return pod_record({
        "metadata": {"name": f"jupyter-{user}", "namespace": "jhub", "labels": {podmeta.MANAGED_LABEL: "true"},
                     "annotations": {podmeta.USER_ANNOTATION: user, podmeta.SERVER_NAME_ANNOTATION: ""}},
        "spec": {"nodeName": node, "containers": [{"name": "notebook", "resources": {"requests": {
            "cpu": "500m", "memory": "2Gi"}}}]},
        "status": {"phase": "Running"}})


class SlowHub:
    """Every call answers after `latency` s; `calls` counts them."""

    def __init__(self, users: list[str], latency: float):
        self.latency, self.calls = latency, 0
        self.running = set(users)
        self.pods = {u: pod(u, "cloud-1") for u in users}

    async def _answer(self) -> None:
        self.calls += 1
        await asyncio.sleep(self.latency)

    async def server(self, user, name):
        await self._answer()
        return HubServer(user, "", True, None, f"/user/{user}/", {}, None, None) if user in self.running else None

    async def kernels(self, server):
        await self._answer()
        return [{"id": "k", "execution_state": "idle"}]

    async def terminals(self, server):
        await self._answer()
        return []

    async def checkpoint(self, server, timeout, hold_s=None):
        await self._answer()
        return CheckpointOutcome("saved", kernels=1, bytes=1_000_000)

    async def end_hold(self, server):
        await self._answer()

    async def stop(self, user, name):
        await self._answer()
        self.running.discard(user)
        del self.pods[user]

    async def start(self, user, name, options):
        await self._answer()
        self.running.add(user)
        self.pods[user] = pod(user, "onprem-1")


class SlowKube:
    def __init__(self, latency: float):
        self.latency = latency

    async def _write(self, *args, **kwargs):
        await asyncio.sleep(self.latency)
        return {}

    mark_drain = record_drain = end_drain = uncordon = _write


async def drain_time(servers: int, latency: float, concurrency: int) -> tuple[float, int]:
    hub = SlowHub([f"user{i:02d}" for i in range(servers)], latency)
    drain = Drain("cloud-1", None, kube=SlowKube(latency), hub=hub, cloud=None, pods=lambda: list(hub.pods.values()),
                  timeouts=DrainTimeouts(poll=latency, concurrency=concurrency))
    t0 = time.perf_counter()
    outcome = await drain.start()
    assert outcome == "stopped" and len(hub.running) == servers, outcome
    return time.perf_counter() - t0, hub.calls


async def measure(args) -> dict:
    report = {"servers": args.servers, "latency_s": args.latency}
    for concurrency in (1, args.concurrency):
        wall, calls = await drain_time(args.servers, args.latency, concurrency)
        report[f"concurrency {concurrency}"] = {"wall_s": round(wall, 2), "hub_calls": calls,
                                                "calls_per_move": round(calls / args.servers, 1)}
    report["ratio"] = round(report["concurrency 1"]["wall_s"] / report[f"concurrency {args.concurrency}"]["wall_s"],
                            2)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per hub call")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = asyncio.run(measure(args))
    if args.json:
        print(json.dumps(report))
        return 0
    for key in ("concurrency 1", f"concurrency {args.concurrency}"):
        r = report[key]
        print(f"{key}: {r['wall_s']:.2f} s for {args.servers} servers ({r['hub_calls']} hub calls, "
              f"{r['calls_per_move']} per move)")
    print(f"ratio: {report['ratio']}x faster at concurrency {args.concurrency} (hub latency {args.latency} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
