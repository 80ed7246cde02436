"""Decoding and validation of objects clients send, as the real API server does.

- `decode()`: the typed decode step. Field names and JSON types are checked
  against the core/v1 schema, taken from kubernetes_asyncio's generated
  models (the same OpenAPI the real server publishes). Unknown fields are
  dropped and reported (the server then warns, or rejects under
  fieldValidation=Strict); a wrong JSON type is a 400 BadRequest.
- `validate()`: object validation, 422 Invalid with per-field causes:
  names (RFC 1123), labels, pod containers (name + image), quantities.
- `default_pod()`: the defaults the real server fills into a new pod.
"""

from __future__ import annotations

import re
from typing import Any

from kubernetes_asyncio.client import models

from ..quantity import QuantityError, parse_quantity
from .selectors import DNS_SUBDOMAIN, label_key_error, label_value_error
from .store import KINDS, ApiError

MODEL_OF_KIND = {"pods": "V1Pod", "nodes": "V1Node", "namespaces": "V1Namespace", "events": "CoreV1Event",
                 "persistentvolumeclaims": "V1PersistentVolumeClaim"}
# Maps whose string values are quantities: the real server accepts numbers there.
_QUANTITY_MAPS = {"requests", "limits", "capacity", "allocatable", "overhead", "hard", "used"}
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_schema_cache: dict[str, dict[str, str]] = {}
_ZERO = {"str": "", "int": 0, "float": 0.0, "bool": False, "datetime": "", "date": ""}


def _fields(model_name: str) -> dict[str, str]:
    """JSON field name -> type string of a generated model."""
    if model_name not in _schema_cache:
        cls = getattr(models, model_name)
        _schema_cache[model_name] = {cls.attribute_map[a]: t for a, t in cls.openapi_types.items()}
    return _schema_cache[model_name]


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "bool"}.get(type(value), "number")


def _check(value: Any, type_str: str, path: str, unknown: list[str], kind_name: str, quantity: bool) -> None:
    if value is None or type_str == "object":
        return
    def bad(expected: str) -> ApiError:
        return ApiError(400, "BadRequest", f'{kind_name} in version "v1" cannot be handled as a {kind_name}: '
                        f"json: cannot unmarshal {_json_type(value)} into Go struct field {path} of type {expected}")
    if type_str.startswith("list["):
        if not isinstance(value, list):
            raise bad("[]" + type_str[5:-1])
        for i, item in enumerate(value):
            if item is None:  # Go decodes null as the zero value
                item = value[i] = _ZERO.get(type_str[5:-1], {})
            _check(item, type_str[5:-1], f"{path}[{i}]", unknown, kind_name, False)
    elif type_str.startswith("dict("):
        if not isinstance(value, dict):
            raise bad("map")
        inner = type_str[type_str.index(",") + 1:-1].strip()
        is_quantity = path.rsplit(".", 1)[-1] in _QUANTITY_MAPS
        for k, v in value.items():
            if v is None:
                v = value[k] = _ZERO.get(inner, {})
            _check(v, inner, f"{path}[{k}]", unknown, kind_name, is_quantity)
    elif type_str in ("str", "datetime", "date"):
        if not isinstance(value, str) and not (quantity and isinstance(value, (int, float))
                                               and not isinstance(value, bool)):
            raise bad("string")
    elif type_str == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("int")
    elif type_str == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("float")
    elif type_str == "bool":
        if not isinstance(value, bool):
            raise bad("bool")
    else:
        if not isinstance(value, dict):
            raise bad(type_str)
        fields = _fields(type_str)
        for key in list(value):
            if value[key] is None:
                del value[key]  # null means "unset" to the real server's decoder
            elif key not in fields:
                unknown.append(f"{path}.{key}" if path else key)
                del value[key]
            else:
                _check(value[key], fields[key], f"{path}.{key}" if path else key, unknown, kind_name, False)


def decode(kind: str, body: Any) -> tuple[dict, list[str]]:
    """Type-check `body` (a parsed JSON value) as an object of `kind`, in place.
    Returns it and the paths of the unknown fields that were dropped."""
    kind_name = KINDS[kind][0]
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", f"the body of the request must be a JSON object ({kind_name}), "
                       f"not a JSON {_json_type(body)}")
    if body.get("kind") not in (None, kind_name):
        raise ApiError(400, "BadRequest", f'the kind of the object, {body.get("kind")!r}, '
                       f"does not match the resource {kind} (kind {kind_name})")
    if body.get("apiVersion") not in (None, "v1"):
        raise ApiError(400, "BadRequest", f'{kind_name} in version {body.get("apiVersion")!r} cannot be handled '
                       f'as a {kind_name}: no kind "{kind_name}" is registered for that version')
    unknown: list[str] = []
    _check(body, MODEL_OF_KIND[kind], "", unknown, kind_name, False)
    return body, unknown


