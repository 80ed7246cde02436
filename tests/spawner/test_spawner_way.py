"""A pod of the server's name in the way of its start (KubeSpawner's 409,
answered with stop(now=True)): deleted at once only when no kernel of the
user's can run in it; a running one is checkpointed first, or left alone
with a reason. The hub and the cluster end to end: tests/e2e/test_spawner_hub.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from spawnertools import spawner
from tornado import web

from elastichub import podmeta
from elastichub.checkpoint_client import CheckpointOutcome
from elastichub.spawner import ElasticSpawner


def pod(phase="Running", user="mock@name", server="", stopping=False) -> dict:
    annotations = {podmeta.USER_ANNOTATION: user, podmeta.SERVER_NAME_ANNOTATION: server} if user else {}
    meta = {"name": "jupyter-mock", "annotations": annotations}
    if stopping:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec = {"nodeName": "onprem-1", "containers": [{"ports": [{"name": "notebook-port", "containerPort": 8888}]}]}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase, "podIP": "10.0.0.9"}}


@pytest.fixture
async def in_the_way(monkeypatch):
    """A start of the default server finding `pods[0]` in the way; KubeSpawner's
    deletion and the checkpoint request replaced by records."""
    from kubespawner import KubeSpawner

    s, calls, pods, outcome = spawner(), [], [], [CheckpointOutcome("saved", kernels=1, bytes=5)]

    async def deleted(self, now=False):
        calls.append(("delete", now))

    async def checkpoint(url, purpose):
        calls.append(("checkpoint", url))
        return outcome[0]

    monkeypatch.setattr(KubeSpawner, "stop", deleted)
    monkeypatch.setattr(s, "_checkpoint", checkpoint)
    monkeypatch.setattr(ElasticSpawner, "pod_reflector", property(
        lambda self: SimpleNamespace(pods={f"{self.namespace}/{self.pod_name}": p for p in pods})))
    monkeypatch.setattr(ElasticSpawner, "server", property(lambda self: SimpleNamespace(base_url="/user/mock@name/")))
    s._creating_pod = s.pod_name
    return s, calls, pods, outcome


async def test_a_running_pod_of_this_server_is_checkpointed_then_deleted_with_its_grace(in_the_way):
    s, calls, pods, _ = in_the_way
    pods.append(pod())
    await s.stop(True)
    assert calls == [("checkpoint", "http://10.0.0.9:8888/user/mock@name/"), ("delete", False)]
    assert s.last_checkpoint.status == "saved" and s._restoring is s.last_checkpoint


@pytest.mark.parametrize("user, server, outcome, words", [
    ("mock@name", "", CheckpointOutcome("failed", reason="kernel busy"), "could not be checkpointed (kernel busy)"),
    ("mock@name", "gpu", None, "is running the server 'gpu' of user 'mock@name'"),
    ("bob", "", None, "of user 'bob'"),
])
async def test_a_running_pod_that_cannot_checkpoint_or_of_another_server_is_left_with_a_reason(
        in_the_way, user, server, outcome, words):
    s, calls, pods, outcomes = in_the_way
    pods.append(pod(user=user, server=server))
    outcomes[0] = outcome
    with pytest.raises(web.HTTPError) as err:
        await s.stop(True)
    assert words in err.value.jupyterhub_message and "it is not deleted" in err.value.jupyterhub_message
    assert "tell the course staff" in err.value.jupyterhub_message  # not the student's to do: "kubectl delete pod"
    assert ("delete", True) not in calls and ("delete", False) not in calls


async def test_a_stopping_pod_is_waited_for_and_one_with_no_kernel_is_deleted_at_once(in_the_way):
    """A stopping pod's kernels checkpoint as they shut down: no deletion without grace cuts that short."""
    s, calls, pods, _ = in_the_way
    pods.append(pod(stopping=True))
    await s.stop(True)
    assert calls == []
    pods[0] = pod(phase="Pending")
    await s.stop(True)
    assert calls == [("delete", True)]
