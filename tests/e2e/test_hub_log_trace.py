"""`elastichub trace` on a real JupyterHub's log: the history an admin has
before ElasticHub runs, read into the trace `simulate --trace` replays.
Three servers (a named one among them, a login with an accent) start and
stop on a real hub with ElasticSpawner; the trace has each, as long as it ran."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from urllib.parse import quote

import pytest
from podtools import cluster_config

from elastichub.policy import GiB, Resources
from elastichub.simulator.trace import load_trace

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

USER = "zoë"


async def test_the_hubs_log_becomes_a_trace_of_every_server_as_long_as_it_ran(cluster_factory, hub_factory,
                                                                               tmp_path):
    cluster = await cluster_factory(cluster_config(onprem=1, cloud=0))
    hub = await hub_factory(cluster, "c.JupyterHub.allow_named_servers = True\nc.KubeSpawner.mem_guarantee = '1G'\n",
                            spawner_class="elastic")
    ran, ready = {}, {}
    for key, (user, name) in {"alice": ("alice", ""), USER: (USER, ""), f"{USER}/lab": (USER, "lab")}.items():
        await hub.start_server(user, name=name)
        ready[key] = time.monotonic()
    await asyncio.sleep(3)
    for key, path in (("alice", "/hub/api/users/alice/server"),
                      (f"{USER}/lab", f"/hub/api/users/{quote(USER)}/servers/lab"),
                      (USER, f"/hub/api/users/{quote(USER)}/server")):
        ran[key] = time.monotonic() - ready[key]  # the hub takes it off the proxy first thing
        code, body = await hub.api("DELETE", path)
        assert code in (202, 204), (code, body)
        user, _, name = key.partition("/")
        await hub.wait_server(user, ready=False, name=name)
        await asyncio.sleep(1)

    done = await asyncio.to_thread(subprocess.run, [
        sys.executable, "-m", "elastichub", "trace", str(hub.log_path), "--cpu", "0.5", "--ram-gib", "1",
        "--out", str(tmp_path / "trace.csv")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "3 server session(s)" in done.stderr and "before the log begins" not in done.stderr, done.stderr
    rows = (tmp_path / "trace.csv").read_text(encoding="utf-8").splitlines()
    sessions = {}
    for line in rows[1:]:
        arrival, duration, cpu, ram, user, server, spawn, ended = line.split(",")
        assert ended == "stop", line
        sessions[f"{user}/{server}" if server else user] = (int(duration), float(spawn))
    assert set(sessions) == set(ran), (sessions, ran)
    for key, seconds in ran.items():  # each as long as it ran (the log's clock, to a second or two)
        assert abs(sessions[key][0] - seconds) <= 2 and sessions[key][1] > 0, (key, sessions[key], seconds)
    trace = load_trace(tmp_path / "trace.csv", [Resources(4, 8 * GiB)])
    assert len(trace.requests) == 3 and all(r.requests == Resources(0.5, GiB) for r in trace.requests)
