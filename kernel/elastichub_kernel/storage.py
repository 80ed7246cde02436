"""Checkpoint files: one per notebook session, atomic, versioned, checksummed.

Layout of ``checkpoint.ehk`` (all integers big-endian)::

    header   b"EHKCKPT\\n" | u32 format version | u32 reserved       (16 bytes)
    blobs    blob 0, blob 1, ...   (raw bytes: pickle records, array buffers)
    index    JSON: metadata + per-blob offset/length/crc32 + records
    trailer  u64 index offset | u64 index length | u32 index crc32 |
             u32 reserved | b"EHKEND\\n\\0"                          (32 bytes)

A file is written to a temp name in the same directory (mode 0600, O_EXCL),
fsync'd, renamed over the previous checkpoint and the directory fsync'd: a
crash or a SIGKILL at any moment leaves the last good checkpoint in place.
Reading refuses anything it cannot vouch for (foreign owner, group/world
writable, symlink, bad magic, newer version, truncated, checksum mismatch);
the caller sets the file aside (kept, renamed) and starts clean.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import struct
import time

try:
    # ISA-L's crc32: the same checksum as zlib.crc32 (same polynomial, same
    # values), ~8x faster here (18 vs 2.3 GiB/s): checking a GiB then costs
    # ~55 ms, inline, instead of a second core competing with the I/O.
    from isal.isal_zlib import crc32
except ImportError:  # a platform without an isal wheel: same values, slower
    from zlib import crc32

MAGIC = b"EHKCKPT\n"
END_MAGIC = b"EHKEND\n\0"
FORMAT_VERSION = 1
CHECKPOINT_NAME = "checkpoint.ehk"
# Live migration: what changed since the pre-copy checkpoint (same format).
DELTA_NAME = "live-delta.ehk"
# Live migration: the pre-copy (the base of a live move's delta), written
# while cells run; never restored on its own outside a live move.
LIVE_BASE_NAME = "live-base.ehk"
RESTART_MARKER = "restart-requested"
SPARE_NAME = f".{CHECKPOINT_NAME}.spare"
_HEADER = struct.Struct(">8sII")
_TRAILER = struct.Struct(">QQII8s")
# Chunk size for writes/reads: big enough for full disk speed; one checksum
# per chunk.
_CHUNK = 32 << 20


class CheckpointRejected(Exception):
    """A checkpoint file that must not be restored; ``reason`` says why."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class LoadedCheckpoint:
    def __init__(self, path: str, index: dict, blobs: list):
        self.path = path
        self.index = index
        self.blobs = blobs  # writable buffer per blob: arrays load writable


def default_root() -> str:
    """$ELASTICHUB_CHECKPOINT_DIR, or ~/.elastichub/checkpoints. A relative
    path is taken from the home directory: a kernel starts in its notebook's
    folder, so from there each folder would have a root of its own, and a
    notebook moved to another folder would find none of its checkpoints."""
    home = os.path.expanduser("~")
    configured = os.environ.get("ELASTICHUB_CHECKPOINT_DIR")
    if configured:
        return os.path.abspath(os.path.join(home, os.path.expanduser(configured)))
    return os.path.join(home, ".elastichub", "checkpoints")


def session_key(session_name: str | None, cwd: str | None = None, server_name: str | None = None) -> str:
    """Directory name for a notebook session.

    Keyed by the notebook path (JPY_SESSION_NAME): a readable stem plus a hash
    of the full path, so two notebooks with the same file name never collide.
    Without a session name (a console, an old server) the working directory
    keys it: instant, and stable across restarts of the same server.
    ``server_name`` (JupyterHub's named server, JUPYTERHUB_SERVER_NAME) goes
    into the hash: a user's servers often share one home, and the same
    notebook open in two of them must not restore each other's variables.
    The default server ("") keys as before.
    """
    if session_name:
        stem = os.path.basename(session_name.rstrip("/")) or "notebook"
        source = "nb:" + session_name
    else:
        cwd = cwd or os.getcwd()
        stem = "no-session-" + (os.path.basename(cwd.rstrip("/")) or "root")
        source = "cwd:" + cwd
    if server_name:
        source = f"server:{server_name}\n{source}"
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", stem)[:60]
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{stem}-{digest}"


