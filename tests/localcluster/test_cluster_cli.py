"""`elastichub localcluster` as a user runs it: a real process, real signals, no orphans."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest
from kubernetes_asyncio import client, config
from lc_clustertools import alive, pid_file_pids, python_pod, wait_for

pytestmark = [pytest.mark.timeout(90), pytest.mark.slow]

ESCAPING_POD = """
import os, subprocess, sys, time
# A grandchild that leaves the pod's process group and ignores SIGTERM.
child = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                          "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"],
                         start_new_session=True)
open(PIDS, "w").write(f"{os.getpid()} {child.pid}")
print("escaper up", flush=True)
time.sleep(300)
"""


def cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "elastichub", "localcluster", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_signal_stops_the_cluster_and_every_pod_process(tmp_path, sig):
    kubeconfig = tmp_path / "kubeconfig"
    proc = cli("--port", "0", "--kubeconfig", str(kubeconfig), cwd=tmp_path)
    try:
        await wait_for(lambda: kubeconfig.exists() or proc.poll() is not None, timeout=30, what="kubeconfig")
        assert proc.poll() is None, proc.communicate()
        server = json.loads(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith("http://127.0.0.1:")

        pids = tmp_path / "pids"
        async with await config.new_client_from_config(config_file=str(kubeconfig)) as api:
            v1 = client.CoreV1Api(api)
            nodes = await v1.list_node()
            assert sorted(n.metadata.name for n in nodes.items) == ["cloud-1", "cloud-2", "onprem-1", "onprem-2"]
            for i in range(2):
                pod = python_pod(f"escaper-{i}", f"PIDS = {str(pids) + str(i)!r}\n" + ESCAPING_POD)
                del pod["status"]
                await v1.create_namespaced_pod("default", pod)
            for i in range(2):
                await wait_for(lambda: len(pid_file_pids(f"{pids}{i}")) == 2, timeout=20, what="pods started")
            running = await v1.list_namespaced_pod("default")
            assert {p.spec.node_name for p in running.items} <= {"onprem-1", "onprem-2"}
        # The Debian kubectl reads the pods and their logs.
        kubectl = ["kubectl", "--kubeconfig", str(kubeconfig)]
        wide = subprocess.run(kubectl + ["get", "pods", "-o", "wide"], capture_output=True, text=True, timeout=30)
        assert wide.returncode == 0 and "escaper-0" in wide.stdout and "127.0." in wide.stdout, wide.stderr
        await wait_for(lambda: subprocess.run(kubectl + ["logs", "escaper-0"], capture_output=True, text=True,
                                              timeout=30).stdout == "escaper up\n", timeout=20, what="kubectl logs")
        procs = [p for i in range(2) for p in pid_file_pids(f"{pids}{i}")]
        assert all(alive(p) for p in procs)

        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "stopped" in out
        assert not [p for p in procs if alive(p)], "orphaned pod processes"
        assert not kubeconfig.exists()  # it pointed at a server that is gone
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_bad_config_is_one_line_naming_the_key(tmp_path):
    bad = tmp_path / "cluster.toml"
    bad.write_text('[[nodes]]\nname = "a"\ntier = "on-prem"\ncpu = "4"\nmemory = "eight"\n')
    out, err = cli("--config", str(bad), "--port", "0").communicate(timeout=30)
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "nodes[0].memory" in err and "'eight' is not a quantity" in err


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = cli("--port", str(port), "--kubeconfig", str(tmp_path / "kc"))
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in err and "Traceback" not in err


async def test_an_unwritable_kubeconfig_is_a_clear_error_and_leaves_nothing_running(tmp_path):
    from elastichub.localcluster.cluster import ClusterError, LocalCluster
    from elastichub.localcluster.config import default_config

    blocker = tmp_path / "file"
    blocker.write_text("")
    cluster = LocalCluster(default_config().replace(port=0, kubeconfig=str(blocker / "kc")))
    with pytest.raises(ClusterError, match="cannot write the kubeconfig"):
        await cluster.start()
    assert not cluster.kubelets and cluster._server is None
