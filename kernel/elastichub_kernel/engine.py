"""Checkpoint and restore of a notebook namespace: migrate vs recompute.

At checkpoint time each variable is migrated, recomputed or named as not
restorable (statedump.py), and the state file written (storage.py). At
restore the file is verified before anything is bound, the modules are
imported again and checked against their fingerprints, the recompute
recipes run only when their cell is provably pure and their value's
fingerprint matches (else the variable is named, never swapped), and the
rest loaded (loader.py). No other cell is ever re-run: a cell that writes
files, uses the network or randomness is never executed behind the user's
back.
"""

from __future__ import annotations

import builtins
import importlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from . import __version__
from . import provenance, usermodules, usernames
from .recorder import HistoryRecorder
from . import references, storage
from .references import VALUE_PREFIX, library_change_notes
# What a checkpoint saves (split off): dump_state and _PURE_PREFIX stay importable from here (live.py).
from .statedump import _PURE_PREFIX, dump_state, module_fingerprint, value_fingerprint
from .storage import (CHECKPOINT_NAME, DELTA_NAME, LIVE_BASE_NAME, CheckpointRejected, read_checkpoint, read_index,
                      set_aside, write_checkpoint)
from .usermodules import MODULE_PREFIX


def user_variable_names(ns: dict, hidden: dict) -> list:
    """The user's variables: not IPython's own (In, Out, _1, __name__...:
    see usernames.py), and names only: a key that is no string
    (`globals()[0] = ...`) is no variable, and failed every checkpoint.
    Its In, Out, _ih, _oh, _dh are skipped by identity only: a user's own
    `Out = df` is a variable like any other and must be saved."""
    names = []
    for name, value in ns.items():
        if not isinstance(name, str):
            continue
        if name in hidden and hidden[name] is value:
            continue
        if name.startswith("_") and usernames.managed(name, value, ns):
            continue
        names.append(name)
    return names


_MISSING = object()


def migrated_names(dumped) -> list:
    return [r.name for r in dumped.records if not r.name.startswith("\x00")]  # not recipes, nor modules' values


def file_index(session: str, base_id: str, fields: dict, **extra) -> dict:
    """The index of a state file (checkpoint, live base, live delta): who
    wrote it (provenance.py), for which notebook, its generation id, then its own fields."""
    return {**extra, "created": time.time(), "python": list(sys.version_info[:3]), **provenance.fields(),
            "kernel_version": __version__, "session": session, "base_id": base_id, **fields}


def saved_reply(dumped, recomputed, not_restorable, path, nbytes, started, base_id) -> dict:
    """The control reply of a written state file."""
    return {"status": "ok", "ok": True, "bytes": nbytes, "seconds": round(time.perf_counter() - started, 6),
            "migrated": migrated_names(dumped), "recomputed": recomputed, "not_restorable": not_restorable,
            "path": path, "base_id": base_id, "error": None}


def checkpoint(directory, ns, names, recorder: HistoryRecorder, speed, session: str,
               keep_spare: bool = True, fingerprints: list | None = None, context=None) -> dict:
    """Write the checkpoint; returns the control reply content (see kernel).
    ``fingerprints``: filled with each out-of-band buffer's xxh3_128 (the
    base of a live-migration delta)."""
    started = time.perf_counter()
    dumped, fields, recomputed, not_restorable = dump_state(ns, names, recorder, speed, context)
    # Names this file generation: a live delta says which base it completes. (Not `secrets`: a
    # secrets.py of the notebook's could stand in for it.)
    base_id = os.urandom(16).hex()
    index = file_index(session, base_id, fields)
    # Another kernel's checkpoint of this notebook, written since this one started, is kept and named.
    replaced, warning = provenance.before_write(os.path.join(directory, CHECKPOINT_NAME))
    if replaced:
        index["replaced"] = replaced
    written = None if fingerprints is None else []  # of the bytes written (a thread may change a buffer meanwhile)
    path, nbytes = write_checkpoint(directory, [dumped.stream, *dumped.buffers], index, keep_spare,
                                    fingerprints=written)
    if written is not None:
        fingerprints[:] = written[1:]  # blob 0 is the in-band stream
    provenance.known(base_id)
    reply = saved_reply(dumped, recomputed, not_restorable, path, nbytes, started, base_id)
    return dict(reply, warning=warning) if warning else reply


