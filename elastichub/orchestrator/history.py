"""The hub's history, written as a simulator trace (`history_file`).

`elastichub simulate --trace FILE --tune` picks thresholds on a hub's own
history; a hub has no such record of its own (JupyterHub keeps only the
servers running now). The orchestrator sees every server's pods, so it
writes one: a row per server session once it ends, in the trace format
(`arrival` as an ISO 8601 timestamp, `duration_s`, `cpu`, `ram_gib`), plus
what explains it (`user`, `server`, and `waited_s`: how long it really
waited, to compare with the simulated waits). Run the
orchestrator with `dry_run` for a week or two, then tune on what it saw.

A session is a server, not a pod: a move (live, or by a restart while the
node's drain record names the server) changes the pod, and the session goes
on, from when its user first asked to when its last pod is gone; a pod
asked for later, outside a move, is a new session (its user stopped the
server and started it again between two cycles). A spawn
that never started (cancelled while it waited) is no row: there is no
duration to replay. Sessions running when the orchestrator restarts go on
from their current pod, which says when its user asked for the server even
after moves (`elastichub.io/asked`).

Sessions that end while the orchestrator is down leave no trace it could
read when it starts again (Kubernetes and JupyterHub keep no stopped
server), nor do those started and ended in between: the file says so. A
line `# elastichub orchestrator stopped at T with N server session(s) running`
is written at shutdown and `# elastichub orchestrator started at T` at the
next start; `simulate --trace` reads them as comments and warns of each gap
(after a crash, the stop line is missing: the gap starts at its last row).
"""

from __future__ import annotations

import csv
import os
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable

from ..policy import GiB
from .records import PodRecord, drained_servers

COLUMNS = ("arrival", "duration_s", "cpu", "ram_gib", "user", "server", "waited_s")
MAX_UNWRITTEN = 100_000  # rows kept while the file cannot be written; the oldest go first
_MARK = re.compile(r"#\s*elastichub orchestrator (?P<what>started|stopped) at (?P<at>\S+?)"
                   r"(?: with (?P<running>\d+) server session\(s\) running)?\s*")


def watch_mark(what: str, at: float, running: int | None = None) -> str:
    """The line that says the orchestrator `started` or `stopped` watching at `at` (a comment to a CSV reader)."""
    stamp = datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="seconds")
    return f"# elastichub orchestrator {what} at {stamp}" + ("" if running is None else
                                                             f" with {running} server session(s) running")


def read_watch_mark(line: str) -> tuple[str, datetime, int | None] | None:
    """(started/stopped, when, sessions running) of a watch_mark line; None for any other line."""
    m = _MARK.fullmatch(line.strip())
    if not m:
        return None
    try:
        at = datetime.fromisoformat(m["at"])
    except ValueError:
        return None
    return m["what"], at, None if m["running"] is None else int(m["running"])


@dataclass(slots=True)
class _Session:
    user: str
    server_name: str
    asked: float  # when the user asked: the first pod's creation
    started: float | None  # when it first ran
    cpu: float  # its first pod's requests
    ram: float
    gone_at: float | None = None  # the last update that saw a pod of it, once none is seen


