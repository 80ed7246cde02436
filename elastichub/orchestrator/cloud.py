"""Cloud VMs through Apache Libcloud (EC2, GCE, Azure ARM, OpenStack, ...).

libcloud is blocking: every call runs in a worker thread, with a timeout,
so a slow cloud never stalls the loop. `CloudPool` is the whole interface
the controller uses: list the pool's VMs, start one, stop one.
"""

from __future__ import annotations

import asyncio
import importlib
from dataclasses import dataclass, field

from libcloud.compute.types import NodeState

# libcloud's states, reduced to what the orchestrator acts on.
RUNNING, PENDING, STOPPING, STOPPED, GONE, UNKNOWN = "running", "pending", "stopping", "stopped", "gone", "unknown"
_STATES = {
    NodeState.RUNNING: RUNNING,
    NodeState.PENDING: PENDING,
    NodeState.STARTING: PENDING,
    NodeState.REBOOTING: PENDING,
    NodeState.STOPPING: STOPPING,
    NodeState.STOPPED: STOPPED,
    NodeState.SUSPENDED: STOPPED,
    NodeState.PAUSED: STOPPED,
    NodeState.TERMINATED: GONE,
}


class CloudError(Exception):
    """A cloud call failed; the message names the call and the VM."""


@dataclass(frozen=True)
class VM:
    id: str
    name: str
    state: str  # one of RUNNING, PENDING, STOPPING, STOPPED, GONE, UNKNOWN
    node_name: str  # the Kubernetes node this VM becomes (see `node_name_from`)
    tags: dict = field(default_factory=dict)

    @property
    def on(self) -> bool:
        """Costs money: started, booting, running (stopping counts until it is stopped)."""
        return self.state in (RUNNING, PENDING, STOPPING, UNKNOWN)


def load_driver(name: str, args: list, kwargs: dict):
    """A libcloud compute driver instance: `name` is a libcloud provider
    ("ec2", "gce", "azure_arm", "openstack", ...) or "module:Class" for a
    driver libcloud does not ship. Raises ValueError naming the problem."""
    if ":" in name:
        module_name, _, class_name = name.partition(":")
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as e:
            raise ValueError(f"cloud driver {name!r} cannot be imported: {e}") from None
    else:
        from libcloud.compute.providers import get_driver

        try:
            cls = get_driver(name)
        except AttributeError:
            raise ValueError(f"unknown libcloud compute provider {name!r} (e.g. ec2, gce, azure_arm, "
                             "openstack, or module:Class for a third-party driver)") from None
    try:
        return cls(*args, **kwargs)
    except Exception as e:  # libcloud raises many types for bad credentials/arguments
        hint = ""
        if not args and isinstance(e, TypeError) and "required positional argument" in str(e):
            hint = (" (no credentials given: set ELASTICHUB_CLOUD_KEY and ELASTICHUB_CLOUD_SECRET in the "
                    "service's environment, or ElasticOrchestrator.cloud_driver_args)")
        raise ValueError(f"cloud driver {name!r} rejected its arguments: {type(e).__name__}: {e}{hint}") from None


def vm_tags(node) -> dict:
    """Tags (EC2, Azure) or labels (GCE, OpenStack metadata) of a libcloud node, flattened."""
    extra = node.extra or {}
    tags: dict = {}
    for key in ("metadata", "labels", "tags"):
        value = extra.get(key)
        if isinstance(value, dict):
            tags.update({str(k): str(v) for k, v in value.items()})
    return tags


def node_name_from(mapping: str, name: str, tags: dict) -> str:
    """The Kubernetes node name of a VM. "name": the VM's name;
    "tag:KEY": the value of its tag/label KEY (empty when it has none)."""
    if mapping == "name":
        return name
    if mapping.startswith("tag:"):
        return tags.get(mapping[4:], "")
    raise ValueError(f"unknown VM-to-node mapping {mapping!r}: use 'name' or 'tag:KEY'")


class CloudPool:
    """The cloud VMs ElasticHub may start and stop."""

    def __init__(self, driver, *, mapping: str = "name", name_prefix: str = "", tags: dict | None = None,
                 timeout: float = 120.0):
        node_name_from(mapping, "", {})  # validates the mapping now, not at the first VM
        self.driver = driver
        self.mapping = mapping
        self.name_prefix = name_prefix
        self.tags = dict(tags or {})
        self.timeout = timeout
        self._nodes: dict[str, object] = {}  # VM id -> libcloud Node, for start/stop
        self.listed = 0  # VMs the cloud listed last (terminated ones aside), in the pool or not

    async def _call(self, what: str, fn, *args):
        limit = asyncio.timeout(self.timeout)
        try:
            async with limit:
                return await asyncio.to_thread(fn, *args)
        except Exception as e:
            if limit.expired():  # ours, not a socket timeout inside the driver
                raise CloudError(f"{what}: no answer from the cloud within {self.timeout:g} s") from None
            raise CloudError(f"{what}: {type(e).__name__}: {e}") from None

    def _in_pool(self, node, tags: dict) -> bool:
        return node.name.startswith(self.name_prefix) and all(tags.get(k) == v for k, v in self.tags.items())

    async def list(self) -> list[VM]:
        nodes = await self._call("list VMs", self.driver.list_nodes)
        vms, seen, listed = [], {}, 0
        for node in nodes:
            state = _STATES.get(node.state, UNKNOWN)
            if state == GONE:
                continue
            listed += 1
            tags = vm_tags(node)
            if not self._in_pool(node, tags):
                continue
            seen[node.id] = node
            vms.append(VM(id=str(node.id), name=node.name, state=state,
                          node_name=node_name_from(self.mapping, node.name, tags), tags=tags))
        self._nodes = seen
        self.listed = listed
        return vms

    def empty_problem(self) -> str:
        """Why the pool holds no VM, as its last listing tells: what the cloud listed, and the filter."""
        wanted = [f"tagged {', '.join(f'{k}={v}' for k, v in sorted(self.tags.items()))}"] if self.tags else []
        wanted += [f"named {self.name_prefix}*"] if self.name_prefix else []
        found = (f"the cloud lists {self.listed} VM(s), none {' and '.join(wanted)}" if self.listed
                 else "the cloud lists no VM (check the region or project in cloud_driver_kwargs)")
        return (f"cloud pool: no VM in it: {found}; no cloud node can start, waiting servers wait for "
                "on-prem room (check c.ElasticOrchestrator.cloud_vm_tags and cloud_vm_name_prefix)")

    async def _node(self, vm_id: str):
        if vm_id not in self._nodes:
            await self.list()
        try:
            return self._nodes[vm_id]
        except KeyError:
            raise CloudError(f"VM {vm_id!r} is not in the cloud pool") from None

    async def start(self, vm_id: str) -> None:
        await self._act("start", vm_id, self.driver.start_node)

    async def stop(self, vm_id: str) -> None:
        await self._act("stop", vm_id, self.driver.stop_node)

    async def _act(self, what: str, vm_id: str, call) -> None:
        node = await self._node(vm_id)
        # libcloud's drivers answer False for a call the cloud did not take (a state it cannot start or
        # stop from, an answer other than "accepted"); taken for done, a start was watched for the whole
        # boot timeout while users waited.
        if await self._call(f"{what} VM {vm_id}", call, node) is False:
            raise CloudError(f"{what} VM {vm_id}: the cloud did not take it (the driver answered False)")
