"""Shared fixtures: real Elastic kernels started through jupyter_client.

- ``elastic_kernelspec_dir``: a kernels/ dir holding the ``elastic-python``
  kernelspec (argv = this interpreter + ``-m elastichub_kernel.launcher``;
  env = the installed kernelspec's, PYTHONHASHSEED pinned).
- ``start_elastic_kernel(checkpoint_dir, session_name=..., env=..., args=...)``
  -> ``(KernelManager, BlockingKernelClient)``, started and ready; every
  kernel is shut down (now=True) at teardown, so no orphan survives a test.
  ``stop_elastic_kernel(km, kc)`` does the *graceful* shutdown (the kernel's
  own checkpoint-on-shutdown) inside a test. Module-scoped twins:
  ``start_elastic_kernel_module`` / the same stop function.
- ``run_cell(kc, code)`` -> dict(stdout, stderr, error, reply) of one cell.
- ``moved(session, setup)``: a notebook's kernel runs `setup`, checkpoints
  and is killed; the next one restores (``start_in_work``'s folders).
- ``control_request(kc, msg_type, content)`` -> reply content (control channel).
- ``kept_process``: a test restoring a context into this process starts in tmp_path; its directory and
  environment are put back after it.
"""

from __future__ import annotations

import json
import os
import sys

from types import SimpleNamespace

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from elastichub_kernel.install import KERNEL_ENV

KERNEL_NAME = "elastic-python"
STOP_WAIT_S = 60.0  # _Kernels.stop


@pytest.fixture(scope="session")
def elastic_kernelspec_dir(tmp_path_factory):
    kernels = tmp_path_factory.mktemp("jupyter-data") / "kernels"
    spec_dir = kernels / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "elastichub_kernel.launcher", "-f", "{connection_file}"],
        "display_name": "Elastic Python",
        "language": "python",
        "metadata": {"debugger": False},
        "env": dict(KERNEL_ENV),  # as the installed kernelspec's
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return kernels


class _Kernels:
    def __init__(self, kernels_dir):
        self.kernels_dir = kernels_dir
        self.started = []

    def start(self, checkpoint_dir, session_name="work/analysis.ipynb", env=None, args=(), timeout=60, cwd=None):
        full_env = {k: v for k, v in os.environ.items() if k not in ("JPY_SESSION_NAME", "JUPYTERHUB_SERVER_NAME")}
        full_env["ELASTICHUB_CHECKPOINT_DIR"] = str(checkpoint_dir)
        # A fixed speed keeps tests off the background disk probe.
        full_env.setdefault("ELASTICHUB_DISK_SPEED_MBPS", "500")
        if session_name is not None:
            full_env["JPY_SESSION_NAME"] = session_name
        full_env.update(env or {})
        km = KernelManager(
            kernel_name=KERNEL_NAME,
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(self.kernels_dir)]),
        )
        km.start_kernel(env=full_env, extra_arguments=list(args), **({"cwd": str(cwd)} if cwd else {}))
        kc = km.client()
        kc.start_channels()
        self.started.append((km, kc))
        try:
            kc.wait_for_ready(timeout=timeout)
        except Exception:
            self.kill(km, kc)
            raise
        return km, kc

    @staticmethod
    def stop(km, kc):
        """Graceful shutdown: the kernel checkpoints in do_shutdown. jupyter_client sends SIGTERM
        after half its shutdown_wait_time (2.5 s), and a kernel SIGTERM reaches before its
        checkpoint stops without one (shutdownguard.py): on a loaded machine the checkpoint
        lost that race. The wait is long enough here that it always runs; the tests of that
        race stop the kernel themselves (test_kernel_shutdown_checkpoint.py)."""
        kc.stop_channels()
        km.shutdown_wait_time = STOP_WAIT_S
        km.shutdown_kernel(now=False)

    @staticmethod
    def kill(km, kc):
        try:
            kc.stop_channels()
        finally:
            if km.has_kernel:
                km.shutdown_kernel(now=True)

    def cleanup(self):
        for km, kc in self.started:
            try:
                self.kill(km, kc)
            except Exception:
                pass


@pytest.fixture(scope="session")
def kernel_tools():
    """The kernelspec's name and the kernel starter, for a test that starts
    kernels from a kernelspec directory of its own (a module cannot import
    them: `conftest` names another directory's module in the whole suite)."""
    return SimpleNamespace(name=KERNEL_NAME, Kernels=_Kernels)


@pytest.fixture
def start_elastic_kernel(elastic_kernelspec_dir):
    kernels = _Kernels(elastic_kernelspec_dir)
    yield kernels.start
    kernels.cleanup()


@pytest.fixture
def start_in_work(start_elastic_kernel, tmp_path):
    """Starts a notebook's kernels in tmp_path/work (``.work``), their
    checkpoints in tmp_path/ckpt: one kernel saves, the next restores."""
    work = tmp_path / "work"
    work.mkdir()

    def start(session_name):
        return start_elastic_kernel(tmp_path / "ckpt", session_name=session_name, cwd=work)

    start.work = work
    return start


@pytest.fixture
def moved(start_in_work, run_cell, control_request):
    """``moved(session, setup, after=None)`` -> (the checkpoint's reply,
    ``after(kc)``, the next kernel's client): runs `setup` in a notebook's
    kernel, checkpoints it, calls `after` on it, kills it (no shutdown
    checkpoint) and starts the notebook's next kernel, which restores."""

    def move(session, setup, after=None):
        km, kc = start_in_work(session)
        assert run_cell(kc, setup)["error"] is None
        reply = control_request(kc, "elastichub_checkpoint_request")["content"]
        seen = after(kc) if after else None
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        return reply, seen, start_in_work(session)[1]

    return move


@pytest.fixture(scope="module")
def start_elastic_kernel_module(elastic_kernelspec_dir):
    kernels = _Kernels(elastic_kernelspec_dir)
    yield kernels.start
    kernels.cleanup()


@pytest.fixture(scope="session")
def stop_elastic_kernel():
    return _Kernels.stop


def _run_cell(kc, code, timeout=60):
    out = {"stdout": "", "stderr": "", "error": None}

    def hook(msg):
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out[content["name"]] += content["text"]
        elif kind == "error":
            out["error"] = f"{content['ename']}: {content['evalue']}"

    reply = kc.execute_interactive(code, output_hook=hook, timeout=timeout)
    out["reply"] = reply["content"]
    return out


class _CellRunner:
    """`run_cell(kc, code)`: the cell's stdout, stderr and error;
    `run_cell.facts(kc, probe)`: the JSON a probe cell printed after "FACTS"."""

    def __call__(self, kc, code, timeout=60):
        return _run_cell(kc, code, timeout)

    def facts(self, kc, probe):
        out = _run_cell(kc, probe)
        assert out["error"] is None, out
        line = [ln for ln in out["stdout"].splitlines() if ln.startswith("FACTS")][0]
        return json.loads(line[len("FACTS"):])


@pytest.fixture(scope="session")
def run_cell():
    return _CellRunner()


def _control_request(kc, msg_type, content=None, timeout=60):
    msg = kc.session.msg(msg_type, content or {})
    kc.control_channel.send(msg)
    while True:
        reply = kc.control_channel.get_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply


@pytest.fixture(scope="session")
def control_request():
    return _control_request


@pytest.fixture
def kept_process(monkeypatch, tmp_path):
    saved_env = dict(os.environ)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    os.environ.clear()
    os.environ.update(saved_env)