LIVE_BASE_KIND = storage.LIVE_BASE_KIND


def precopy_dump(ns, names, recorder: HistoryRecorder, speed, context=None) -> dict:
    """The live pre-copy's first half, run under the state lock: pickle the
    state. Milliseconds even for GBs: array buffers stay out of band, as
    views of the user's memory (not copied). A bytearray's buffer is copied
    (a cell resizing it while a view is held would fail)."""
    dumped, fields, recomputed, not_restorable = dump_state(ns, names, recorder, speed, context)
    buffers = [bytes(b) if isinstance(b.obj, bytearray) else b for b in dumped.buffers]
    return {"dumped": dumped, "fields": fields, "recomputed": recomputed, "not_restorable": not_restorable,
            "buffers": buffers}


def precopy_write(directory, prepared: dict, session: str, between_chunks=None) -> dict:
    """The second half, run WITHOUT the state lock while cells run: write
    ``live-base.ehk`` (never checkpoint.ehk: a cell may change an array
    while it is written, so a buffer in this file may be torn). Each
    buffer's fingerprint is of exactly the bytes written (storage's bounce
    buffer): a torn buffer differs from the state at freeze and is re-sent
    in the delta. The reply carries them as ``fingerprints``."""
    started = time.perf_counter()
    dumped = prepared["dumped"]
    base_id = os.urandom(16).hex()
    index = file_index(session, base_id, prepared["fields"], kind=LIVE_BASE_KIND)
    fingerprints: list = []
    path, nbytes = write_checkpoint(directory, [dumped.stream, *prepared["buffers"]], index, keep_spare=False,
                                    name=LIVE_BASE_NAME, fingerprints=fingerprints, between_chunks=between_chunks)
    return dict(saved_reply(dumped, prepared["recomputed"], prepared["not_restorable"], path, nbytes, started,
                            base_id),
                unchanged=False, fingerprints=fingerprints[1:])  # blob 0 is the in-band stream


def restore(path: str, ns: dict, keep: dict | None = None, context=None) -> dict:
    """Load ``path`` into ``ns``. Raises CheckpointRejected (nothing loaded)
    when the file cannot be trusted; otherwise loads every variable it can
    and names the others. The report is a plain dict: it travels in status
    replies as is. ``keep``: receives the file's base_id and its buffers
    (a live-migration destination builds the delta's state on them).
    ``context``: the kernel's SessionContext, given the file's saved one
    first (its sys.path and working directory find the notebook's modules)."""
    started = time.perf_counter()
    first = read_index(path)
    imports = checked_imports(path, lambda: first)
    context_report = restore_context(context, first)
    try:
        index, built = _load_verified(path, ns, keep, imports, first)
    except BaseException:
        if context is not None:  # nothing is loaded: nor is the session's context
            context.restore({})
        raise
    restore_after_load(context, first, context_report)
    finish_references(built, ns)
    provenance.known(index.get("base_id"))  # this kernel's state now: replacing it loses nothing
    notes = [*context_report.pop("notes", []), *built.pop("notes")]
    return dict(
        path=path,
        created=index.get("created"),
        **built,
        **context_report,
        **({"notes": notes} if notes else {}),
        bytes=os.path.getsize(path) if os.path.exists(path) else None,
        seconds=round(time.perf_counter() - started, 6),
    )


