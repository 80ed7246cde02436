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
    unmovable = ctl.movable.reasons()
    nodes = []
    for n in snap.nodes:
        vm = obs.vms.get(n.name) if obs else None
        pinned = _pinned(ctl, n.servers, unmovable)
        nodes.append({
            "name": n.name, "tier": n.tier.value, "status": n.status.value,
            "allocatable": {"cpu": n.allocatable.cpu, "ram": n.allocatable.ram},
            "used": {"cpu": n.used.cpu, "ram": n.used.ram},
            "occupancy_ram": round(100 * n.used.ram / n.allocatable.ram, 2) if n.allocatable.ram else None,
            "servers": sorted(s.name for s in n.servers),
            "pinned": sorted(pinned), "pinned_why": pinned,
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
        "unmovable": unmovable,  # servers no checkpoint can move: their nodes are not drained
        "classes": classes_ahead(ctl.strategy, ctl.clock()),
        "history": None if ctl.history is None else {
            "file": ctl.history.path, "written": ctl.history.written,
            "unwritten": len(ctl.history.unwritten), "running": len(ctl.sessions.sessions)},
    }


def _pinned(ctl: Controller, servers, unmovable: dict[str, str]) -> dict[str, str]:
    """The servers on a node no drain moves, with why: pinned by their pod (the snapshot's `movable`), or
    found unmovable by a probe (pinned for the policy only after the snapshot, so the page had left them out)."""
    why = {s.name: unmovable[s.name] for s in servers if s.name in unmovable}
    held = [s.name for s in servers if not s.movable and s.name not in why]
    if held:
        by_server = {p.server: p for p in ctl.pods.records.values()} if ctl.pods is not None else {}
        for name in held:
            pod = by_server.get(name)
            why[name] = ("only a cloud node can run it (its profile's node selector)" if pod is not None
                         and pod.migratable else "migratable: false (or a pod ElasticSpawner did not label)")
    return dict(sorted(why.items()))
