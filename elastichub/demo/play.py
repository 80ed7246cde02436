"""The demo, start to end: stage up, the class, the summary, everything down.

Ctrl-C (or SIGTERM) at any point still stops the hub, the servers, the
local cluster and its VMs: nothing is left running.
"""

from __future__ import annotations

import asyncio
import csv
import json
import re
import signal
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rich.console import Console

from .classroom import ClassSettings, Classroom
from .stage import EXAMPLE_CONFIG, Stage, StageError, StageSettings
from .view import live_view, render, summary_table


@dataclass
class DemoSettings:
    students: int = 10
    stay: int = 4
    json: bool = False
    interactive: bool = False
    port: int = 0
    boot_delay: float = 5.0
    config: Path = EXAMPLE_CONFIG
    workdir: Path | None = None


def metric(metrics_text: str, name: str) -> float:
    """One sample of the orchestrator's Prometheus text (0 when absent)."""
    match = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", metrics_text, re.M)
    return float(match.group(1)) if match else 0.0


async def summarize(stage: Stage, room: Classroom, status: dict, migrations: list[dict], started: float) -> dict:
    code, metrics = await stage.api("GET", f"{stage.status_url}metrics")
    text = metrics.decode() if isinstance(metrics, bytes) else str(metrics or "")
    waits = [s.wait_s for s in room.students if s.wait_s is not None]
    history = stage.workdir / "history.csv"  # the example config's history_file
    sessions = sessions_since(history, started) if history.is_file() else []
    return {
        "students": len(room.students),
        "scale_outs": int(metric(text, 'elastichub_scale_actions_total{action="scale-out"}')),
        "scale_ins": int(metric(text, 'elastichub_scale_actions_total{action="scale-in"}')),
        "cloud_node_seconds": round(metric(text, "elastichub_cloud_node_seconds_total"), 1),
        "max_wait_s": round(max(waits), 2) if waits else 0.0,
        "migrations": migrations,
        "all_states_identical": all(m["state_identical"] for m in migrations),
        "failed_students": {s.name: s.error for s in room.students if s.error},
        "left": sorted(s.name for s in room.students if s.phase == "left"),
        "history_file": str(history) if history.is_file() else None,
        "history_kept": stage.workdir_kept,  # False: removed with the demo's temporary directory
        "history_sessions": sessions,  # users whose sessions ended, one entry per session
        "seconds": round(time.time() - started, 1),
    }


def sessions_since(history: Path, started: float) -> list[str]:
    """The users of the history's sessions asked for since `started`: a
    --workdir kept from earlier runs holds their sessions too."""
    with open(history, newline="", encoding="utf-8") as f:
        return [row.get("user", "") for row in csv.DictReader(f)
                if not row["arrival"].startswith("#")  # when the orchestrator started or stopped watching
                and datetime.fromisoformat(row["arrival"]).timestamp() >= int(started)]  # written to the second


def failures(summary: dict) -> list[str]:
    """What makes the demo fail (exit status 1), one line each."""
    failed = []
    if summary["failed_students"]:
        failed.append(f"{len(summary['failed_students'])} student(s) could not work (why: in the table): "
                      + ", ".join(sorted(summary["failed_students"])))
    if not summary["all_states_identical"]:
        failed.append("a moved student's state differs from what it held before the move")
    return failed


async def play(settings: DemoSettings) -> int:
    started = time.time()
    console = Console(stderr=settings.json)
    messages: list[str] = []
    stage = Stage(StageSettings(port=settings.port, boot_delay=settings.boot_delay, config=settings.config,
                                workdir=settings.workdir))
    room = Classroom(stage, ClassSettings(students=settings.students, stay=settings.stay),
                     say=messages.append)
    main = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, main.cancel)
    status: dict = {}
    try:
        await stage.start(log=lambda m: console.print(f"[dim]{m}[/dim]"))
        if settings.interactive:
            console.print(f"\n[bold]JupyterHub:[/bold] {stage.url}/hub/login  (any user name, password "
                          f"[bold]{stage.s.password}[/bold]; user 'admin' is an admin)\n"
                          f"[bold]orchestrator status page:[/bold] {stage.status_url} (log in as admin)\n")
        await room.enrol()
        with live_view(console, render(None, room.students, messages), transient=settings.json) as live:
            async def refresh():
                while True:
                    nonlocal status
                    status = await stage.orchestrator_status() or status
                    live.update(render(status or None, room.students, messages))
                    await asyncio.sleep(0.5)
            viewer = asyncio.create_task(refresh())
            try:
                await room.class_starts()
                messages.append("every student is working; the orchestrator keeps watch")
                await asyncio.sleep(3)
                await room.class_ends()
                status = await room.wait_cloud_released()
                messages.append("checking the moved students' kernels against what they held before")
                migrations = await room.check_moved(status)
                live.update(render(status, room.students, messages))
            finally:
                viewer.cancel()
                await asyncio.gather(viewer, return_exceptions=True)
        summary = await summarize(stage, room, status, migrations, started)
        if settings.json:
            print(json.dumps(summary))
        else:
            console.print(summary_table(summary))
        if settings.interactive:
            console.print(f"\nstill running at {stage.url} — Ctrl-C to stop everything")
            await asyncio.Event().wait()
        failed = failures(summary)
        for problem in failed:
            console.print(problem, style="bold red", markup=False, highlight=False)
        if failed and settings.workdir is not None:
            console.print(f"the hub's whole log: {stage.workdir / 'jupyterhub.log'}")
        return 1 if failed else 0
    except asyncio.CancelledError:
        console.print("interrupted: stopping everything")
        if settings.json:
            print(json.dumps({"error": "interrupted"}))
        return 130
    except (StageError, RuntimeError) as e:
        if settings.json:  # a script reading stdout gets its one object, failed or not
            print(json.dumps({"error": str(e)}))
        console.print("[bold red]demo failed:[/bold red]", end=" ")
        console.print(str(e), markup=False, highlight=False)  # log lines have brackets: no markup
        if stage.workdir is not None and settings.workdir is not None:
            console.print(f"the hub's whole log: {stage.workdir / 'jupyterhub.log'}")
        elif stage.workdir is not None and isinstance(e, RuntimeError):
            console.print(stage.hub_log(), markup=False, highlight=False)
        return 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await stage.stop()
        sys.stdout.flush()