def _load_verified(path, ns, keep, imports, first):
    # The data is read and verified in a helper thread while this thread
    # re-imports the notebook's modules (numpy, pandas... take a while):
    # both finish sooner than one after the other. Names are bound only once
    # the whole file has been verified, then each as soon as it has loaded.
    own = checked_user_modules(path, first)
    with ThreadPoolExecutor(1, thread_name_prefix="elastichub-read") as pool:
        pending = pool.submit(read_checkpoint, path)
        # The notebook's own modules first, each from the file it was loaded
        # from (not one a fresh import finds after a %cd), then the others.
        reloaded = usermodules.load_again(own)
        modules = import_modules(imports)
        loaded = pending.result()
    index = loaded.index
    if [dict(i) for i in index.get("imports", [])] != imports or index.get("context") != first.get("context") \
            or index.get("user_modules") != first.get("user_modules"):
        raise CheckpointRejected(path, "malformed index (file changed while being read)")
    records = checked_records(path, index, len(loaded.blobs[0]), len(loaded.blobs) - 1)
    buffers = list(loaded.blobs[1:])
    if keep is not None:
        keep.update(base_id=index.get("base_id"), buffers=buffers, path=path)
    built = build_namespace(index, loaded.blobs[0], records, buffers, imports, modules, ns)
    built.pop("bindings")  # bound already
    users = index.get("module_users") if isinstance(index.get("module_users"), dict) else {}
    set_back = [r.name for r in records if r.name.startswith(usermodules.MODULE_PREFIX)]
    built["notes"] = usermodules.restore_notes(reloaded, users, set_back) + built["notes"]
    for name, why in reloaded["problems"].items():
        built["differs"].append({"name": name, "reason": why})
    return index, built


def finish_references(built: dict, ns: dict) -> None:
    """Once the carried library state is applied: the session's contents
    put back into the library containers it had changed (references.py)."""
    built["differs"] += references.reconcile(built.pop("contents"), built.pop("referenced"), ns)


def checked_user_modules(path: str, index: dict) -> list:
    try:
        return usermodules.checked(index.get("user_modules", []))
    except ValueError as exc:
        raise CheckpointRejected(path, f"malformed index ({exc})") from None


def restore_context(context, index: dict) -> dict:
    """Bring back the session's context saved in ``index`` (before its
    modules are imported); the report fields ``context`` (what came back)
    and ``notes`` (what could not)."""
    if context is None:
        return {"context": []}
    done, problems = context.restore(index.get("context"))
    return {"context": done, **({"notes": [f"WARNING: {p}." for p in problems]} if problems else {})}


def restore_after_load(context, index: dict, context_report: dict) -> None:
    """After the variables are loaded: the random generators' state and the
    warning filters (see context.py); problems go to the report's notes."""
    if context is None or index.get("context") is None:
        return
    problems = context.restore_after_load(index["context"])
    if problems:
        context_report["notes"] = [*context_report.get("notes", []), *(f"WARNING: {p}." for p in problems)]


def checked_imports(path: str, read) -> list:
    try:
        imports = [dict(i) for i in read().get("imports", [])]
        for imp in imports:
            if not isinstance(imp.get("module"), str) or not isinstance(imp.get("name"), str) \
                    or not isinstance(imp.get("attr", ""), str):
                raise ValueError("bad import entry")
            subs = imp.get("submodules", [])
            if not (isinstance(subs, list) and all(isinstance(m, str) and m.startswith(imp["module"] + ".")
                                                   for m in subs)):
                raise ValueError("bad submodules of an import")
    except (TypeError, ValueError) as exc:
        raise CheckpointRejected(path, f"malformed index ({exc})") from None
    return imports


def import_modules(imports: list) -> dict:
    modules = {}
    for imp in imports:
        try:
            modules[imp["name"]] = importlib.import_module(imp["module"])
        except Exception as exc:
            modules[imp["name"]] = f"import {imp['module']} failed here ({type(exc).__name__}: {exc})"
            continue
        for sub in imp.get("submodules", ()):
            try:
                importlib.import_module(sub)
            except Exception:  # named by build_namespace: the module comes back without it
                pass
    return modules


def checked_records(path: str, index: dict, stream_len: int, nbuf: int) -> list:
    from .serializer import Record

    try:
        records = [Record(**r) for r in index["records"]]
        for r in records:
            if not (isinstance(r.name, str) and 0 <= r.start <= r.end <= stream_len
                    and 0 <= r.buf_start <= r.buf_end <= nbuf):
                raise ValueError(f"record {r.name!r} out of range")
        for i in index.get("readonly_buffers", []):
            if not (isinstance(i, int) and 0 <= i < nbuf):
                raise ValueError("readonly_buffers out of range")
        for i in index.get("not_restorable", []):
            dict(i)
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise CheckpointRejected(path, f"malformed index ({exc})") from None
    return records


