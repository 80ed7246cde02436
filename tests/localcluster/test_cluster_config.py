"""The local cluster's TOML config and Kubernetes quantities."""

from __future__ import annotations

import pytest

from elastichub.localcluster.config import (
    ConfigError,
    QuantityError,
    default_config,
    load_config,
    parse_config,
    parse_cpu,
    parse_memory,
)


@pytest.mark.parametrize("text, millis", [
    ("500m", 500), ("2", 2000), ("0.5", 500), (1, 1000), (0.25, 250), ("1.5", 1500), ("1k", 1_000_000),
    ("0.0001", 1),  # rounded up to a whole millicore, as Kubernetes does
])
def test_cpu_quantities(text, millis):
    assert parse_cpu(text) == millis


@pytest.mark.parametrize("text, size", [
    ("2Gi", 2 * 2**30), ("512Mi", 512 * 2**20), ("1G", 10**9), ("128974848", 128974848), ("129e6", 129 * 10**6),
    ("1Ki", 1024), (1073741824, 2**30), ("1500m", 2),
])
def test_memory_quantities(text, size):
    assert parse_memory(text) == size


@pytest.mark.parametrize("bad", ["", "2 Gi", "Gi", "1.2.3", "-1", "1gi", "1X", None, True, [1], "1e999999"])
def test_bad_quantities_say_what_is_wrong(bad):
    with pytest.raises(QuantityError, match="quantity|negative"):
        parse_memory(bad)


def test_default_config_is_two_on_prem_and_a_pool_of_two_cloud_nodes():
    config = default_config()
    tiers = [n.tier for n in config.nodes]
    assert tiers.count("on-prem") == 2 and tiers.count("cloud") == 2
    assert len({n.name for n in config.nodes}) == 4
    assert all(n.memory_bytes > 0 and n.cpu_millis > 0 for n in config.nodes)


def test_a_full_config_file(tmp_path):
    path = tmp_path / "cluster.toml"
    path.write_text("""
[cluster]
port = 0
kubeconfig = "kc.yaml"
boot_delay = 1.5

[[nodes]]
name = "rack"
count = 3
tier = "on-prem"
cpu = "8"
memory = "16Gi"
labels = { "example.org/rack" = "a" }

[[nodes]]
name = "gpu"
tier = "cloud"
cpu = 4
memory = "32Gi"
taints = [ { key = "nvidia.com/gpu", value = "present", effect = "NoSchedule" } ]
""")
    config = load_config(path)
    assert [n.name for n in config.nodes] == ["rack-1", "rack-2", "rack-3", "gpu"]
    assert config.port == 0 and config.boot_delay == 1.5 and config.kubeconfig == "kc.yaml"
    assert config.nodes[0].labels == {"example.org/rack": "a"} and config.nodes[0].memory_bytes == 16 * 2**30
    gpu = config.nodes[3]
    assert gpu.tier == "cloud" and gpu.cpu_millis == 4000
    assert gpu.taints == ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},)


def test_no_nodes_table_keeps_the_default_nodes():
    config = parse_config({"cluster": {"port": 7000}})
    assert config.port == 7000 and config.nodes == default_config().nodes


NODE = {"name": "n", "tier": "on-prem", "cpu": "1", "memory": "1Gi"}


@pytest.mark.parametrize("data, key", [
    ({"clusterr": {}}, "clusterr"),
    ({"cluster": {"port": "80"}}, "cluster.port"),
    ({"cluster": {"port": 70000}}, "cluster.port"),
    ({"cluster": {"boot_delay": -1}}, "cluster.boot_delay"),
    ({"cluster": {"kubeconfig": 3}}, "cluster.kubeconfig"),
    ({"nodes": []}, "nodes"),
    ({"nodes": [{**NODE, "tier": "edge"}]}, "nodes[0].tier"),
    ({"nodes": [NODE, {**NODE, "name": "m", "memory": "lots"}]}, "nodes[1].memory"),
    ({"nodes": [{**NODE, "cpu": "-2"}]}, "nodes[0].cpu"),
    ({"nodes": [{k: v for k, v in NODE.items() if k != "cpu"}]}, "nodes[0].cpu"),
    ({"nodes": [{**NODE, "name": "Bad_Name"}]}, "nodes[0].name"),
    ({"nodes": [{**NODE, "count": 0}]}, "nodes[0].count"),
    ({"nodes": [{**NODE, "labels": {"a": "no spaces allowed"}}]}, "nodes[0].labels.a"),
    ({"nodes": [{**NODE, "labels": {"elastichub.io/tier": "cloud"}}]}, "nodes[0].labels.elastichub.io/tier"),
    ({"nodes": [{**NODE, "taints": [{"key": "k", "effect": "Sometimes"}]}]}, "nodes[0].taints[0].effect"),
    ({"nodes": [{**NODE, "colour": "red"}]}, "nodes[0].colour"),
    ({"nodes": [NODE, NODE]}, "'n'"),
])
def test_bad_config_names_the_key(data, key):
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    assert key in str(info.value)


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[cluster\nport = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
