"""Finding and ending every process of a pod, as a container runtime's cgroup would.

A pod's processes are its container processes, each the leader of its own
process group, plus whatever they start. Children may leave that group
(Jupyter starts each kernel in a new session) and outlive their parent
(reparented to init), so the group alone cannot find them. Every pod process
is therefore started with a marker variable in its environment, which its
descendants inherit: a scan of /proc/*/environ finds them all, wherever they
moved. (Linux only, like the rest of the local cluster.)
"""

from __future__ import annotations

import os
import signal
import time

MARKER = "ELASTICHUB_LOCALCLUSTER_POD"


def marker_value(cluster_id: str, pod_uid: str) -> str:
    return f"{cluster_id}/{pod_uid}"


def processes_with_marker(value: str, prefix: bool = False) -> list[int]:
    """Live (non-zombie) pids whose environment holds MARKER=value (or MARKER=value...)."""
    needle = f"{MARKER}={value}".encode()
    if not prefix:
        needle += b"\0"
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read()
        except OSError:  # gone, or not ours to read
            continue
        if b"\0" + needle in b"\0" + env + b"\0":
            if not _is_zombie(int(entry)):
                found.append(int(entry))
    return found


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] in (b"Z", b"X")
    except (OSError, ValueError):
        return True


def signal_group(pgid: int, sig: int) -> None:
    """Signal a process group, ignoring one that is already gone."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_marked(value: str, prefix: bool = False, wait: float = 2.0) -> int:
    """SIGKILL every process carrying the marker and wait (up to `wait` s) until
    they are dead, so "the pod is gone" means its processes are; how many there were."""
    pids = processes_with_marker(value, prefix)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + wait
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if not _is_zombie(p)]
        if pids:
            time.sleep(0.01)
    return len(pids)
