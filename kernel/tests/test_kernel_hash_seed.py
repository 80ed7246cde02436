"""String hashes after a restore: the same in every installed Elastic kernel,
and said when they are not.

Python randomizes str hashes per process, so a notebook's own hash table
(bucket = hash(key) % n, a data-structures exercise) came back with every
key in a wrong bucket, and `table.get("apple")` answered None, silently.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(180)

TABLE = r"""
class HashTable:
    def __init__(self, n=8):
        self.buckets = [[] for _ in range(n)]
    def put(self, k, v):
        self.buckets[hash(k) % len(self.buckets)].append((k, v))
    def get(self, k, default=None):
        for kk, vv in self.buckets[hash(k) % len(self.buckets)]:
            if kk == k:
                return vv
        return default
table = HashTable()
WORDS = ["apple", "banana", "cherry", "date", "elder"]
for w in WORDS:
    table.put(w, len(w))
h_apple = hash("apple")
"""
PROBE = "print([table.get(w) for w in WORDS], hash('apple') == h_apple)"
SAME = "[5, 6, 6, 4, 5] True"


@pytest.fixture
def kernels(kernel_tools):
    started = []

    def start(kernels_dir, tmp_path, env=None):
        k = kernel_tools.Kernels(kernels_dir)
        started.append(k)
        (tmp_path / "work").mkdir(exist_ok=True)
        return k.start(tmp_path / "ckpt", session_name="work/hashing.ipynb", env=env, cwd=tmp_path / "work")

    yield start
    for k in started:
        k.cleanup()


def test_the_installed_kernelspec_pins_the_hash_seed(tmp_path, kernels, kernel_tools, run_cell, stop_elastic_kernel):
    prefix = tmp_path / "prefix"
    done = subprocess.run([sys.executable, "-m", "elastichub_kernel", "install", "--prefix", str(prefix)],
                          env={**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config")},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    kernels_dir = prefix / "share" / "jupyter" / "kernels"
    spec = json.loads((kernels_dir / kernel_tools.name / "kernel.json").read_text())
    assert spec["env"]["PYTHONHASHSEED"] == "0"

    # Whatever seed the environment had: the kernelspec's wins.
    km, kc = kernels(kernels_dir, tmp_path, env={"PYTHONHASHSEED": "1"})
    assert run_cell(kc, TABLE)["error"] is None
    assert run_cell(kc, PROBE)["stdout"].strip() == SAME
    stop_elastic_kernel(km, kc)
    km, kc = kernels(kernels_dir, tmp_path, env={"PYTHONHASHSEED": "2"})
    out = run_cell(kc, PROBE)
    assert out["error"] is None and out["stdout"].strip() == SAME, out
    assert "restored" in out["stderr"] and "hashes strings differently" not in out["stderr"], out


def test_a_restore_into_a_kernel_that_hashes_otherwise_says_so(tmp_path, kernels, kernel_tools, run_cell,
                                                              stop_elastic_kernel):
    """A kernelspec that does not pin the seed (made by hand, an older install)."""
    kernels_dir = tmp_path / "kernels"
    (kernels_dir / kernel_tools.name).mkdir(parents=True)
    (kernels_dir / kernel_tools.name / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "elastichub_kernel.launcher", "-f", "{connection_file}"],
        "display_name": "Elastic Python", "language": "python"}))
    km, kc = kernels(kernels_dir, tmp_path, env={"PYTHONHASHSEED": "1"})
    assert run_cell(kc, TABLE)["error"] is None
    stop_elastic_kernel(km, kc)
    km, kc = kernels(kernels_dir, tmp_path, env={"PYTHONHASHSEED": "2"})
    out = run_cell(kc, PROBE)
    assert out["error"] is None and out["stdout"].strip() != SAME  # the values are what they were...
    report = out["stderr"]
    assert "restored" in report and "hashes strings differently" in report, report  # ...but it is said
    assert "PYTHONHASHSEED" in report and "hash()" in report and "sets of strings" in report
