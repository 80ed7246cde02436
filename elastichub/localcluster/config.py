"""Configuration of the local cluster: nodes, cloud boot delay, API port, kubeconfig.

The config is a TOML file::

    [cluster]
    port = 6443                 # API server port on 127.0.0.1 (0: any free port)
    kubeconfig = "kubeconfig.yaml"
    boot_delay = 5.0            # seconds a cloud VM takes to boot
    workdir = "."               # working directory of pods that set none

    [[nodes]]
    name = "onprem"
    count = 2                   # optional: onprem-1, onprem-2
    tier = "on-prem"            # or "cloud": a VM of the cloud pool, powered off at start
    cpu = "4"                   # allocatable, a Kubernetes quantity
    memory = "8Gi"
    labels = { "example.org/rack" = "a" }
    taints = [ { key = "dedicated", value = "gpu", effect = "NoSchedule" } ]

Every error is a `ConfigError` naming the key at fault (``nodes[2].memory``).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from pathlib import Path
from typing import Any

from ..quantity import QuantityError, parse_cpu, parse_memory  # noqa: F401 (re-exported)
from ..podmeta import TIER_LABEL
from .selectors import DNS_SUBDOMAIN, label_key_error, label_value_error

TIERS = ("on-prem", "cloud")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
DEFAULT_PORT = 6443
DEFAULT_KUBECONFIG = "~/.kube/elastichub-localcluster.yaml"


class ConfigError(ValueError):
    """The cluster config (or a quantity in it) is invalid; the message names the key."""


@dataclasses.dataclass(frozen=True)
class NodeConfig:
    name: str
    tier: str  # "on-prem" or "cloud"
    cpu: str  # allocatable, as written (a quantity)
    memory: str
    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    taints: tuple[dict[str, str], ...] = ()

    @property
    def cpu_millis(self) -> int:
        return parse_cpu(self.cpu)

    @property
    def memory_bytes(self) -> int:
        return parse_memory(self.memory)


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    nodes: tuple[NodeConfig, ...]
    port: int = DEFAULT_PORT
    kubeconfig: str = DEFAULT_KUBECONFIG
    boot_delay: float = 5.0
    stop_delay: float = 0.0  # seconds a stopped VM reads "stopping" (not in the TOML file: tests set it)
    workdir: str = "."
    host: str = "127.0.0.1"  # loopback only: the emulator has no authentication

    @property
    def kubeconfig_path(self) -> Path:
        return Path(os.path.expanduser(self.kubeconfig))

    def replace(self, **changes: Any) -> ClusterConfig:
        return dataclasses.replace(self, **changes)


def default_config() -> ClusterConfig:
    """Two on-prem nodes and a pool of two (powered-off) cloud nodes, 4 CPU / 8 GiB each."""
    nodes = [NodeConfig(f"onprem-{i}", "on-prem", "4", "8Gi") for i in (1, 2)]
    nodes += [NodeConfig(f"cloud-{i}", "cloud", "4", "8Gi") for i in (1, 2)]
    return ClusterConfig(nodes=tuple(nodes))


def load_config(path: str | os.PathLike) -> ClusterConfig:
    """Read and validate a TOML cluster config file."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config {path} is not valid TOML: {e}") from None
    try:
        return parse_config(data)
    except ConfigError as e:
        raise ConfigError(f"config {path}: {e}") from None


def parse_config(data: dict[str, Any]) -> ClusterConfig:
    """Validate a config already parsed from TOML (see the module docstring for the format)."""
    _no_unknown_keys(data, {"cluster", "nodes"}, "")
    cluster = data.get("cluster", {})
    if not isinstance(cluster, dict):
        raise ConfigError("cluster must be a table")
    _no_unknown_keys(cluster, {"port", "kubeconfig", "boot_delay", "workdir"}, "cluster.")
    defaults = ClusterConfig(nodes=())
    port = cluster.get("port", defaults.port)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"cluster.port must be an integer in 0..65535, not {port!r}")
    boot_delay = cluster.get("boot_delay", defaults.boot_delay)
    if isinstance(boot_delay, bool) or not isinstance(boot_delay, (int, float)) or boot_delay < 0:
        raise ConfigError(f"cluster.boot_delay must be a number of seconds >= 0, not {boot_delay!r}")
    kubeconfig = _string(cluster, "kubeconfig", "cluster.", defaults.kubeconfig)
    workdir = _string(cluster, "workdir", "cluster.", defaults.workdir)

    if "nodes" not in data:
        nodes = default_config().nodes
    else:
        raw_nodes = data["nodes"]
        if not isinstance(raw_nodes, list) or not raw_nodes:
            raise ConfigError("nodes must be a non-empty array of tables ([[nodes]])")
        nodes = tuple(n for i, raw in enumerate(raw_nodes) for n in parse_node(raw, f"nodes[{i}]."))
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise ConfigError(f"node name {node.name!r} appears twice")
        seen.add(node.name)
    return ClusterConfig(
        nodes=nodes, port=port, kubeconfig=kubeconfig, boot_delay=float(boot_delay), workdir=workdir
    )


