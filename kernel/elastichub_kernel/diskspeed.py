"""Disk speed for the migrate-vs-recompute cost model.

Measured once per checkpoint volume (8 MB written with fsync, read back),
cached in the checkpoint root for a day, in a background thread started a
little after the kernel is ready: never on the start or checkpoint critical
path. A configured speed turns profiling off entirely.
"""

from __future__ import annotations

import json
import os
import threading
import time

PROBE_BYTES = 8 << 20
CACHE_NAME = ".diskspeed.json"
CACHE_TTL_S = 24 * 3600
# Used until a measurement exists: a conservative network-volume figure.
FALLBACK_BPS = 200e6


class DiskSpeed:
    def __init__(self, root: str, configured_mbps: float = 0.0, log=None):
        self.root = root
        self.log = log
        self.configured = configured_mbps > 0
        self.write_bps = self.read_bps = configured_mbps * 1e6 if self.configured else None
        self.source = "configured" if self.configured else "pending"
        self._thread: threading.Thread | None = None

    def estimate(self) -> tuple[float, float]:
        """(write, read) bytes per second: measured, configured or fallback."""
        return (self.write_bps or FALLBACK_BPS, self.read_bps or FALLBACK_BPS)

    def start_background(self, delay_s: float = 3.0) -> None:
        if self.configured or self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._run, args=(delay_s,), name="elastichub-diskspeed", daemon=True
        )
        self._thread.start()

    def join(self, timeout=None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self, delay_s: float) -> None:
        time.sleep(delay_s)
        try:
            if not self._load_cache():
                self._measure()
        except Exception as exc:  # a failed probe must never hurt the kernel
            self.source = f"failed ({exc})"
            if self.log:
                self.log.warning("ElasticHub: disk speed probe failed: %s", exc)

    def _cache_path(self) -> str:
        return os.path.join(self.root, CACHE_NAME)

    def _load_cache(self) -> bool:
        try:
            with open(self._cache_path()) as f:
                data = json.load(f)
            if time.time() - float(data["measured_at"]) > CACHE_TTL_S:
                return False
            if data.get("device") != os.stat(self.root).st_dev:
                return False
            self.write_bps, self.read_bps = float(data["write_bps"]), float(data["read_bps"])
        except (OSError, ValueError, KeyError, TypeError):
            return False
        self.source = "cached"
        return True

    def _measure(self) -> None:
        from .storage import ensure_private_dir, write_all

        ensure_private_dir(self.root, tighten=False)
        probe = os.path.join(self.root, f".diskspeed-probe-{os.getpid()}")
        data = os.urandom(PROBE_BYTES)
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                t0 = time.perf_counter()
                write_all(fd, data)
                os.fsync(fd)
                write_s = time.perf_counter() - t0
            finally:
                os.close(fd)
            # Drop the probe from the page cache where possible so the read is
            # a disk read, as a restore in a fresh pod would be.
            fd = os.open(probe, os.O_RDONLY)
            try:
                if hasattr(os, "posix_fadvise"):
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                t0 = time.perf_counter()
                while os.read(fd, 1 << 20):
                    pass
                read_s = time.perf_counter() - t0
            finally:
                os.close(fd)
        finally:
            try:
                os.unlink(probe)
            except OSError:
                pass
        self.write_bps = PROBE_BYTES / max(write_s, 1e-6)
        self.read_bps = PROBE_BYTES / max(read_s, 1e-6)
        self.source = "measured"
        tmp = self._cache_path() + f".tmp-{os.getpid()}"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump({"measured_at": time.time(), "device": os.stat(self.root).st_dev,
                       "write_bps": self.write_bps, "read_bps": self.read_bps}, f)
        os.replace(tmp, self._cache_path())
