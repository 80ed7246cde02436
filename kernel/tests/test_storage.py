"""Checkpoint file format: atomic, private, versioned, checksummed, refused when bad."""

import os
import stat
import struct
import time

import pytest

from elastichub_kernel import storage
from elastichub_kernel.storage import CHECKPOINT_NAME, CheckpointRejected, default_root


def _wait_until(check, timeout=30.0):
    """The clean-up runs in a background thread: poll (generously: a loaded
    CI machine is slow; only a failing test waits the whole time)."""
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)


def _write(directory, blobs=(b"records", b"\x01" * 1000), records=()):
    return storage.write_checkpoint(str(directory), list(blobs), {"records": list(records)})


def test_round_trip_and_private_modes(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "_CHUNK", 4096)
    session = tmp_path / "root" / "nb-123"
    big = bytearray(os.urandom(3 * storage._CHUNK // 2 + 7))  # spans two chunks
    large = os.urandom(2 << 20)  # loaded into an anonymous mmap, not a bytearray
    path, size = _write(session, [b"stream", memoryview(big), large])
    assert path == str(session / CHECKPOINT_NAME)
    assert os.path.getsize(path) == size
    assert stat.S_IMODE(os.stat(session).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    loaded = storage.read_checkpoint(path)
    assert [bytes(b) for b in loaded.blobs] == [b"stream", bytes(big), large]
    assert all(not memoryview(b).readonly for b in loaded.blobs)  # arrays load writable
    assert loaded.index["format"] == storage.FORMAT_VERSION
    assert len(loaded.index["blobs"][1]["crc32"]) == 2
    # nothing but the checkpoint is left in the directory (no temp files)
    assert os.listdir(session) == [CHECKPOINT_NAME]


def test_existing_loose_directory_is_tightened(tmp_path):
    session = tmp_path / "s"
    session.mkdir(mode=0o755)
    os.chmod(session, 0o755)
    _write(session)
    assert stat.S_IMODE(os.stat(session).st_mode) == 0o700


def test_truncated_file_is_refused(tmp_path):
    path, size = _write(tmp_path / "s")
    for keep in (size - 1, size // 2, 10, 0):
        with open(path, "r+b") as f:
            f.truncate(keep)
        with pytest.raises(CheckpointRejected) as info:
            storage.read_checkpoint(path)
        assert "truncated" in info.value.reason
        assert info.value.path == path
        path, size = _write(tmp_path / "s")


@pytest.mark.parametrize("where", ["blob", "index", "header"])
def test_garbled_byte_is_refused(tmp_path, where):
    path, size = _write(tmp_path / "s", [b"stream-bytes", os.urandom(4096)])
    index = storage.read_index(path)
    offset = {"blob": index["blobs"][1]["offset"] + 100, "header": 3,
              "index": index["blobs"][-1]["offset"] + index["blobs"][-1]["length"] + 5}[where]
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x40]))
    with pytest.raises(CheckpointRejected) as info:
        storage.read_checkpoint(path)
    assert any(word in info.value.reason for word in ("checksum", "header", "malformed"))


def test_foreign_owner_is_refused(tmp_path, monkeypatch):
    path, _ = _write(tmp_path / "s")
    real = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: real + 4242)
    with pytest.raises(CheckpointRejected) as info:
        storage.read_checkpoint(path)
    assert "owned by uid" in info.value.reason
    assert storage.check_private_dir(str(tmp_path / "s")).startswith("is owned by uid")


def test_group_or_world_writable_is_refused(tmp_path):
    path, _ = _write(tmp_path / "s")
    for mode in (0o620, 0o602):
        os.chmod(path, mode)
        with pytest.raises(CheckpointRejected) as info:
            storage.read_checkpoint(path)
        assert "writable" in info.value.reason


def test_symlink_is_refused(tmp_path):
    path, _ = _write(tmp_path / "s")
    link = tmp_path / "s" / "link.ehk"
    os.symlink(path, link)
    with pytest.raises(CheckpointRejected) as info:
        storage.read_checkpoint(str(link))
    assert "symbolic link" in info.value.reason


