"""A container's resources as the API server validates them, checked before
the pod is sent: a GPU asked for the way KubeSpawner's own help shows
(`extra_resource_guarantees = {"nvidia.com/gpu": "1"}`, no limit) was the API
server's 422, with the whole pod, in a traceback.
"""

from __future__ import annotations

import decimal
from typing import Any, Callable

from .quantity import QuantityError, parse_quantity

# The resources a container may name without a domain (hugepages-<size> aside).
_PLAIN_NAMES = ("cpu", "memory", "ephemeral-storage")


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _overcommitted_ok(name: str) -> bool:
    # Kubernetes' IsOvercommitAllowed: a native resource but hugepages. Extended ones (GPUs) are whole devices.
    return _native(name) and not name.startswith("hugepages-")


def _name_problem(name: Any) -> str | None:
    if isinstance(name, str) and (name in _PLAIN_NAMES or name.startswith("hugepages-")
                                  or ("/" in name and not name.startswith("requests."))):
        return None
    return (f"{name!r} is no resource a container can ask for (cpu, memory, ephemeral-storage, hugepages-<size>, "
            "or a name with its domain: a GPU is e.g. 'nvidia.com/gpu')")


def _amount(name: str, value: Any) -> tuple[decimal.Decimal | None, str | None]:
    try:
        amount = parse_quantity(value)
    except (QuantityError, decimal.DecimalException) as e:
        return None, f"{name!r}: {e}"
    if not _native(name) and amount != amount.to_integral_value():
        return None, f"{name!r}: {value!r} is not a whole number (an extended resource counts whole devices)"
    return amount, None


def resources_problem(requests: dict, limits: dict, asked: Callable[[str], str],
                       limited: Callable[[str], str]) -> str | None:
    """Why the API server would refuse a container with these `requests` and
    `limits` (None when it would not); `asked` and `limited` name the admin's
    setting a resource's request and limit came from."""
    amounts: dict[tuple[bool, str], decimal.Decimal] = {}
    for is_limit, values in ((False, requests or {}), (True, limits or {})):
        if not isinstance(values, dict):
            return f"{(limited if is_limit else asked)('')}: {values!r} is not a dict of resources and amounts"
        for name, value in values.items():
            problem = _name_problem(name)
            amount, problem = (None, problem) if problem else _amount(name, value)
            if problem:
                return f"{(limited if is_limit else asked)(name)}: {problem}"
            amounts[is_limit, name] = amount
    for name, value in (requests or {}).items():
        request, limit = amounts[False, name], amounts.get((True, name))
        asked_in, limited_in = asked(name), limited(name)
        if limit is None and not _overcommitted_ok(name):
            return (f"{asked_in}: {name!r} ({value}) has no limit: Kubernetes refuses a pod whose {name} is not "
                    f"limited to exactly what it requests; set {limited_in} {{{name!r}: {value!r}}} too")
        if limit is not None and not _overcommitted_ok(name) and request != limit:
            return (f"{asked_in}: {name!r} ({value}) differs from its limit in {limited_in} ({limits[name]}): "
                    f"Kubernetes takes {name} only with a request equal to its limit")
        if limit is not None and request > limit:
            return (f"{asked_in}: {name!r} ({value}) is above its limit in {limited_in} ({limits[name]}): Kubernetes "
                    "refuses such a pod")
    return None