def decode_options(model_name: str, kind_name: str, body: Any) -> dict:
    """Type-check a request body that is not a stored object (a Binding, DeleteOptions)
    against its core/v1 model, in place; unknown fields are dropped."""
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", f"the body of the request must be a JSON object ({kind_name}), "
                       f"not a JSON {_json_type(body)}")
    _check(body, model_name, "", [], kind_name, False)
    return body


def _name_error(kind: str, name: str) -> str | None:
    if kind == "namespaces":
        if len(name) > 63 or not _DNS_LABEL.match(name):
            return ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                    "and must start and end with an alphanumeric character (at most 63)")
    elif len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        return ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character (at most 253)")
    return None


class _Causes:
    def __init__(self):
        self.items: list[dict] = []

    def invalid(self, field: str, value: Any, why: str) -> None:
        self.items.append({"reason": "FieldValueInvalid", "field": field,
                           "message": f"Invalid value: {_show(value)}: {why}"})

    def required(self, field: str, why: str = "") -> None:
        self.items.append({"reason": "FieldValueRequired", "field": field,
                           "message": "Required value" + (f": {why}" if why else "")})

    def duplicate(self, field: str, value: Any) -> None:
        self.items.append({"reason": "FieldValueDuplicate", "field": field,
                           "message": f"Duplicate value: {_show(value)}"})

    def forbidden(self, field: str, why: str) -> None:
        self.items.append({"reason": "FieldValueForbidden", "field": field, "message": f"Forbidden: {why}"})


