"""A checkpoint whose index checksum is right but whose contents are not:
refused as malformed (CheckpointRejected), never read, never an unexpected
error. Found by the mutation run (scripts/mutation.py): each test here
kills a mutant of the index checks that the other tests let live."""

import json
import os
import struct
import zlib

import pytest

from elastichub_kernel import storage
from elastichub_kernel.storage import CheckpointRejected


def _checkpoint(tmp_path, blobs=(b"stream", b"\x07" * 5000)):
    path, _ = storage.write_checkpoint(str(tmp_path / "s"), list(blobs), {"records": []})
    return path


def _rewrite_index(path, change):
    """Replace the index by ``change(index)``, with a valid checksum and trailer."""
    index = storage.read_index(path)
    first = index["blobs"][0]["offset"]
    end = index["blobs"][-1]["offset"] + index["blobs"][-1]["length"]
    assert first == storage._HEADER.size
    with open(path, "rb") as f:
        head = f.read(end)
    raw = json.dumps(change(index)).encode()
    trailer = storage._TRAILER.pack(end, len(raw), zlib.crc32(raw), 0, storage.END_MAGIC)
    with open(path, "wb") as f:
        f.write(head + raw + trailer)


def _refused(path):
    with pytest.raises(CheckpointRejected) as info:
        storage.read_checkpoint(path)
    return info.value.reason


def _blob(index, i, **fields):
    index["blobs"][i].update(fields)
    return index


def test_an_intact_rewritten_index_is_accepted(tmp_path):
    path = _checkpoint(tmp_path)
    _rewrite_index(path, lambda ix: ix)
    assert [bytes(b) for b in storage.read_checkpoint(path).blobs] == [b"stream", b"\x07" * 5000]


@pytest.mark.parametrize("change, why", [
    (lambda ix: dict(ix, chunk=0), "bad format/chunk"),
    (lambda ix: dict(ix, chunk=-1), "bad format/chunk"),
    (lambda ix: dict(ix, format=0), "bad format/chunk"),
    (lambda ix: _blob(ix, 1, offset=ix["blobs"][1]["offset"] + 1), "blob table inconsistent"),
    (lambda ix: _blob(ix, 1, crc32=[]), "blob table inconsistent"),
    (lambda ix: _blob(ix, 1, crc32=ix["blobs"][1]["crc32"] * 2), "blob table inconsistent"),
    (lambda ix: _blob(ix, 1, length=ix["blobs"][1]["length"] - 1), "does not cover the file"),
    (lambda ix: _blob(ix, 1, length=ix["blobs"][1]["length"] + 1), "does not cover the file"),
    (lambda ix: _blob(ix, 1, offset=ix["blobs"][1]["offset"] - 1), "blob table inconsistent"),
    (lambda ix: dict(ix, format=2), "bad format/chunk"),
    (lambda ix: dict(ix, records={"not": "a list"}), "records is not a list"),
    (lambda ix: dict(ix, blobs=[{"offset": 16}]), "'length'"),
])
def test_an_inconsistent_index_is_refused_as_malformed(tmp_path, change, why):
    path = _checkpoint(tmp_path)
    _rewrite_index(path, change)
    reason = _refused(path)
    assert reason.startswith("malformed index") and why in reason, reason


def test_a_negative_length_made_up_by_the_next_blob_is_refused(tmp_path):
    # Blob 0 one byte "shorter than nothing", blob 1 one byte longer: the
    # table still covers the file, the offsets still chain.
    path = _checkpoint(tmp_path)

    def shift(ix):
        a, b = ix["blobs"]
        a.update(length=-1, crc32=[])
        b.update(offset=a["offset"] - 1, length=b["length"] + b["offset"] - a["offset"] + 1)
        b["crc32"] = [0] * -(-b["length"] // ix["chunk"])
        return ix
    _rewrite_index(path, shift)
    assert "blob table inconsistent" in _refused(path)


def test_an_older_format_version_is_refused(tmp_path):
    path = _checkpoint(tmp_path)
    with open(path, "r+b") as f:
        f.seek(8)
        f.write(struct.pack(">I", storage.FORMAT_VERSION - 1))
    assert _refused(path) == f"format version {storage.FORMAT_VERSION - 1}; this kernel reads version 1"


@pytest.mark.parametrize("size", [0, 16, 20, 47])
def test_a_file_shorter_than_header_and_trailer_is_refused(tmp_path, size):
    path = _checkpoint(tmp_path)
    with open(path, "r+b") as f:
        f.truncate(size)
    assert _refused(path) == f"truncated ({size} bytes)"


def test_the_message_names_where_the_damage_is(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "_CHUNK", 4096)
    # a first blob long enough that its end offset shares bits with the
    # chunk offsets (the sum must be a sum, not a bitwise or)
    path = _checkpoint(tmp_path, [b"s" * 9000, os.urandom(3 * 4096)])
    blob = storage.read_index(path)["blobs"][1]
    with open(path, "r+b") as f:
        f.seek(blob["offset"] + 2 * 4096 + 10)
        byte = f.read(1)
        f.seek(blob["offset"] + 2 * 4096 + 10)
        f.write(bytes([byte[0] ^ 1]))
    assert _refused(path) == f"checksum mismatch in blob 1 (bytes {blob['offset'] + 2 * 4096}..)"


@pytest.mark.parametrize("delta", [-1, 1])
def test_an_index_checksum_off_by_one_either_way_is_refused(tmp_path, delta):
    path = _checkpoint(tmp_path)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size - storage._TRAILER.size)
        off, length, crc, reserved, end = storage._TRAILER.unpack(f.read(storage._TRAILER.size))
        f.seek(size - storage._TRAILER.size)
        f.write(storage._TRAILER.pack(off, length, (crc + delta) % (1 << 32), reserved, end))
    assert _refused(path) == "checksum mismatch in the index"


