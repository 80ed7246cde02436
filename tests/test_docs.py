"""The Sphinx/MyST docs build without a warning (broken links, missing pages)."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_docs_build_cleanly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for page in ("index", "tutorial", "deploy", "reference", "migration", "orchestrator", "spawner", "policy", "strategies", "simulator", "localcluster", "kernel"):
        assert (tmp_path / "html" / f"{page}.html").is_file(), page


def test_the_example_config_installs_the_kernel_as_the_deploy_how_to_does():
    # The example config's comment installed it as "elastic-python": course notebooks, which name
    # `python3`, then opened in the stock kernel, and their servers could not move.
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    command = re.search(r"python -m elastichub_kernel install [^\n]*", deploy).group(0).strip()
    assert "--name python3" in command
    assert command in (ROOT / "jupyterhub_config_example.py").read_text()
