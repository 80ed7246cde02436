"""The local cluster's cloud: VMs behind its cloud nodes, and a libcloud driver for them.

Server side, `CloudPool` keeps one VM per cloud-tier node and serves it over
HTTP under /localcluster/v1/vms (mounted on the API server). Starting a VM
boots it for `boot_delay` seconds, then its node turns Ready; stopping it is
a power-off: its node turns NotReady at once and every pod on it fails
(reason NodeShutdown); the VM then reads "stopping" for `stop_delay`
seconds, as a cloud's does, before it is "stopped". The VM does not touch `spec.unschedulable`: a node the
orchestrator cordoned stays cordoned across a stop and start, as on a real
cluster.

Client side, `LocalClusterNodeDriver` is an ordinary libcloud `NodeDriver`
registered as provider "localcluster", so code that drives EC2 through
libcloud drives the local cluster the same way::

    from libcloud.compute.providers import get_driver
    import elastichub.localcluster.cloud  # registers the provider
    driver = get_driver("localcluster")("any-key", host="127.0.0.1", port=6443)
    node = driver.list_nodes()[0]; driver.start_node(node)
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import TYPE_CHECKING, Any

import tornado.web
from libcloud.common.base import ConnectionUserAndKey, JsonResponse
from libcloud.common.types import LibcloudError
from libcloud.compute.base import Node, NodeDriver, NodeImage, NodeLocation, NodeSize
from libcloud.compute.providers import get_driver, set_driver
from libcloud.compute.types import NodeState

from .config import ConfigError, NodeConfig, parse_node

if TYPE_CHECKING:
    from .cluster import LocalCluster

log = logging.getLogger(__name__)

PROVIDER = "localcluster"
API_PREFIX = "/localcluster/v1"
# EC2's state names, so the states read like a real cloud's.
PENDING, RUNNING, STOPPING, STOPPED, TERMINATED = "pending", "running", "stopping", "stopped", "terminated"
_VM_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class VMError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


class VM:
    def __init__(self, node: NodeConfig, state: str):
        self.node, self.state = node, state
        self.boot_task: asyncio.Task | None = None
        self.stop_task: asyncio.Task | None = None

    def to_json(self, node_ip: str, boot_delay: float) -> dict:
        return {"id": self.node.name, "name": self.node.name, "state": self.state, "node": self.node.name,
                "privateIps": [node_ip], "publicIps": [], "cpu": self.node.cpu, "memory": self.node.memory,
                "labels": dict(self.node.labels), "bootDelaySeconds": boot_delay}


class CloudPool:
    """The VMs of the cloud-tier nodes; powers their kubelets on and off."""

    def __init__(self, cluster: "LocalCluster", boot_delay: float, stop_delay: float = 0.0):
        self.cluster, self.boot_delay, self.stop_delay = cluster, boot_delay, stop_delay
        self.vms: dict[str, VM] = {}

    def adopt(self, node: NodeConfig) -> None:
        """A cloud node of the config: its VM exists, powered off."""
        self.vms[node.name] = VM(node, STOPPED)

    def _vm(self, name: str) -> VM:
        vm = self.vms.get(name)
        if vm is None or vm.state == TERMINATED:
            raise VMError(404, f"VM {name!r} not found")
        return vm

    def describe(self, name: str) -> dict:
        vm = self._vm(name)
        return vm.to_json(self.cluster.node_ip(name), self.boot_delay)

    def list(self) -> list[dict]:
        return [self.describe(name) for name, vm in self.vms.items() if vm.state != TERMINATED]

    def start(self, name: str) -> dict:
        vm = self._vm(name)
        if vm.state == STOPPING:
            raise VMError(409, f"VM {name!r} is stopping; start it once it is stopped")
        if vm.state == STOPPED:
            vm.state = PENDING
            vm.boot_task = asyncio.create_task(self._boot(vm), name=f"boot-{name}")
        return self.describe(name)

    async def _boot(self, vm: VM) -> None:
        await asyncio.sleep(self.boot_delay)
        await self.cluster.kubelets[vm.node.name].power_on()
        vm.state = RUNNING
        vm.boot_task = None

    async def stop(self, name: str) -> dict:
        vm = self._vm(name)
        if vm.state in (STOPPED, STOPPING):
            return self.describe(name)
        vm.state = STOPPING
        if vm.boot_task is not None:
            vm.boot_task.cancel()
            await asyncio.gather(vm.boot_task, return_exceptions=True)
            vm.boot_task = None
        await self.cluster.kubelets[name].power_off()
        if self.stop_delay > 0:
            vm.stop_task = asyncio.create_task(self._stopped_after_delay(vm), name=f"stop-{name}")
        else:
            vm.state = STOPPED
        return self.describe(name)

    async def _stopped_after_delay(self, vm: VM) -> None:
        await asyncio.sleep(self.stop_delay)
        vm.state = STOPPED
        vm.stop_task = None

    async def create(self, body: Any) -> dict:
        """A new VM (and cloud node) in the pool; it boots at once, like a created instance."""
        if not isinstance(body, dict):
            raise VMError(400, "the body must be a JSON object with name, cpu, memory")
        unknown = set(body) - {"name", "cpu", "memory", "labels"}
        if unknown:
            raise VMError(400, f"unknown field(s): {', '.join(sorted(unknown))}")
        name = body.get("name")
        if not isinstance(name, str) or not _VM_NAME_RE.match(name) or len(name) > 63:
            raise VMError(422, f"name: {name!r} is not a valid VM/node name (lower-case letters, digits, '-')")
        if name in self.cluster.kubelets:
            raise VMError(409, f"a node named {name!r} already exists")
        try:  # the checks of a cloud node in the config file: quantities, labels, no tier override
            node, = parse_node({"name": name, "tier": "cloud", "cpu": body.get("cpu", ""),
                                "memory": body.get("memory", ""), "labels": body.get("labels") or {}}, "")
            await self.cluster.add_node(node, powered_on=False)
        except ConfigError as e:
            raise VMError(422, str(e)) from None
        self.adopt(node)
        return self.start(name)

    async def destroy(self, name: str) -> dict:
        if self._vm(name).state == STOPPING:  # another stop or destroy is under way: one at a time
            raise VMError(409, f"VM {name!r} is stopping; destroy it once it is stopped")
        await self.stop(name)
        vm = self.vms.pop(name)
        await self.cluster.remove_node(name)
        vm.state = TERMINATED
        return vm.to_json("", self.boot_delay)

    async def close(self) -> None:
        tasks = [t for vm in self.vms.values() for t in (vm.boot_task, vm.stop_task) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# ----------------------------------------------------------------------------- HTTP endpoints


class _VMHandler(tornado.web.RequestHandler):
    def initialize(self, pool: CloudPool) -> None:
        self.pool = pool

    def _send(self, obj: Any, code: int = 200) -> None:
        self.set_status(code)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(obj))

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        message = exc.message if isinstance(exc, VMError) else self._reason
        self._send({"error": message, "code": status_code}, status_code)

    def log_exception(self, typ, value, tb) -> None:
        if not isinstance(value, VMError):
            super().log_exception(typ, value, tb)

    def _json_body(self) -> Any:
        try:
            return json.loads(self.request.body or b"{}")
        except ValueError as e:
            raise VMError(400, f"the body is not valid JSON: {e}") from None

    def send_error(self, status_code: int = 500, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, VMError):
            status_code = exc.code
        super().send_error(status_code, **kwargs)


class VMListHandler(_VMHandler):
    def get(self) -> None:
        self._send({"items": self.pool.list()})

    async def post(self) -> None:
        self._send(await self.pool.create(self._json_body()), 201)


class VMHandler(_VMHandler):
    def get(self, name: str) -> None:
        self._send(self.pool.describe(name))

    async def delete(self, name: str) -> None:
        self._send(await self.pool.destroy(name))


class VMActionHandler(_VMHandler):
    async def post(self, name: str, action: str) -> None:
        if action == "start":
            self._send(self.pool.start(name), 202)
        else:
            self._send(await self.pool.stop(name), 202)


def vm_handlers(pool: CloudPool) -> list:
    """tornado URL specs for the API server's `extra_handlers`."""
    args = {"pool": pool}
    return [
        (rf"{API_PREFIX}/vms/?", VMListHandler, args),
        (rf"{API_PREFIX}/vms/([a-z0-9-]+)/(start|stop)", VMActionHandler, args),
        (rf"{API_PREFIX}/vms/([a-z0-9-]+)/?", VMHandler, args),
    ]


