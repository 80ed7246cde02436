"""Room arithmetic of the `elastic` strategy: whether demand fits capacity,
and where queued requests would go, first-fit, biggest first. Pure."""

from __future__ import annotations

from typing import Iterable

from .model import Node, Resources


def fits_fraction(demand: Resources, capacity: Resources, fraction: float) -> bool:
    """demand <= fraction * capacity on every resource (empty capacity fits
    only no demand)."""
    return demand.cpu <= fraction * capacity.cpu + 1e-9 and demand.ram <= fraction * capacity.ram + 1e-9


def fits_with_reserve(demand: Resources, capacity: Resources, reserve: Resources) -> bool:
    """demand plus a fixed reserve within capacity, on every resource."""
    return (demand.cpu + reserve.cpu <= capacity.cpu + 1e-9
            and demand.ram + reserve.ram <= capacity.ram + 1e-9)


def by_size(requests: Iterable[Resources]) -> list[list]:
    """Equal requests as [request, count] groups, biggest RAM first (then CPU)."""
    counts: dict[tuple[float, float], list] = {}
    for req in requests:
        group = counts.get((req.cpu, req.ram))
        if group is None:
            counts[(req.cpu, req.ram)] = [req, 1]
        else:
            group[1] += 1
    return sorted(counts.values(), key=lambda g: (-g[0].ram, -g[0].cpu))


def first_fit(groups: list[list], free: list[Resources]) -> list[list]:
    """Place the requests of `groups` (`by_size`), biggest RAM first, each
    into the first `free` slot it fits (slots updated in place); return the
    groups of those that found no slot. Equal requests go one after another,
    and a slot one of them skipped has not changed since, so the next one
    starts where the last one went: one pass over the slots per size."""
    left = []
    n = len(free)
    for req, count in groups:
        cpu, ram = req.cpu, req.ram
        j = 0
        while count and j < n:
            slot = free[j]
            if cpu <= slot.cpu and ram <= slot.ram:
                free[j] = slot - req
                count -= 1
            else:
                j += 1
        if count:
            left.append([req, count])
    return left


def departure_slots(free: list[Resources], nodes: list[Node],
                     departures: dict[str, list[Resources]]) -> list[Resources]:
    """`free` (one slot per node of `nodes`) plus the room of sessions likely
    to end (`ElasticStrategy._outflow`). The scheduler binds whatever fits as soon as room
    frees, so a departure helps a big request only on its own, with the room
    already free on its node, never summed with other departures that
    smaller requests take one by one: each node's biggest departure joins
    its slot, the others are slots of their own."""
    extra: list[Resources] = []
    for i, node in enumerate(nodes):
        chunks = departures.get(node.name)
        if chunks:
            free[i] = free[i] + chunks[0]
            extra += chunks[1:]
    return free + extra
