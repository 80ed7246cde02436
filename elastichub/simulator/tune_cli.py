"""`elastichub simulate --tune`: the command line of the search in tune.py:
its options, what it prints, and the `elastichub simulate` command that
replays the chosen setting."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

from ..cli import UsageError
from .cli import LIFETIME_OPTIONS, MODEL_OPTIONS, _Progress


def parse_tune(args: argparse.Namespace, policies: list[str], modes: list[str]):
    """(policy, mode, slo_p95, slo_max) for --tune, or None without it."""
    from .cli import _number

    if not args.tune:
        for option in ("--slo-p95-wait", "--slo-max-wait"):
            if getattr(args, option[2:].replace("-", "_")) is not None:
                raise UsageError(f"{option} needs --tune")
        return None
    if args.slo_p95_wait is None:
        raise UsageError("--tune needs --slo-p95-wait S (the p95 wait, in seconds, your users accept)")
    slo = []
    for option in ("--slo-p95-wait", "--slo-max-wait"):
        text = getattr(args, option[2:].replace("-", "_"))
        value = None if text is None else _number(option, text)
        if value is not None and value < 0:
            raise UsageError(f"{option}: must not be negative, got {value:g}")
        slo.append(value)
    if len(policies) != 1:
        raise UsageError(f"--tune tunes one policy, got --policy {','.join(policies)}")
    if policies[0] == "calendar":
        raise UsageError("--tune prints the orchestrator's configuration, and 'calendar' runs live on the hub's "
                         "weekly timetable (ElasticOrchestrator.calendar_file), not on a simulated calendar: tune "
                         "'elastic' (the default), and see what a timetable buys with a plain run, "
                         "--policy elastic,calendar")
    if args.mode is None:
        modes = ["migration"]
    if len(modes) != 1 or modes[0] == "onprem-only":
        raise UsageError("--tune needs one mode that uses the cloud: --mode migration (the default) or no-migration")
    return policies[0], modes[0], slo[0], slo[1]


def _plot(result, out: Path, slo_p95: float, slo_max: float | None, caption: str | None) -> Path:
    from .tune import plot

    try:
        return plot(result, out, slo_p95, slo_max, caption)
    except ModuleNotFoundError as e:
        raise UsageError(f"--tune: the plot needs matplotlib ({e.name} is missing): pip install 'elastichub[sim]'") from None
    except OSError as e:
        raise UsageError(f"--out {out}: cannot write ({e.strerror or e})") from None


def replay_command(args: argparse.Namespace, spec, params, seed: int) -> str:
    """The `elastichub simulate` command that runs `spec` alone on the same
    workload and cluster: its row is the chosen one, to the number."""
    words = ["elastichub", "simulate"]
    if args.trace:
        words += ["--trace", "TRACE.csv" if args.trace == "-" else args.trace]  # a pipe cannot be replayed
    elif args.workload:
        words += ["--workload", args.workload]
    for option in ("--days", "--timezone", "--calendar", "--schedule"):
        if getattr(args, option[2:]) is not None:
            words += [option, getattr(args, option[2:])]
    words += ["--seed", str(seed), "--policy", spec.policy, "--mode", spec.mode, "--theta-out", repr(spec.theta_out)]
    for option in (*MODEL_OPTIONS, *LIFETIME_OPTIONS):
        text = getattr(args, option[2:].replace("-", "_"))
        if option not in ("--move-method", "--drain-concurrency") and text is not None:
            words += [option, text]
    words += ["--move-method", params.move_method]  # --tune's default (live) is not simulate's (restart)
    if params.move_method == "restart":  # nor is its drain_concurrency on a built-in workload
        words += ["--drain-concurrency", str(params.drain_concurrency)]
    for key, value in spec.options.items():
        text = "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        words += ["--option", f"{key}={text}"]
    return shlex.join(words)


def _lifetime_note(workload, spec, params) -> str | None:
    """How the lifetime model the strategy is told was estimated from a
    trace, and what it rests on; None where nothing was estimated."""
    from .runner import strategy_options
    from .workload import lifetime_estimate

    estimate = lifetime_estimate(workload)
    told = strategy_options(spec, workload, params)
    if "lifetime_mean_s" not in told or not (estimate.sessions or estimate.censored):
        return None
    given = [k for k in ("lifetime_mean_s", "lifetime_sd_s") if k in spec.options]  # --option wins
    if not estimate.sessions:
        note = (f"session lifetimes told to {spec.policy}: {told['lifetime_mean_s']:g} s mean, "
                f"{told['lifetime_sd_s']:g} s SD (the defaults: no session in the trace was ended by its user)")
    else:
        noun = "session's duration" if estimate.sessions == 1 else "sessions' durations"
        note = (f"session lifetimes told to {spec.policy}: {told['lifetime_mean_s']:g} s mean, "
                f"{told['lifetime_sd_s']:g} s SD (the median and interquartile range of {estimate.sessions} {noun}"
                + (f"; {' and '.join(k[9:-2] for k in given)} from --option" if given else "") + ")")
    if estimate.censored:
        note += (f"; {estimate.censored} session(s) their users did not end (cut by the log's end or a hub "
                 "shutdown) count as lasting at least as long as they ran")
    if estimate.far:
        note += f"; {estimate.far} far longer than the rest (always-on servers?) count only as long ones"
    return note


def run_tune(args, workload, params, seed: int, thetas: list[float], options: dict, policy: str, mode: str,
             slo_p95: float, slo_max: float | None) -> int:
    from ..policy import theta_in_mistake
    from .report import format_table, is_terminal
    from .trace import too_big_fields, too_big_note
    from .tune import THETA_OUT_GRID, NoSettingMeetsSLO, config_lines, describe, grid, tune, verdict

    if args.theta_out is None:  # the orchestrator refuses a theta_in above theta_out: never offer one
        thetas = [t for t in THETA_OUT_GRID if not theta_in_mistake(options.get("theta_in"), t)]
        if not thetas:
            raise UsageError(f"--option: {theta_in_mistake(options.get('theta_in'), THETA_OUT_GRID[-1])}")
    specs = grid(policy, mode, thetas, options)
    left_out = too_big_note(workload)
    processes = os.cpu_count() or 1
    started = time.perf_counter()
    out = Path(args.out or "tune")
    progress = _Progress(not args.no_progress and is_terminal(sys.stderr) and len(specs) > 1)
    try:
        result = tune(workload, params, seed, policy, mode, slo_p95, slo_max, specs=specs, progress=progress)
    except NoSettingMeetsSLO as e:  # the plot shows how far off every setting is: most useful now
        raise UsageError(f"{e}; every setting is drawn in {_plot(e.result, out, slo_p95, slo_max, left_out)}") from None
    except ValueError as e:  # a strategy refusing its configuration
        raise UsageError(str(e)) from None
    took = time.perf_counter() - started
    lines = config_lines(result.spec, params, workload)
    picture = _plot(result, out, slo_p95, slo_max, left_out)
    replay = replay_command(args, result.spec, params, seed)
    lifetime = _lifetime_note(workload, result.spec, params)
    tied = (f"the history does not tell {result.tied} settings apart (equal node-hours and waits): chose the one "
            "nearest the strategy's defaults") if result.tied > 1 else None
    slo = f"p95 wait <= {slo_p95:g} s" + ("" if slo_max is None else f", max wait <= {slo_max:g} s")
    unknown = sum(1 for s in result.summaries if verdict(s, slo_p95, slo_max) is None)
    unknown = (f"{unknown} setting(s) not counted as meeting it: servers still waiting when the replay ends "
               "could wait longer than it allows") if unknown else None
    if args.json:
        runs = [{**s, "meets_slo": verdict(s, slo_p95, slo_max)} for s in result.summaries]
        chosen = {**result.chosen, "meets_slo": verdict(result.chosen, slo_p95, slo_max)}
        print(json.dumps({"chosen": chosen,
                          "setting": {"policy": policy, "mode": mode, "theta_out": result.spec.theta_out,
                                      **result.spec.options},
                          "config": lines, "replay": replay, "tied": result.tied, "lifetime": lifetime,
                          "unknown": unknown, **too_big_fields(workload), "runs": runs, "plot": str(picture),
                          "search_s": round(took, 2), "processes": processes}, indent=2))
        return 0
    print(f"workload {workload.name}: {len(workload.requests)} servers, {workload.horizon_s / 3600:g} h simulated")
    moves = f", {params.move_method} moves" if mode == "migration" else ""
    if mode == "migration" and params.move_method == "restart":
        moves += f", up to {params.drain_concurrency} at once per drain"
    print(f"tuned {policy} ({mode}{moves}) for {slo}: {len(result.specs)} settings in {took:.1f} s on "
          f"{processes} core(s)")
    print(f"cheapest setting that meets it: {describe(result.spec)}")
    if tied:
        print(f"({tied})")
    if unknown:
        print(f"({unknown})")
    if left_out:
        print(f"({left_out})")
    if result.chosen["scale_outs"] == 0:
        print("(on-prem alone meets it on this history: no cloud node was started)")
    print(format_table([result.chosen]))
    if lifetime:
        print(lifetime)
    print(f"Pareto plot (chosen setting starred): {picture}")
    print("orchestrator configuration:")
    for line in lines:
        print(f"  {line}")
    print("replay it in the simulator:")
    print(f"  {replay}")
    return 0
