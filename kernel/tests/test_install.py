"""`python -m elastichub_kernel install|uninstall`, run as a user would, into
isolated prefixes; and the wheel's data file that enables the server extension."""

from __future__ import annotations

import configparser
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import elastichub_kernel

pytestmark = pytest.mark.timeout(120)

KERNEL_DIR = Path(__file__).resolve().parents[1]
EXTENSION_CONFIG = {"ServerApp": {"jpserver_extensions": {"elastichub_kernel.serverext": True}}}


@pytest.fixture
def jupyter_env(tmp_path):
    """Jupyter paths of a throwaway user, so nothing touches the real ones."""
    return {
        **os.environ,
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_PATH": str(tmp_path / "prefix" / "share" / "jupyter"),
        "JUPYTER_CONFIG_PATH": str(tmp_path / "prefix" / "etc" / "jupyter"),
        "JUPYTER_PLATFORM_DIRS": "1",
        # In a venv Jupyter prefers sys.prefix over the user's directory.
        "JUPYTER_PREFER_ENV_PATH": "0",
    }


def cli(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "elastichub_kernel", *args], env=env, capture_output=True, text=True
    )


def test_install_prefix_writes_the_kernelspec_and_enables_the_extension(tmp_path, jupyter_env):
    prefix = tmp_path / "prefix"
    done = cli(jupyter_env, "install", "--prefix", str(prefix))
    assert done.returncode == 0, done.stderr
    spec_dir = prefix / "share" / "jupyter" / "kernels" / "elastic-python"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["argv"] == [sys.executable, "-m", "elastichub_kernel.launcher", "-f", "{connection_file}"]
    assert spec["display_name"] == "Elastic Python"
    assert spec["language"] == "python"
    # Readable by every user of a shared prefix.
    assert stat.S_IMODE(spec_dir.stat().st_mode) == 0o755
    config = prefix / "etc" / "jupyter" / "jupyter_server_config.d" / "elastichub_kernel.json"
    assert json.loads(config.read_text()) == EXTENSION_CONFIG
    assert str(spec_dir) in done.stdout


def test_jupyter_finds_the_installed_spec_and_the_enabled_extension(tmp_path, jupyter_env):
    assert cli(jupyter_env, "install", "--prefix", str(tmp_path / "prefix")).returncode == 0
    listed = subprocess.run(
        [sys.executable, "-m", "jupyter_client.kernelspecapp", "list", "--json"],
        env=jupyter_env, capture_output=True, text=True, check=True,
    )
    specs = json.loads(listed.stdout)["kernelspecs"]
    assert specs["elastic-python"]["spec"]["display_name"] == "Elastic Python"
    extensions = subprocess.run(
        [sys.executable, "-m", "jupyter_server", "extension", "list"],
        env=jupyter_env, capture_output=True, text=True,
    )
    out = extensions.stdout + extensions.stderr
    assert "elastichub_kernel.serverext" in out
    # "enabled" and the import check passing ("OK"), not a "could not be found".
    assert "could not be found" not in out
    line = next(line for line in out.splitlines() if "elastichub_kernel.serverext" in line and "OK" in line)
    assert elastichub_kernel.__version__ in line


def test_install_user_with_a_custom_name_and_display_name(tmp_path, jupyter_env):
    done = cli(jupyter_env, "install", "--user", "--name", "elastic-py-test", "--display-name", "EP test")
    assert done.returncode == 0, done.stderr
    spec = json.loads((tmp_path / "data" / "kernels" / "elastic-py-test" / "kernel.json").read_text())
    assert spec["display_name"] == "EP test"
    config = tmp_path / "config" / "jupyter_server_config.d" / "elastichub_kernel.json"
    assert json.loads(config.read_text()) == EXTENSION_CONFIG