def build_namespace(index, stream, records, buffers, imports, modules, target_ns, bindings=None) -> dict:
    """The variables of a verified file, bound into ``target_ns`` as they
    load (modules first): notebook code run while a later one loads (a
    ``__setstate__``, a ``__reduce__`` helper) sees them, as it did in the
    notebook. ``bindings`` (loader.Bindings, over ``target_ns``; made here
    when not given) is returned too: what failed is not bound, and its
    ``undo()`` puts the namespace back as it was. Notebook functions get
    ``target_ns`` as globals."""
    from .loader import Bindings

    if bindings is None:
        bindings = Bindings(target_ns, skip="\x00")  # recipes, modules' values: not variables
    try:
        return _build_namespace(index, stream, records, buffers, imports, modules, target_ns, bindings)
    except BaseException:
        bindings.undo()  # nothing is left half-loaded
        raise


def _build_namespace(index, stream, records, buffers, imports, modules, target_ns, bindings) -> dict:
    from .loader import load_namespace

    earlier = [dict(i) for i in index.get("not_restorable", [])]
    not_restorable = [{"name": str(i.get("name")), "reason": str(i.get("reason"))} for i in earlier]
    recomputed, differs, failed_now, referenced, contents = [], [], [], {}, {}
    for imp in imports:
        name, module = imp["name"], modules[imp["name"]]
        if isinstance(module, str):
            failed_now.append({"name": name, "reason": module})
            continue
        now = module_fingerprint(module)
        if now["version"] != imp.get("version") or now["file"] != imp.get("file"):
            differs.append({"name": name, "reason": f"module {imp['module']} is now version {now['version']} "
                            f"from {now['file']} (was {imp.get('version')} from {imp.get('file')})"})
        if "attr" in imp:  # `from M import a`: M.a of this kernel, as it was M.a in the session
            try:
                value = getattr(module, imp["attr"], _MISSING)
            except Exception:  # a module __getattr__ of the library's that fails here
                value = _MISSING
            if value is _MISSING:
                failed_now.append({"name": name, "reason": f"module {imp['module']} has no {imp['attr']} here"})
                continue
            referenced.setdefault((imp["module"], imp["attr"]), []).append(name)
            bindings.bind(name, value)
            recomputed.append(name)
            continue
        bindings.bind(name, module)
        recomputed.append(name)
        missing = [sub for sub in imp.get("submodules", ()) if sub not in sys.modules]
        if missing:
            differs.append({"name": name, "reason": f"{', '.join(missing)} could not be imported here: "
                            f"{name} comes back without {'it' if len(missing) == 1 else 'them'}"})

    buffers = list(buffers)
    for i in index.get("readonly_buffers", []):
        buffers[i] = memoryview(buffers[i]).toreadonly()
    values, failed, notes = load_namespace(stream, records, buffers, target_ns, bindings)
    differs += [{"name": name, "reason": why} for name, why in notes.items()]
    for name, why in failed.items():
        shown = name[len(_PURE_PREFIX):] if name.startswith(_PURE_PREFIX) else name
        failed_now.append({"name": references.shown(usermodules.shown_name(shown)), "reason": why})
    migrated = []
    for name, value in values.items():
        if name.startswith(VALUE_PREFIX):  # a library container's contents: see finish_references
            contents[name] = value
            continue
        if name.startswith(MODULE_PREFIX):  # a value of the notebook's own module, set on it again
            problem = usermodules.set_value(name, value)
            if problem:
                failed_now.append(problem)
            continue
        if name.startswith(_PURE_PREFIX):
            shown, made = name[len(_PURE_PREFIX):], {}
            problem = _recompute_pure(shown, value, made)
            if problem:
                failed_now.append({"name": shown, "reason": problem})
            else:
                bindings.bind(shown, made[shown])
                recomputed.append(shown)
            continue
        migrated.append(name)
    changes = [c for c in index.get("library_changes", []) if isinstance(c, list) and len(c) == 4]
    return dict(bindings=bindings, migrated=migrated, recomputed=recomputed,
                not_restorable=not_restorable + failed_now, failed_now=failed_now, differs=differs,
                references={name: list(key) for key, names in referenced.items() for name in names},
                referenced=referenced, contents=contents, library_changes=changes,
                notes=_module_notes(index) + provenance.restore_notes(index) + library_change_notes(changes, index.get("library_values")),
                decimal_context=[n for n in index.get("decimal_context", []) if isinstance(n, str) and n in migrated])


