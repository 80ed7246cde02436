"""The local cluster's kubelet: one per node, runs the pods bound to it as local processes.

Each container runs its `command` + `args` (argv as given: the image, and so
its entrypoint, is ignored because the local environment runs) with the
pod's env, in its own process group, stdout and stderr to a per-container log
file. Each pod gets its own loopback address 127.0.x.y (status.podIP); the
process is expected to bind it, as a container binds its pod's network
namespace. A container that declares a containerPort is Ready once something
accepts connections on podIP:port; one without ports is Ready once started.

Deleting a pod (the API server sets deletionTimestamp) sends SIGTERM, waits
the grace period, sends SIGKILL, then removes the pod from the store. A
process that exits ends its container (no restarts: restartPolicy is
recorded, not enforced); the pod is Succeeded when all exit 0, else Failed.
Resource requests and limits are recorded, never enforced.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import random
import shutil
import signal
import sys
import urllib.parse
from pathlib import Path
from typing import Callable

from . import procs
from .config import TIER_LABEL, NodeConfig
from .events import EventRecorder
from .store import ApiError, Store, now_rfc3339

log = logging.getLogger(__name__)

# Variables a pod process inherits from the cluster's own environment (a
# container gets its image's environment; here the local environment runs).
PASSTHROUGH_ENV = ("HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME",
                   "SHELL", "PYTHONPATH", "VIRTUAL_ENV")
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
DEFAULT_GRACE = 30
PROBE_INTERVAL = 0.1  # seconds between readiness connection attempts
KUBELET_VERSION = "v1.30.0-localcluster"


class PodIPAllocator:
    """Loopback addresses 127.0.x.y for pods, x in 2..255, y in 2..254 (127.0.0.1 is the API
    server; 127.0.1.* the nodes), handed out round-robin so a freed address is not reused at
    once. Each cluster starts at a random place, so clusters running side by side on one
    machine (parallel test runs) are unlikely to hand out the same address."""

    SIZE = 254 * 253

    def __init__(self, start: int | None = None) -> None:
        self._next = random.randrange(self.SIZE) if start is None else start % self.SIZE
        self._in_use: set[str] = set()

    @staticmethod
    def _address(i: int) -> str:
        return f"127.0.{2 + i // 253}.{2 + i % 253}"

    def allocate(self) -> str:
        for _ in range(self.SIZE):
            ip = self._address(self._next)
            self._next = (self._next + 1) % self.SIZE
            if ip not in self._in_use:
                self._in_use.add(ip)
                return ip
        raise RuntimeError("no free pod IP left in 127.0.2.2-127.0.255.254")

    def release(self, ip: str | None) -> None:
        self._in_use.discard(ip)


class StartError(Exception):
    """A container cannot be started; `reason` is the Kubernetes-style reason."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


@dataclasses.dataclass
class Container:
    name: str
    image: str
    ports: list[int]
    log_path: Path
    proc: asyncio.subprocess.Process | None = None
    started_at: str | None = None
    finished_at: str | None = None
    exit_code: int | None = None
    error: StartError | None = None
    ready: bool = False

    def status(self) -> dict:
        container_id = f"local://{self.proc.pid}" if self.proc else ""
        if self.error is not None:
            state = {"terminated": {"exitCode": 128, "reason": self.error.reason, "message": self.error.message,
                                    "startedAt": None, "finishedAt": self.finished_at}}
        elif self.exit_code is not None:
            reason = "Completed" if self.exit_code == 0 else "Error"
            state = {"terminated": {"exitCode": self.exit_code, "reason": reason, "startedAt": self.started_at,
                                    "finishedAt": self.finished_at, "containerID": container_id}}
        elif self.proc is not None:
            state = {"running": {"startedAt": self.started_at}}
        else:
            state = {"waiting": {"reason": "ContainerCreating"}}
        out = {"name": self.name, "image": self.image, "imageID": "", "ready": self.ready, "restartCount": 0,
               "started": self.proc is not None and self.exit_code is None, "state": state, "lastState": {}}
        if container_id:
            out["containerID"] = container_id
        return out


