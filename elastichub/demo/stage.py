"""The demo's stage: a local cluster, and JupyterHub run on it with
`jupyterhub_config_example.py` itself (ElasticSpawner, configurable-http-proxy,
the orchestrator as a managed service).

The example config has one block that only `elastichub demo` turns on: it
reads the JSON file named by $ELASTICHUB_DEMO (ports, the local cluster's
address, working directory, short Tmon/Tcool) and points the same config at
the local cluster. Everything else in the file is what an admin deploys.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..localcluster.cluster import LocalCluster
from ..localcluster.config import ClusterConfig, NodeConfig

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_CONFIG = REPO / "jupyterhub_config_example.py"
SERVICE = "elastichub-orchestrator"


# Servers the demo's cluster holds with the example config: 2 on-prem and 2 cloud nodes of 4Gi, 1G
# guaranteed per server (KubeSpawner.mem_guarantee there): 4 a node.
EXAMPLE_CONFIG_SERVERS = 16

# JupyterHub's line when a managed service's process ends (it restarts it).
_SERVICE_EXITED = re.compile(r"Service \S+ exited with status")


class StageError(Exception):
    """The demo cannot start (a missing piece, a port, a hub that does not come up)."""


def free_port() -> int:
    """A port nobody listens on now, and not one handed out before in this
    process: a hub takes three at once, and the kernel can give the same
    free port to two binds in a row (then the proxy's API port was its
    public one, and the hub never came up)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


_GIVEN: set[int] = set()


def check_port_free(port: int) -> None:
    """Refuse a hub port another program holds, before anything starts: the
    proxy could not bind it, and the demo waited 90 s for a hub that never
    came up (or talked to the other program)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed socket's TIME_WAIT is no owner
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            raise StageError(f"port {port} is in use by another program ({e.strerror}): give another --port, "
                             "or stop that program") from None


def claim_workdir(workdir: Path):
    """An open lock file that keeps other demos out of `workdir` while it
    stays open (the kernel drops the lock when the process ends, however
    it ends). Two demos in one directory would share the hub's database and
    the proxy's pid file: one's clean-up would stop the other's proxy."""
    try:
        lock = open(workdir / "demo.lock", "a+")
    except OSError as e:  # read-only, full, or not a directory: one line, not a traceback
        raise StageError(f"--workdir {workdir}: cannot write there ({e.strerror})") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.seek(0)
        holder = lock.read().strip() or "?"
        lock.close()
        raise StageError(f"{workdir} is in use by another elastichub demo (pid {holder}): give another "
                         "--workdir, or stop that demo") from None
    lock.truncate(0)
    lock.write(str(os.getpid()))
    lock.flush()
    return lock


def error_lines(log: list[str]) -> list[str]:
    """The log's error lines, each with the end of the traceback under it:
    the file and line it points at and the exception. A config with a typo
    logs an empty "[E ... app:4090]" line, then the traceback; the header
    alone told the admin nothing."""
    errors = []
    for i, line in enumerate(log):
        if not (": error: " in line or line.startswith(("[E ", "[C ")) or "CRITICAL" in line):
            continue
        block = []
        for below in log[i + 1:]:
            if not below[:1].isspace():
                break
            if below.strip():
                block.append(below.strip())
        files = [b for b in block if b.startswith('File "')]
        # one entry per error, its traceback's end with it: the last 8 kept are 8 errors
        errors.append("\n".join([line] + ["    " + b for b in ([files[-1]] if files else []) + block[-1:]]))
    return errors


def find_proxy() -> str:
    local = REPO / "node_modules" / ".bin" / "configurable-http-proxy"
    if local.exists():
        return str(local)
    found = shutil.which("configurable-http-proxy")
    if not found:
        raise StageError("configurable-http-proxy is not installed: run ./scripts/setup.sh "
                         "(or `npm install configurable-http-proxy`)")
    return found


