"""The boot of a cloud node: start its VM, wait for its node to be Ready, uncordon it; or stop the VM
once it has run `boot_timeout` without, and keep it out of the pool for a back-off.

A part of the Controller (its base class), apart from the loop for its size: it uses the controller's
settings, caches, cloud, tasks, back-offs and events, as the loop's other steps do.
"""

from __future__ import annotations

import asyncio
import time

from ..policy import ClusterSnapshot, NodeStatus
from .cloud import CloudError

UNMAPPED = "vm/"  # + VM id: the boot watch of a VM no node name ties to a node (no node name has a "/")


class BootWatch:
    """The Controller's boot steps (one background task per VM, "boot:NODE")."""

    def _start_boot(self, node: str, vm_id: str | None, *, start: bool) -> None:
        if self.settings.dry_run:
            return
        self._spawn(f"boot:{node}", self._boot(node, vm_id, start))

    async def _boot(self, node: str, vm_id: str | None, start: bool) -> None:
        """Start the VM (when asked), wait for its node to be Ready, uncordon
        it. Not Ready within `boot_timeout` of the start: stop the VM and keep
        it out of the pool for a back-off that doubles with each failure."""
        s = self.settings
        started = node
        self.booting_vms.add(vm_id)
        try:
            if start:
                await self.cloud.start(vm_id)
                self.event("scale-out", f"started VM {vm_id} for node {node}")
            # Timed by the monotonic clock from when the boot began: a wall clock stepped forward stopped a
            # booting VM as failed, and counted the step in the boot times users are told.
            began = time.monotonic() - max(self.clock() - self.boot_started.setdefault(started, self.clock()), 0.0)
            while True:
                node = self.last.node_of(vm_id, started) if self.last else started  # under another name?
                rec = self.nodes.records.get(node)
                if rec is not None and rec.ready:
                    await self.kube.uncordon(node)
                    took = time.monotonic() - began
                    if start:
                        self.boot_seconds.append(took)
                    self.event("node-ready", f"{node} is Ready and schedulable ({took:.0f} s after the start)")
                    self.backoff.pop(started, None)
                    self.backoff.pop(node, None)
                    self.boot_failed.difference_update((started, node))
                    return
                if time.monotonic() - began > s.boot_timeout:
                    break
                await asyncio.sleep(s.poll)
            hosted = await self._hosted(node)
            if hosted:
                # Not a boot that failed: a node that hosts pods and stopped reporting (or a cache that
                # did). Stopping its VM would end their sessions without a checkpoint.
                self.event("problem", f"{node} is not Ready but hosts {', '.join(hosted)}: its VM is left running")
                return
            unbacked = self.last.unbacked if self.last else []
            if rec is None and unbacked:
                self.event("problem", f"VM {vm_id} has run {s.boot_timeout:g} s with no Node {self._named(node)}, "
                           f"but cloud node(s) {', '.join(unbacked)} host servers and have neither a VM nor a "
                           "providerID: it may be theirs, so it is left running")
                return
            delay = self._back_off(node, s.boot_backoff, s.boot_backoff_max)
            self.metrics.boot_failures.inc()
            # No Node at all: a boot that never registered, a Node deleted (kubectl delete node, the cloud
            # controller), or one registered under a name the pool does not map.
            why = (f"{node} was not Ready within boot_timeout, {s.boot_timeout:g} s" if rec is not None else
                   f"VM {vm_id} has run {s.boot_timeout:g} s with no Node {self._named(node)} (its boot failed, "
                   "its Node was deleted, or it registered under a name the pool does not map)")
            self.event("boot-failed", f"{why}: stopping VM {vm_id}, kept out of the pool for {delay:g} s "
                                      f"(failure {self.backoff[node].failures})")
            self.boot_failed.update((started, node))  # its waiting users are told (notices.py)
            if vm_id is not None and self.cloud is not None:
                await self.cloud.stop(vm_id)
        except CloudError as e:
            self._back_off(node, s.boot_backoff, s.boot_backoff_max)
            self.boot_failed.update((started, node))
            self.event("boot-failed", f"{node}: {e}")
        finally:
            self.boot_started.pop(started, None)
            self.booting_vms.discard(vm_id)

    @staticmethod
    def _named(node: str) -> str:
        return "that the pool maps it to" if node.startswith(UNMAPPED) else node

    async def _hosted(self, node: str) -> list[str]:
        """The servers' pods on `node` (not finished), as the API server has
        them: a cache can be stale. The API unreachable: the cache's, or one
        word that they are unknown, which keeps the VM too."""
        cached = sorted(p.key for p in self.pods.records.values()
                        if p.managed and p.node == node and p.holds_resources)
        if self.kube_pods is None:
            return cached
        try:
            found = await self.kube_pods.servers_on(node)
        except Exception as e:  # ApiException, a timeout, a refused connection
            return cached or [f"(servers unknown: {type(e).__name__})"]
        return sorted(f"{m.get('namespace')}/{m.get('name')}" for m in (p.get("metadata") or {} for p in found))

    def _without_backed_off(self, snapshot: ClusterSnapshot, now: float) -> ClusterSnapshot:
        """VMs whose last boot failed stay out of the pool until their back-off ends."""
        out = {name for name, b in self.backoff.items() if b.until > now}
        if not out:
            return snapshot
        return ClusterSnapshot(tuple(n for n in snapshot.nodes if not (n.name in out and n.status is
                                                                           NodeStatus.STOPPED)), snapshot.pending)