def test_newer_format_is_refused(tmp_path):
    path, _ = _write(tmp_path / "s")
    with open(path, "r+b") as f:
        f.seek(8)
        f.write(struct.pack(">I", storage.FORMAT_VERSION + 1))
    with pytest.raises(CheckpointRejected) as info:
        storage.read_checkpoint(path)
    assert f"format version {storage.FORMAT_VERSION + 1}" in info.value.reason
    assert f"reads format version {storage.FORMAT_VERSION} only" in info.value.reason
    assert "newer version of ElasticHub's kernel" in info.value.reason


def test_failed_write_leaves_last_good_checkpoint(tmp_path, monkeypatch):
    session = tmp_path / "s"
    path, _ = _write(session, [b"good", b"G" * 100])
    before = open(path, "rb").read()
    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd, data):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", failing_write)
    with pytest.raises(OSError):
        _write(session, [b"new", b"N" * 100])
    monkeypatch.undo()
    assert open(path, "rb").read() == before
    assert os.listdir(session) == [CHECKPOINT_NAME]  # temp file removed
    assert [bytes(b) for b in storage.read_checkpoint(path).blobs] == [b"good", b"G" * 100]


def test_memory_changed_while_it_is_written_is_saved_as_copied_and_verifies(tmp_path, monkeypatch):
    # A thread of the notebook's writing into an array during the write (os.write releases the
    # GIL): checksummed in place and then written, a chunk failed its checksum and the next start
    # refused the whole file. Made deterministic: the memory changes before each chunk's write.
    monkeypatch.setattr(storage, "_CHUNK", 4096)
    array = bytearray(3 * 4096)
    real_write_all = storage.write_all
    generation = {"n": 0}

    def racing(fd, data):
        if memoryview(data).nbytes == 4096:
            generation["n"] += 1
            array[:] = bytes([generation["n"]]) * len(array)
        real_write_all(fd, data)

    monkeypatch.setattr(storage, "write_all", racing)
    path, _ = _write(tmp_path / "s", [b"stream", memoryview(array)])
    monkeypatch.undo()
    saved = bytes(storage.read_checkpoint(path).blobs[1])  # verifies
    # Each chunk as it was when copied: the value before that chunk's write changed it.
    assert [saved[k * 4096:(k + 1) * 4096] for k in range(3)] == [bytes([k]) * 4096 for k in range(3)]


def test_set_aside_keeps_the_file(tmp_path):
    path, _ = _write(tmp_path / "s")
    data = open(path, "rb").read()
    kept = storage.set_aside(path, "rejected")
    assert not os.path.exists(path)
    assert kept.startswith(path + ".rejected-")
    assert open(kept, "rb").read() == data


def test_set_aside_twice_in_one_second_keeps_both(tmp_path):
    first, _ = _write(tmp_path / "s")
    data_one = open(first, "rb").read()
    kept_one = storage.set_aside(first, "rejected")
    second, _ = _write(tmp_path / "s", [b"another generation"])
    data_two = open(second, "rb").read()
    kept_two = storage.set_aside(second, "rejected")
    assert kept_one != kept_two
    assert open(kept_one, "rb").read() == data_one
    assert open(kept_two, "rb").read() == data_two != data_one


def test_session_key_is_stable_safe_and_distinct(tmp_path):
    a = storage.session_key("work/Analysis 1.ipynb")
    assert a == storage.session_key("work/Analysis 1.ipynb")
    assert a.startswith("Analysis_1.ipynb-")
    assert a != storage.session_key("other/Analysis 1.ipynb")
    assert "/" not in storage.session_key("../../etc/passwd")
    fallback = storage.session_key(None, cwd=str(tmp_path))
    assert fallback.startswith("no-session-") and fallback == storage.session_key("", cwd=str(tmp_path))


def test_temp_file_of_a_killed_writer_is_cleaned_up_later(tmp_path):
    session = tmp_path / "s"
    _write(session)
    dead = session / f".{CHECKPOINT_NAME}.tmp-999999999-1"   # no such process
    live = session / f".{CHECKPOINT_NAME}.tmp-{os.getppid()}-1"  # a running process
    dead.write_bytes(b"half a checkpoint")
    live.write_bytes(b"being written")
    _write(session)
    _wait_until(lambda: sorted(os.listdir(session)) == sorted([CHECKPOINT_NAME, storage.SPARE_NAME, live.name]))
    assert not dead.exists() and live.exists()
    assert sorted(os.listdir(session)) == sorted([CHECKPOINT_NAME, storage.SPARE_NAME, live.name])


