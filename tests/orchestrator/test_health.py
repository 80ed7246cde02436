"""/health follows the loop: 503 with a reason once no cycle has read the cluster and the cloud for a few
Tmon, so a readiness probe and an admin see an orchestrator that runs on but decides on nothing."""

from __future__ import annotations

import json
import socket

from podtools import cache
from test_bill import FlakyCloud, _node
from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer

from elastichub.orchestrator.controller import Controller, Settings
from elastichub.orchestrator.web import make_app
from elastichub.policy import PolicyConfig, make_strategy


async def _health(ctl: Controller) -> tuple[int, dict]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = HTTPServer(make_app(ctl, "/services/elastic/", cookie_secret=b"x" * 32, hub_auth=None))
    server.listen(port, "127.0.0.1")
    try:
        answer = await AsyncHTTPClient().fetch(f"http://127.0.0.1:{port}/services/elastic/health", raise_error=False)
    finally:
        server.stop()
    return answer.code, json.loads(answer.body)


async def test_health_turns_503_with_a_reason_once_cycles_stop_reading_the_cloud_or_the_cluster():
    now = [1000.0]
    cloud = FlakyCloud()
    nodes = cache({"onprem-1": _node("onprem-1", "on-prem"), "cloud-1": _node("cloud-1", "cloud")}, "nodes")
    pods = cache({}, "pods")
    ctl = Controller(make_strategy("paper", PolicyConfig(theta_out=80, tmon=15, tcool=1e9)), nodes, pods, None,
                     None, cloud, Settings(tmon=15), clock=lambda: now[0], monotonic=lambda: now[0])
    assert (await _health(ctl))[0] == 503  # no cycle yet
    await ctl.cycle()
    assert (await _health(ctl))[0] == 200
    cloud.down = True
    for _ in range(4):  # one minute of failed listings: within the limit (60 s + the cloud's 30 s)
        now[0] += 15
        await ctl.cycle()
    assert (await _health(ctl))[0] == 200
    for _ in range(4):
        now[0] += 15
        await ctl.cycle()
    code, body = await _health(ctl)
    assert code == 503 and not body["ok"]
    assert body["reason"] == ("no successful cycle for 120 s (the limit: 90 s, Tmon 15 s): the cloud's VMs cannot "
                              "be listed")
    cloud.down = False
    now[0] += 300  # the listing's back-off over
    await ctl.cycle()
    assert (await _health(ctl))[0] == 200
    # The Kubernetes API unreachable: the cycles decide on stale caches, which is no successful one.
    pods.last_error = "ClientConnectorError: Cannot connect to host 10.0.0.1:443"
    for _ in range(7):
        now[0] += 15
        await ctl.cycle()
    code, body = await _health(ctl)
    assert code == 503 and body["reason"].endswith("the Kubernetes API cannot be read (pods): the caches are stale")