def check_private_dir(path: str) -> str | None:
    """Why ``path`` is not a directory we may trust, or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    return _ownership_problem(st)


def _ownership_problem(st: os.stat_result) -> str | None:
    """Why a file or directory others could have written must not be trusted."""
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"is group- or world-writable (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def ensure_private_dir(path: str, tighten: bool = True) -> None:
    """Create ``path`` with mode 0700 if missing; refuse an unsafe one.

    ``tighten``: an existing directory of ours that others can read (0755)
    becomes 0700 (session directories). The configured root is only checked,
    never chmod-ed: it may be a directory the user chose for other things.
    """
    os.makedirs(path, mode=0o700, exist_ok=True)
    problem = check_private_dir(path)
    if problem:
        raise PermissionError(f"checkpoint directory {path} {problem}")
    if tighten and stat.S_IMODE(os.stat(path).st_mode) != 0o700:
        os.chmod(path, 0o700)


def write_checkpoint(directory: str, blobs: list, index: dict, keep_spare: bool = True,
                     name: str = CHECKPOINT_NAME, fingerprints: list | None = None,
                     between_chunks=None) -> tuple[str, int]:
    """Write blobs + index atomically as ``directory/name`` (checkpoint.ehk).

    ``blobs`` are bytes-like (memoryviews of array buffers are written without
    a copy). Returns (path, bytes written). The previous checkpoint is
    replaced only after everything is on disk.

    ``keep_spare``: the replaced generation is kept as ``.checkpoint.ehk.spare``
    and the next write overwrites that file in place: rewriting allocated
    blocks is about twice as fast as filling a new file here (ext4), at the
    price of a second copy on disk. Without it, the replaced generation is
    deleted in the background (freeing GBs of blocks is slow too).

    Every chunk of a blob others can write (an array's memory: a thread of
    the notebook's, or a cell during the live pre-copy, may change it while
    it is written) is first copied into a private bounce buffer, and its
    checksum and the bytes written both come from that copy: the file always
    verifies. (Checksummed in place, then written after os.write released
    the GIL, a chunk a thread wrote to meanwhile failed its checksum, and
    the next start refused the whole file.) Such a blob is saved as its
    bytes were when each chunk was copied. ``fingerprints``: the blob's
    xxh3_128 fingerprint of the bytes written is appended, one per blob.
    ``between_chunks(blob, offset)``: called after each chunk is written (a
    test hook).
    """
    ensure_private_dir(directory)
    final = os.path.join(directory, name)
    spare = os.path.join(directory, f".{name}.spare")
    tmp = os.path.join(directory, f".{name}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    fd = _claim_spare(spare, tmp) if keep_spare else None
    if fd is None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(tmp, flags, 0o600)
    try:
        pos = _HEADER.size
        write_all(fd, _HEADER.pack(MAGIC, FORMAT_VERSION, 0))
        table = []
        if fingerprints is not None:
            from .ownimports import dependency

            xxhash = dependency("xxhash")  # never the notebook's xxhash.py
        views = [memoryview(blob).cast("B") for blob in blobs]
        bounce = memoryview(bytearray(min(_CHUNK, max((len(v) for v in views if _shared(v)), default=0))))
        for number, view in enumerate(views):
            crcs = []
            digest = xxhash.xxh3_128() if fingerprints is not None else None
            copy = _shared(view)
            for start in range(0, len(view), _CHUNK):
                chunk = view[start:start + _CHUNK]
                if copy:
                    chunk = bounce[:len(chunk)]
                    chunk[:] = view[start:start + len(chunk)]  # from here on, only the copy is used
                if digest is not None:
                    digest.update(chunk)
                crcs.append(crc32(chunk))
                write_all(fd, chunk)
                if between_chunks is not None:
                    between_chunks(number, start)
            if digest is not None:
                fingerprints.append(digest.hexdigest())
            table.append({"offset": pos, "length": len(view), "crc32": crcs})
            pos += len(view)
        index = dict(index, format=FORMAT_VERSION, chunk=_CHUNK, blobs=table)
        raw_index = json.dumps(index, separators=(",", ":")).encode()
        write_all(fd, raw_index)
        write_all(fd, _TRAILER.pack(pos, len(raw_index), crc32(raw_index), 0, END_MAGIC))
        total = pos + len(raw_index) + _TRAILER.size
        os.ftruncate(fd, total)  # a recycled spare may have been longer
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    os.close(fd)
    # Keep the replaced generation alive under a hard link until the new one
    # is in place: then it becomes the spare, or is deleted in the background.
    previous = os.path.join(directory, f".{name}.old-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.link(final, previous, follow_symlinks=False)
    except OSError:
        previous = None
    try:
        os.replace(tmp, final)
    except BaseException:
        _unlink_quietly(tmp)
        if previous:
            _unlink_quietly(previous)
        raise
    _fsync_dir(directory)
    if previous and keep_spare:
        try:
            os.replace(previous, spare)
        except OSError:
            pass
    _drop_old_generations(directory, name)
    return final, total


def _shared(view: memoryview) -> bool:
    """Memory that may change while it is saved: all but immutable ``bytes``."""
    return not isinstance(view.obj, bytes)


def _claim_spare(spare: str, tmp: str) -> int | None:
    """Take the spare file as this write's temp file (rename: one writer wins)."""
    try:
        os.rename(spare, tmp)
    except OSError:
        return None
    try:
        fd = os.open(tmp, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        _unlink_quietly(tmp)
        return None
    st = os.fstat(fd)
    # Another link to it (a backup the user made with `ln`) would be
    # overwritten in place along with the spare.
    if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) != 0o600
            or st.st_nlink != 1):
        os.close(fd)
        _unlink_quietly(tmp)
        return None
    return fd


