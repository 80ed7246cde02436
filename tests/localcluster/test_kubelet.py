"""The kubelet: pods as local processes on their own loopback IPs, logs, graceful delete, failures."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid

import pytest
from lc_clustertools import alive, as_client_model, event_reasons, phase, pid_file_pids, python_pod, wait_for

from elastichub.localcluster.apiserver import delete_pod
from elastichub.localcluster.config import NodeConfig
from elastichub.localcluster.kubelet import Kubelet, PodIPAllocator
from elastichub.localcluster.store import ApiError, Store

pytestmark = pytest.mark.timeout(60)

# What jupyterhub-singleuser does with KubeSpawner's env: listen where JUPYTERHUB_SERVICE_URL says.
SERVE_SERVICE_URL = """
import os, socket, urllib.parse
url = urllib.parse.urlsplit(os.environ["JUPYTERHUB_SERVICE_URL"])
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do (tornado, jupyter)
server.bind((url.hostname, url.port))
server.listen()
print("listening on", server.getsockname(), "pod IP from fieldRef:", os.environ["MY_IP"])
while True:
    conn, _ = server.accept()
    conn.sendall(f"{server.getsockname()[0]} {os.environ['HOSTNAME']} {os.getcwd()}".encode())
    conn.close()
"""


@pytest.fixture
async def node(tmp_path):
    store = Store()
    kubelet = Kubelet(store, NodeConfig("node-1", "on-prem", "4", "8Gi"), node_ip="127.0.1.2",
                      ips=PodIPAllocator(), log_dir=tmp_path / "logs", workdir=tmp_path, api_host="127.0.0.1",
                      api_port=6443, cluster_id=uuid.uuid4().hex[:12])
    await kubelet.start()
    yield store, kubelet
    await kubelet.stop(max_grace=2)


def pod_of(store, name):
    return store.get("pods", name, "default")


def ask(ip: str, port: int) -> str:
    with socket.create_connection((ip, port), timeout=5) as conn:
        return conn.recv(1000).decode()


async def test_node_registers_with_the_keys_clients_need(node):
    store, _ = node
    n = store.get("nodes", "node-1")
    assert n["metadata"]["labels"]["elastichub.io/tier"] == "on-prem"
    assert n["metadata"]["labels"]["kubernetes.io/hostname"] == "node-1"
    assert n["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert n["status"]["conditions"][0]["type"] == "Ready" and n["status"]["conditions"][0]["status"] == "True"
    assert {"type": "InternalIP", "address": "127.0.1.2"} in n["status"]["addresses"]
    assert as_client_model(n, "V1Node").status.node_info.kubelet_version
    info = n["status"]["nodeInfo"]  # kubernetes_asyncio rejects a node missing any of these
    for key in ("architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
                "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID"):
        assert isinstance(info[key], str)


async def test_pods_run_on_their_own_ip_and_port_with_logs(node, tmp_path):
    store, kubelet = node
    env = [{"name": "JUPYTERHUB_SERVICE_URL", "value": "http://0.0.0.0:8888/user/ann/"},
           {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    # Two pods on the same port: each has its own address, as in Kubernetes.
    for name in ("ann", "bob"):
        store.create("pods", python_pod(name, SERVE_SERVICE_URL, node="node-1", port=8888, env=env))
    for name in ("ann", "bob"):
        await wait_for(lambda: pod_of(store, name)["status"].get("containerStatuses", [{}])[0].get("ready"),
                       what=f"{name} ready")
    ann, bob = pod_of(store, "ann"), pod_of(store, "bob")
    assert ann["status"]["podIP"] != bob["status"]["podIP"]
    for pod in (ann, bob):
        status = pod["status"]
        ip = status["podIP"]
        assert ip.startswith("127.0.") and ip.split(".")[2] not in ("0", "1")
        assert status["phase"] == "Running" and status["hostIP"] == "127.0.1.2"
        assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
        cs = status["containerStatuses"][0]
        assert {"name", "ready", "restartCount", "image", "imageID", "state"} <= cs.keys()
        assert "running" in cs["state"] and cs["image"] == "ignored:latest"
        assert as_client_model(pod).status.container_statuses[0].ready is True
        assert ask(ip, 8888) == f"{ip} {pod['metadata']['name']} {tmp_path}"
        log = kubelet.read_log("default", pod["metadata"]["name"], "main")
        assert f"listening on ('{ip}', 8888) pod IP from fieldRef: {ip}" in log
    assert event_reasons(store, "ann") == ["Created", "Started"]


async def test_ready_only_once_the_port_listens(node):
    store, _ = node
    code = "import os, socket, time; time.sleep(1.5); s = socket.socket(); " \
           "s.bind((os.environ['MY_IP'], 9999)); s.listen(); time.sleep(60)"
    my_ip = [{"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    store.create("pods", python_pod("slow", code, node="node-1", port=9999, env=my_ip))
    await wait_for(lambda: phase(store, "slow") == "Running", what="Running")
    assert pod_of(store, "slow")["status"]["containerStatuses"][0]["ready"] is False
    await wait_for(lambda: pod_of(store, "slow")["status"]["containerStatuses"][0]["ready"], what="ready")
    # Without a declared port, started is ready.
    store.create("pods", python_pod("portless", "import time; time.sleep(60)", node="node-1"))
    await wait_for(lambda: pod_of(store, "portless")["status"].get("containerStatuses", [{}])[0].get("ready"),
                   what="portless ready")


async def test_delete_sends_sigterm_and_the_pod_goes_when_the_process_ends(node, tmp_path):
    store, kubelet = node
    marker = tmp_path / "terminated"
    code = f"""
