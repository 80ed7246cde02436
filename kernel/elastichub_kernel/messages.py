"""What the user reads in the notebook after a start (plain text, stderr)."""

from __future__ import annotations

import time


def _when(ts) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(ts)))
    except (TypeError, ValueError):
        return "an unknown time"


# Where the rest is, in one clause: what came back of the session's context, how long it took, how many values were
# loaded or recomputed. A generic list of what a restore never carries, shown after every restore whatever the
# session did, pointed at a file students cannot find: what THIS session lost is named by the notes instead.
DETAILS = "%elastic_status shows the details"
# Said after every restore that brought variables back, in one plain line: what cells set up inside libraries
# cannot be seen, so it cannot be named one by one, and a restore must never change things without saying so.
LIBRARY_SETUPS = ("Changes cells made inside libraries (e.g. sympy.init_printing(), a method added to a "
                  "library's class) cannot be seen, so no restore brings them back: if an output looks "
                  "different, re-run the cell that made it.")


def format_restore(report: dict) -> str:
    """What a student reads after a restore: one line, then each thing of the session that did not come back."""
    restored = len(report["migrated"]) + len(report["recomputed"])
    if restored == 0 and not report["not_restorable"]:
        # Not "restored 0 variable(s)": the user must see the file was empty, not that a restore failed.
        first = (f"ElasticHub: the checkpoint of {_when(report.get('created'))} holds no variables (none were "
                 "defined when it was saved): none to restore.")
    else:
        first = (f"ElasticHub: restored {restored} variable(s) from the checkpoint of {_when(report.get('created'))} "
                 f"({DETAILS}).")
    lines = [first, *([LIBRARY_SETUPS] if restored else []), *_losses(report)]
    if report.get("failed_now"):
        kept = report.get("kept_as")
        if kept:
            lines.append(f"The checkpoint file was kept as {kept} so that nothing is lost.")
        elif report.get("left_in_place"):
            lines.append(f"The checkpoint file {report['path']} is left as it is.")
        else:
            lines.append(f"The checkpoint file {report['path']} could not be set aside.")
    return "\n".join(lines)


def _losses(report: dict) -> list[str]:
    """Every value not restored with its reason, then what else of this session differs (never left out)."""
    lines = []
    if report["not_restorable"]:
        lines.append("Not restored (re-run the cells that create them):")
        lines += [f"  - {item['name']}: {item['reason']}" for item in report["not_restorable"]]
    lines += [str(note) for note in report.get("notes", [])]
    lines += [f"Note: {item['name']}: {item['reason']}" for item in report.get("differs", [])]
    return lines


# Said to a student: the cause in their words (how the kernel was started), not the variable Jupyter Server sets.
NO_SESSION_NOTE = ("ElasticHub: this kernel was started without a notebook path: it was not started by opening a "
                   "notebook in JupyterLab or the classic Notebook (a console, nbconvert or papermill starts kernels "
                   "this way), so it cannot tell which notebook it belongs to. It did NOT restore the variables saved "
                   "in this folder{saved}: they may be another notebook's. If they are this notebook's, run "
                   "%elastic_restore to bring them back; a notebook opened from JupyterLab or the classic Notebook "
                   "gets its own variables back by itself.")


# Every restore that brought nothing back says so in these words: "a clean namespace" told a student
# nothing, and none of these messages said what to do.
STARTED_EMPTY = "This kernel started without your saved variables: run your notebook's cells again to re-create them."


def not_restored(why: str, staff: bool = True) -> str:
    """The message of a restore that did not happen; `staff`: a fault the course staff should hear of."""
    return (f"ElasticHub: your variables were NOT restored: {why}. {STARTED_EMPTY}"
            + (" If this happens again, tell the course staff." if staff else ""))


def format_rejection(rejected: dict) -> str:
    kept = rejected.get("kept_as")
    where = f"; the file was kept as {kept}" if kept else "; the file could not be moved and was left in place"
    return not_restored(f"the checkpoint {rejected['path']} could not be used ({rejected['reason']}){where}")


def format_live_arrival(report: dict) -> str:
    """After a live move: the kernel runs on another node now."""
    restored = len(report["migrated"]) + len(report["recomputed"])
    return "\n".join([f"ElasticHub: this notebook moved to another node while it was idle; its {restored} "
                      f"variable(s) came along unchanged ({DETAILS}).", *([LIBRARY_SETUPS] if restored else []),
                      *_losses(report)])


def sendable(content):
    """`content` with every string valid UTF-8: a lone surrogate (a variable
    named through globals()) made the reply impossible to send, and the
    endpoint waited out its whole timeout for it. Escaped as \\udxxx."""
    if isinstance(content, str):
        try:
            content.encode("utf-8")
            return content
        except UnicodeEncodeError:
            return content.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(content, dict):
        return {sendable(k): sendable(v) for k, v in content.items()}
    if isinstance(content, (list, tuple)):
        return [sendable(v) for v in content]
    return content


def describe_error(exc: BaseException) -> str:
    """An exception in one line: its type and its message's first line, at most 200 characters."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
