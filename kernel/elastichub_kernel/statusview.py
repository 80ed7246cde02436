"""What ``%elastic_status`` shows a student: the last checkpoint (when, how
large, what it saved and what not, and why), whether the notebook changed
since, and what the last restore brought back and what not. The note after
a restore points here for the details; raw JSON (``%elastic_status
--json``, the kernel's status request) is for the course staff.
"""

from __future__ import annotations

import os

from .magics import _listed
from .messages import _when
from .storage import CHECKPOINT_NAME


def _size(n) -> str:
    if not isinstance(n, (int, float)):
        return "an unknown size"
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return ""  # not reached


def _reasons(items: list, indent: str = "    ") -> list[str]:
    return [f"{indent}- {item.get('name')}: {item.get('reason')}" for item in items if isinstance(item, dict)]


def _checkpoint_lines(status: dict) -> list[str]:
    last, failure = status.get("last_checkpoint"), status.get("last_checkpoint_failure")
    lines = []
    if last:
        saved, redone = last.get("migrated") or [], last.get("recomputed") or []
        lines.append(f"Last checkpoint: {_when(last.get('written_at'))}, {_size(last.get('size'))}, "
                     f"{len(saved) + len(redone)} variable(s) saved.")
        if saved:
            lines.append(f"  Saved as they were: {_listed(saved)}.")
        if redone:
            lines.append(f"  Imported again at a restore: {_listed(redone)}.")
        if last.get("not_restorable"):
            lines.append("  NOT saved (after a move, re-run the cells that create them):")
            lines += _reasons(last["not_restorable"])
    elif status.get("restored"):
        lines.append("No checkpoint written by this kernel yet: the one it restored is the last one.")
    else:
        lines.append("No checkpoint written by this kernel yet.")
    if failure:
        lines.append(f"The last attempt to write a checkpoint ({_when(failure.get('at'))}) FAILED: "
                     f"{failure.get('error')}. The checkpoint before it is kept; tell the course staff if this "
                     "happens again.")
    if status.get("dirty"):
        lines.append("Cells ran since then: the next checkpoint (taken when the kernel is idle, and when it stops) "
                     "saves what they changed; %elastic_checkpoint takes one now.")
    elif last or status.get("restored"):
        lines.append("Nothing changed since then.")
    return lines


def _restore_lines(status: dict) -> list[str]:
    report = status.get("restored")
    if not report:
        if status.get("skipped_restore"):
            from .kernel import _saved_when

            saved = _saved_when(os.path.join(status.get("checkpoint_dir") or "", CHECKPOINT_NAME))
            return [f"This kernel did not restore the checkpoint in its folder{saved}: %elastic_restore brings it "
                    "back."]
        return ["Nothing restored: this kernel started without saved variables."]
    count = len(report.get("migrated") or []) + len(report.get("recomputed") or [])
    lines = [f"Last restore: {count} variable(s) from the checkpoint of {_when(report.get('created'))} "
             f"({_size(report.get('bytes'))}, in {report.get('seconds') or 0:.2f} s)."]
    if report.get("context"):
        lines.append(f"  Came back too: {_listed([str(what) for what in report['context']])}.")
    if report.get("not_restorable"):
        lines.append("  NOT restored (re-run the cells that create them):")
        lines += _reasons(report["not_restorable"])
    lines += [f"  {note}" for note in report.get("notes") or []]  # each says what it is (WARNING: ...)
    lines += [f"  Note: {item.get('name')}: {item.get('reason')}" for item in report.get("differs") or []
              if isinstance(item, dict)]
    return lines


def summary(status: dict) -> str:
    """``status`` (the kernel's status reply) in a student's words."""
    name = status.get("session_name")
    lines = [f"ElasticHub status of {name}:" if name else "ElasticHub status (no notebook path: checkpoints are "
             "kept for this folder):"]
    lines += _checkpoint_lines(status) + _restore_lines(status)
    live = status.get("live") or {}
    if live.get("phase") not in (None, "running"):
        lines.append(f"A move of this kernel to another node is under way ({live['phase']}).")
    lines.append(f"Checkpoints are kept in {status.get('checkpoint_dir')}. Raw details for the course staff: "
                 "%elastic_status --json")
    return "\n".join(lines)
