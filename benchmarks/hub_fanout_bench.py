"""The hub calls of a drain's preparations on a node of 30 servers, against a slow hub.

A university hub answers its REST API in 0.2-2 s when busy. Before a drain
cordons anything, the orchestrator asks each server on the node what it
runs (movable.py: the hub's model of the server, a token for it, the
server's status), then waits until every server is quiet (drain.py
`_all_quiet`: the hub's model, the kernels, the terminals). Both go through
the real `HubClient` to a fake hub on localhost (tornado) that answers each
call after `--latency` s and counts the calls in flight.

Printed per step: its wall time for `--servers` servers next to the same
step for one server measured in the same run (the ratio: 1 is all at once,
`--servers` is one by one), and the most calls the hub had in flight (the
fan-out it sees).

    python benchmarks/hub_fanout_bench.py [--servers 30] [--latency 0.2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from tornado import web

from elastichub import podmeta
from elastichub.orchestrator.drain import Drain, DrainTimeouts
from elastichub.orchestrator.hub import HubClient
from elastichub.orchestrator.movable import Movability
from elastichub.orchestrator.records import pod_record


class Gauge:
    def __init__(self, latency: float):
        self.latency, self.now, self.most, self.calls = latency, 0, 0, 0

    async def answer(self, handler: web.RequestHandler, body) -> None:
        self.calls += 1
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(self.latency)
        finally:
            self.now -= 1
        handler.set_header("Content-Type", "application/json")
        handler.finish(json.dumps(body))


class _Handler(web.RequestHandler):
    def initialize(self, gauge: Gauge) -> None:
        self.gauge = gauge


class UserHandler(_Handler):
    async def get(self, user: str) -> None:
        await self.gauge.answer(self, {"name": user, "servers": {"": {
            "ready": True, "pending": None, "url": f"/user/{user}/", "user_options": {}}}})


class TokenHandler(_Handler):
    async def post(self, user: str) -> None:
        self.set_status(201)
        await self.gauge.answer(self, {"token": f"token-of-{user}"})


class ServerHandler(_Handler):
    async def get(self, user: str, path: str) -> None:
        kernel = {"id": "k1", "name": "elastic-python", "execution_state": "idle"}
        body = {"api/elastichub/status": {"version": "1", "kernels": [
            {"kernel_id": "k1", "kernel_name": "elastic-python", "elastic": True}]},
            "api/kernels": [kernel], "api/terminals": []}.get(path)
        if body is None:
            raise web.HTTPError(404)
        await self.gauge.answer(self, body)


def pods_on(node: str, n: int, first: int = 0) -> list:
    return [pod_record({
        "metadata": {"name": f"jupyter-user{i}", "namespace": "jhub", "uid": f"uid-{i}",
                     "labels": {podmeta.MANAGED_LABEL: "true"},
                     "annotations": {podmeta.USER_ANNOTATION: f"user{i}", podmeta.SERVER_NAME_ANNOTATION: ""}},
        "spec": {"nodeName": node, "containers": [{"name": "notebook", "resources": {"requests": {
            "cpu": "500m", "memory": "2Gi"}}}]},
        "status": {"phase": "Running"}}) for i in range(first, first + n)]


async def measure(args) -> dict:
    gauge = Gauge(args.latency)
    app = web.Application([(r"/hub/api/users/([^/]+)", UserHandler, {"gauge": gauge}),
                           (r"/hub/api/users/([^/]+)/tokens", TokenHandler, {"gauge": gauge}),
                           (r"/user/([^/]+)/(.*)", ServerHandler, {"gauge": gauge})])
    server = app.listen(0, "127.0.0.1")
    port = next(iter(server._sockets.values())).getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    report = {"servers": args.servers, "latency_s": args.latency}
    try:
        for step in ("pre-drain check", "all quiet"):
            for n, first in ((1, 0), (args.servers, 1)):  # fresh users each time: every token is minted
                hub = HubClient(base + "/hub/api", base, "service-token", timeout=60)
                pods = pods_on("cloud-1", n, first + (0 if step == "pre-drain check" else 1000))
                gauge.most = gauge.calls = 0
                t0 = time.perf_counter()
                if step == "pre-drain check":
                    await Movability(hub).check("cloud-1", pods)
                else:
                    await Drain("cloud-1", None, kube=None, hub=hub, cloud=None, pods=lambda: pods,
                                timeouts=DrainTimeouts())._all_quiet()
                wall = time.perf_counter() - t0
                report[f"{step} {n}"] = {"wall_s": round(wall, 3), "calls": gauge.calls, "most_in_flight": gauge.most}
            one, many = report[f"{step} 1"], report[f"{step} {args.servers}"]
            report[f"{step} ratio"] = round(many["wall_s"] / one["wall_s"], 2)
    finally:
        server.stop()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the hub takes for each call")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = asyncio.run(measure(args))
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{args.servers} servers on the node, the hub answers each call after {args.latency:g} s:")
    for step in ("pre-drain check", "all quiet"):
        one, many = report[f"{step} 1"], report[f"{step} {args.servers}"]
        print(f"  {step:16} {many['wall_s']:7.2f} s for {args.servers} ({many['calls']} calls, at most "
              f"{many['most_in_flight']} in flight) vs {one['wall_s']:.2f} s for one: "
              f"{report[f'{step} ratio']:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
