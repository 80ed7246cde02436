"""The orchestrator's Kubernetes adapter reads the API server's answers, not
only their bodies: asked for raw (_preload_content=False), kubernetes_asyncio
leaves the HTTP status unread, and a 404 or a 409 came back as if it were
the object (a node never cordoned, a drain record lost without a word)."""

from __future__ import annotations

import pytest
from podtools import cache, server_pod

from elastichub import podmeta
from elastichub.orchestrator.kube import KubeNodes, KubePods

pytestmark = [pytest.mark.timeout(60)]


async def test_an_object_that_is_not_there_is_none_not_its_error(core):
    cluster, api = core
    assert await KubeNodes(api).get("no-such-node") is None
    assert await KubeNodes(api).mark_drain("no-such-node", {"v": 1}) is None  # "the node is gone"
    assert await KubePods(api).get("default", "no-such-pod") is None


async def test_a_write_that_conflicts_is_read_again_and_retried(core):
    """Someone else wrote the node between our read and our write: the
    write (conditional on the resourceVersion read) is refused with 409,
    and the drain record must be written on the node as it is now."""
    cluster, api = core
    nodes, raced = KubeNodes(api), []
    real_get = nodes.get

    async def get_then_race(name):
        node = await real_get(name)
        if not raced:  # another writer, after our read
            raced.append(True)
            cluster.store.update("nodes", name, lambda n: n["metadata"].setdefault("labels", {}).update(x="y"))
        return node
    nodes.get = get_then_race
    written = await nodes.mark_drain("cloud-1", {"v": 1, "state": "draining"})
    node = cluster.store.get("nodes", "cloud-1")
    assert podmeta.DRAIN_ANNOTATION in node["metadata"]["annotations"], node["metadata"]
    assert node["spec"]["unschedulable"] is True and node["metadata"]["labels"]["x"] == "y"
    assert written["metadata"]["resourceVersion"] == node["metadata"]["resourceVersion"]


async def test_the_servers_on_a_node_are_read_from_the_api_server(core):
    cluster, api = core
    cluster.store.create("pods", dict(server_pod("alice"), spec=dict(server_pod("alice")["spec"],
                                                                     nodeName="cloud-1")))
    found = await KubePods(api).servers_on("cloud-1")
    assert [p["metadata"]["name"] for p in found] == ["jupyter-alice"]
    assert await KubePods(api).servers_on("onprem-1") == []


async def test_a_watch_that_goes_silent_is_dropped_and_the_resource_listed_again(caplog):
    """A connection a proxy holds open with nothing on it: the watch used to
    wait on it for ever, and the cache went stale without a word."""
    import asyncio

    from elastichub.orchestrator.kube import Informer

    class Silent:  # an answer whose stream never sends a line
        status, reason = 200, "OK"

        def __init__(self):
            self.content = self

        async def readline(self):
            await asyncio.Event().wait()

        async def read(self):
            return b'{"items": [], "metadata": {"resourceVersion": "1"}}'

        def release(self):
            pass

    calls = []

    async def list_fn(**kwargs):
        calls.append("watch" if kwargs.get("watch") else "list")
        return Silent()

    informer = Informer("pods", list_fn, dict, lambda o: o["metadata"]["name"], watch_timeout=0,
                        silence_margin=0.2, max_backoff=0.1)
    task = asyncio.create_task(informer.run())
    try:
        for _ in range(100):
            if calls.count("list") >= 2:
                break
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
    assert calls[:3] == ["list", "watch", "list"], calls
    assert "pods list/watch failed (0 no word on the watch for 0.2 s)" in caplog.text


async def test_a_watch_cancelled_as_its_line_arrives_ends():
    """The orchestrator stops by cancelling its informers. A cancel landing
    just as the watch's next line arrived was taken for the line (Python
    3.11's asyncio.wait_for returns a result that came with the cancel): the
    informer watched on, and the orchestrator never stopped on SIGTERM."""
    import asyncio

    from elastichub.orchestrator.kube import Informer

    event = b'{"type": "ADDED", "object": {"metadata": {"name": "p", "resourceVersion": "2"}}}\n'

    class Busy:  # a watch with a line always ready
        status, reason = 200, "OK"

        def __init__(self):
            self.content = self

        async def readline(self):
            await asyncio.sleep(0)
            if lines_read.append(1) or len(lines_read) == 3:
                asyncio.get_running_loop().call_soon(task.cancel)  # after this line, before its reader resumes
            return event

        async def read(self):
            return b'{"items": [], "metadata": {"resourceVersion": "1"}}'

        def release(self):
            pass

    lines_read = []

    async def list_fn(**kwargs):
        return Busy()

    informer = Informer("pods", list_fn, lambda o: o, lambda o: o["metadata"]["name"], watch_timeout=60)
    task = asyncio.create_task(informer.run())
    done, _ = await asyncio.wait({task}, timeout=5)
    if not done:
        task.cancel()
    assert done and task.cancelled(), f"still watching after {len(lines_read)} lines"


async def test_a_step_the_api_server_refuses_is_one_log_line_with_its_reason(caplog):
    """A boot step's uncordon refused (the hub's role without `patch nodes`): the event, and the log
    line, were the ApiException's str(): five lines, with every response header, the reason buried in
    the JSON of the last."""
    import asyncio
    import json
    import logging

    from kubernetes_asyncio.client.exceptions import ApiException

    from elastichub import podmeta
    from elastichub.orchestrator.controller import Controller
    from elastichub.orchestrator.records import node_record
    from elastichub.policy import PolicyConfig, make_strategy

    said = 'nodes "onprem-1" is forbidden: User "system:serviceaccount:jhub:hub" cannot patch resource "nodes"'

    class Refused:  # what kubernetes_asyncio's REST client raises for a 403 it read in full
        status, reason = 403, "Forbidden"
        data = json.dumps({"kind": "Status", "status": "Failure", "message": said, "reason": "Forbidden"})

        def getheaders(self):
            return {"Audit-Id": "5f1c", "Content-Type": "application/json", "X-Kubernetes-Pf-Flowschema-Uid": "9e"}

    class Nodes:
        async def uncordon(self, name):
            raise ApiException(http_resp=Refused())

    tainted = node_record({"metadata": {"name": "onprem-1", "labels": {podmeta.TIER_LABEL: "on-prem"}},
                           "spec": {"unschedulable": True, "taints": [{"key": podmeta.DRAIN_TAINT,
                                                                       "effect": "NoSchedule"}]},
                           "status": {"allocatable": {"cpu": "4", "memory": "8Gi"},
                                      "conditions": [{"type": "Ready", "status": "True"}]}})
    ctl = Controller(make_strategy("elastic", PolicyConfig()), cache({"onprem-1": tainted}),
                     cache({}), Nodes(), None, None)
    with caplog.at_level(logging.WARNING, logger="elastichub"):
        await ctl.cycle()  # our taint on a node nothing drains: lifted, by a step the API server refuses
        await asyncio.gather(*ctl.tasks.values())
    error = next(e["message"] for e in ctl.events if e["kind"] == "error")
    assert error == f"boot:onprem-1 failed (ApiException: 403 Forbidden: {said}); the next cycles retry"
    assert [r.getMessage() for r in caplog.records] == [f"error: {error}"]
