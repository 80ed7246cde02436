"""What runs in a terminal: the processes its shell started (Linux /proc).

A process started from a terminal (an editor, a script writing to a file,
``nohup ... &``) dies with the server when it moves, and a silent one shows
no activity. The orchestrator waits for these as it waits for a running
cell (``GET /api/elastichub/terminals``).
"""

from __future__ import annotations

import os

PROC = "/proc"


def _parent_of(pid: str, proc: str) -> int | None:
    try:
        with open(os.path.join(proc, pid, "stat"), "rb") as f:
            stat = f.read()
    except OSError:  # gone meanwhile, or not ours to read
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    fields = stat[stat.rfind(b")") + 2:].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def _command(pid: int, proc: str) -> str:
    try:
        with open(os.path.join(proc, str(pid), "cmdline"), "rb") as f:
            raw = f.read()
    except OSError:
        return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")[:200]


def descendants(roots: dict, proc: str = PROC) -> dict | None:
    """{key: [{"pid", "command"}, ...]}: the processes under each root pid of
    ``roots`` ({key: pid}), nearest first. None where /proc cannot be read
    (not Linux): unknown, not "none"."""
    try:
        entries = [e for e in os.listdir(proc) if e.isdigit()]
    except OSError:
        return None
    children: dict[int, list[int]] = {}
    for entry in entries:
        parent = _parent_of(entry, proc)
        if parent is not None:
            children.setdefault(parent, []).append(int(entry))
    result = {}
    for key, root in roots.items():
        found, queue = [], list(children.get(root, []))
        while queue:
            pid = queue.pop(0)
            found.append({"pid": pid, "command": _command(pid, proc)})
            queue.extend(children.get(pid, []))
        result[key] = found
    return result
