"""Live migration (make-before-break): the delta between a pre-copy
checkpoint and the frozen state, written by the source kernel and applied
by the destination kernel.

``live-delta.ehk`` has the checkpoint file format (storage.py). Its blob 0
is the whole in-band pickle stream of the frozen state (small: arrays are
out of band), then only the out-of-band buffers whose xxh3_128 fingerprint
matches no buffer of the pre-copy checkpoint (the *base*). Its index holds
what a checkpoint index holds plus ``base_id``, ``delta_id``,
``execution_count`` and ``buffer_map``: per buffer of the stream,
``["delta", k, nbytes, fingerprint]`` (blob k+1 of the delta file) or
``["base", j, nbytes, fingerprint]`` (buffer j of the base).

Buffers are matched by content, not position: a new variable shifting the
buffer order costs nothing. Each base buffer is used at most once, so two
equal arrays never come back sharing memory. A reused base buffer's
fingerprint is checked again on apply (~0.05 s/GiB): a base that changed
since (a cell ran, a different file) is refused, never silently used.

One pickle stream with one memo, as in a checkpoint: ``b is a`` and numpy
views of a saved base array survive exactly as they do there.
"""

from __future__ import annotations

import os
import time

from .engine import (_PURE_PREFIX, build_namespace, checked_imports, checked_records, dump_state, file_index,
                     finish_references, import_modules, migrated_names, restore_after_load, restore_context)
from .loader import Bindings
from .messages import STARTED_EMPTY
from .ownimports import dependency
from .storage import (CHECKPOINT_NAME, DELTA_NAME, LIVE_BASE_NAME, CheckpointRejected, read_checkpoint, read_index,
                      set_aside, write_checkpoint)

DELTA_KIND = "live-delta"
xxhash = dependency("xxhash")  # never an xxhash.py of the notebook's


class LiveError(Exception):
    """A live-migration step that cannot be done; the message says why."""


def buffer_fingerprint(buf) -> str:
    return xxhash.xxh3_128_hexdigest(memoryview(buf).cast("B"))


def write_delta(directory, ns, names, recorder, speed, session, base_id, base_fingerprints,
                execution_count, context=None) -> dict:
    """Write ``live-delta.ehk`` for the frozen namespace; the reply fields."""
    started = time.perf_counter()
    dumped, fields, recomputed, not_restorable = dump_state(ns, names, recorder, speed, context)
    pool: dict[str, list] = {}
    for j, fp in enumerate(base_fingerprints or []):
        pool.setdefault(fp, []).append(j)
    buffer_map, changed = [], []
    for buf in dumped.buffers:
        fp, nbytes = buffer_fingerprint(buf), memoryview(buf).nbytes
        reusable = pool.get(fp)
        if reusable:
            buffer_map.append(["base", reusable.pop(0), nbytes, fp])
        else:
            buffer_map.append(["delta", len(changed), nbytes, fp])
            changed.append(buf)
    delta_id = os.urandom(16).hex()  # not `secrets`: a secrets.py of the notebook's could stand in
    index = file_index(session, base_id, {"delta_id": delta_id, "execution_count": execution_count,
                                          "buffer_map": buffer_map, **fields}, kind=DELTA_KIND)
    path, nbytes = write_checkpoint(directory, [dumped.stream, *changed], index, keep_spare=False, name=DELTA_NAME)
    return {
        "status": "ok",
        "ok": True,
        "bytes": nbytes,
        "changed_buffers": len(changed),
        "reused_buffers": len(buffer_map) - len(changed),
        "base_id": base_id,
        "delta_id": delta_id,
        "migrated": migrated_names(dumped),
        "recomputed": recomputed,
        "not_restorable": not_restorable,
        "path": path,
        "seconds": round(time.perf_counter() - started, 6),
        "error": None,
    }


def delta_file_id(directory) -> str | None:
    """The delta_id of the session's delta file, or None (absent, unreadable)."""
    try:
        return read_index(os.path.join(directory, DELTA_NAME)).get("delta_id")
    except (CheckpointRejected, OSError):
        return None


def live_base_id(directory) -> str | None:
    """The base_id of the session's live pre-copy file, or None (absent, unreadable)."""
    try:
        return read_index(os.path.join(directory, LIVE_BASE_NAME)).get("base_id")
    except (CheckpointRejected, OSError):
        return None


def remove_live_base(directory, base_id: str | None = None) -> bool:
    """Remove live-base.ehk (only the one named ``base_id`` when given)."""
    return _remove(os.path.join(directory, LIVE_BASE_NAME), base_id, live_base_id)


def remove_delta(directory, delta_id: str | None = None) -> bool:
    """Remove the delta file (only the one named ``delta_id`` when given)."""
    return _remove(os.path.join(directory, DELTA_NAME), delta_id, delta_file_id)