def _drop_old_generations(directory: str, base: str = CHECKPOINT_NAME, only_stale: bool = False) -> None:
    """Unlink replaced generations (``only_stale``: only those of writers that
    are gone) and stale temp files, in the background: freeing GBs is slow."""
    import threading

    def drop():
        try:
            names = os.listdir(directory)
        except OSError:
            return
        for name in names:
            if (_is_stale_temp(name, base, ("tmp", "old")) if only_stale
                    else name.startswith(f".{base}.old-") or _is_stale_temp(name, base)):
                _unlink_quietly(os.path.join(directory, name))

    threading.Thread(target=drop, name="elastichub-drop-old", daemon=True).start()


def remove_stale_files(directory: str) -> None:
    """At start, in the background: what writers killed mid-save left (a
    graceful stop used to SIGTERM a large checkpoint; each such stop left
    another partial temp file, GBs, until the next checkpoint completed).
    Only files of processes that are gone; checkpoint, delta and pre-copy."""
    if os.path.isdir(directory):
        for base in (CHECKPOINT_NAME, DELTA_NAME, LIVE_BASE_NAME):
            _drop_old_generations(directory, base, only_stale=True)


def _is_stale_temp(name: str, base: str = CHECKPOINT_NAME, kinds: tuple = ("tmp",)) -> bool:
    """A temp file left by a writer that was killed mid-save (its process is
    gone). Never a live writer's: same pid as ours or a running process."""
    prefix = next((f".{base}.{kind}-" for kind in kinds if name.startswith(f".{base}.{kind}-")), None)
    if prefix is None:
        return False
    try:
        pid = int(name[len(prefix):].split("-")[0])
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def write_all(fd: int, data) -> None:
    """os.write until every byte is written (a write may be partial)."""
    view = memoryview(data).cast("B")
    while len(view):
        n = os.write(fd, view)
        view = view[n:]


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_index(path: str) -> dict:
    """Validate the file's trust, header and index (not the blobs)."""
    fd = _open_trusted(path)
    try:
        return _read_index_fd(path, fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def read_checkpoint(path: str) -> LoadedCheckpoint:
    """Read and verify a whole checkpoint; raise CheckpointRejected if bad."""
    fd = _open_trusted(path)
    try:
        size = os.fstat(fd).st_size
        index = _read_index_fd(path, fd, size)
        # No POSIX_FADV_SEQUENTIAL: 32 MiB reads need no larger read-ahead
        # window, and with it 3 of 8 cold 1 GiB reads here took 2-3x longer
        # (0 of 8 without).
        blobs = []
        chunk = index["chunk"]
        for number, entry in enumerate(index["blobs"]):
            buf = _writable_buffer(entry["length"])
            view = memoryview(buf)
            for k, start in enumerate(range(0, len(view), chunk)):
                part = view[start:start + chunk]
                got = os.preadv(fd, [part], entry["offset"] + start)
                if got != len(part):
                    raise CheckpointRejected(path, f"truncated inside blob {number}")
                _drop_behind(fd, entry["offset"] + start, got)
                # Every chunk, each against its own checksum, before any of
                # it is used (tests corrupt the last chunk of a multi-chunk blob).
                if crc32(part) != entry["crc32"][k]:
                    raise CheckpointRejected(
                        path, f"checksum mismatch in blob {number} (bytes {entry['offset'] + start}..)"
                    )
            blobs.append(buf)
        return LoadedCheckpoint(path=path, index=index, blobs=blobs)
    finally:
        os.close(fd)


def _drop_behind(fd: int, offset: int, length: int) -> None:
    """Evict file pages already copied into our buffer (checked against the
    checksums in that buffer, never in the cache). A restore then holds one
    copy of the state, not two: page cache counts against a pod's memory
    limit, and on this VM fresh pages cost ~3 s/GiB to fault in when no
    recently freed memory is at hand, so a second GiB of cache made cold
    restores 2-3x slower. The file is read once per restore."""
    if length >= (1 << 20) and hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)


