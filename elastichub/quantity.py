"""Kubernetes resource quantities ("500m", "2Gi", "1e3"), parsed exactly.

Shared by the local cluster (which schedules on them) and the orchestrator
(which reads the requests and allocatable of real nodes and pods).
"""

from __future__ import annotations

import decimal
import re
from typing import Any

_BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIXES = {
    "m": decimal.Decimal("0.001"),
    "": decimal.Decimal(1),
    "k": decimal.Decimal(10) ** 3,
    "M": decimal.Decimal(10) ** 6,
    "G": decimal.Decimal(10) ** 9,
    "T": decimal.Decimal(10) ** 12,
    "P": decimal.Decimal(10) ** 15,
    "E": decimal.Decimal(10) ** 18,
}
_INT64_MAX = 2**63 - 1
_QUANTITY_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")


class QuantityError(ValueError):
    """A string is not a Kubernetes resource quantity."""


def parse_quantity(value: Any) -> decimal.Decimal:
    """A Kubernetes quantity ("500m", "2Gi", "1e3", 4, 0.5) as an exact Decimal."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise QuantityError(f"{value!r} is not a quantity (a number or a string like '500m' or '2Gi')")
    text = str(value).strip()
    match = _QUANTITY_RE.match(text)
    if not match:
        raise QuantityError(f"{value!r} is not a quantity (expected e.g. '500m', '2', '512Mi', '1G')")
    number, suffix = decimal.Decimal(match.group(1)), match.group(2) or ""
    if number < 0:
        raise QuantityError(f"{value!r} is negative")
    if suffix in _BINARY_SUFFIXES:
        return number * _BINARY_SUFFIXES[suffix]
    return number * _DECIMAL_SUFFIXES[suffix]


def _whole_units(value: Any, scale: int) -> int:
    """The quantity times `scale`, rounded up to an integer, as Kubernetes rounds.
    Beyond int64 (where Kubernetes' scaled values end) is an error: "1e999999" would
    otherwise cost the event loop a minute turning it into a million-digit int."""
    try:
        scaled = parse_quantity(value) * scale
    except decimal.DecimalException:  # an exponent beyond even Decimal's range
        scaled = None
    if scaled is None or scaled > _INT64_MAX:
        raise QuantityError(f"{value!r} is out of range for a quantity")
    return int(scaled.to_integral_value(rounding=decimal.ROUND_CEILING))


def parse_cpu(value: Any) -> int:
    """CPU quantity in millicores ("500m" -> 500, "2" -> 2000), rounded up like Kubernetes."""
    return _whole_units(value, 1000)


def parse_memory(value: Any) -> int:
    """Memory quantity in bytes ("2Gi" -> 2147483648, "1G" -> 10**9), rounded up."""
    return _whole_units(value, 1)


# A CSV column of cores or of GiB (traces, calendars) may hold what `kubectl`
# shows instead: "500m", "512Mi". Only the suffixes that say the same thing
# in that column are taken; "2G" in a GiB column is 10**9 bytes to
# Kubernetes but most likely meant as 2 GiB by whoever wrote it.
_GIB = decimal.Decimal(2**30)


def _number_or_quantity(value: Any, unit: str, examples: str) -> tuple[str, float | None, re.Match | None]:
    """(text, the plain number or None, else the quantity's match); neither is an error naming `unit`."""
    text = str(value).strip()
    try:
        return text, float(text), None
    except ValueError:
        pass
    match = _QUANTITY_RE.match(text)
    if not match:
        raise QuantityError(f"not a number of {unit}: {text!r} (expected e.g. {examples})")
    return text, None, match


def cores(value: Any) -> float:
    """CPU in cores: a number, or a Kubernetes CPU quantity ("500m")."""
    text, number, match = _number_or_quantity(value, "cores", "0.5 or 500m")
    if match is None:
        return number
    if match.group(2) != "m":
        raise QuantityError(f"{text!r} is not a number of cores (expected e.g. 0.5 or 500m)")
    return float(parse_quantity(text))


def gib(value: Any) -> float:
    """Memory in GiB: a number, or a Kubernetes memory quantity with a binary suffix ("512Mi", "2Gi")."""
    text, number, match = _number_or_quantity(value, "GiB", "2, 0.5 or 512Mi")
    if match is None:
        return number
    suffix = match.group(2)
    if suffix == "m":
        raise QuantityError(f"{text!r} in GiB: 'm' is a thousandth (of a byte, to Kubernetes); write 0.5 or 512Mi")
    if suffix not in _BINARY_SUFFIXES:
        raise QuantityError(f"{text!r} in GiB: Kubernetes reads '{suffix}' as a power of 10 (of bytes); write "
                            f"{match.group(1)}Gi for {match.group(1)} GiB, or the GiB as a plain number")
    return float(parse_quantity(text) / _GIB)
