"""The Sphinx/MyST docs build without a warning (broken links, missing pages)."""

import pathlib
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