@pytest.mark.parametrize("magic", [b"EHKCKPU\n", b"EHKCKPS\n", b"\xff" * 8])
def test_any_other_magic_is_refused(tmp_path, magic):
    path = _checkpoint(tmp_path)
    with open(path, "r+b") as f:
        f.write(magic)
    assert _refused(path) == "not an ElasticHub checkpoint (bad header)"


@pytest.mark.parametrize("end", [b"EHKENE\n\0", b"EHKEND\0\0", b"\0" * 8])
def test_a_damaged_end_marker_is_refused(tmp_path, end):
    path = _checkpoint(tmp_path)
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) - 8)
        f.write(end)
    assert _refused(path) == "truncated or damaged (no end marker)"


def test_empty_blobs_and_an_index_right_after_the_header_are_read(tmp_path):
    # An empty record stream is blob 0 of length 0: the index then starts
    # right after the header.
    path = _checkpoint(tmp_path, [b""])
    assert storage.read_index(path)["blobs"] == [{"offset": 16, "length": 0, "crc32": []}]
    assert [bytes(b) for b in storage.read_checkpoint(path).blobs] == [b""]
    path = _checkpoint(tmp_path, [b"", b"x", b""])
    assert [bytes(b) for b in storage.read_checkpoint(path).blobs] == [b"", b"x", b""]


def test_a_checkpoint_owned_by_a_lower_or_higher_uid_is_refused(tmp_path, monkeypatch):
    # test_storage makes our uid look higher than the owner's; here the
    # owner's is the higher one (root: chown the file; others: look lower).
    path = _checkpoint(tmp_path)
    real = os.geteuid()
    if real == 0:
        os.chown(path, 4242, -1)
    else:
        monkeypatch.setattr(os, "geteuid", lambda: real - 1)
    assert "is owned by uid" in _refused(path)


def test_one_byte_chunks_are_read(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "_CHUNK", 1)
    path = _checkpoint(tmp_path, [b"ab", b"xyz"])
    assert storage.read_index(path)["chunk"] == 1
    assert [bytes(b) for b in storage.read_checkpoint(path).blobs] == [b"ab", b"xyz"]


def _trailer(path):
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(size - storage._TRAILER.size)
        return size, storage._TRAILER.unpack(f.read(storage._TRAILER.size))


def test_bytes_between_the_index_and_the_trailer_are_refused(tmp_path):
    path = _checkpoint(tmp_path)
    size, trailer = _trailer(path)
    with open(path, "r+b") as f:
        f.seek(size - storage._TRAILER.size)
        f.write(b"\0" * 8 + storage._TRAILER.pack(*trailer))
    assert _refused(path) == "truncated or damaged (index position does not match the file size)"


def test_an_index_length_past_the_trailer_is_refused(tmp_path):
    path = _checkpoint(tmp_path)
    size, (off, length, crc, reserved, end) = _trailer(path)
    with open(path, "r+b") as f:
        f.seek(size - storage._TRAILER.size)
        f.write(storage._TRAILER.pack(off, length + 1, crc, reserved, end))
    assert _refused(path) == "truncated or damaged (index position does not match the file size)"


def test_a_short_read_inside_a_blob_is_refused(tmp_path, monkeypatch):
    # The file shrinking while it is read (another writer truncating it):
    # the read returns fewer bytes than asked for.
    monkeypatch.setattr(storage, "_CHUNK", 4096)
    path = _checkpoint(tmp_path, [b"stream", b"\x05" * (3 * 4096)])
    real = os.preadv
    calls = []

    def short(fd, buffers, offset):
        calls.append(offset)
        got = real(fd, buffers, offset)
        return got - 1 if len(calls) == 3 else got
    monkeypatch.setattr(os, "preadv", short)
    assert _refused(path) == "truncated inside blob 1"