def _writable_buffer(length: int):
    """Zero-filled writable memory for a blob. Large ones are anonymous
    mmaps: pages appear as the read fills them, whereas bytearray(n) first
    writes n zero bytes (0.5 s per GB here, longer than reading the data)."""
    if length < (1 << 20):
        return bytearray(length)
    import mmap

    return mmap.mmap(-1, length)


def _open_trusted(path: str) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if os.path.islink(path):
            raise CheckpointRejected(path, "is a symbolic link") from None
        raise CheckpointRejected(path, f"cannot be opened: {exc.strerror}") from None
    st = os.fstat(fd)
    problem = "is not a regular file" if not stat.S_ISREG(st.st_mode) else _ownership_problem(st)
    if problem:
        os.close(fd)
        raise CheckpointRejected(path, problem)
    return fd


def _read_index_fd(path: str, fd: int, size: int) -> dict:
    if size < _HEADER.size + _TRAILER.size:
        raise CheckpointRejected(path, f"truncated ({size} bytes)")
    magic, version, _ = _HEADER.unpack(os.pread(fd, _HEADER.size, 0))
    if magic != MAGIC:
        raise CheckpointRejected(path, "not an ElasticHub checkpoint (bad header)")
    if version > FORMAT_VERSION:  # an image rolled back after a newer kernel saved: say so, not just a number
        raise CheckpointRejected(path, f"it was saved by a newer version of ElasticHub's kernel, in checkpoint format "
                                       f"version {version}; this kernel reads format version {FORMAT_VERSION} only")
    if version != FORMAT_VERSION:
        raise CheckpointRejected(path, f"format version {version}; this kernel reads version {FORMAT_VERSION}")
    off, length, crc, _, end = _TRAILER.unpack(os.pread(fd, _TRAILER.size, size - _TRAILER.size))
    if end != END_MAGIC:
        raise CheckpointRejected(path, "truncated or damaged (no end marker)")
    if off + length + _TRAILER.size != size or off < _HEADER.size:
        raise CheckpointRejected(path, "truncated or damaged (index position does not match the file size)")
    raw = os.pread(fd, length, off)
    if len(raw) != length or crc32(raw) != crc:
        raise CheckpointRejected(path, "checksum mismatch in the index")
    try:
        index = json.loads(raw)
        _validate_index(index, off)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointRejected(path, f"malformed index ({exc})") from None
    return index