def _remove(path: str, wanted_id: str | None, file_id) -> bool:
    """Unlink `path` if it exists and, when `wanted_id` is given, its index
    names that id (`file_id(directory)` reads it); whether it was removed."""
    if not os.path.lexists(path) or (wanted_id is not None and file_id(os.path.dirname(path)) != wanted_id):
        return False
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def _checked_map(path, index, ndelta: int) -> list:
    try:
        entries = [list(e) for e in index["buffer_map"]]
        seen = 0
        for kind, number, nbytes, fp in entries:
            if kind not in ("base", "delta") or not isinstance(number, int) or number < 0:
                raise ValueError(f"bad buffer entry {kind!r} {number!r}")
            if not isinstance(nbytes, int) or nbytes < 0 or not isinstance(fp, str):
                raise ValueError("bad buffer size or fingerprint")
            if kind == "delta":
                if number != seen or number >= ndelta:
                    raise ValueError("delta buffers out of order or missing")
                seen += 1
        if seen != ndelta:
            raise ValueError("the file holds buffers the map does not use")
    except (TypeError, ValueError, KeyError) as exc:
        raise CheckpointRejected(path, f"malformed delta index ({exc})") from None
    return entries


def _base_buffers(directory, base: dict | None, base_id) -> list:
    """The base's buffers: kept in memory since the start restore, else read
    (and checksum-verified) from the file that is still that base: the live
    pre-copy (live-base.ehk) or checkpoint.ehk."""
    if base and base.get("buffers") is not None and base.get("base_id") == base_id:
        return base["buffers"]
    path = os.path.join(directory, CHECKPOINT_NAME)
    live_path = os.path.join(directory, LIVE_BASE_NAME)
    try:
        if os.path.lexists(live_path) and read_index(live_path).get("base_id") == base_id:
            path = live_path
    except (CheckpointRejected, OSError):
        pass
    if not os.path.lexists(path):
        raise LiveError(f"the delta needs base {base_id}, and {path} is gone")
    loaded = read_checkpoint(path)
    if loaded.index.get("base_id") != base_id:
        raise LiveError(f"base mismatch: {path} is generation {loaded.index.get('base_id')}, "
                        f"the delta was made against {base_id}")
    return list(loaded.blobs[1:])


def load_delta(directory, base: dict | None, delta_id: str | None = None, base_id=...):
    """Read and verify the delta and the buffers it reuses; build nothing.
    Returns (index, stream, records, buffers, imports). ``base_id``: the base
    the caller holds (the delta must have been made against it)."""
    path = os.path.join(directory, DELTA_NAME)
    if not os.path.lexists(path):
        raise LiveError(f"no live delta file at {path}")
    first = read_index(path)
    if first.get("kind") != DELTA_KIND:
        raise CheckpointRejected(path, "not a live-migration delta file")
    if delta_id is not None and first.get("delta_id") != delta_id:
        raise LiveError(f"delta mismatch: {path} is delta {first.get('delta_id')}, not {delta_id}")
    # A delta without a base (nothing was saved at pre-copy) is complete in
    # itself: whatever this kernel restored at start is replaced.
    if base_id is not ... and first.get("base_id") is not None and first.get("base_id") != base_id:
        raise LiveError(f"base mismatch: this kernel restored base {base_id} at start, "
                        f"the delta was made against base {first.get('base_id')}")
    imports = checked_imports(path, lambda: first)
    loaded = read_checkpoint(path)
    index = loaded.index
    if (index.get("delta_id") != first.get("delta_id") or [dict(i) for i in index.get("imports", [])] != imports
            or index.get("context") != first.get("context")):
        raise CheckpointRejected(path, "the file changed while being read")
    entries = _checked_map(path, index, len(loaded.blobs) - 1)
    records = checked_records(path, index, len(loaded.blobs[0]), len(entries))
    count = index.get("execution_count")
    if not (isinstance(count, int) and not isinstance(count, bool) and count >= 0):
        raise CheckpointRejected(path, "malformed delta index (execution_count)")
    reused = [e for e in entries if e[0] == "base"]
    source = _base_buffers(directory, base, index.get("base_id")) if reused else []
    buffers = []
    for kind, number, nbytes, fp in entries:
        if kind == "delta":
            buf = loaded.blobs[1 + number]
            if memoryview(buf).nbytes != nbytes:
                raise CheckpointRejected(path, f"delta buffer {number} has the wrong size")
        else:
            if number >= len(source) or memoryview(source[number]).nbytes != nbytes:
                raise LiveError(f"base mismatch: base buffer {number} is missing or has the wrong size")
            buf = source[number]
            if buffer_fingerprint(buf) != fp:
                raise LiveError(f"base mismatch: base buffer {number} changed since the pre-copy")
        buffers.append(buf)
    return index, loaded.blobs[0], records, buffers, imports


