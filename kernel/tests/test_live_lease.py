"""The freeze lease against a retire that lands as it runs out (no kernel
process: the lease and the phases are plain Python on the kernel's side)."""

from __future__ import annotations

import logging
import threading

import pytest

from elastichub_kernel.livekernel import LiveMigrationMixin


class _Kernel(LiveMigrationMixin):
    log = logging.getLogger("test-live-lease")
    session_dir = "/nonexistent"


class _RetireAt:
    """The kernel's _live_lock. At the `at`-th time the lease thread takes or
    lets go of it, the orchestrator's retire is served, as the control
    thread may serve it at any such moment."""

    def __init__(self, kernel, lease_thread_name, at):
        self.lock, self.kernel, self.name, self.at = threading.Lock(), kernel, lease_thread_name, at
        self.moments, self.retired = 0, None

    def _moment(self):
        if self.retired is None and threading.current_thread().name == self.name:
            self.moments += 1
            if self.moments == self.at:
                self.retired = {}  # once: retire takes this lock too
                self.retired = self.kernel._phase_retire({})

    def __enter__(self):
        self._moment()
        return self.lock.__enter__()

    def __exit__(self, *exc):
        self.lock.__exit__(*exc)
        self._moment()


@pytest.mark.parametrize("at", [1, 2, 3, 4])
def test_a_lease_running_out_as_the_kernel_is_retired_leaves_it_retired(at):
    """The lease ran out just as the orchestrator retired the source kernel:
    the lease's thaw set the retired kernel running again, so the source
    took cells (their effect lost when its pod went) and, no longer
    retired, checkpointed at its shutdown over the destination's state.
    Wherever the retire lands, it either refuses (thawed first) or holds."""
    kernel = _Kernel()
    kernel._live_init()
    kernel._live_phase = "frozen"
    lease = threading.Timer(0, kernel._lease_ran_out)
    lease.name = "lease-under-test"
    kernel._live_lock = lock = _RetireAt(kernel, lease.name, at)
    kernel._live_timer = lease
    lease.start()
    lease.join()
    retired = lock.retired if lock.retired is not None else kernel._phase_retire({})
    if retired["ok"]:
        assert kernel._live_phase == "retired" and kernel._live_refuses_checkpoint() is not None
    else:
        assert "not frozen" in retired["error"] and kernel._live_phase == "running"