class SessionTracker:
    """Follows each server across its pods; `update` returns the rows of the
    sessions that ended since the last call. Pure: pods, drains and the time
    are passed in. A session that goes on costs a dict entry and a
    comparison per update (20,000 servers every Tmon)."""

    def __init__(self) -> None:
        self.sessions: dict[str, _Session] = {}  # server key -> session
        self._unsettled: set[str] = set()  # sessions not started yet, or with no pod seen last time
        self._last: float | None = None  # the previous update's time

    def update(self, pods: Iterable[PodRecord], drains: Iterable[str], now: float) -> list[dict]:
        sessions, unsettled = self.sessions, self._unsettled
        live = {pod.server: pod for pod in pods if pod.managed and pod.holds_resources}
        last, self._last = self._last, now
        rows, moving = [], None
        # A pod asked for later than its session, outside a move: its user stopped the server and
        # started it again between two updates (a moved pod carries when its user asked).
        for key in [k for k, pod in live.items() if k in sessions and pod.created is not None
                    and pod.created != sessions[k].asked]:
            if moving is None:
                moving = drained_servers(drains)
            if key not in moving:
                rows += self._end(key, last if last is not None else now)
        for key in live.keys() - sessions.keys():
            pod = live[key]
            asked = pod.created if pod.created is not None else now
            sessions[key] = _Session(pod.user, pod.server_name, asked, pod.started, pod.cpu, pod.ram)
            if pod.started is None:
                unsettled.add(key)
        for key in unsettled & live.keys():
            s, pod = sessions[key], live[key]
            s.gone_at = None  # back after a restart move
            if s.started is None:
                s.started = pod.started
            if s.started is not None:
                unsettled.discard(key)
        if len(live) == len(sessions):  # every session has a pod: none ended
            return rows
        if moving is None:
            moving = drained_servers(drains)
        for key in sessions.keys() - live.keys():
            s = sessions[key]
            if s.gone_at is None:
                s.gone_at = last if last is not None else now
                unsettled.add(key)
            if key not in moving:
                rows += self._end(key, s.gone_at)
        return rows

    def running(self) -> int:
        """How many sessions have started and not ended."""
        return sum(1 for s in self.sessions.values() if s.started is not None)

    def _end(self, key: str, gone_at: float) -> list[dict]:
        """The session of `key` ended (its last pod seen at `gone_at`): its row, if it ran."""
        s = self.sessions.pop(key)
        self._unsettled.discard(key)
        if s.gone_at is None:
            s.gone_at = gone_at
        row = self._row(s)
        return [row] if row is not None else []

    @staticmethod
    def _row(s: _Session) -> dict | None:
        if s.started is None or s.gone_at <= s.started:
            return None  # never ran: nothing to replay
        return {
            "arrival": datetime.fromtimestamp(s.asked, timezone.utc).isoformat(timespec="seconds"),
            "duration_s": max(1, round(s.gone_at - s.started)),  # a trace row lasts at least a second
            "cpu": f"{s.cpu:g}",
            "ram_gib": f"{s.ram / GiB:.6g}",
            "user": s.user,
            "server": s.server_name,
            "waited_s": round(max(0.0, s.started - s.asked)),
        }


class HistoryFile:
    """Appends rows to the CSV (a header first when it is new or empty).
    A write that fails keeps its rows for the next one."""

    def __init__(self, path: str):
        self.path = path
        self.unwritten: list[dict] = []
        self.written = 0

    def check(self, now: float | None = None) -> None:
        """OSError unless the file can be appended to; ValueError if it holds
        other columns (called at start-up): rows appended under another
        header (a trace of `elastichub trace`, say) would not replay. A
        history already begun is marked: the orchestrator watches again
        from `now`, after a time it did not."""
        with open(self.path, "a", encoding="utf-8"):
            pass
        with open(self.path, "rb") as f:
            first = f.readline().decode("utf-8", errors="replace").lstrip("\ufeff").strip()
        header = [name.strip().lower() for name in first.split(",")]
        if first and tuple(header) != COLUMNS:
            raise ValueError(f"{self.path} holds the columns {first[:200]!r}, not a history's "
                             f"{','.join(COLUMNS)}: rows appended there would not replay; give a new file")
        if first:
            self._mark(watch_mark("started", time.time() if now is None else now))

    def _mark(self, line: str) -> None:
        self._end_last_line()
        with open(self.path, "a", encoding="utf-8", newline="") as f:
            if os.fstat(f.fileno()).st_size == 0:  # the header first: check() reads it
                f.write(",".join(COLUMNS) + "\n")
            f.write(line + "\n")

    def append(self, rows: list[dict], stopped: tuple[float, int] | None = None) -> None:
        """Write `rows` and any left from a failed write; OSError if it fails again. `stopped`: (time,
        sessions running) at shutdown, marked after the rows: until the next start, ended ones have no row."""
        self.unwritten.extend(rows)
        del self.unwritten[:-MAX_UNWRITTEN]
        self._write_rows()
        if stopped is not None:
            self._mark(watch_mark("stopped", *stopped))

    def _write_rows(self) -> None:
        if not self.unwritten:
            return
        self._end_last_line()
        with open(self.path, "a", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
            if os.fstat(f.fileno()).st_size == 0:
                writer.writeheader()
            writer.writerows(self.unwritten)
        self.written += len(self.unwritten)
        self.unwritten = []

    def _end_last_line(self) -> None:
        with open(self.path, "a+b") as f:  # a last line without its end (an editor's): the next starts anew
            f.seek(0, os.SEEK_END)
            if f.tell():
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")
