"""Helpers of the API server tests: an in-process server and sample objects."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass

import tornado.httpclient
import tornado.httpserver
import tornado.netutil

from elastichub.localcluster.apiserver import make_app, write_kubeconfig
from elastichub.localcluster.store import Store


@dataclass
class ApiServer:
    store: Store
    url: str
    port: int
    kubeconfig: str
    server: tornado.httpserver.HTTPServer

    def stop(self) -> None:
        self.store.close_subscriptions()
        self.server.stop()

    async def aclose(self) -> None:
        """stop(), then close the connections clients keep alive."""
        self.stop()
        await self.server.close_all_connections()


def start_api_server(tmp_path, store: Store | None = None, **app_settings) -> ApiServer:
    """An API server in this event loop on 127.0.0.1:<ephemeral>, plus a kubeconfig."""
    store = store or Store()
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1", family=socket.AF_INET)
    port = sockets[0].getsockname()[1]
    server = tornado.httpserver.HTTPServer(make_app(store, **app_settings))
    server.add_sockets(sockets)
    url = f"http://127.0.0.1:{port}"
    kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), url)
    return ApiServer(store, url, port, kubeconfig, server)


def make_node(name: str, tier: str = "on-prem", ready: bool = True, cpu: str = "4", memory: str = "8Gi") -> dict:
    """A node object as the cluster would create it (tests of the API alone)."""
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "elastichub.io/tier": tier}},
        "spec": {},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                            "reason": "KubeletReady" if ready else "PoweredOff",
                            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                            "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""}],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.28.0-elastichub", "osImage": "local", "kernelVersion": "local",
                         "containerRuntimeVersion": "local-process://1", "architecture": "amd64",
                         "operatingSystem": "linux", "bootID": "", "kubeProxyVersion": "", "machineID": "",
                         "systemUUID": ""},
        },
    }


def make_pod(name: str, labels: dict | None = None, node: str | None = None) -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": labels or {}},
           "spec": {"containers": [{"name": "main", "image": "local", "command": ["sleep", "1"]}]}}
    if node:
        pod["spec"]["nodeName"] = node
    return pod


async def call(srv, method: str, path: str, body=None, content_type: str = "application/json",
               raw: bytes | None = None, accept: str = "application/json"):
    """(code, body: parsed if JSON, headers) of one request to the server."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    if data is None and method in ("POST", "PUT", "PATCH"):
        data = b""
    req = tornado.httpclient.HTTPRequest(srv.url + path, method=method, body=data, allow_nonstandard_methods=True,
                                         headers={"Content-Type": content_type, "Accept": accept})
    resp = await tornado.httpclient.AsyncHTTPClient().fetch(req, raise_error=False)
    text = resp.body.decode()
    if resp.headers.get("Content-Type", "").startswith("application/json") and text.count("\n") <= 1:
        return resp.code, json.loads(text or "null"), resp.headers
    return resp.code, text, resp.headers  # plain text, or a watch stream: one JSON event per line
