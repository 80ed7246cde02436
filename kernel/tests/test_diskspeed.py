"""Disk-speed profiling: background, once, cached; off when a speed is configured."""

import json
import os
import stat

from elastichub_kernel.diskspeed import CACHE_NAME, FALLBACK_BPS, DiskSpeed


def test_configured_speed_never_profiles(tmp_path):
    speed = DiskSpeed(str(tmp_path / "root"), configured_mbps=250.0)
    speed.start_background(delay_s=0)
    speed.join(5)
    assert speed.estimate() == (250e6, 250e6) and speed.source == "configured"
    assert not (tmp_path / "root").exists()  # nothing written, no thread started


def test_profiles_once_in_background_then_uses_the_cache(tmp_path):
    root = tmp_path / "root"
    speed = DiskSpeed(str(root))
    assert speed.estimate() == (FALLBACK_BPS, FALLBACK_BPS)  # usable before the probe ends
    speed.start_background(delay_s=0)
    speed.join(60)
    assert speed.source == "measured" and speed.write_bps > 0 and speed.read_bps > 0
    cache = root / CACHE_NAME
    data = json.loads(cache.read_text())
    assert data["write_bps"] == speed.write_bps
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o600
    assert sorted(os.listdir(root)) == [CACHE_NAME]  # the probe file is gone

    again = DiskSpeed(str(root))
    again.start_background(delay_s=0)
    again.join(60)
    assert again.source == "cached" and again.estimate() == speed.estimate()


def test_unreadable_cache_is_measured_again(tmp_path):
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    (root / CACHE_NAME).write_text("{not json")
    speed = DiskSpeed(str(root))
    speed.start_background(delay_s=0)
    speed.join(60)
    assert speed.source == "measured"