def test_replaced_generation_becomes_the_spare_and_is_overwritten_in_place(tmp_path):
    session = tmp_path / "s"
    _write(session, [b"one", b"1" * 5000])
    first_inode = os.stat(session / CHECKPOINT_NAME).st_ino
    _write(session, [b"two", b"2" * 100])
    spare = session / storage.SPARE_NAME
    assert os.stat(spare).st_ino == first_inode and stat.S_IMODE(os.stat(spare).st_mode) == 0o600
    path, size = _write(session, [b"three", b"3" * 50])  # shorter than the spare was
    assert os.stat(path).st_ino == first_inode and os.path.getsize(path) == size
    assert [bytes(b) for b in storage.read_checkpoint(path).blobs] == [b"three", b"3" * 50]


def test_without_spare_the_replaced_generation_is_deleted(tmp_path):
    session = tmp_path / "s"
    for n in range(2):
        storage.write_checkpoint(str(session), [b"x" * (n + 1)], {"records": []}, keep_spare=False)
    _wait_until(lambda: os.listdir(session) == [CHECKPOINT_NAME])
    assert os.listdir(session) == [CHECKPOINT_NAME]


def test_a_foreign_spare_is_never_written_into(tmp_path):
    session = tmp_path / "s"
    _write(session)
    victim = tmp_path / "someone-elses-file"
    victim.write_bytes(b"precious")
    os.chmod(victim, 0o644)
    os.link(victim, session / storage.SPARE_NAME)  # a planted spare (not our 0600 file)
    path, _ = _write(session, [b"new"])
    assert victim.read_bytes() == b"precious"
    assert [bytes(b) for b in storage.read_checkpoint(path).blobs] == [b"new"]


def test_a_hard_linked_backup_of_a_checkpoint_is_never_overwritten(tmp_path):
    session = tmp_path / "s"
    path, _ = _write(session, [b"one", b"1" * 5000])
    backup = tmp_path / "backup.ehk"
    os.link(path, backup)  # the user keeps this generation
    _write(session, [b"two"])    # the backed-up inode becomes the spare...
    _write(session, [b"three"])  # ...which must not be recycled
    assert [bytes(b) for b in storage.read_checkpoint(str(backup)).blobs] == [b"one", b"1" * 5000]
    assert [bytes(b) for b in storage.read_checkpoint(path).blobs] == [b"three"]


def _flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x01]))


@pytest.mark.parametrize("chunk", [storage._CHUNK, 4096], ids=["32MiB-chunks", "4KiB-chunks"])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_a_byte_flipped_in_any_chunk_of_a_large_blob_is_refused(tmp_path, monkeypatch, chunk, which):
    # Large arrays are the main use case: every chunk has its own checksum,
    # and each is checked, not only the first. Three chunks, the last partial.
    monkeypatch.setattr(storage, "_CHUNK", chunk)
    path, _ = _write(tmp_path / "s", [b"stream-bytes", os.urandom(2 * chunk + chunk // 2)])
    blob = storage.read_index(path)["blobs"][1]
    assert blob["length"] > 2 * chunk and len(blob["crc32"]) == 3
    storage.read_checkpoint(path)  # intact: accepted
    _flip(path, blob["offset"] + which * chunk + (chunk // 2 if which < 2 else chunk // 4))
    with pytest.raises(CheckpointRejected) as info:
        storage.read_checkpoint(path)
    assert info.value.reason.startswith("checksum mismatch in blob 1")


def test_a_relative_checkpoint_dir_is_taken_from_the_home_not_the_notebooks_folder(monkeypatch, tmp_path):
    (tmp_path / "week1").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path / "week1")  # where the kernel of week1/hw.ipynb starts
    monkeypatch.setenv("ELASTICHUB_CHECKPOINT_DIR", "checkpoints/ann")
    assert default_root() == str(tmp_path / "checkpoints" / "ann")
    monkeypatch.setenv("ELASTICHUB_CHECKPOINT_DIR", "/srv/ckpt")
    assert default_root() == "/srv/ckpt"
    monkeypatch.delenv("ELASTICHUB_CHECKPOINT_DIR")
    assert default_root() == str(tmp_path / ".elastichub" / "checkpoints")