@dataclass
class StageSettings:
    onprem_nodes: int = 2
    cloud_nodes: int = 2
    node_cpu: str = "4"
    node_memory: str = "4Gi"
    boot_delay: float = 5.0  # seconds a cloud VM takes to boot (the paper: 290 s)
    tmon: float = 1.0  # the paper's 15 s, scaled down
    tcool: float = 10.0  # the paper's 580 s, scaled down
    theta_out: float = 80.0
    port: int = 0  # the hub's public port (0: any free one)
    config: Path = EXAMPLE_CONFIG
    workdir: Path | None = None
    password: str = field(default_factory=lambda: secrets.token_urlsafe(8))


class Stage:
    def __init__(self, settings: StageSettings):
        self.s = settings
        self.cluster: LocalCluster | None = None
        self.hub_proc = None
        self.token = secrets.token_hex(24)  # the demo's own service (it plays the students)
        self.workdir: Path | None = None
        self._own_workdir = False
        self._lock = None
        self.url = ""
        self.http = AsyncHTTPClient()

    @property
    def workdir_kept(self) -> bool:
        """False: the workdir is a temporary directory, removed when the stage stops."""
        return not self._own_workdir

    @property
    def status_url(self) -> str:
        return f"{self.url}/services/{SERVICE}/"

    async def start(self, log=print, wait_for_orchestrator: bool = True) -> None:
        if not self.s.config.exists():
            raise StageError(f"{self.s.config} not found (the demo runs the repository's example config)")
        proxy = find_proxy()
        if self.s.port:
            check_port_free(self.s.port)
        if self.s.workdir is None:
            import tempfile
            self.workdir = Path(tempfile.mkdtemp(prefix="elastichub-demo-"))
            self._own_workdir = True
        else:
            workdir = self.s.workdir.resolve()
            try:
                workdir.mkdir(parents=True, exist_ok=True)
            except OSError as e:  # a traceback before: the admin needs the directory and the reason
                raise StageError(f"--workdir {workdir}: cannot create it ({e.strerror})") from None
            self._lock = claim_workdir(workdir)  # before it is ours: another demo's log is not our error
            self.workdir = workdir
        nodes = [NodeConfig(f"onprem-{i}", "on-prem", self.s.node_cpu, self.s.node_memory)
                 for i in range(1, self.s.onprem_nodes + 1)]
        nodes += [NodeConfig(f"cloud-{i}", "cloud", self.s.node_cpu, self.s.node_memory)
                  for i in range(1, self.s.cloud_nodes + 1)]
        self.cluster = LocalCluster(ClusterConfig(
            nodes=tuple(nodes), port=0, kubeconfig=str(self.workdir / "kubeconfig"), boot_delay=self.s.boot_delay,
            workdir=str(self.workdir / "home")))
        (self.workdir / "home").mkdir(exist_ok=True)
        log(f"starting the local cluster: {self.s.onprem_nodes} on-prem node(s), a pool of "
            f"{self.s.cloud_nodes} cloud VM(s) ({self.s.node_cpu} CPU / {self.s.node_memory} each, "
            f"boot {self.s.boot_delay:g} s)")
        await self.cluster.start()
        port = self.s.port or free_port()
        self.url = f"http://127.0.0.1:{port}"
        settings = {
            "workdir": str(self.workdir), "port": port, "hub_port": free_port(), "proxy_api_port": free_port(),
            "service_port": free_port(), "proxy": proxy, "kubeconfig": str(self.cluster.kubeconfig),
            "cluster_host": self.cluster.config.host, "cluster_port": self.cluster.port,
            "token": self.token, "password": self.s.password, "tmon": self.s.tmon, "tcool": self.s.tcool,
            "theta_out": self.s.theta_out, "boot_s": self.s.boot_delay,
            "allow_root": os.geteuid() == 0,
        }
        demo_file = self.workdir / "demo.json"
        demo_file.write_text(json.dumps(settings, indent=1))
        env = {**os.environ, "ELASTICHUB_DEMO": str(demo_file), "KUBECONFIG": str(self.cluster.kubeconfig),
               "PYTHONUNBUFFERED": "1",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        log(f"starting JupyterHub with {self.s.config.name}")
        self._hub_log = open(self.workdir / "jupyterhub.log", "wb")
        self.hub_proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "jupyterhub", "-f", str(self.s.config), cwd=self.workdir, env=env,
            stdout=self._hub_log, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        await self._wait_up(wait_for_orchestrator)

    def hub_log(self, lines: int = 40) -> str:
        """The log's last `lines`, without the proxy's lines (while a service
        is down they are most of it: a 503 or ECONNREFUSED per request)."""
        try:
            text = (self.workdir / "jupyterhub.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join([line for line in text.splitlines() if "ConfigProxy" not in line][-lines:])

    def hub_errors(self) -> str:
        """What went wrong, from the log: the services' one-line errors and
        the hub's error lines (the last few), else its last lines."""
        log = self.hub_log(lines=100_000).splitlines()
        errors = error_lines(log)
        return "\n".join(errors[-8:]) if errors else "\n".join(log[-20:])

    async def api(self, method: str, path: str, body=None, token: str | None = None, timeout: float = 120):
        url = path if path.startswith("http") else f"{self.url}/hub/api{path}"
        resp = await self.http.fetch(HTTPRequest(
            url, method=method, body=None if body is None else json.dumps(body), allow_nonstandard_methods=True,
            headers={"Authorization": f"token {token or self.token}"}, request_timeout=timeout,
            follow_redirects=False), raise_error=False)
        try:
            return resp.code, json.loads(resp.body) if resp.body else None
        except ValueError:
            return resp.code, resp.body

    async def orchestrator_status(self) -> dict | None:
        try:  # a status late or cut off is skipped: the view shows the last one and asks again
            code, body = await self.api("GET", f"{self.status_url}api/status", timeout=10)
        except (OSError, HTTPClientError):
            return None
        return body if code == 200 and isinstance(body, dict) else None

    async def _wait_up(self, orchestrator: bool, timeout: float = 90) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            if self.hub_proc.returncode is not None:
                raise StageError("JupyterHub exited at start:\n" + self.hub_errors())
            if orchestrator and _SERVICE_EXITED.search(self.hub_log(lines=200)):
                # the hub would start it again and again: its error is in the log already
                raise StageError("the orchestrator exited at start:\n" + self.hub_errors())
            try:
                if orchestrator and await self.orchestrator_status() is not None:
                    return
                if not orchestrator and (await self.api("GET", "/"))[0] == 200:
                    return
            except OSError:
                pass
            await asyncio.sleep(0.5)
        raise StageError(f"the hub and its orchestrator did not come up within {timeout:g} s:\n" + self.hub_errors())

    async def stop(self) -> None:
        """Stop the hub (it stops the servers and its services), then the cluster: nothing left behind."""
        if self.hub_proc is not None:
            if self.hub_proc.returncode is None:
                self.hub_proc.send_signal(signal.SIGTERM)
                try:
                    async with asyncio.timeout(60):
                        await self.hub_proc.wait()
                except TimeoutError:
                    pass
            try:
                os.killpg(self.hub_proc.pid, signal.SIGKILL)  # whatever of its group is left (proxy, service)
            except ProcessLookupError:
                pass
            if self.hub_proc.returncode is None:
                await self.hub_proc.wait()
            self._hub_log.close()
            self.hub_proc = None
            _stop_proxy(self.workdir / "jupyterhub-proxy.pid")
        if self.cluster is not None:
            await self.cluster.stop()
            self.cluster = None
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def _stop_proxy(pid_file: Path) -> None:
    """The hub starts configurable-http-proxy in a session of its own, out of
    the hub's process group: a hub that fails before its clean-up leaves it
    running. Its pid file says which process it is."""
    try:
        pid = int(pid_file.read_text().strip())
        if b"configurable-http-proxy" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return  # the pid was reused: not ours to stop
        os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass  # no pid file, or the proxy is gone already