import signal, sys, time
def bye(*_):
    open({str(marker)!r}, "w").write("got SIGTERM")
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
print("started")
time.sleep(300)
"""
    store.create("pods", python_pod("gentle", code, node="node-1"))
    await wait_for(lambda: kubelet.read_log("default", "gentle", "main") == "started\n", what="handler installed")
    start = time.monotonic()
    deleted = delete_pod(store, pod_of(store, "gentle"), 20)
    assert deleted["metadata"]["deletionTimestamp"]  # the kubelet finishes the job
    await wait_for(lambda: phase(store, "gentle") is None, what="pod removed")
    assert time.monotonic() - start < 10  # it ended on SIGTERM, long before the 20 s grace
    assert marker.read_text() == "got SIGTERM"
    with pytest.raises(ApiError):
        store.get("pods", "gentle", "default")


async def test_delete_kills_after_the_grace_period_including_escaped_children(node, tmp_path):
    store, _ = node
    pids = tmp_path / "pids"
    code = f"""
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
# A child in its own session (as Jupyter starts kernels): not in the pod's process group.
child = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                          "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"],
                         start_new_session=True)
open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
time.sleep(300)
"""
    store.create("pods", python_pod("stubborn", code, node="node-1"))
    await wait_for(lambda: len(pid_file_pids(pids)) == 2, what="pid file")
    procs = pid_file_pids(pids)
    assert all(alive(p) for p in procs)
    start = time.monotonic()
    delete_pod(store, pod_of(store, "stubborn"), 1)
    await wait_for(lambda: phase(store, "stubborn") is None, what="pod removed")
    elapsed = time.monotonic() - start
    # waited the 1 s grace, then SIGKILL: far sooner than the 300 s the
    # processes sleep, with room for a loaded machine
    assert 0.9 <= elapsed < 30, elapsed
    assert not any(alive(p) for p in procs)
    assert "Killing" in event_reasons(store, "stubborn")


async def test_a_command_that_cannot_start_fails_the_pod_with_a_reason(node, tmp_path):
    store, _ = node
    pod = python_pod("broken", "", node="node-1")
    pod["spec"]["containers"][0]["command"] = ["no-such-command-elastichub"]
    store.create("pods", pod)
    await wait_for(lambda: phase(store, "broken") == "Failed", what="Failed")
    status = pod_of(store, "broken")["status"]
    assert status["reason"] == "StartError"
    assert status["message"] == 'exec: "no-such-command-elastichub": executable file not found in $PATH'
    term = status["containerStatuses"][0]["state"]["terminated"]
    assert term["reason"] == "StartError" and term["exitCode"] == 128
    assert as_client_model(pod_of(store, "broken")).status.container_statuses[0].state.terminated.exit_code == 128
    assert "Failed" in event_reasons(store, "broken")

    nowhere = python_pod("nowhere", "print(1)", node="node-1")
    nowhere["spec"]["containers"][0]["workingDir"] = str(tmp_path / "missing")
    store.create("pods", nowhere)
    await wait_for(lambda: phase(store, "nowhere") == "Failed", what="Failed")
    status = pod_of(store, "nowhere")["status"]
    assert status["reason"] == "CreateContainerConfigError" and "missing" in status["message"]


async def test_exits_end_the_pod_with_the_exit_code_and_take_leftovers_along(node, tmp_path):
    store, kubelet = node
    store.create("pods", python_pod("ok", "print('all done')", node="node-1"))
    store.create("pods", python_pod("bad", "import sys; print('oops'); sys.exit(3)", node="node-1"))
    pids = tmp_path / "daemon"
    code = f"""