def _validate_index(index: dict, blobs_end: int) -> None:
    if index.get("format") != FORMAT_VERSION or not isinstance(index.get("chunk"), int) or index["chunk"] <= 0:
        raise ValueError("bad format/chunk fields")
    pos = _HEADER.size
    for entry in index["blobs"]:
        offset, length, crcs = entry["offset"], entry["length"], entry["crc32"]
        if offset != pos or length < 0 or len(crcs) != -(-length // index["chunk"]):
            raise ValueError("blob table inconsistent")
        pos += length
    if pos != blobs_end:
        raise ValueError("blob table does not cover the file")
    if not isinstance(index["records"], list):
        raise ValueError("records is not a list")


def move_session_dir(old: str, new: str) -> str | None:
    """Move a session's checkpoint directory to the key of the notebook's new
    path (renamed, or saved under another name). A directory already there
    holds the state of a notebook that had this path before: it is set aside
    (kept), and its new name returned, even when there is nothing to move (no
    checkpoint yet), so that it is never restored into this notebook."""
    replaced = None
    if os.path.lexists(new):
        replaced = set_aside(new, "replaced")
        if replaced is None:
            raise OSError(f"{new} is there and could not be set aside")
    if os.path.lexists(old):
        os.rename(old, new)
    return replaced


def set_aside(path: str, why: str) -> str | None:
    """Rename a refused checkpoint (or a session directory) out of the way,
    kept for inspection.

    Returns the new path, or None when even renaming failed (the message to
    the user then says the file is still where it was).
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = f"{path}.{why}-{stamp}-{os.getpid()}"
    # Link, then unlink: unlike rename, link never replaces a file set aside
    # earlier in the same second, so every refused checkpoint is kept.
    for n in range(100):
        target = base if n == 0 else f"{base}-{n}"
        try:
            os.link(path, target, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError:  # a directory, or a volume without hard links: rename to a name just seen free
            if os.path.lexists(target):
                continue
            try:
                os.rename(path, target)
            except OSError:
                return None
            return target
        try:
            os.unlink(path)
        except OSError:
            _unlink_quietly(target)
            return None
        return target
    return None


LIVE_BASE_KIND = "live-base"


def _index_fields(path: str) -> dict | None:
    try:
        return read_index(path) if os.path.lexists(path) else None
    except (CheckpointRejected, OSError):
        return None


def base_path(directory: str, with_delta: bool, live_destination: bool) -> str:
    """checkpoint.ehk, or live-base.ehk when it is the base of a live move
    (see restore_or_reject)."""
    checkpoint_path = os.path.join(directory, CHECKPOINT_NAME)
    live_path = os.path.join(directory, LIVE_BASE_NAME)
    if not os.path.lexists(live_path):
        return checkpoint_path
    live = _index_fields(live_path)
    if live is None or live.get("kind") != LIVE_BASE_KIND or not live.get("base_id"):
        return checkpoint_path  # unreadable or foreign: never used (removed by the next full checkpoint)
    if live_destination:
        return live_path
    delta = _index_fields(os.path.join(directory, DELTA_NAME)) if with_delta else None
    if delta is None or delta.get("base_id") != live["base_id"]:
        return checkpoint_path
    full = _index_fields(checkpoint_path)
    if full is not None and _created(full) > _created(delta):
        return checkpoint_path  # a full checkpoint written after the move supersedes the pair
    return live_path


def _created(index: dict) -> float:
    try:
        return float(index.get("created"))
    except (TypeError, ValueError):
        return 0.0