def test_installed_as_python3_it_replaces_the_stock_kernel_and_checkpoints(tmp_path, jupyter_env):
    """Notebooks name the kernel `python3` in their metadata: installed under
    that name, the Elastic kernel is the one they open with, and the server
    extension knows it for one that can checkpoint."""
    prefix = tmp_path / "prefix"
    done = cli(jupyter_env, "install", "--prefix", str(prefix), "--name", "python3",
               "--display-name", "Python 3 (ipykernel)")
    assert done.returncode == 0, done.stderr
    probe = ("from jupyter_client.kernelspec import KernelSpecManager\n"
             "from elastichub_kernel.serverext import is_elastic_kernelspec\n"
             "spec = KernelSpecManager().get_kernel_spec('python3')\n"
             "print(spec.resource_dir, spec.display_name, is_elastic_kernelspec(spec), sep='|')")
    found = subprocess.run([sys.executable, "-c", probe], env=jupyter_env, capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip().split("|") == [str(prefix / "share" / "jupyter" / "kernels" / "python3"),
                                               "Python 3 (ipykernel)", "True"]


def test_uninstall_removes_the_spec_and_says_so_when_absent(tmp_path, jupyter_env):
    prefix = str(tmp_path / "prefix")
    assert cli(jupyter_env, "install", "--prefix", prefix).returncode == 0
    removed = cli(jupyter_env, "uninstall", "--prefix", prefix)
    assert removed.returncode == 0, removed.stderr
    assert not (tmp_path / "prefix" / "share" / "jupyter" / "kernels" / "elastic-python").exists()
    again = cli(jupyter_env, "uninstall", "--prefix", prefix)
    assert again.returncode == 1
    assert "no kernelspec 'elastic-python'" in again.stderr
    assert "Traceback" not in again.stderr


def test_uninstall_of_the_last_elastic_spec_disables_the_extension_install_enabled(tmp_path, jupyter_env):
    """`install` enables the server extension next to the kernelspec; `uninstall` undoes it
    once no Elastic kernelspec is left there (left behind, the file outlives `pip uninstall`
    and every Jupyter Server start fails to load the extension), not while one is."""
    prefix = str(tmp_path / "prefix")
    config = tmp_path / "prefix" / "etc" / "jupyter" / "jupyter_server_config.d" / "elastichub_kernel.json"
    assert cli(jupyter_env, "install", "--prefix", prefix).returncode == 0
    assert cli(jupyter_env, "install", "--prefix", prefix, "--name", "python3").returncode == 0
    first = cli(jupyter_env, "uninstall", "--prefix", prefix, "--name", "python3")
    assert first.returncode == 0, first.stderr
    assert json.loads(config.read_text()) == EXTENSION_CONFIG  # elastic-python still needs it
    last = cli(jupyter_env, "uninstall", "--prefix", prefix)
    assert last.returncode == 0, last.stderr
    assert not config.exists()
    assert f"Disabled the Jupyter Server extension elastichub_kernel.serverext: removed {config}" in last.stdout
    # The same for --user, and for an uninstall that finds the spec by Jupyter's search.
    assert cli(jupyter_env, "install", "--user").returncode == 0
    user_config = tmp_path / "config" / "jupyter_server_config.d" / "elastichub_kernel.json"
    assert user_config.is_file()
    assert cli(jupyter_env, "uninstall", "--user").returncode == 0
    assert not user_config.exists()
    assert cli(jupyter_env, "install", "--prefix", prefix).returncode == 0
    assert cli(jupyter_env, "uninstall").returncode == 0
    assert not config.exists()


def test_uninstall_without_location_finds_the_spec_jupyter_uses(tmp_path, jupyter_env):
    # JUPYTER_PATH comes first in Jupyter's search order, before this venv's
    # own spec: the one installed here is the one found and removed.
    assert cli(jupyter_env, "install", "--prefix", str(tmp_path / "prefix")).returncode == 0
    removed = cli(jupyter_env, "uninstall")
    assert removed.returncode == 0, removed.stderr
    assert str(tmp_path / "prefix") in removed.stdout
    assert not (tmp_path / "prefix" / "share" / "jupyter" / "kernels" / "elastic-python").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["install", "--prefix", "P", "--name", "bad name"], "invalid kernel name 'bad name'"),
        (["install", "--user", "--prefix", "P"], "not allowed with argument"),
        ([], "the following arguments are required"),
    ],
)
def test_bad_arguments_get_a_message_not_a_traceback(jupyter_env, tmp_path, args, message):
    args = [str(tmp_path / a) if a == "P" else a for a in args]
    done = cli(jupyter_env, *args)
    assert done.returncode != 0
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_install_into_an_unwritable_prefix_is_a_clear_error(tmp_path, jupyter_env):
    if os.getuid() == 0:
        # root writes anywhere: make the prefix a file so the write fails.
        prefix = tmp_path / "file-not-dir"
        prefix.write_text("")
        done = cli(jupyter_env, "install", "--prefix", str(prefix))
        assert done.returncode != 0
        assert "Traceback" not in done.stderr
        assert str(prefix) in done.stderr
        return
    prefix = tmp_path / "ro"
    prefix.mkdir(mode=0o500)
    done = cli(jupyter_env, "install", "--prefix", str(prefix))
    assert done.returncode == 1
    assert "permission denied" in done.stderr and "Traceback" not in done.stderr


def test_the_distribution_ships_the_config_that_enables_the_extension():
    # A wheel install puts data_files under sys.prefix, where jupyter_server
    # reads etc/jupyter/jupyter_server_config.d/*.json.
    cfg = configparser.ConfigParser()
    cfg.read(KERNEL_DIR / "setup.cfg")
    shipped = cfg["options.data_files"]["etc/jupyter/jupyter_server_config.d"].split()
    assert shipped == ["etc/jupyter/jupyter_server_config.d/elastichub_kernel.json"]
    assert json.loads((KERNEL_DIR / shipped[0]).read_text()) == EXTENSION_CONFIG