import subprocess, sys
d = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
open({str(pids)!r}, "w").write(str(d.pid))
"""
    store.create("pods", python_pod("leaves-a-daemon", code, node="node-1"))
    await wait_for(lambda: phase(store, "ok") == "Succeeded", what="Succeeded")
    await wait_for(lambda: phase(store, "bad") == "Failed", what="Failed")
    await wait_for(lambda: phase(store, "leaves-a-daemon") == "Succeeded", what="Succeeded")
    term = pod_of(store, "bad")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 3 and term["reason"] == "Error"
    for name in ("ok", "bad"):
        assert as_client_model(pod_of(store, name)).status.phase in ("Succeeded", "Failed")
    ok = pod_of(store, "ok")["status"]["containerStatuses"][0]
    assert ok["state"]["terminated"]["exitCode"] == 0 and ok["ready"] is False
    assert kubelet.read_log("default", "ok", "main") == "all done\n"
    assert kubelet.read_log("default", "bad", "main") == "oops\n"
    # The container's process exited: what it left running went with it, as with a cgroup.
    await wait_for(lambda: not alive(pid_file_pids(pids)[0]), what="daemon killed")


async def test_power_off_fails_pods_and_power_on_makes_the_node_ready(node):
    store, kubelet = node
    store.create("pods", python_pod("victim", "import time; time.sleep(300)", node="node-1"))
    await wait_for(lambda: phase(store, "victim") == "Running", what="Running")
    pid = int(pod_of(store, "victim")["status"]["containerStatuses"][0]["containerID"].split("//")[1])
    await kubelet.power_off()
    status = pod_of(store, "victim")["status"]
    assert status["phase"] == "Failed" and status["reason"] == "NodeShutdown"
    assert "terminated" in status["containerStatuses"][0]["state"]
    assert not alive(pid)
    assert "NodeShutdown" in event_reasons(store, "victim")
    assert as_client_model(pod_of(store, "victim")).status.reason == "NodeShutdown"
    events, _ = store.list("events")
    for event in events:
        assert as_client_model(event, "CoreV1Event").involved_object.name
    assert "NodeNotReady" in event_reasons(store, "node-1")
    n = store.get("nodes", "node-1")
    assert n["status"]["conditions"][0]["status"] == "Unknown"
    assert {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}.items() <= n["spec"]["taints"][0].items()
    # A pod bound to the powered-off node waits, and starts once it is back.
    store.create("pods", python_pod("later", "import time; time.sleep(300)", node="node-1"))
    await asyncio.sleep(0.3)
    assert phase(store, "later") == "Pending"
    await kubelet.power_on()
    n = store.get("nodes", "node-1")
    assert n["status"]["conditions"][0]["status"] == "True" and not n["spec"]["taints"]
    await wait_for(lambda: phase(store, "later") == "Running", what="Running after power-on")


async def test_every_container_of_a_pod_runs_and_shares_its_ip(node):
    store, kubelet = node
    pod = python_pod("duo", "import time; print('main up'); time.sleep(300)", node="node-1")
    sidecar = dict(pod["spec"]["containers"][0], name="sidecar",
                   command=[pod["spec"]["containers"][0]["command"][0], "-u", "-c",
                            "import os; print('sidecar at', os.environ['MY_IP']); import time; time.sleep(300)"],
                   env=[{"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}])
    pod["spec"]["containers"].append(sidecar)
    store.create("pods", pod)
    await wait_for(lambda: kubelet.read_log("default", "duo", "sidecar"), what="sidecar log")
    await wait_for(lambda: kubelet.read_log("default", "duo", "main"), what="main log")
    status = pod_of(store, "duo")["status"]
    assert status["phase"] == "Running"
    assert [c["name"] for c in status["containerStatuses"]] == ["main", "sidecar"]
    assert all(c["ready"] and "running" in c["state"] for c in status["containerStatuses"])
    assert kubelet.read_log("default", "duo", "sidecar") == f"sidecar at {status['podIP']}\n"
    assert kubelet.read_log("default", "duo", "main") == "main up\n"


async def test_unsupported_env_sources_fail_the_pod_clearly(node):
    store, _ = node
    env = [{"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    store.create("pods", python_pod("secretive", "print(1)", node="node-1", env=env))
    await wait_for(lambda: phase(store, "secretive") == "Failed", what="Failed")
    status = pod_of(store, "secretive")["status"]
    assert status["reason"] == "CreateContainerConfigError"
    assert status["message"].startswith("env SECRET: the local cluster supports valueFrom.fieldRef of")
