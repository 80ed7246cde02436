"""Server-side printing: `meta.k8s.io` Tables, what `kubectl get` asks for.

kubectl 1.20 asks for `application/json;as=Table;...` and prints the
columns the server chooses (priority 1 columns only with `-o wide`), so
these follow the real server's columns for pods, nodes, namespaces, events.
"""

from __future__ import annotations

import datetime
from typing import Callable

from .store import RFC3339


def human_age(timestamp: str | None, now: datetime.datetime | None = None) -> str:
    """Age as kubectl shows it (apimachinery's HumanDuration)."""
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.datetime.strptime(timestamp, RFC3339).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return "<invalid>"
    now = now or datetime.datetime.now(datetime.timezone.utc)
    s = max(0, int((now - then).total_seconds()))
    m, h, d = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if m < 10:
        return _two_units(m, "m", s % 60, "s")
    if h < 3:
        return f"{m}m"
    if h < 8:
        return _two_units(h, "h", m % 60, "m")
    if h < 48:
        return f"{h}h"
    if d < 8:
        return _two_units(d, "d", h % 24, "h")
    if d < 730:
        return f"{d}d"
    return f"{d // 365}y{d % 365}d"


def _two_units(big: int, big_unit: str, small: int, small_unit: str) -> str:
    """Like "5h3m", or "5h" when the smaller part is zero."""
    return f"{big}{big_unit}{small}{small_unit}" if small else f"{big}{big_unit}"


def _col(name: str, type_: str = "string", priority: int = 0, fmt: str = "") -> dict:
    return {"name": name, "type": type_, "format": fmt, "description": name, "priority": priority}


def _pod_row(pod: dict) -> list:
    spec, status, meta = pod.get("spec") or {}, pod.get("status") or {}, pod["metadata"]
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Pending"
    for c in statuses:
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason") and status.get("phase") != "Running":
            reason = state["terminated"]["reason"]
    if meta.get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [meta["name"], f"{ready}/{len(spec.get('containers') or [])}", reason, restarts,
            human_age(meta.get("creationTimestamp")), status.get("podIP") or "<none>",
            spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
            f"{len(gates)}" if gates else "<none>"]


def _node_row(node: dict) -> list:
    meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    # As kubectl's printer: no Ready condition is Unknown; one that is not True (False or Unknown) is NotReady.
    state = "Unknown" if ready is None else "Ready" if ready.get("status") == "True" else "NotReady"
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    roles = sorted(k.split("/", 1)[1] for k in meta.get("labels") or {}
                   if k.startswith("node-role.kubernetes.io/") and "/" in k)
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    info = status.get("nodeInfo") or {}
    return [meta["name"], state, ",".join(roles) or "<none>", human_age(meta.get("creationTimestamp")),
            info.get("kubeletVersion") or "", addresses.get("InternalIP") or "<none>",
            addresses.get("ExternalIP") or "<none>", info.get("osImage") or "<unknown>",
            info.get("kernelVersion") or "<unknown>", info.get("containerRuntimeVersion") or "<unknown>"]


def _namespace_row(ns: dict) -> list:
    return [ns["metadata"]["name"], (ns.get("status") or {}).get("phase") or "",
            human_age(ns["metadata"].get("creationTimestamp"))]


def _event_row(ev: dict) -> list:
    obj = ev.get("involvedObject") or {}
    seen = ev.get("lastTimestamp") or ev.get("eventTime") or ev["metadata"].get("creationTimestamp")
    if isinstance(seen, str) and "." in seen:  # eventTime has microseconds
        seen = seen.split(".")[0] + "Z"
    return [human_age(seen), ev.get("type") or "", ev.get("reason") or "",
            f"{(obj.get('kind') or '').lower()}/{obj.get('name') or ''}", ev.get("message") or ""]


def _claim_row(claim: dict) -> list:
    spec, status = claim.get("spec") or {}, claim.get("status") or {}
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
    return [claim["metadata"]["name"], status.get("phase") or "Pending", spec.get("volumeName") or "",
            (status.get("capacity") or {}).get("storage") or "",
            ",".join(short.get(m, m) for m in status.get("accessModes") or []), spec.get("storageClassName") or "",
            human_age(claim["metadata"].get("creationTimestamp")), spec.get("volumeMode") or ""]


COLUMNS: dict[str, tuple[list[dict], Callable[[dict], list]]] = {
    "pods": ([_col("Name", fmt="name"), _col("Ready"), _col("Status"), _col("Restarts", "integer"), _col("Age"),
              _col("IP", priority=1), _col("Node", priority=1), _col("Nominated Node", priority=1),
              _col("Readiness Gates", priority=1)], _pod_row),
    "nodes": ([_col("Name", fmt="name"), _col("Status"), _col("Roles"), _col("Age"), _col("Version"),
               _col("Internal-IP", priority=1), _col("External-IP", priority=1), _col("OS-Image", priority=1),
               _col("Kernel-Version", priority=1), _col("Container-Runtime", priority=1)], _node_row),
    "namespaces": ([_col("Name", fmt="name"), _col("Status"), _col("Age")], _namespace_row),
    "events": ([_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Message")], _event_row),
    "persistentvolumeclaims": ([_col("Name", fmt="name"), _col("Status"), _col("Volume"), _col("Capacity"),
                                _col("Access Modes"), _col("StorageClass"), _col("Age"),
                                _col("VolumeMode", priority=1)], _claim_row),
}


def table_version(accept: str) -> str | None:
    """The meta.k8s.io version of Table the Accept header asks for, or None."""
    for part in (accept or "").split(","):
        params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1"):
            return params["v"]
    return None


def to_table(kind: str, objects: list[dict], version: str, include_object: str | None,
             resource_version: str, headers: bool = True) -> dict:
    columns, row_of = COLUMNS[kind]
    rows = []
    for obj in objects:
        row = {"cells": row_of(obj)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}",
                             "metadata": obj["metadata"]}
        rows.append(row)
    return {"kind": "Table", "apiVersion": f"meta.k8s.io/{version}",
            "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": columns if headers else [], "rows": rows}


__all__ = ["COLUMNS", "human_age", "table_version", "to_table"]
