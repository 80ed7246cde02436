"""scripts/setup.sh, the README's first command, on the machine the README names: a fresh
Debian/Ubuntu, whose python3 comes without venv's ensurepip. Commands it would change the
machine with (apt-get, sudo, npm) and python3 itself are stand-ins that record their calls."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]

PYTHON3 = """#!/bin/bash
echo "python3 $*" >> "$CALLS"
case "$*" in
  *"import ensurepip, venv"*) exit 1 ;;  # Debian's python3 without the python3-venv package
  *"-m venv"*) exit 3 ;;                 # the test ends here
esac
exit 0
"""


def stub(path: pathlib.Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def test_setup_installs_python3_venv_and_remakes_a_venv_left_without_pip(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", checkout / "scripts" / "setup.sh")
    # What an earlier run left when venv could not install pip: a python without it.
    (checkout / ".venv" / "bin").mkdir(parents=True)
    stub(checkout / ".venv" / "bin" / "python", "#!/bin/bash\nexit 1\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub(bin_dir / "python3", PYTHON3)
    stub(bin_dir / "sudo", '#!/bin/bash\nexec "$@"\n')
    for name in ("apt-get", "npm", "kubectl", "chromium"):
        stub(bin_dir / name, f'#!/bin/bash\necho "{name} $*" >> "$CALLS"\n')
    calls = tmp_path / "calls"
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls)}
    done = subprocess.run(["bash", "scripts/setup.sh", "--no-run"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=60)
    said = calls.read_text().splitlines()
    assert done.returncode == 3, (done.stderr, said)
    assert any(line.startswith("apt-get install") and "python3-venv" in line.split() for line in said), said
    assert said[-1] == "python3 -m venv --clear .venv", said
