"""Kubernetes label and field selectors: parse once, match many objects.

Label selectors follow apimachinery's grammar: comma-separated requirements
`k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k>n`, `k<n`.
Field selectors support `=`, `==`, `!=` on the fields the real API server
indexes for each kind; anything else is a 400, as on a real server.
"""

from __future__ import annotations

import re
from typing import Callable

# Field paths each kind can be selected on (beyond metadata.name/namespace).
FIELD_PATHS: dict[str, dict[str, tuple[str, ...]]] = {
    "pods": {
        "spec.nodeName": ("spec", "nodeName"),
        "spec.restartPolicy": ("spec", "restartPolicy"),
        "spec.schedulerName": ("spec", "schedulerName"),
        "spec.serviceAccountName": ("spec", "serviceAccountName"),
        "status.phase": ("status", "phase"),
        "status.podIP": ("status", "podIP"),
        "status.nominatedNodeName": ("status", "nominatedNodeName"),
    },
    "events": {
        "involvedObject.kind": ("involvedObject", "kind"),
        "involvedObject.namespace": ("involvedObject", "namespace"),
        "involvedObject.name": ("involvedObject", "name"),
        "involvedObject.uid": ("involvedObject", "uid"),
        "involvedObject.apiVersion": ("involvedObject", "apiVersion"),
        "involvedObject.resourceVersion": ("involvedObject", "resourceVersion"),
        "involvedObject.fieldPath": ("involvedObject", "fieldPath"),
        "reason": ("reason",),
        "reportingComponent": ("reportingComponent",),
        "source": ("source", "component"),
        "type": ("type",),
    },
    "nodes": {"spec.unschedulable": ("spec", "unschedulable")},
    "namespaces": {"status.phase": ("status", "phase")},
}
_COMMON_FIELDS = {"metadata.name": ("metadata", "name"), "metadata.namespace": ("metadata", "namespace")}


class SelectorError(ValueError):
    """A selector that does not parse; the API server answers 400 BadRequest."""


Matcher = Callable[[dict], bool]

_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
# A lowercase RFC 1123 subdomain: label key prefixes, node and pod names.
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
# One token: an operator, a paren/comma, or a run of other characters.
_TOKEN = re.compile(r"\s*(==|!=|=|\(|\)|,|!|>|<|[^\s=!(),<>]+)")


def label_key_error(key: str) -> str | None:
    """Why `key` is not a valid label key (prefix/name), or None."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        return f"prefix part of {key!r} must be a lowercase RFC 1123 subdomain"
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        return (f"name part of {key!r} must consist of alphanumeric characters, '-', '_' or '.', "
                "at most 63, starting and ending with an alphanumeric character")
    return None


def label_value_error(value: str) -> str | None:
    """Why `value` is not a valid label value, or None."""
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return (f"{value!r}: a valid label value must be empty or consist of alphanumeric characters, "
                "'-', '_' or '.', at most 63, starting and ending with an alphanumeric character")
    return None


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise SelectorError(f"unable to parse requirement: unexpected character at {text[pos:]!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def parse_label_selector(text: str | None) -> Matcher:
    """Compile a label selector; the empty selector matches everything."""
    if not text or not text.strip():
        return lambda obj: True
    toks, i, reqs = _tokens(text), 0, []

    def take() -> str:
        nonlocal i
        if i >= len(toks):
            raise SelectorError(f"unable to parse requirement: unexpected end of selector {text!r}")
        i += 1
        return toks[i - 1]

    def check_key(key: str) -> str:
        if key in ("(", ")", ",", "=", "==", "!=", "!", "<", ">", "in", "notin"):
            raise SelectorError(f"unable to parse requirement: expected a label key, found {key!r}")
        err = label_key_error(key)
        if err:
            raise SelectorError(f"unable to parse requirement: invalid label key {err}")
        return key

    def check_value(value: str) -> str:
        err = label_value_error(value)
        if err:
            raise SelectorError(f"unable to parse requirement: invalid label value: {err}")
        return value

    while i < len(toks):
        tok = take()
        if tok == "!":
            key = check_key(take())
            reqs.append(lambda labels, k=key: k not in labels)
        else:
            key = check_key(tok)
            op = toks[i] if i < len(toks) else ","
            if op == ",":
                reqs.append(lambda labels, k=key: k in labels)
            else:
                take()
                if op in ("=", "==", "!="):
                    nxt = toks[i] if i < len(toks) else ","
                    value = "" if nxt == "," else check_value(take())
                    if op == "!=":
                        reqs.append(lambda labels, k=key, v=value: labels.get(k) != v)
                    else:
                        reqs.append(lambda labels, k=key, v=value: labels.get(k) == v)
                elif op in ("in", "notin"):
                    if take() != "(":
                        raise SelectorError(f"unable to parse requirement: expected '(' after {op!r} in {text!r}")
                    values: set[str] = set()
                    while True:
                        tok = take()
                        if tok == ")":
                            break
                        if tok == ",":
                            continue
                        values.add(check_value(tok))
                    if op == "in":
                        if not values:
                            raise SelectorError(f"unable to parse requirement: 'in' needs at least one value in {text!r}")
                        reqs.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
                    else:
                        reqs.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
                elif op in (">", "<"):
                    raw = take()
                    try:
                        bound = int(raw)
                    except ValueError:
                        raise SelectorError(f"unable to parse requirement: {op!r} needs an integer, found {raw!r}")
                    reqs.append(_numeric(key, op, bound))
                else:
                    raise SelectorError(f"unable to parse requirement: unknown operator {op!r} in {text!r}")
        if i < len(toks):
            if take() != ",":
                raise SelectorError(f"unable to parse requirement: expected ',' in {text!r}")
            if i >= len(toks):
                raise SelectorError(f"unable to parse requirement: trailing ',' in {text!r}")

    def match(obj: dict) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r(labels) for r in reqs)

    return match


def _numeric(key: str, op: str, bound: int):
    def req(labels: dict) -> bool:
        try:
            value = int(labels[key])
        except (KeyError, ValueError):
            return False
        return value > bound if op == ">" else value < bound

    return req


def _field_value(obj: dict, path: tuple[str, ...]) -> str:
    cur = obj
    for part in path:
        cur = cur.get(part) if isinstance(cur, dict) else None
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(text: str | None, kind: str) -> Matcher:
    """Compile a field selector for objects of `kind` ("pods", "events", ...)."""
    if not text or not text.strip():
        return lambda obj: True
    allowed = {**_COMMON_FIELDS, **FIELD_PATHS.get(kind, {})}
    reqs = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise SelectorError(f"invalid field selector {text!r}: empty requirement")
        for op in ("!=", "==", "="):
            if op in part:
                field, _, value = part.partition(op)
                break
        else:
            raise SelectorError(f"invalid selector: {part!r}; can't understand {part!r}")
        field, value = field.strip(), value.strip()
        if field not in allowed:
            raise SelectorError(f'field label not supported: {field}')
        path, negate = allowed[field], op == "!="
        reqs.append(lambda obj, p=path, v=value, n=negate: (_field_value(obj, p) == v) != n)
    return lambda obj: all(r(obj) for r in reqs)
