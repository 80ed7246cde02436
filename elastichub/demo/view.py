"""What the demo shows: a live terminal view (rich) of the nodes by tier with
their servers, occupancy against theta_out, the orchestrator's decisions and
the students; and the summary at the end, as a table or one JSON object."""

from __future__ import annotations

import time
from contextlib import contextmanager

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text


@contextmanager
def live_view(console: Console, renderable, transient: bool):
    """rich's Live, ended with a newline also when the output is no terminal
    (piped, a CI log): rich ends that last view without one, and the summary's
    title followed its last line on the same line."""
    with Live(renderable, console=console, refresh_per_second=4, transient=transient) as live:
        yield live
    if not console.is_terminal and not transient:
        console.line()


def occupancy_bar(percent: float | None, theta: float | None, width: int = 30) -> Text:
    p = max(0.0, min(100.0, percent or 0.0))
    filled = round(p / 100 * width)
    mark = round(min(theta or 100, 100) / 100 * width)
    text = Text()
    for i in range(width):
        if i == mark:
            text.append("|", style="bold red")
        text.append("#" if i < filled else ".", style="cyan" if i < filled else "dim")
    text.append(f" {p:5.1f} %", style="bold")
    return text


def server_nodes(status: dict) -> dict[str, str]:
    """The node each server runs on, by server name, in an orchestrator status."""
    return {server: n["name"] for n in status["nodes"] for server in n["servers"]}


def render(status: dict | None, students: list, messages: list[str]) -> Group:
    parts = []
    if status is None:
        parts.append(Text("waiting for the orchestrator...", style="dim"))
    else:
        theta = status.get("theta_out")
        head = Text.assemble(("occupancy of the active nodes (RAM requests) ", "bold"),
                             occupancy_bar(status["occupancy"]["ram"], theta),
                             (f"  theta_out {theta:g} %", "red"),
                             (f"   waiting: {len(status['pending'])}", "yellow" if status["pending"] else "dim"))
        parts.append(head)
        nodes = Table(expand=True, show_edge=False, pad_edge=False)
        for col in ("node", "tier", "status", "RAM requested", "servers"):
            nodes.add_column(col)
        for n in sorted(status["nodes"], key=lambda n: (n["tier"] != "on-prem", n["name"])):
            state = "draining" if n["draining"] else n["status"]
            style = {"draining": "bold yellow", "booting": "bold yellow", "stopped": "dim",
                     "ready": "green"}.get(state, "")
            nodes.add_row(n["name"], n["tier"], Text(state, style=style),
                          occupancy_bar(n["occupancy_ram"], None, 12) if n["status"] != "stopped" else Text(""),
                          ", ".join(n["servers"]))
        parts.append(nodes)
        decisions = [d for d in status["decisions"] if d["action"] != "none"][-4:]
        if decisions:
            lines = Text()
            for d in decisions:
                lines.append(time.strftime("%H:%M:%S ", time.localtime(d["time"])), style="dim")
                lines.append(f"{d['action']} {', '.join(d['nodes'])}: ", style="bold")
                lines.append(f"{d['reason']} -> {d.get('taken', '')}\n")
            parts.append(Panel(lines, title="orchestrator decisions", title_align="left"))
        moves = status["migrations"]["in_flight"] + status["migrations"]["recent"][-4:]
        if moves:
            lines = Text()
            for m in moves:
                down = "" if m["downtime_s"] is None else f" ({m['downtime_s']:.1f} s)"
                lines.append(f"{m['server']}: {m['from']} -> {m['to'] or '?'} {m['outcome']}{down}\n")
            parts.append(Panel(lines, title="migrations", title_align="left"))
    # Each student's node from this frame's status, as in the node table above: the node the room
    # located the student on last may be older (a final frame after a move showed the source node).
    where = server_nodes(status) if status else {}
    table = Table(expand=True, show_edge=False, pad_edge=False)
    for col in ("student", "doing", "node", "waited"):
        table.add_column(col)
    for s in students:
        node = where.get(s.name, "") if status else s.node or ""
        table.add_row(s.name, s.phase, node, "" if s.wait_s is None else f"{s.wait_s:.1f} s")
    parts.append(table)
    parts.extend(Text(m, style="italic") for m in messages[-3:])
    return Group(*parts)


def summary_table(summary: dict) -> Table:
    table = Table(title="ElasticHub demo: summary", show_lines=False)
    table.add_column("")
    table.add_column("")
    table.add_row("students", str(summary["students"]))
    for name, error in sorted(summary["failed_students"].items()):
        table.add_row(f"  {name}", Text(f"could not work: {error}", style="bold red"))  # not markup: errors quote
    # the orchestrator's actions, not VMs: one scale-out may boot two, and a drain rolled back and started
    # again is a second scale-in (a run showed 2 "VMs started" and 3 "given back", of a pool of 2)
    table.add_row("scale-outs (boots ordered)", str(summary["scale_outs"]))
    table.add_row("scale-ins (drains started)", str(summary["scale_ins"]))
    table.add_row("cloud node-seconds", f"{summary['cloud_node_seconds']:.0f}")
    table.add_row("longest wait for a server", f"{summary['max_wait_s']:.1f} s")
    table.add_row("migrations", str(len(summary["migrations"])))
    for m in summary["migrations"]:
        pause = "paused" if m["method"] == "live" else "down"
        down = "?" if m["downtime_s"] is None else f"{m['method']}, {m['downtime_s']:.1f} s {pause}"
        same = "[green]state identical[/green]" if m["state_identical"] else "[bold red]STATE DIFFERS[/bold red]"
        kernel = ", same kernel" if m["same_kernel"] else ""
        table.add_row(f"  {m['user']}", f"{m['from_node']} -> {m['to_node']}, {down}, {same}{kernel}")
    if summary.get("history_file"):
        n = len(summary["history_sessions"])
        where = f": {summary['history_file']}" if summary["history_kept"] else " (--workdir DIR keeps the file)"
        table.add_row("sessions ended, in the history", f"{n}{where}")
    table.add_row("took", f"{summary['seconds']:.0f} s")
    return table