@dataclasses.dataclass
class PodRuntime:
    namespace: str
    name: str
    uid: str
    marker: str
    containers: list[Container]
    grace: int
    ip: str | None = None
    phase: str = "Pending"
    reason: str | None = None
    message: str | None = None
    start_time: str | None = None
    # None while it runs on its own; "delete", "shutdown", "cluster" or "gone" once told to end.
    stop_reason: str | None = None
    task: asyncio.Task | None = None
    launched: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    exited: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    def running(self) -> list[Container]:
        return [c for c in self.containers if c.proc is not None and c.exit_code is None]


class Kubelet:
    """Registers its node, runs the pods bound to it, and powers on/off with its (cloud) VM."""

    def __init__(self, store: Store, node: NodeConfig, *, node_ip: str, ips: PodIPAllocator, log_dir: Path,
                 workdir: Path, api_host: str, api_port: int, cluster_id: str, powered_on: bool = True):
        self.store, self.node, self.name = store, node, node.name
        self.node_ip, self.ips, self.log_dir, self.workdir = node_ip, ips, log_dir, workdir
        self.api_host, self.api_port, self.cluster_id = api_host, api_port, cluster_id
        self.powered_on = powered_on
        self.events = EventRecorder(store, "kubelet", host=node.name)
        self._pods: dict[str, PodRuntime] = {}
        self._watch_task: asyncio.Task | None = None
        self._subscription = None
        self._stopping = False
        self._background: set[asyncio.Task] = set()  # held, or asyncio may collect them mid-run

    def _spawn_task(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ node object

    def node_object(self) -> dict:
        labels = {"kubernetes.io/hostname": self.name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64", TIER_LABEL: self.node.tier, **self.node.labels}
        resources = {"cpu": self.node.cpu, "memory": self.node.memory, "pods": "110"}
        info = {"architecture": "amd64", "bootID": "", "containerRuntimeVersion": "localcluster://processes",
                "kernelVersion": os.uname().release, "kubeProxyVersion": KUBELET_VERSION,
                "kubeletVersion": KUBELET_VERSION, "machineID": self.name, "operatingSystem": "linux",
                "osImage": "local processes (elastichub localcluster)", "systemUUID": self.name}
        node = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": self.name, "labels": labels, "annotations": {}},
            "spec": {"providerID": f"localcluster://{self.name}", "taints": [dict(t) for t in self.node.taints]},
            "status": {"capacity": dict(resources), "allocatable": dict(resources),
                       "addresses": [{"type": "InternalIP", "address": self.node_ip},
                                     {"type": "Hostname", "address": self.name}],
                       "nodeInfo": info, "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                       "conditions": []},
        }
        _set_power_state(node, self.powered_on)
        return node

    def _update_node(self, mutate: Callable[[dict], None]) -> dict:
        return self.store.update("nodes", self.name, mutate)

    def _power_node(self, on: bool) -> dict | None:
        """Its Node, its power state set. A Node deleted meanwhile (kubectl delete node) is registered anew
        by a boot, as a kubelet registers its node when it starts, and stays gone through a power-off
        (None): the VM stops all the same, as a cloud's does."""
        try:
            return self._update_node(lambda n: _set_power_state(n, on))
        except ApiError as e:
            if e.code != 404:
                raise
        return self.store.create("nodes", self.node_object()) if on else None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self.store.create("nodes", self.node_object())
        self._watch_task = asyncio.create_task(self._watch(), name=f"kubelet-{self.name}")

    async def stop(self, max_grace: float = 5.0) -> None:
        """End every pod process (SIGTERM, at most `max_grace` s, SIGKILL) and stop watching."""
        self._stopping = True
        if self._subscription is not None:
            self._subscription.close()
        if self._watch_task is not None:
            self._watch_task.cancel()
            await asyncio.gather(self._watch_task, return_exceptions=True)
        runtimes = [rt for rt in self._pods.values() if rt.task is not None and not rt.task.done()]
        for rt in runtimes:
            if rt.stop_reason is None:
                rt.stop_reason = "cluster"
        await asyncio.gather(*(self._terminate(rt, min(rt.grace, max_grace)) for rt in runtimes),
                             return_exceptions=True)
        await asyncio.gather(*(rt.task for rt in runtimes), return_exceptions=True)
        await asyncio.gather(*list(self._background), return_exceptions=True)
        for rt in list(self._pods.values()):
            self._cleanup(rt)

    async def power_on(self) -> None:
        """The VM finished booting: the node turns Ready and runs the pods waiting for it."""
        self.powered_on = True
        node = self._power_node(True)
        self.events.record(node, "NodeReady", f"Node {self.name} status is now: NodeReady")
        pods, _ = self.store.list("pods", field_selector=f"spec.nodeName={self.name}")
        for pod in pods:
            self._on_event("ADDED", pod)

    async def power_off(self) -> None:
        """The VM was stopped: every pod process dies at once and its pod fails (NodeShutdown)."""
        self.powered_on = False
        node = self._power_node(False)
        if node is not None:
            self.events.record(node, "NodeNotReady", f"Node {self.name} status is now: NodeNotReady (powered off)",
                               type="Warning")
        runtimes = [rt for rt in self._pods.values() if rt.task is not None and not rt.task.done()]
        for rt in runtimes:
            if rt.stop_reason is None:
                rt.stop_reason = "shutdown"
            await rt.launched.wait()
            for c in rt.running():
                procs.signal_group(c.proc.pid, signal.SIGKILL)
            await asyncio.to_thread(procs.kill_marked, rt.marker)
        await asyncio.gather(*(rt.task for rt in runtimes), return_exceptions=True)
        # Pods bound here but never started fail too: their node is gone.
        pods, _ = self.store.list("pods", field_selector=f"spec.nodeName={self.name}")
        for pod in pods:
            uid = pod["metadata"]["uid"]
            if uid not in self._pods and pod.get("status", {}).get("phase", "Pending") == "Pending":
                self._fail_unstarted(pod)

    # ------------------------------------------------------------------ watching pods

    async def _watch(self) -> None:
        while not self._stopping:
            # initial=True: after a cut-off, the re-subscription replays what is there now.
            self._subscription = self.store.subscribe(
                "pods", field_selector=f"spec.nodeName={self.name}", raw=True, initial=True)
            async for event in self._subscription:
                try:
                    self._on_event(event.type, event.object)
                except Exception:
                    log.exception("kubelet %s: handling %s of a pod failed", self.name, event.type)

    def _on_event(self, event_type: str, pod: dict) -> None:
        meta = pod["metadata"]
        rt = self._pods.get(meta["uid"])
        if event_type == "DELETED":
            if rt is not None:
                if rt.task is not None and not rt.task.done():
                    if rt.stop_reason is None:  # removed behind our back (e.g. a forced delete)
                        rt.stop_reason = "gone"
                        self._spawn_task(self._terminate(rt, 0))
                else:
                    self._cleanup(rt)
            return
        if meta.get("deletionTimestamp"):
            if rt is None or rt.task is None or rt.task.done():
                self._delete_from_store(pod)
            elif rt.stop_reason is None:
                rt.stop_reason = "delete"
                grace = meta.get("deletionGracePeriodSeconds")
                self._spawn_task(self._terminate(rt, rt.grace if grace is None else int(grace)))
            return
        if rt is None and self.powered_on and pod.get("status", {}).get("phase", "Pending") == "Pending":
            rt = self._new_runtime(pod)
            self._pods[rt.uid] = rt
            rt.task = asyncio.create_task(self._run(rt, pod), name=f"pod-{rt.namespace}-{rt.name}")

    def _new_runtime(self, pod: dict) -> PodRuntime:
        meta, spec = pod["metadata"], pod["spec"]
        pod_dir = self.log_dir / f"{meta['namespace']}_{meta['name']}_{meta['uid']}"
        containers = [
            Container(name=c.get("name", f"c{i}"), image=c.get("image") or "",
                      ports=[int(p["containerPort"]) for p in c.get("ports") or [] if p.get("containerPort")],
                      log_path=pod_dir / f"{c.get('name', f'c{i}')}.log")
            for i, c in enumerate(spec.get("containers") or [])
        ]
        grace = spec.get("terminationGracePeriodSeconds")
        return PodRuntime(namespace=meta["namespace"], name=meta["name"], uid=meta["uid"],
                          marker=procs.marker_value(self.cluster_id, meta["uid"]), containers=containers,
                          grace=DEFAULT_GRACE if grace is None else int(grace))

    # ------------------------------------------------------------------ running a pod

    async def _run(self, rt: PodRuntime, pod: dict) -> None:
        try:
            await self._launch(rt, pod)
            rt.launched.set()
            if rt.running():
                await self._supervise(rt, pod)
        except Exception as e:  # a bug must not leave the pod Pending forever
            log.exception("kubelet %s: pod %s/%s failed", self.name, rt.namespace, rt.name)
            rt.phase, rt.reason, rt.message = "Failed", "KubeletError", f"local cluster kubelet error: {e}"
        finally:
            rt.launched.set()
            for c in rt.running():  # only after an error above
                procs.signal_group(c.proc.pid, signal.SIGKILL)
                await c.proc.wait()
            # The container is gone: so is everything it started, as with a cgroup.
            await asyncio.to_thread(procs.kill_marked, rt.marker)
            rt.exited.set()
            self._finish(rt, pod)

    async def _launch(self, rt: PodRuntime, pod: dict) -> None:
        rt.ip = self.ips.allocate()
        rt.start_time = now_rfc3339()
        self._push_status(rt)
        specs = pod["spec"].get("containers") or []
        if not specs:
            rt.phase, rt.reason, rt.message = "Failed", "CreateContainerConfigError", "the pod has no containers"
            return
        prepared = []
        for container, spec in zip(rt.containers, specs):
            try:
                prepared.append(self._prepare(rt, pod, spec))
            except StartError as e:
                self._start_failed(rt, pod, container, e)
                return
        for container, (argv, env, cwd) in zip(rt.containers, prepared):
            if rt.stop_reason is not None:
                return
            try:
                container.proc = await self._spawn(container, argv, env, cwd)
            except StartError as e:
                self._start_failed(rt, pod, container, e)
                return
            container.started_at = now_rfc3339()
            container.ready = not container.ports
            self.events.record(pod, "Created", f"Created container {container.name}")
            self.events.record(pod, "Started", f"Started container {container.name}")
        rt.phase = "Running"
        self._push_status(rt)

    def _prepare(self, rt: PodRuntime, pod: dict, spec: dict) -> tuple[list[str], dict[str, str], str]:
        argv = [str(a) for a in (spec.get("command") or []) + (spec.get("args") or [])]
        if not argv:
            raise StartError("CreateContainerConfigError", f"container {spec.get('name')!r} has no command or args: "
                             "the local cluster ignores images, so it needs the command to run")
        cwd = self.workdir / spec["workingDir"] if spec.get("workingDir") else self.workdir
        if not cwd.is_dir():
            raise StartError("CreateContainerConfigError", f"working directory {str(cwd)!r} does not exist")
        return argv, self._environment(rt, pod, spec), str(cwd)

    def _environment(self, rt: PodRuntime, pod: dict, spec: dict) -> dict[str, str]:
        env = {k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ}
        # The local environment is the image: its executables (the venv's) come first.
        env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", os.defpath)])
        env.update(HOSTNAME=rt.name, KUBERNETES_SERVICE_HOST=self.api_host,
                   KUBERNETES_SERVICE_PORT=str(self.api_port))
        fields = {"metadata.name": rt.name, "metadata.namespace": rt.namespace, "metadata.uid": rt.uid,
                  "spec.nodeName": self.name, "status.podIP": rt.ip, "status.hostIP": self.node_ip,
                  "spec.serviceAccountName": pod["spec"].get("serviceAccountName", "default")}
        for item in spec.get("env") or []:
            name = item.get("name")
            if "valueFrom" in item:
                path = ((item["valueFrom"] or {}).get("fieldRef") or {}).get("fieldPath")
                if path not in fields:
                    raise StartError("CreateContainerConfigError",
                                     f"env {name}: the local cluster supports valueFrom.fieldRef of "
                                     f"{', '.join(sorted(fields))} only")
                env[name] = fields[path]
            else:
                env[name] = str(item.get("value", ""))
        service_url = env.get("JUPYTERHUB_SERVICE_URL")
        if service_url:
            # KubeSpawner tells the server to listen on 0.0.0.0 (every address of
            # its own network namespace). Here all pods share the host's network,
            # so the server binds its pod IP instead, or two servers would clash.
            parsed = urllib.parse.urlsplit(service_url)
            if parsed.hostname == "0.0.0.0":
                netloc = rt.ip + (f":{parsed.port}" if parsed.port else "")
                env["JUPYTERHUB_SERVICE_URL"] = urllib.parse.urlunsplit(parsed._replace(netloc=netloc))
        env[procs.MARKER] = rt.marker  # finds every process of this pod, even those that left its group
        return env

    async def _spawn(self, container: Container, argv: list[str], env: dict, cwd: str):
        container.log_path.parent.mkdir(parents=True, exist_ok=True)
        executable = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=env["PATH"])
        if executable is None:
            raise StartError("StartError", f'exec: "{argv[0]}": executable file not found in $PATH')
        with open(container.log_path, "ab") as log_file:
            try:
                return await asyncio.create_subprocess_exec(
                    executable, *argv[1:], env=env, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
                    stdout=log_file, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
            except OSError as e:
                raise StartError("StartError", f'exec: "{argv[0]}": {e.strerror or e}') from None

    def _start_failed(self, rt: PodRuntime, pod: dict, container: Container, error: StartError) -> None:
        container.error = error
        container.finished_at = now_rfc3339()
        for c in rt.running():
            procs.signal_group(c.proc.pid, signal.SIGKILL)
        rt.phase, rt.reason, rt.message = "Failed", error.reason, error.message
        self.events.record(pod, "Failed", f"Error: {error.message}", type="Warning")

    async def _supervise(self, rt: PodRuntime, pod: dict) -> None:
        probes = [asyncio.create_task(self._probe(rt, c)) for c in rt.running() if c.ports]
        try:
            await asyncio.gather(*(self._wait_exit(rt, c) for c in rt.running()))
        finally:
            for p in probes:
                p.cancel()
        if rt.stop_reason is None:
            failed = [c for c in rt.containers if c.exit_code != 0]
            rt.phase = "Failed" if failed else "Succeeded"

    async def _wait_exit(self, rt: PodRuntime, c: Container) -> None:
        code = await c.proc.wait()
        c.exit_code = 128 - code if code < 0 else code  # killed by signal N: 128+N, as runtimes report
        c.finished_at = now_rfc3339()
        c.ready = False
        if rt.stop_reason is None and rt.running():
            self._push_status(rt)

    async def _probe(self, rt: PodRuntime, c: Container) -> None:
        """Ready once every declared port accepts a connection on the pod IP."""
        pending = list(c.ports)
        while pending and c.exit_code is None:
            try:
                async with asyncio.timeout(1.0):
                    _, writer = await asyncio.open_connection(rt.ip, pending[0])
                writer.close()
                pending.pop(0)
                continue
            except OSError:  # refused, or no answer within 1 s (TimeoutError is an OSError)
                await asyncio.sleep(PROBE_INTERVAL)
        if not pending and c.exit_code is None:
            c.ready = True
            if rt.stop_reason is None:
                self._push_status(rt)

    async def _terminate(self, rt: PodRuntime, grace: float) -> None:
        await rt.launched.wait()
        running = rt.running()
        if running and rt.stop_reason in ("delete", "cluster"):
            pod = {"metadata": {"name": rt.name, "namespace": rt.namespace, "uid": rt.uid}, "kind": "Pod"}
            for c in running:
                self.events.record(pod, "Killing", f"Stopping container {c.name}")
        for c in running:
            procs.signal_group(c.proc.pid, signal.SIGTERM if grace > 0 else signal.SIGKILL)
        try:
            async with asyncio.timeout(grace):
                await rt.exited.wait()
        except TimeoutError:
            for c in rt.running():
                procs.signal_group(c.proc.pid, signal.SIGKILL)
            await asyncio.to_thread(procs.kill_marked, rt.marker)

    # ------------------------------------------------------------------ status

    def _push_status(self, rt: PodRuntime) -> None:
        ready = rt.phase == "Running" and all(c.ready for c in rt.containers)
        now = now_rfc3339()

        def mutate(pod: dict) -> None:
            status = pod.setdefault("status", {})
            old = {c.get("type"): c for c in status.get("conditions") or []}

            def condition(type_: str, value: bool) -> dict:
                text = "True" if value else "False"
                previous = old.get(type_, {})
                changed = previous.get("status") != text
                return {"type": type_, "status": text, "lastProbeTime": None,
                        "lastTransitionTime": now if changed else previous.get("lastTransitionTime", now)}

            conditions = [condition("Initialized", True), condition("Ready", ready),
                          condition("ContainersReady", ready)]
            if "PodScheduled" in old:
                conditions.append(old["PodScheduled"])
            status.update(phase=rt.phase, hostIP=self.node_ip, hostIPs=[{"ip": self.node_ip}],
                          startTime=rt.start_time, conditions=conditions,
                          containerStatuses=[c.status() for c in rt.containers])
            if rt.ip:
                status.update(podIP=rt.ip, podIPs=[{"ip": rt.ip}])
            for key, value in (("reason", rt.reason), ("message", rt.message)):
                if value:
                    status[key] = value
                else:
                    status.pop(key, None)

        try:
            self.store.update("pods", rt.name, mutate, namespace=rt.namespace)
        except ApiError as e:
            if e.code != 404:  # 404: deleted meanwhile, nothing left to report on
                raise

    def _finish(self, rt: PodRuntime, pod: dict) -> None:
        if rt.stop_reason in ("delete", "gone"):
            self._delete_from_store(pod)
            self._cleanup(rt)
        elif rt.stop_reason == "shutdown":
            for c in rt.containers:
                c.ready = False
            rt.phase, rt.reason, rt.message = "Failed", "NodeShutdown", self._shutdown_message()
            self._push_status(rt)
            self.events.record(pod, "NodeShutdown", rt.message, type="Warning")
        elif rt.stop_reason is None:
            self._push_status(rt)

    def _shutdown_message(self) -> str:
        return f"Pod was terminated: node {self.name} was powered off"

    def _fail_unstarted(self, pod: dict) -> None:
        message = self._shutdown_message()

        def mutate(p: dict) -> None:
            p.setdefault("status", {}).update(phase="Failed", reason="NodeShutdown", message=message)

        try:
            self.store.update("pods", pod["metadata"]["name"], mutate, namespace=pod["metadata"]["namespace"])
        except ApiError:
            return
        self.events.record(pod, "NodeShutdown", message, type="Warning")

    def _delete_from_store(self, pod: dict) -> None:
        meta = pod["metadata"]
        try:
            current = self.store.get("pods", meta["name"], meta["namespace"])
            if current["metadata"]["uid"] == meta["uid"]:  # not a new pod of the same name
                self.store.delete("pods", meta["name"], meta["namespace"])
        except ApiError as e:
            if e.code != 404:
                raise

    def _cleanup(self, rt: PodRuntime) -> None:
        self._pods.pop(rt.uid, None)
        self.ips.release(rt.ip)
        if rt.containers:
            shutil.rmtree(rt.containers[0].log_path.parent, ignore_errors=True)

    # ------------------------------------------------------------------ logs

    def read_log(self, namespace: str, name: str, container: str) -> str | None:
        """A container's output so far (stdout and stderr interleaved), or None before it started.

        The API server has already checked that the container name is valid."""
        rt = next((r for r in self._pods.values() if r.namespace == namespace and r.name == name), None)
        chosen = next((c for c in rt.containers if c.name == container), None) if rt else None
        if chosen is None:
            return None
        try:
            return chosen.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return None


def _set_power_state(node: dict, on: bool) -> None:
    """Ready condition and unreachable taint of a node whose VM is on or off."""
    now = now_rfc3339()
    status = node.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
    if on:
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"}
    else:
        ready = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                 "message": "Kubelet stopped posting node status: the VM is powered off."}
    ready.update(lastHeartbeatTime=now, lastTransitionTime=now)
    status["conditions"] = [ready] + conditions
    spec = node.setdefault("spec", {})
    taints = [t for t in spec.get("taints") or [] if t.get("key") != UNREACHABLE_TAINT]
    if not on:
        taints.append({"key": UNREACHABLE_TAINT, "effect": "NoSchedule", "timeAdded": now})
    spec["taints"] = taints

