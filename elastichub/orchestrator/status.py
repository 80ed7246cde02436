"""What api/status and the status page show: the controller's last observation, its decisions,
moves and events, as one JSON object."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..policy import ClusterSnapshot, NodeStatus, Tier, occupancy
from .timetable import classes_ahead

if TYPE_CHECKING:
    from .controller import Controller


def status_of(ctl: Controller) -> dict:
    obs = ctl.last
    snap = obs.snapshot if obs else ClusterSnapshot(())
    draining = ctl.draining()
    nodes = []
    for n in snap.nodes:
        vm = obs.vms.get(n.name) if obs else None
        nodes.append({
            "name": n.name, "tier": n.tier.value, "status": n.status.value,
            "allocatable": {"cpu": n.allocatable.cpu, "ram": n.allocatable.ram},
            "used": {"cpu": n.used.cpu, "ram": n.used.ram},
            "occupancy_ram": round(100 * n.used.ram / n.allocatable.ram, 2) if n.allocatable.ram else None,
            "servers": sorted(s.name for s in n.servers),
            "pinned": sorted(s.name for s in n.servers if not s.movable),
            "vm": {"id": vm.id, "state": vm.state} if vm else None,
            "draining": n.name == draining or (obs is not None and n.name in obs.drains),
        })
    tiers = {}
    for tier in Tier:
        members = [n for n in snap.active_nodes if n.tier is tier]
        tiers[tier.value] = {"active": len(members), "occupancy_ram": round(occupancy(members, "ram"), 2)
                             if members else None}
    config = getattr(ctl.strategy, "config", None)
    return {
        "time": ctl.clock(),
        "policy": getattr(ctl.strategy, "name", "?"),
        "theta_out": getattr(config, "theta_out", None),
        "tmon": getattr(config, "tmon", None),
        "tcool": getattr(config, "tcool", None),
        "dry_run": ctl.settings.dry_run,
        "cycles": ctl.cycles,
        "occupancy": {"ram": round(occupancy(snap.active_nodes, "ram"), 2),
                      "cpu": round(occupancy(snap.active_nodes, "cpu"), 2)},
        "tiers": tiers,
        "nodes": nodes,
        "pending": [s.name for s in snap.pending],
        "pool": {status.value: len(snap.with_status(status, Tier.CLOUD)) for status in NodeStatus},
        "decisions": list(ctl.decisions)[-50:],
        "migrations": {
            "in_flight": [m.to_json() for m in ctl.moves if m.outcome == "in-flight"],
            "recent": [m.to_json() for m in ctl.moves if m.outcome != "in-flight"][-50:],
        },
        "events": list(ctl.events)[-50:],
        "problems": obs.problems[:20] if obs else [],
        "timeline": list(ctl.timeline),
        "backoff": {name: {"failures": b.failures, "until": b.until} for name, b in ctl.backoff.items()
                    if b.until > ctl.clock()},
        "restart_next": dict(ctl.restart_next),
        "unmovable": ctl.movable.reasons(),  # servers no checkpoint can move: their nodes are not drained
        "classes": classes_ahead(ctl.strategy, ctl.clock()),
        "history": None if ctl.history is None else {
            "file": ctl.history.path, "written": ctl.history.written,
            "unwritten": len(ctl.history.unwritten), "running": len(ctl.sessions.sessions)},
    }