def _module_notes(index: dict) -> list:
    notes = index.get("module_notes", [])
    return [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []


def _recompute_pure(name, spec, ns) -> str | None:
    """Re-run a pure cell on its recorded inputs; verify the fingerprint."""
    from .recorder import analyze_cell

    if not isinstance(spec.get("code"), str) or not analyze_cell(spec["code"]).pure:
        return "its cell is not provably pure any more; not re-run"  # never exec anything else
    try:
        scratch = {"__builtins__": builtins, **spec["inputs"]}
        exec(compile(spec["code"], f"<elastichub recompute of cell {spec['cell']}>", "exec"), scratch)
        value = scratch[name]
    except Exception as exc:
        return f"recomputing cell [{spec.get('cell')}] failed ({type(exc).__name__}: {exc})"
    if value_fingerprint(value) != spec["fingerprint"]:
        return f"recomputing cell [{spec.get('cell')}] gave a different value (fingerprint mismatch); not restored"
    ns[name] = value
    return None


def restore_or_reject(directory: str, ns: dict, keep: dict | None = None, with_delta: bool = True,
                      set_aside_files: bool = True, live_destination: bool = False, _live_base: bool = True,
                      context=None):
    """(report, rejection) for the session's checkpoint; both None if absent.

    A rejected file is set aside (renamed, kept) so it is never overwritten;
    a partially restored one too, since a later checkpoint of this kernel
    would lack the variables that failed to load. ``set_aside_files=False``
    (a live-migration destination): the files belong to the source kernel,
    which is still running; they are left alone.

    ``context``: the kernel's SessionContext (see restore).

    ``with_delta``: a live-migration delta (live-delta.ehk) completing this
    checkpoint is applied on top (the state a live move handed over).
    ``keep``: receives the base's id and buffers (see restore).

    ``live-base.ehk`` (a live move's pre-copy, possibly torn: see
    precopy_write) is restored instead of checkpoint.ehk only as the base of
    a live move: by a destination (``live_destination``), or when the delta
    on disk was made against it (base_id) and is not older than
    checkpoint.ehk. Never alone otherwise."""
    path = (storage.base_path(directory, with_delta, live_destination) if _live_base
            else os.path.join(directory, CHECKPOINT_NAME))
    base = {} if keep is None else keep
    delta = with_delta and os.path.lexists(os.path.join(directory, DELTA_NAME))
    aside = set_aside if set_aside_files else (lambda p, why: None)
    if not os.path.lexists(path):
        if delta:  # a delta of a kernel that had nothing to save at pre-copy
            from .live import delta_at_start

            base.update(base_id=None, buffers=[], path=None)
            return delta_at_start(directory, ns, None, base, set_aside_files, context), None
        return None, None
    try:
        report = restore(path, ns, keep=base, context=context)
    except CheckpointRejected as bad:
        kept = aside(path, "rejected")
        if os.path.basename(path) == LIVE_BASE_NAME:
            # Only the base of a live move: the last full checkpoint is restored instead.
            base.clear()
            report, rejected = restore_or_reject(directory, ns, keep, with_delta, set_aside_files,
                                                 live_destination, _live_base=False, context=context)
            note = (f"WARNING: the live-migration pre-copy {path} was NOT restored ({bad.reason}); "
                    + (f"it was set aside as {kept}. " if kept else "") + "The last full checkpoint was used.")
            if report is not None:
                report = dict(report, notes=[*report.get("notes", []), note])
            return report, rejected
        return None, {"path": path, "reason": bad.reason, "kept_as": kept}
    except Exception as exc:  # never crash the kernel on a checkpoint
        kept = aside(path, "rejected")
        return None, {"path": path, "reason": f"unexpected error ({type(exc).__name__}: {exc})", "kept_as": kept}
    if report["failed_now"]:
        report["kept_as"] = aside(path, "partial-restore")
        if not set_aside_files:  # a live destination: the source's files are not its to move
            report["left_in_place"] = True
    if delta:
        from .live import delta_at_start

        report = delta_at_start(directory, ns, report, base, set_aside_files, context)
    return report, None
