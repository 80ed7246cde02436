"""The scheduler's choice of node for one request, in O(log n) per request.

Kubernetes with the paper's priorities (and the policy's feasibility check,
eq. 3) puts a request on the node where it fits that has the highest tier
priority, then the highest RAM share used/allocatable (MostAllocated,
packing), then the lowest rank (name order). Scanning every node per request
makes a hub of hundreds of nodes cost more per server than a small one;
this index answers the same question exactly, without the scan.

How: nodes are grouped by (priority, allocatable). Within a group, nodes
are kept sorted by used RAM. `ram <= alloc - used` is monotone in `used`
(IEEE subtraction is monotone), so the nodes a request fits by RAM are a
prefix of that order, found by bisection; `used / alloc` is monotone too, so
the best of them is at the end of the prefix: walk down from there to the
first node that also fits by CPU, then on over nodes of the *same* share for
the lowest rank. The fit test and the share are computed with the very
expressions a node-by-node scan uses, so the answer is the scan's, bit for bit.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Iterable


class _Group:
    __slots__ = ("priority", "alloc_cpu", "alloc_ram", "keys", "used_cpu")

    def __init__(self, priority: int, alloc_cpu: float, alloc_ram: float):
        self.priority = priority
        self.alloc_cpu = alloc_cpu
        self.alloc_ram = alloc_ram
        self.keys: list[tuple[float, int]] = []  # (used_ram, rank), ascending
        self.used_cpu: dict[int, float] = {}

    def share(self, used_ram: float) -> float:
        return used_ram / self.alloc_ram if self.alloc_ram > 0 else 1.0

    def best(self, cpu: float, ram: float) -> tuple[float, int] | None:
        """(share, rank) of this group's best node for the request, or None."""
        keys, alloc_ram = self.keys, self.alloc_ram
        lo, hi = 0, len(keys)
        while lo < hi:  # first node (by used RAM) the request does not fit by RAM
            mid = (lo + hi) // 2
            if ram <= alloc_ram - keys[mid][0]:
                lo = mid + 1
            else:
                hi = mid
        alloc_cpu, used_cpu = self.alloc_cpu, self.used_cpu
        i = lo - 1
        while i >= 0 and not cpu <= alloc_cpu - used_cpu[keys[i][1]]:
            i -= 1
        if i < 0:
            return None
        share = self.share(keys[i][0])
        rank = keys[i][1]
        i -= 1
        while i >= 0 and self.share(keys[i][0]) == share:  # equal share: lowest rank wins
            if keys[i][1] < rank and cpu <= alloc_cpu - used_cpu[keys[i][1]]:
                rank = keys[i][1]
            i -= 1
        return share, rank


class BestFit:
    """Nodes that may take requests, each under a unique rank (any
    orderable key: the engine's node index, the policy's node name); the
    lower rank wins ties."""

    def __init__(self, nodes: Iterable[tuple[int, int, float, float, float, float]] = ()):
        """`nodes`: (rank, priority, alloc_cpu, alloc_ram, used_cpu, used_ram)."""
        self._groups: dict[tuple[int, float, float], _Group] = {}
        self._where: dict[int, tuple[_Group, float]] = {}  # rank -> (group, used_ram)
        for rank, priority, alloc_cpu, alloc_ram, used_cpu, used_ram in nodes:
            group = self._group(priority, alloc_cpu, alloc_ram)
            group.keys.append((used_ram, rank))
            group.used_cpu[rank] = used_cpu
            self._where[rank] = (group, used_ram)
        for group in self._groups.values():
            group.keys.sort()
        self._order = sorted(self._groups.values(), key=lambda g: -g.priority)

    def _group(self, priority: int, alloc_cpu: float, alloc_ram: float) -> _Group:
        key = (priority, alloc_cpu, alloc_ram)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(priority, alloc_cpu, alloc_ram)
            self._order = sorted(self._groups.values(), key=lambda g: -g.priority)
        return group

    def __contains__(self, rank: int) -> bool:
        return rank in self._where

    def add(self, rank: int, priority: int, alloc_cpu: float, alloc_ram: float,
            used_cpu: float, used_ram: float) -> None:
        if rank in self._where:
            raise ValueError(f"rank {rank} is already in the index")
        group = self._group(priority, alloc_cpu, alloc_ram)
        insort(group.keys, (used_ram, rank))
        group.used_cpu[rank] = used_cpu
        self._where[rank] = (group, used_ram)

    def remove(self, rank: int) -> None:
        group, used_ram = self._where.pop(rank)
        del group.keys[bisect_left(group.keys, (used_ram, rank))]
        del group.used_cpu[rank]

    def update(self, rank: int, used_cpu: float, used_ram: float) -> None:
        """The node's requests changed (a bind or an unbind)."""
        group, old_ram = self._where[rank]
        group.used_cpu[rank] = used_cpu
        if old_ram != used_ram:
            keys = group.keys
            del keys[bisect_left(keys, (old_ram, rank))]
            insort(keys, (used_ram, rank))
            self._where[rank] = (group, used_ram)

    def best(self, cpu: float, ram: float) -> int | None:
        """Rank of the node the request goes to, None when it fits nowhere."""
        best_key = None
        best_rank = None
        for group in self._order:  # highest priority first
            if best_key is not None and group.priority < best_key[0]:
                break
            found = group.best(cpu, ram)
            if found is None:
                continue
            key = (group.priority, found[0])
            if best_key is None or key > best_key or (key == best_key and found[1] < best_rank):
                best_key, best_rank = key, found[1]
        return best_rank
