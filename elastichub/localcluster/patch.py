"""The three PATCH flavours of the Kubernetes API, applied to plain dicts.

- JSON merge patch (RFC 7386): `application/merge-patch+json`.
- Strategic merge patch: `application/strategic-merge-patch+json`: a merge
  patch where lists of keyed objects (containers by name, conditions by
  type, ...) merge item by item, plus the `$patch`, `$retainKeys`,
  `$deleteFromPrimitiveList/` and `$setElementOrder/` directives kubectl
  sends. Merge keys come from the core/v1 types' patchMergeKey tags.
- JSON patch (RFC 6902): `application/json-patch+json`.

Failures raise `PatchError`; the API server answers them with a Status.
"""

from __future__ import annotations

from typing import Any

from .store import copy_json


class PatchError(ValueError):
    """A patch that cannot be applied (422) or is malformed (400)."""

    def __init__(self, message: str, code: int = 422):
        super().__init__(message)
        self.code = code


# List fields of core/v1 objects with patchStrategy=merge, and their key.
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "volumes": "name", "env": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "ports": "containerPort", "imagePullSecrets": "name", "conditions": "type",
    "addresses": "type", "hostAliases": "ip", "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey", "resourceClaims": "name",
}
# Lists of scalars with patchStrategy=merge (union instead of replace).
MERGE_PRIMITIVE_LISTS = {"finalizers"}


def json_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy_json(patch)
    out = copy_json(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = json_merge_patch(out.get(key), value)
    return out


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        raise PatchError(f"a strategic merge patch must be a JSON object, not {type(patch).__name__}", 400)
    return _merge_map(target if isinstance(target, dict) else {}, patch)


def _merge_map(target: dict, patch: dict) -> dict | None:
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy_json(v) for k, v in patch.items() if k != "$patch"}
    if directive is not None:
        raise PatchError(f"unknown patch directive $patch: {directive!r}")
    out = copy_json(target)
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue  # ordering hints change nothing we store
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if not isinstance(value, list):
                raise PatchError(f"{key} must be a list")
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in value]
            continue
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge_map(out.get(key) if isinstance(out.get(key), dict) else {}, value)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list) and key in MERGE_KEYS and isinstance(out.get(key), list):
            out[key] = _merge_list(out[key], value, MERGE_KEYS[key], key)
        elif isinstance(value, list) and key in MERGE_PRIMITIVE_LISTS and isinstance(out.get(key), list):
            out[key] = out[key] + [v for v in value if v not in out[key]]
        else:
            out[key] = copy_json(value)
    if retain is not None:
        if not isinstance(retain, list):
            raise PatchError("$retainKeys must be a list")
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(current: list, patch: list, merge_key: str, field: str) -> list:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy_json(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    out = copy_json(current)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise PatchError(f"{field}: every item of a merging list needs its merge key {merge_key!r}")
        idx = next((i for i, cur in enumerate(out)
                    if isinstance(cur, dict) and cur.get(merge_key) == item[merge_key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append({k: copy_json(v) for k, v in item.items() if k != "$patch"})
        else:
            out[idx] = _merge_map(out[idx], item)
    return out


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(f"invalid JSON pointer {path!r}: it must start with '/'", 400)
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str) -> Any:
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise PatchError(f"path {path!r} does not exist (no {part!r})")
    return cur


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent, last = _parent(doc, parts, path), parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise PatchError(f"path {path!r} does not exist")


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        raise PatchError("cannot remove the whole document")
    parent, last = _parent(doc, parts, path), parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise PatchError(f"cannot remove {path!r}: it does not exist")


def _add(doc: Any, path: str, value: Any, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(doc, parts, path), parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError(f"cannot replace {path!r}: it does not exist")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = value
            else:
                parent.insert(int(last), value)
        else:
            raise PatchError(f"index {last!r} of {path!r} is out of range")
    else:
        raise PatchError(f"cannot add at {path!r}: its parent is not an object or array")
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a JSON array of operations", 400)
    doc = copy_json(target)
    for n, op in enumerate(ops):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"JSON patch operation {n} needs 'op' and 'path'", 400)
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"JSON patch operation {n} ({kind}) needs 'value'", 400)
        if kind == "add":
            doc = _add(doc, path, copy_json(op["value"]))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            doc = _add(doc, path, copy_json(op["value"]), replace=True)
        elif kind in ("move", "copy"):
            if "from" not in op:
                raise PatchError(f"JSON patch operation {n} ({kind}) needs 'from'", 400)
            value = _remove(doc, op["from"]) if kind == "move" else copy_json(_get(doc, op["from"]))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise PatchError(f"testing value {path} failed")
        else:
            raise PatchError(f"unknown JSON patch operation {kind!r}", 400)
    return doc


PATCH_TYPES = {
    "application/json-patch+json": json_patch,
    "application/merge-patch+json": json_merge_patch,
    "application/strategic-merge-patch+json": strategic_merge_patch,
}


def apply_patch(content_type: str, target: dict, patch: Any) -> dict:
    fn = PATCH_TYPES.get(content_type.split(";")[0].strip().lower())
    if fn is None:
        raise PatchError(f"the body of the request was in an unknown format - accepted media types include: "
                         f"{', '.join(PATCH_TYPES)}", 415)
    result = fn(target, patch)
    if not isinstance(result, dict):
        raise PatchError("the patch did not produce a JSON object")
    return result
