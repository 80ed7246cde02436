"""What a state file records of the kernel that wrote it, and what a later
kernel says about it (engine.file_index writes ``fields()``; engine's
restore reads ``restore_notes``).

- ``writer``: the kernel's process (host, pid, its start, a random id). Two
  kernels writing one notebook's checkpoint (two kernels of one notebook
  path, two consoles in one folder) replaced each other's work without a
  word: the last writer won. Before a checkpoint is written, the file it
  replaces is read: if another kernel of this host wrote it after this
  kernel started (and this kernel neither wrote nor restored it), it is
  kept (a hard link, ``checkpoint.ehk.other-kernel-<pid>``, one per other
  kernel) and named to this kernel's user, saying whether that kernel still
  runs; the new file records it, so the next start names it too. Each
  kernel sees the other's writes at its own next checkpoint: both are told.
  Kernels of other hosts are not compared (a live move's source and
  destination share the files on purpose).
- ``str_hash``: hash() of a fixed string. String hashes are randomized per
  process unless PYTHONHASHSEED is set (the installed kernelspec pins it):
  a restore into a kernel whose hashes differ says so, as stored hash()
  values and sets of strings are not what they were.
"""

from __future__ import annotations

import os
import socket
import time

from .messages import _when
from .storage import read_index

_PROBE = "elastichub: str hash probe"
_ID = os.urandom(8).hex()
_known: set = set()  # base_ids of the checkpoints this kernel wrote or restored
_told: set = set()  # other kernels' ids already named to this kernel's user


def _proc_start(pid: int) -> int | None:
    """The process's start, in clock ticks since boot (Linux); None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _started() -> float:
    """When this process started (wall clock); the module's import otherwise."""
    ticks = _proc_start(os.getpid())
    try:
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, StopIteration, TypeError):
        return time.time()


_STARTED = _started()


def fields() -> dict:
    return {"writer": {"id": _ID, "host": socket.gethostname(), "pid": os.getpid(),
                       "proc_start": _proc_start(os.getpid())},
            "str_hash": hash(_PROBE)}


def known(base_id) -> None:
    if isinstance(base_id, str):
        _known.add(base_id)


def before_write(path: str) -> tuple[list, str | None]:
    """(the index's ``replaced`` records, a warning for the user or None),
    the other kernel's file kept aside; never raises."""
    try:
        index = read_index(path) if os.path.lexists(path) else None
    except Exception:  # unreadable or refused: restore deals with such files
        index = None
    if not isinstance(index, dict):
        return [], None
    writer = index.get("writer") if isinstance(index.get("writer"), dict) else {}
    carried = [r for r in index.get("replaced", []) if isinstance(r, dict) and _still_there(r)]
    if writer.get("id") == _ID or writer.get("host") != socket.gethostname() or index.get("base_id") in _known:
        return (carried if writer.get("id") == _ID else []), None
    try:
        if float(index.get("created")) < _STARTED:
            return [], None  # the last session's: replacing it is what a checkpoint does
    except (TypeError, ValueError):
        return [], None
    pid = writer.get("pid")
    kept = _keep(path, pid)
    names = sorted(str(r.get("name")) for r in index.get("records", []) if isinstance(r, dict)
                   and isinstance(r.get("name"), str) and not r["name"].startswith("\x00"))
    record = {"pid": pid, "created": index.get("created"), "kept_as": kept, "names": names[:20]}
    if writer.get("id") in _told:
        return [*carried, record], None
    _told.add(writer.get("id"))
    alive = _alive(writer)
    what = (f"its checkpoint of {_when(record['created'])}" + (f" (variables {', '.join(names[:20])})" if names
                                                               else ""))
    where = (f"; it was kept as {kept} (move it to {path} and run %elastic_restore to load it)" if kept
             else "; it could not be kept")
    if alive:
        warning = (f"ElasticHub: WARNING: another kernel of this notebook is running (pid {pid}) and saves to "
                   f"the same checkpoint: the next start restores only the state of the one that saved last. "
                   f"This kernel's checkpoint replaced {what}{where}. Shut one of the two kernels down.")
    else:
        warning = (f"ElasticHub: WARNING: another kernel of this notebook (pid {pid}, stopped since) saved "
                   f"{what} while this one ran, and this kernel's checkpoint replaced it{where}.")
    return [*carried, record], warning


def _still_there(record: dict) -> bool:
    kept = record.get("kept_as")
    return isinstance(kept, str) and os.path.lexists(kept)


def _keep(path: str, pid) -> str | None:
    """A hard link to the other kernel's file (no copy; the spare-file
    recycling never writes into a file with another link)."""
    target = f"{path}.other-kernel-{pid if isinstance(pid, int) else 'unknown'}"
    temp = f"{target}.tmp-{os.getpid()}"
    try:
        os.link(path, temp, follow_symlinks=False)
        os.replace(temp, target)  # that kernel's earlier file, if any, is superseded by this one
        return target
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass
        return None


def _alive(writer: dict) -> bool:
    pid = writer.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    now = _proc_start(pid)
    if now is None:
        return False
    return writer.get("proc_start") in (None, now)


def restore_notes(index: dict) -> list:
    """Said after a restore from ``index``."""
    notes = []
    stored = index.get("str_hash")
    if isinstance(stored, int) and stored != hash(_PROBE):
        notes.append("WARNING: this kernel hashes strings differently from the one that saved the checkpoint "
                     "(Python's hash randomization: PYTHONHASHSEED is not the same; the kernelspec that "
                     "`python -m elastichub_kernel install` writes pins it). Values that stored hash() results "
                     "(a hash table of the notebook's, bucket = hash(key) % n; a saved hash) no longer match, "
                     "and sets of strings may iterate in another order: re-run the cells that built them.")
    for record in index.get("replaced", []) if isinstance(index.get("replaced"), list) else []:
        if isinstance(record, dict) and _still_there(record):
            names = record.get("names") or []
            notes.append(f"WARNING: this checkpoint replaced the one another kernel of this notebook (pid "
                         f"{record.get('pid')}) saved at {_when(record.get('created'))}"
                         + (f" (variables {', '.join(map(str, names))})" if names else "")
                         + f"; that one is kept as {record['kept_as']} (move it over this notebook's "
                         "checkpoint.ehk and run %elastic_restore to load it).")
    return notes