# ----------------------------------------------------------------------------- libcloud driver


class LocalClusterResponse(JsonResponse):
    def success(self) -> bool:
        return 200 <= self.status < 300

    def parse_error(self) -> str:
        try:
            return json.loads(self.body).get("error") or self.body
        except (ValueError, AttributeError):
            return self.body


class LocalClusterConnection(ConnectionUserAndKey):
    responseCls = LocalClusterResponse

    def add_default_headers(self, headers: dict) -> dict:
        headers["Content-Type"] = "application/json"
        headers["Accept"] = "application/json"
        return headers


class LocalClusterNodeDriver(NodeDriver):
    """libcloud compute driver of the local cluster's cloud pool (provider "localcluster").

    `key` and `secret` are accepted and ignored (the local cluster has no
    authentication); `host`/`port` address its API server, plain HTTP."""

    type = PROVIDER
    name = "ElasticHub local cluster"
    website = "https://github.com/elastichub/elastichub"
    connectionCls = LocalClusterConnection
    features = {"create_node": []}

    NODE_STATE_MAP = {PENDING: NodeState.PENDING, RUNNING: NodeState.RUNNING, STOPPING: NodeState.STOPPING,
                      STOPPED: NodeState.STOPPED, TERMINATED: NodeState.TERMINATED}
    SIZES = {  # id -> (cpu, memory MiB)
        "lc.small": ("2", 4096),
        "lc.medium": ("4", 8192),
        "lc.large": ("8", 16384),
    }

    def __init__(self, key: str = "localcluster", secret: str | None = None, secure: bool = False,
                 host: str = "127.0.0.1", port: int = 6443, **kwargs):
        # Always a (key, secret) pair, so libcloud passes the connection its arguments in one order.
        super().__init__(key, secret or "", secure=secure, host=host, port=port, **kwargs)

    def _request(self, path: str, method: str = "GET", body: Any = None) -> Any:
        data = json.dumps(body) if body is not None else None
        return self.connection.request(f"{API_PREFIX}{path}", method=method, data=data).object

    def _to_node(self, vm: dict) -> Node:
        if not isinstance(vm, dict) or "id" not in vm:
            raise LibcloudError(f"malformed VM in the local cluster's answer: {vm!r}", driver=self)
        return Node(id=vm["id"], name=vm.get("name", vm["id"]),
                    state=self.NODE_STATE_MAP.get(vm.get("state"), NodeState.UNKNOWN),
                    public_ips=vm.get("publicIps") or [], private_ips=vm.get("privateIps") or [], driver=self,
                    extra={k: vm.get(k) for k in ("node", "cpu", "memory", "labels", "bootDelaySeconds")})

    def list_nodes(self) -> list[Node]:
        answer = self._request("/vms")
        if not isinstance(answer, dict) or not isinstance(answer.get("items"), list):
            raise LibcloudError("malformed VM list from the local cluster", driver=self)
        return [self._to_node(vm) for vm in answer["items"]]

    def start_node(self, node: Node) -> bool:
        self._request(f"/vms/{node.id}/start", method="POST")
        return True

    def stop_node(self, node: Node) -> bool:
        self._request(f"/vms/{node.id}/stop", method="POST")
        return True

    def reboot_node(self, node: Node) -> bool:
        """A power cycle: pods on the node fail, as with stop_node, then it boots again."""
        return self.stop_node(node) and self.start_node(node)

    def list_sizes(self, location: NodeLocation | None = None) -> list[NodeSize]:
        return [NodeSize(id=size_id, name=size_id, ram=ram, disk=0, bandwidth=None, price=0.0, driver=self,
                         extra={"cpu": cpu})
                for size_id, (cpu, ram) in self.SIZES.items()]

    def list_images(self, location: NodeLocation | None = None, ex_only_active: bool = True) -> list[NodeImage]:
        return [NodeImage(id="local", name="the local environment", driver=self)]

    def list_locations(self) -> list[NodeLocation]:
        return [NodeLocation(id="local", name="this machine", country="", driver=self)]

    def create_node(self, name: str, size: NodeSize, image: NodeImage | None = None,
                    location: NodeLocation | None = None, ex_labels: dict | None = None, **kwargs) -> Node:
        """A new cloud node of `size` (its ram in MiB, extra["cpu"]); it boots at once."""
        cpu = (size.extra or {}).get("cpu") or "1"
        body = {"name": name, "cpu": str(cpu), "memory": f"{int(size.ram)}Mi", "labels": dict(ex_labels or {})}
        return self._to_node(self._request("/vms", method="POST", body=body))

    def destroy_node(self, node: Node) -> bool:
        self._request(f"/vms/{node.id}", method="DELETE")
        return True


def register_driver() -> None:
    """Make `get_driver("localcluster")` return LocalClusterNodeDriver (idempotent)."""
    try:
        get_driver(PROVIDER)
    except AttributeError:
        set_driver(PROVIDER, __name__, "LocalClusterNodeDriver")


register_driver()
