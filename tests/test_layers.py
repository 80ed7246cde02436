"""The architecture's import rules (shared/DESIGN.md), checked on every run."""

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_import_linter_contracts_hold():
    # The contracts live in setup.cfg ([importlinter:*]): policy is pure,
    # the simulator drives the policy and never a cluster.
    lint = pathlib.Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint), "--config", str(ROOT / "setup.cfg")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


def imported_modules(path: pathlib.Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_kernel_distribution_never_imports_the_hub_package():
    # The kernel lives in single-user images where `elastichub` is not installed.
    sources = sorted((ROOT / "kernel").rglob("*.py"))
    assert sources, "kernel/ has no Python sources"
    offenders = [
        f"{path.relative_to(ROOT)}: {mod}"
        for path in sources
        for mod in imported_modules(path)
        if mod == "elastichub" or mod.startswith("elastichub.")
    ]
    assert not offenders, offenders


def test_no_cancel_is_swallowed_by_asyncio_wait_for():
    # On Python 3.11, asyncio.wait_for returns a result that arrives together
    # with a cancel, dropping the cancel: a service then ignores SIGTERM, a
    # cleanup that cancels its tasks waits for ever. asyncio.timeout() does not.
    sources = [p for d in ("elastichub", "kernel/elastichub_kernel") for p in sorted((ROOT / d).rglob("*.py"))]
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sources
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if isinstance(node, ast.Attribute) and node.attr == "wait_for"
        and isinstance(node.value, ast.Name) and node.value.id == "asyncio"
    ]
    assert not offenders, "asyncio.wait_for in " + ", ".join(offenders)