def build(directory, ns, base, delta_id=None, base_id=..., context=None, old_names=()) -> tuple[Bindings, dict]:
    """(bindings, report): the delta's state, bound into ``ns`` as it loads,
    so notebook code run while a later variable loads (a ``__setstate__``,
    a dict subclass's ``__setitem__``) sees the source's values, not the
    pre-copy's. ``old_names`` (the state restored before) that the delta
    does not hold are unbound first; `swap` finishes the job, and
    ``bindings.undo()`` puts ``ns`` back as it was (a refused apply).
    ``context``: the kernel's SessionContext, given the delta's saved one
    before its modules are imported (the destination is discarded if its
    apply fails)."""
    started = time.perf_counter()
    index, stream, records, buffers, imports = load_delta(directory, base, delta_id, base_id)
    context_report = restore_context(context, index)
    bindings = Bindings(ns, skip="\x00")  # recipes, modules' values: not variables
    new = {i["name"] for i in imports} | {r.name.removeprefix(_PURE_PREFIX) for r in records}
    try:
        for name in sorted(set(old_names) - new):
            bindings.drop(name)
        built = build_namespace(index, stream, records, buffers, imports, import_modules(imports), ns, bindings)
        restore_after_load(context, index, context_report)
        finish_references(built, ns)
    except BaseException:
        bindings.undo()
        raise
    built.pop("bindings")
    path = os.path.join(directory, DELTA_NAME)
    notes = [*context_report.pop("notes", []), *built.pop("notes")]
    report = dict(path=path, created=index.get("created"), **built, **context_report,
                  **({"notes": notes} if notes else {}),
                  bytes=os.path.getsize(path), seconds=round(time.perf_counter() - started, 6),
                  delta_id=index.get("delta_id"), base_id=index.get("base_id"),
                  execution_count=index["execution_count"],
                  bytes_read=os.path.getsize(path))
    return bindings, report


def swap(ns: dict, old_names, bindings: Bindings) -> None:
    """Finish a `build`: names of the old state the new one lacks (gone, or
    failed to load here) are unbound; the new values are bound already."""
    for name in set(old_names) - set(bindings.values):
        bindings.drop(name)


def delta_at_start(directory, ns, report: dict | None, base: dict, own_files: bool = True, context=None) -> dict:
    """Apply a delta completing the checkpoint just restored (a restart of
    a live-migration destination). A delta made against another base is
    older than the checkpoint (a full checkpoint supersedes it): removed.
    A damaged one is set aside and the user told the state is the base's.
    ``own_files=False`` (a live-migration destination): files are left as
    they are, they belong to the source kernel."""
    path = os.path.join(directory, DELTA_NAME)

    def aside(path, why):
        return set_aside(path, why) if own_files else None

    try:
        first = read_index(path)
        if (first.get("base_id") is None and report is not None
                and not _newer(first.get("created"), report.get("created"))):
            if own_files:
                remove_delta(directory)  # a checkpoint written after this self-contained delta
            return report
        old = (report["migrated"] + report["recomputed"]) if report else []
        bindings, delta_report = build(directory, ns, base, base_id=base.get("base_id"), context=context,
                                       old_names=old)
    except LiveError as exc:
        if str(exc).startswith("base mismatch"):
            if own_files:
                remove_delta(directory)
            return report
        return _delta_note(report, path, str(exc), aside(path, "rejected"))
    except CheckpointRejected as bad:
        return _delta_note(report, path, bad.reason, aside(path, "rejected"))
    except Exception as exc:  # never crash the kernel on a checkpoint
        return _delta_note(report, path, f"unexpected error ({type(exc).__name__}: {exc})",
                           aside(path, "rejected"))
    swap(ns, old, bindings)
    return delta_report


def _newer(a, b) -> bool:
    try:
        return float(a) > float(b)
    except (TypeError, ValueError):
        return False


def _delta_note(report, path, reason, kept) -> dict:
    # In the student's words ("the live-migration delta ... the pre-copy checkpoint" named ElasticHub's
    # parts), with what to do.
    where = f"was kept as {kept}" if kept else "was left in place"
    then = ("Your variables are as they were a little before the move: run again the cells you ran last before "
            "it." if report is not None else STARTED_EMPTY)
    note = (f"ElasticHub: WARNING: the last changes to your variables before your server moved were NOT restored "
            f"({reason}; the file {path} {where}). {then}")
    if report is None:
        return dict(path=path, created=None, migrated=[], recomputed=[], not_restorable=[], failed_now=[],
                    differs=[], bytes=None, seconds=0.0, notes=[note])
    return dict(report, notes=[*report.get("notes", []), note])