def parse_node(raw: Any, where: str) -> list[NodeConfig]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where.rstrip('.')} must be a table")
    _no_unknown_keys(raw, {"name", "count", "tier", "cpu", "memory", "labels", "taints"}, where)
    for key in ("name", "tier", "cpu", "memory"):
        if key not in raw:
            raise ConfigError(f"{where}{key} is required")
    name = _string(raw, "name", where, None)
    tier = raw["tier"]
    if tier not in TIERS:
        raise ConfigError(f"{where}tier must be one of {', '.join(TIERS)}, not {tier!r}")
    cpu, memory = raw["cpu"], raw["memory"]
    try:
        parse_cpu(cpu)
    except QuantityError as e:
        raise ConfigError(f"{where}cpu: {e}") from None
    try:
        parse_memory(memory)
    except QuantityError as e:
        raise ConfigError(f"{where}memory: {e}") from None
    labels = raw.get("labels", {})
    if not isinstance(labels, dict):
        raise ConfigError(f"{where}labels must be a table of strings")
    for key, value in labels.items():
        if not isinstance(value, str) or label_value_error(value):
            raise ConfigError(f"{where}labels.{key}: {value!r} is not a valid label value")
        if label_key_error(key):
            raise ConfigError(f"{where}labels: {key!r} is not a valid label key")
        if key == TIER_LABEL:
            raise ConfigError(f"{where}labels.{key} is set from {where}tier; remove it")
    taints = raw.get("taints", [])
    if not isinstance(taints, list):
        raise ConfigError(f"{where}taints must be an array of tables")
    parsed_taints = tuple(_parse_taint(t, f"{where}taints[{i}].") for i, t in enumerate(taints))
    count = raw.get("count")
    if count is None:
        names = [name]
    elif isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"{where}count must be an integer >= 1, not {count!r}")
    else:
        names = [f"{name}-{i}" for i in range(1, count + 1)]
    for n in names:
        if len(n) > 253 or not DNS_SUBDOMAIN.match(n):
            raise ConfigError(
                f"{where}name: {n!r} is not a valid node name (lower-case letters, digits, '-' and '.')"
            )
    return [
        NodeConfig(n, tier, str(cpu), str(memory), dict(labels), parsed_taints) for n in names
    ]


def _parse_taint(raw: Any, where: str) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where.rstrip('.')} must be a table")
    _no_unknown_keys(raw, {"key", "value", "effect"}, where)
    key = _string(raw, "key", where, None)
    if label_key_error(key):
        raise ConfigError(f"{where}key: {key!r} is not a valid taint key")
    effect = raw.get("effect")
    if effect not in TAINT_EFFECTS:
        raise ConfigError(f"{where}effect must be one of {', '.join(TAINT_EFFECTS)}, not {effect!r}")
    taint = {"key": key, "effect": effect}
    if "value" in raw:
        taint["value"] = _string(raw, "value", where, None)
    return taint


def _string(table: dict, key: str, where: str, default: str | None) -> str:
    if key not in table:
        if default is None:
            raise ConfigError(f"{where}{key} is required")
        return default
    value = table[key]
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}{key} must be a non-empty string, not {value!r}")
    return value


def _no_unknown_keys(table: dict, known: set[str], where: str) -> None:
    for key in table:
        if key not in known:
            raise ConfigError(f"unknown key {where}{key} (known: {', '.join(sorted(known))})")