def _show(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def invalid_error(kind: str, name: str, causes: list[dict]) -> ApiError:
    kind_name = KINDS[kind][0]
    summary = "; ".join(f"{c['field']}: {c['message']}" for c in causes)
    what = f'{kind_name} "{name}"' if name else kind_name
    return ApiError(422, "Invalid", f"{what} is invalid: {summary}",
                    {"name": name, "kind": kind_name, "causes": causes})


def validate(kind: str, obj: dict) -> None:
    """Raise 422 Invalid naming every bad field of a decoded object."""
    causes = _Causes()
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if name:
        why = _name_error(kind, name)
        if why:
            causes.invalid("metadata.name", name, why)
    elif not meta.get("generateName"):
        causes.required("metadata.name", "name or generateName is required")
    for key, value in (meta.get("labels") or {}).items():
        why = label_key_error(key)
        if why:
            causes.invalid("metadata.labels", key, why)
        why = label_value_error(value)
        if why:
            causes.invalid("metadata.labels", value, why)
    for key in meta.get("annotations") or {}:
        why = label_key_error(key)
        if why:
            causes.invalid("metadata.annotations", key, why)
    if kind == "pods":
        _validate_pod_spec(obj.get("spec"), causes)
    elif kind == "nodes":
        for i, taint in enumerate((obj.get("spec") or {}).get("taints") or []):
            if not taint.get("key"):
                causes.required(f"spec.taints[{i}].key")
            if taint.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                causes.invalid(f"spec.taints[{i}].effect", taint.get("effect"),
                               'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"')
        for section in ("capacity", "allocatable"):
            _validate_quantities((obj.get("status") or {}).get(section), f"status.{section}", causes)
    elif kind == "events":
        if not obj.get("involvedObject"):
            causes.required("involvedObject")
    elif kind == "persistentvolumeclaims":
        spec = obj.get("spec") or {}
        if not spec.get("accessModes"):
            causes.required("spec.accessModes")
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        if storage is None:
            causes.required("spec.resources[storage]")
        _validate_quantities({"storage": storage} if storage is not None else {}, "spec.resources.requests", causes)
    if causes.items:
        raise invalid_error(kind, name or meta.get("generateName") or "", causes.items)


def _validate_quantities(values: dict | None, field: str, causes: _Causes) -> None:
    for res, qty in (values or {}).items():
        if not _QUANTITY.match(str(qty)):
            causes.invalid(f"{field}[{res}]", qty, "quantities must match the regular expression "
                           "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def _validate_requests_within_limits(resources: dict, field: str, causes: _Causes) -> None:
    """A request above its limit is refused, as the real server does (a
    profile raising mem_guarantee alone passed here, and failed on a cluster)."""
    limits = resources.get("limits") or {}
    for res, qty in (resources.get("requests") or {}).items():
        if limits.get(res) is None:
            continue
        try:
            above = parse_quantity(qty) > parse_quantity(limits[res])
        except QuantityError:
            continue  # reported by _validate_quantities
        if above:
            causes.invalid(f"{field}.requests[{res}]", qty, f"must be less than or equal to {res} limit of "
                           f"{limits[res]}")


def _validate_pod_spec(spec: dict | None, causes: _Causes) -> None:
    if not spec:
        causes.required("spec")
        return
    containers = spec.get("containers")
    if not containers:
        causes.required("spec.containers")
    for group in ("initContainers", "containers"):
        seen: set[str] = set()
        for i, c in enumerate(spec.get(group) or []):
            field = f"spec.{group}[{i}]"
            cname = c.get("name")
            if not cname:
                causes.required(f"{field}.name")
            elif len(cname) > 63 or not _DNS_LABEL.match(cname):
                causes.invalid(f"{field}.name", cname, "a lowercase RFC 1123 label must consist of lower case "
                               "alphanumeric characters or '-' (at most 63)")
            elif cname in seen:
                causes.duplicate(f"{field}.name", cname)
            seen.add(cname or "")
            if not c.get("image"):
                causes.required(f"{field}.image")
            for j, port in enumerate(c.get("ports") or []):
                if not isinstance(port.get("containerPort"), int) or not 0 < port["containerPort"] < 65536:
                    causes.invalid(f"{field}.ports[{j}].containerPort", port.get("containerPort"),
                                   "must be between 1 and 65535, inclusive")
            for section in ("requests", "limits"):
                _validate_quantities((c.get("resources") or {}).get(section), f"{field}.resources.{section}", causes)
            _validate_requests_within_limits(c.get("resources") or {}, f"{field}.resources", causes)
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in ("Always", "OnFailure", "Never"):
        causes.invalid("spec.restartPolicy", policy, 'supported values: "Always", "OnFailure", "Never"')


def default_pod(pod: dict) -> dict:
    """Fill the defaults a real API server gives a new pod, and reset its status."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        image = c.get("image") or ""
        tagged = ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest")
        c.setdefault("imagePullPolicy", "IfNotPresent" if tagged or "@" in image else "Always")
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("resources", {})
        for port in c.get("ports") or []:
            port.setdefault("protocol", "TCP")
    pod["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
    return pod


def bound_claim(claim: dict) -> dict:
    """A new claim, bound at once, as by a dynamic provisioner with Immediate
    binding: no volume is emulated (a pod's processes use this machine's
    files), only the claim a pod waits for."""
    spec = claim.get("spec") or {}
    claim["status"] = {"phase": "Bound", "accessModes": list(spec.get("accessModes") or []),
                       "capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage")}}
    spec.setdefault("volumeName", f"pvc-{(claim.get('metadata') or {}).get('name', '')}")
    spec.setdefault("volumeMode", "Filesystem")
    return claim


def _qos_class(spec: dict) -> str:
    containers = spec.get("containers") or []
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get(res) is not None
        and str((r.get("requests") or {}).get(res, r["limits"][res])) == str(r["limits"][res])
        for r in resources for res in ("cpu", "memory"))
    return "Guaranteed" if guaranteed else "Burstable"


# Pod spec fields a client may change after creation (the real server's rule).
_MUTABLE_POD_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")


def check_pod_update(old: dict, new: dict) -> None:
    """422 when an update changes pod spec fields the real server freezes."""
    def frozen(spec: dict) -> dict:
        spec = {k: v for k, v in (spec or {}).items() if k not in _MUTABLE_POD_SPEC}
        for group in ("containers", "initContainers"):
            if group in spec:
                spec[group] = [{k: v for k, v in c.items() if k != "image"} for c in spec[group]]
        return spec
    if frozen(old.get("spec")) != frozen(new.get("spec")):
        causes = _Causes()
        causes.forbidden("spec", "pod updates may not change fields other than `spec.containers[*].image`, "
                         "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` "
                         "(only additions to existing tolerations), `spec.terminationGracePeriodSeconds`")
        raise invalid_error("pods", old["metadata"]["name"], causes.items)
