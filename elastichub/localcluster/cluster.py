"""LocalCluster: the API server, scheduler, kubelets and cloud pool in one event loop.

    cluster = LocalCluster(load_config("cluster.toml"))
    await cluster.start()        # serves on 127.0.0.1:port, writes the kubeconfig
    ...                          # kubectl / kubernetes_asyncio / KubeSpawner talk to cluster.url
    await cluster.stop()         # every pod process ended, the kubeconfig removed

Used by `elastichub localcluster` (cli.py), by the tests (as a fixture) and
by the demo. Production code never imports it.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import shutil
import socket
import tempfile
import uuid
from pathlib import Path

import tornado.httpserver
import tornado.netutil

from . import procs
from .apiserver import make_app, write_kubeconfig
from .cloud import CloudPool, vm_handlers
from .config import ClusterConfig, ConfigError, NodeConfig
from .kubelet import Kubelet, PodIPAllocator
from .scheduler import Scheduler
from .store import ApiError, Store

log = logging.getLogger(__name__)


class ClusterError(Exception):
    """The cluster cannot start (port taken, unwritable kubeconfig...); the message says why."""


class LocalCluster:
    def __init__(self, config: ClusterConfig, *, stop_grace: float = 5.0, **app_settings):
        """`stop_grace`: the longest a pod gets to end after SIGTERM when the
        cluster stops; `app_settings` go to the API server's `make_app`."""
        self.config = config
        self.stop_grace = stop_grace
        self.app_settings = app_settings
        self.cluster_id = uuid.uuid4().hex[:12]
        self.store: Store | None = None
        self.kubelets: dict[str, Kubelet] = {}
        self.scheduler: Scheduler | None = None
        self.cloud: CloudPool | None = None
        self.port: int | None = None
        self._server: tornado.httpserver.HTTPServer | None = None
        self._state_dir: Path | None = None
        self._node_ips: dict[str, str] = {}
        self._ips = PodIPAllocator()
        self._kubeconfig_written: str | None = None

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    @property
    def kubeconfig(self) -> Path:
        return self.config.kubeconfig_path

    def cloud_driver(self):
        """A libcloud driver of this cluster's cloud pool, as `get_driver("localcluster")`
        gives it. libcloud blocks: call it from a thread, not from this cluster's loop."""
        from libcloud.compute.providers import get_driver

        return get_driver("localcluster")("localcluster", host=self.config.host, port=self.port)

    def node_ip(self, name: str) -> str:
        return self._node_ips.get(name, "")

    async def start(self) -> None:
        try:
            sockets = tornado.netutil.bind_sockets(self.config.port, self.config.host, family=socket.AF_INET)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise ClusterError(f"port {self.config.port} on {self.config.host} is already in use "
                                   "(choose another with --port, or 0 for any free port)") from None
            raise ClusterError(f"cannot listen on {self.config.host}:{self.config.port}: {e.strerror}") from None
        self.port = sockets[0].getsockname()[1]
        self._state_dir = Path(tempfile.mkdtemp(prefix="elastichub-localcluster-"))
        try:
            self.store = Store()
            self.cloud = CloudPool(self, self.config.boot_delay, self.config.stop_delay)
            for node in self.config.nodes:
                await self.add_node(node, powered_on=node.tier != "cloud")
                if node.tier == "cloud":
                    self.cloud.adopt(node)
            self.store.log_provider = self._read_log
            self._server = tornado.httpserver.HTTPServer(
                make_app(self.store, vm_handlers(self.cloud), **self.app_settings))
            self._server.add_sockets(sockets)
            self.scheduler = Scheduler(self.store)
            await self.scheduler.start()
            self._write_kubeconfig()
        except BaseException:
            if self._server is None:  # else the server owns (and closes) them
                for s in sockets:
                    s.close()
            await self.stop()
            raise
        log.info("local cluster up at %s with nodes %s", self.url, ", ".join(self.kubelets))

    def _write_kubeconfig(self) -> None:
        path = self.kubeconfig
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_kubeconfig(str(path), self.url)
            os.chmod(path, 0o600)
        except OSError as e:
            raise ClusterError(f"cannot write the kubeconfig {path}: {e.strerror or e}") from None
        self._kubeconfig_written = path.read_text()

    async def add_node(self, node: NodeConfig, powered_on: bool) -> Kubelet:
        if node.name in self.kubelets:
            raise ConfigError(f"node {node.name!r} already exists")
        ip = f"127.0.1.{2 + len(self._node_ips) % 253}"
        self._node_ips[node.name] = ip
        workdir = Path(os.path.expanduser(self.config.workdir)).resolve()
        kubelet = Kubelet(self.store, node, node_ip=ip, ips=self._ips, log_dir=self._state_dir / "logs",
                          workdir=workdir, api_host=self.config.host, api_port=self.port,
                          cluster_id=self.cluster_id, powered_on=powered_on)
        await kubelet.start()
        self.kubelets[node.name] = kubelet
        return kubelet

    async def remove_node(self, name: str) -> None:
        kubelet = self.kubelets.pop(name)
        await kubelet.stop(self.stop_grace)
        try:
            self.store.delete("nodes", name)
        except ApiError:
            pass

    def _read_log(self, namespace: str, name: str, container: str) -> str | None:
        try:
            pod = self.store.get("pods", name, namespace)
        except ApiError:
            return None
        kubelet = self.kubelets.get(pod["spec"].get("nodeName") or "")
        return kubelet.read_log(namespace, name, container) if kubelet else None

    async def stop(self) -> None:
        """Stop scheduling, end every pod process (SIGTERM, then SIGKILL after
        `stop_grace`), close the API server and remove the kubeconfig."""
        if self.scheduler is not None:
            await self.scheduler.stop()
            self.scheduler = None
        if self.cloud is not None:
            await self.cloud.close()
        await asyncio.gather(*(k.stop(self.stop_grace) for k in self.kubelets.values()), return_exceptions=True)
        self.kubelets.clear()
        # Anything a pod left behind, found by the marker every pod process carries.
        await asyncio.to_thread(procs.kill_marked, f"{self.cluster_id}/", True)
        if self.store is not None:
            self.store.close_subscriptions()  # ends the watches, so no connection lingers
        if self._server is not None:
            self._server.stop()
            try:
                async with asyncio.timeout(5):
                    await self._server.close_all_connections()
            except TimeoutError:
                log.warning("some API connections did not close within 5 s")
            self._server = None
        if self._kubeconfig_written is not None:
            try:
                if self.kubeconfig.read_text() == self._kubeconfig_written:  # not rewritten by someone else
                    self.kubeconfig.unlink()
            except OSError:
                pass
            self._kubeconfig_written = None
        if self._state_dir is not None:
            shutil.rmtree(self._state_dir, ignore_errors=True)
            self._state_dir = None
