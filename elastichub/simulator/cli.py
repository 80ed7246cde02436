"""`elastichub simulate`: the paper's evaluation, or your own hub's trace.

With no options: the two-day `paper` workload, the default policy
(`DEFAULT_POLICIES`) at theta_out 80 %, in the three modes, as a table. Values are parsed here, not
by argparse, so every bad value becomes one line naming its option.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

from ..cli import UsageError

DEFAULT_POLICIES = "elastic"  # issue 5: the best strategy; `paper` reproduces the publication
DEFAULT_THETAS = "80"
DEFAULT_MODES = "onprem-only,no-migration,migration"

# option -> (ClusterParams field, kind, default shown in --help)
MODEL_OPTIONS = {
    "--onprem-nodes": ("onprem_nodes", int, "8"),
    "--onprem-node-ru": ("onprem_node_ru", float, "50 (1 RU = 0.5 vCPU + 1 GiB)"),
    "--cloud-nodes": ("cloud_nodes", int, "8 (the pool)"),
    "--cloud-node-ru": ("cloud_node_ru", float, "50"),
    "--onprem-node-cpu": ("onprem_node_cpu", float, "none: --onprem-node-ru's (cores; with --onprem-node-ram-gib "
                                                     "they replace it, for nodes whose CPU:RAM is not 1:2)"),
    "--onprem-node-ram-gib": ("onprem_node_ram_gib", float, "none: --onprem-node-ru's"),
    "--cloud-node-cpu": ("cloud_node_cpu", float, "none: --cloud-node-ru's (e.g. 8 for an m5.2xlarge)"),
    "--cloud-node-ram-gib": ("cloud_node_ram_gib", float, "none: --cloud-node-ru's (e.g. 32)"),
    "--cloud-boot-s": ("cloud_boot_s", float, "290 (VM start -> Ready and uncordoned)"),
    "--server-start-s": ("server_start_s", float, "6"),
    "--migration-min-s": ("migration_min_s", float, "11 (downtime, uniform in [min, max])"),
    "--migration-max-s": ("migration_max_s", float, "22.2"),
    "--tmon-s": ("tmon_s", float, "15 (monitoring period)"),
    "--tcool-s": ("tcool_s", float, "580 (cooldown after a scaling action)"),
    "--move-method": ("move_method", str, "restart (the paper's; 'live' models the orchestrator's default, "
                                          "make-before-break moves)"),
    "--live-prepare-s": ("live_prepare_s", float, "10 (live: destination start + pre-copy, both pods up)"),
    "--live-pause-s": ("live_pause_s", float, "0.5 (live: what the user sees of a move)"),
}
LIFETIME_OPTIONS = {
    "--lifetime-mean-min": ("mean_s", "60"),
    "--lifetime-sd-min": ("sd_s", "15"),
    "--lifetime-min-min": ("min_s", "5 (shorter draws are re-drawn)"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "docs/simulator.md describes the model, the paper workload and the trace format."
    g = parser.add_argument_group("what to simulate")
    g.add_argument("--workload", metavar="NAME", default=None,
                   help="workload generator (default: paper; see docs/simulator.md)")
    g.add_argument("--trace", metavar="FILE.csv",
                   help="replay a trace: header arrival_s,duration_s,cpu,ram_gib (instead of --workload); "
                        "- reads standard input (elastichub trace hub.log ... | elastichub simulate --trace -)")
    g.add_argument("--days", metavar="D", help="simulated days (paper: 2; trace: until its last server ends)")
    g.add_argument("--calendar", metavar="FILE.csv",
                   help="classes to add (header start,users,cpu,ram_gib[,spread_s,name]; start as seconds "
                        "or 'D HH:MM'): their students arrive, and the calendar policy knows the schedule")
    g.add_argument("--schedule", metavar="FILE.csv",
                   help="the same file for a trace that already holds the classes' students (a hub's own "
                        "history): the calendar policy knows the schedule, nobody is added")
    g.add_argument("--seed", metavar="N", default="1", help="random seed of workload and migrations (default 1)")
    g.add_argument("--policy", metavar="NAME[,NAME...]", default=DEFAULT_POLICIES,
                   help=f"scaling strategies to compare (default {DEFAULT_POLICIES})")
    g.add_argument("--mode", metavar="MODE[,MODE...]", default=DEFAULT_MODES,
                   help=f"modes to run (default {DEFAULT_MODES})")
    g.add_argument("--theta-out", metavar="V[,V...]", default=DEFAULT_THETAS,
                   help=f"scale-out threshold(s), percent RAM; a list is a sweep (default {DEFAULT_THETAS})")
    g = parser.add_argument_group("tuning (pick theta_out and the strategy's thresholds for your hub)")
    g.add_argument("--tune", action="store_true",
                   help="search the policy's thresholds on the workload (e.g. --trace) and print the cheapest "
                        "setting that meets --slo-p95-wait/--slo-max-wait, its row, a Pareto plot and the "
                        "orchestrator config lines; uses every core")
    g.add_argument("--slo-p95-wait", metavar="S", help="with --tune: p95 wait of new requests must be <= S seconds")
    g.add_argument("--slo-max-wait", metavar="S", help="with --tune: max wait of new requests must be <= S seconds")
    g = parser.add_argument_group("output")
    g.add_argument("--json", action="store_true", help='print one JSON document {"runs": [...]} instead of the table')
    g.add_argument("--out", metavar="DIR", help="write per-second CSV time series, runs.json/csv and PNG plots")
    g.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    g = parser.add_argument_group("model parameters (the paper's values are the defaults)")
    for option, (_, _, default) in MODEL_OPTIONS.items():
        g.add_argument(option, metavar="V", help=f"default {default}")
    for option, (_, default) in LIFETIME_OPTIONS.items():
        g.add_argument(option, metavar="MIN", help=f"session lifetime, minutes: default {default}")


def _number(option: str, text: str, kind=float) -> float:
    try:
        value = kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise UsageError(f"{option}: expected {what}, got {text!r}") from None
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        raise UsageError(f"{option}: expected a finite number, got {text!r}")
    return value


def _list(option: str, text: str) -> list[str]:
    items = [item.strip() for item in text.split(",")]
    if not items or any(not item for item in items):
        raise UsageError(f"{option}: expected a comma-separated list without empty items, got {text!r}")
    return list(dict.fromkeys(items))  # drop repeats, keep order


def _parse(args: argparse.Namespace):
    from ..policy import STRATEGIES, theta_out_mistake
    from .params import ClusterParams
    from .runner import MODES
    from .workload import LifetimeModel, workload_names

    values = {}
    for option, (field_name, kind, _) in MODEL_OPTIONS.items():
        text = getattr(args, option[2:].replace("-", "_"))
        if text is not None:
            values[field_name] = text.strip() if kind is str else _number(option, text, kind)
    for tier in ("onprem", "cloud"):
        if f"{tier}_node_ru" in values and f"{tier}_node_cpu" in values:
            raise UsageError(f"--{tier}-node-ru and --{tier}-node-cpu/--{tier}-node-ram-gib say the same: give one")
    try:
        params = ClusterParams(**values)
    except ValueError as e:
        raise UsageError(str(e)) from None

    lifetime = {}
    for option, (field_name, _) in LIFETIME_OPTIONS.items():
        text = getattr(args, option[2:].replace("-", "_"))
        if text is not None:
            lifetime[field_name] = _number(option, text) * 60.0
    try:
        lifetime_model = LifetimeModel(**lifetime)
    except ValueError as e:
        raise UsageError(str(e)) from None

    policies = _list("--policy", args.policy)
    for name in policies:
        if name not in STRATEGIES:
            raise UsageError(f"--policy: unknown policy {name!r}: choose from {', '.join(sorted(STRATEGIES))}")
    modes = _list("--mode", args.mode)
    for mode in modes:
        if mode not in MODES:
            raise UsageError(f"--mode: unknown mode {mode!r}: choose from {', '.join(MODES)}")
    thetas = [_number("--theta-out", v) for v in _list("--theta-out", args.theta_out)]
    for theta in thetas:
        if theta < 0:
            raise UsageError(f"--theta-out: must not be negative, got {theta:g}")
        if theta_out_mistake(theta):
            raise UsageError(f"--theta-out: {theta_out_mistake(theta)}")
    seed = int(_number("--seed", args.seed, int))
    days = None
    if args.days is not None:
        days = _number("--days", args.days)
        if days <= 0:
            raise UsageError(f"--days: must be > 0, got {days:g}")
    if args.trace and args.workload:
        raise UsageError("--trace and --workload exclude each other: a trace is the workload")
    workload = args.workload or "paper"
    if not args.trace and workload not in workload_names():
        raise UsageError(f"--workload: unknown workload {workload!r}: choose from {', '.join(workload_names())}")
    return params, lifetime_model, policies, modes, thetas, seed, days, workload


def _parse_tune(args: argparse.Namespace, policies: list[str], modes: list[str]):
    """(policy, mode, slo_p95, slo_max) for --tune, or None without it."""
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
    if args.mode == DEFAULT_MODES:
        modes = ["migration"]
    if len(modes) != 1 or modes[0] == "onprem-only":
        raise UsageError("--tune needs one mode that uses the cloud: --mode migration (the default) or no-migration")
    return policies[0], modes[0], slo[0], slo[1]


class _Progress:
    """A one-line bar on a terminal's stderr, shown once a sweep has run
    for more than a second (short runs stay quiet)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.started = time.perf_counter()
        self.shown = False

    def __call__(self, done: int, total: int, spec) -> None:
        if not self.enabled:
            return
        if done >= total:
            if self.shown:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
            return
        if not self.shown and time.perf_counter() - self.started < 1.0:
            return
        self.shown = True
        width = 30
        filled = width * done // total
        label = spec.label if spec else ""
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label}\033[K")
        sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    from .report import format_table, is_terminal, write_outputs
    from .runner import plan_runs, run_all, summary
    from .trace import TraceError, load_trace
    from .workload import make_workload

    params, lifetime, policies, modes, thetas, seed, days, workload_name = _parse(args)
    tuning = _parse_tune(args, policies, modes)
    try:
        if args.trace:
            horizon = None if days is None else int(round(days * 86_400))
            workload = load_trace(args.trace, params.largest_node, horizon)
        else:
            workload = make_workload(workload_name, days=days, seed=seed, lifetime=lifetime)
    except TraceError as e:
        raise UsageError(str(e)) from None
    except ValueError as e:
        raise UsageError(f"--workload {workload_name}: {e}") from None
    if args.calendar and args.schedule:
        raise UsageError("--calendar adds the classes' students, --schedule only their timetable: give one")
    if args.calendar or args.schedule:
        from .scenarios import load_calendar, with_calendar

        option, path = ("--calendar", args.calendar) if args.calendar else ("--schedule", args.schedule)
        try:
            workload = with_calendar(workload, load_calendar(path, params.largest_node), seed, lifetime,
                                     students=bool(args.calendar), source=f"calendar file {path}")
        except ValueError as e:
            raise UsageError(f"{option}: {e}") from None

    if tuning:
        if args.move_method is None:  # tune for the orchestrator as it runs by default
            params = dataclasses.replace(params, move_method="live")
        return _tune(args, workload, params, seed, thetas, *tuning)
    specs = plan_runs(policies, modes, thetas)
    progress = _Progress(not args.no_progress and is_terminal(sys.stderr) and len(specs) > 1)
    try:
        results = run_all(specs, workload, params, seed, progress)
    except ValueError as e:  # a strategy refusing its configuration
        raise UsageError(str(e)) from None
    summaries = [summary(r) for r in results]
    document = {
        "runs": summaries,
        "workload": {"name": workload.name, "description": workload.description,
                     "servers": len(workload.requests), "horizon_s": workload.horizon_s, "seed": seed},
        "parameters": {field: getattr(params, field) for field, _, _ in MODEL_OPTIONS.values()},
    }

    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(f"workload {workload.name}: {workload.description}; {len(workload.requests)} servers, "
              f"{workload.horizon_s / 3600:g} h simulated, seed {seed}")
        print(format_table(summaries))
    if args.out:
        out = Path(args.out)
        try:
            files = write_outputs(results, summaries, out, document)
            from .plots import write_plots

            files += write_plots(results, summaries, out)
        except ModuleNotFoundError as e:
            raise UsageError(f"--out: plots need matplotlib ({e.name} is missing): pip install 'elastichub[sim]'") from None
        except OSError as e:
            raise UsageError(f"--out {out}: cannot write ({e.strerror or e})") from None
        print(f"wrote {len(files)} files to {out}/", file=sys.stderr if args.json else sys.stdout)
    return 0


def _tune_plot(result, out: Path, slo_p95: float, slo_max: float | None) -> Path:
    from .tune import plot

    try:
        return plot(result, out, slo_p95, slo_max)
    except ModuleNotFoundError as e:
        raise UsageError(f"--tune: the plot needs matplotlib ({e.name} is missing): pip install 'elastichub[sim]'") from None
    except OSError as e:
        raise UsageError(f"--out {out}: cannot write ({e.strerror or e})") from None


def _tune(args, workload, params, seed: int, thetas: list[float], policy: str, mode: str,
          slo_p95: float, slo_max: float | None) -> int:
    import os

    from .report import format_table
    from .tune import THETA_OUT_GRID, NoSettingMeetsSLO, config_lines, describe, grid, tune

    theta_grid = THETA_OUT_GRID if args.theta_out == DEFAULT_THETAS else thetas
    specs = grid(policy, mode, theta_grid)
    processes = os.cpu_count() or 1
    started = time.perf_counter()
    out = Path(args.out or "tune")
    try:
        result = tune(workload, params, seed, policy, mode, slo_p95, slo_max, specs=specs)
    except NoSettingMeetsSLO as e:  # the plot shows how far off every setting is: most useful now
        raise UsageError(f"{e}; every setting is drawn in {_tune_plot(e.result, out, slo_p95, slo_max)}") from None
    except ValueError as e:  # a strategy refusing its configuration
        raise UsageError(str(e)) from None
    took = time.perf_counter() - started
    lines = config_lines(result.spec, params, workload)
    picture = _tune_plot(result, out, slo_p95, slo_max)
    slo = f"p95 wait <= {slo_p95:g} s" + ("" if slo_max is None else f", max wait <= {slo_max:g} s")
    if args.json:
        print(json.dumps({"chosen": result.chosen, "setting": {"policy": policy, "mode": mode,
                          "theta_out": result.spec.theta_out, **result.spec.options},
                          "config": lines, "runs": result.summaries, "plot": str(picture),
                          "search_s": round(took, 2), "processes": processes}, indent=2))
        return 0
    print(f"workload {workload.name}: {len(workload.requests)} servers, {workload.horizon_s / 3600:g} h simulated")
    moves = f", {params.move_method} moves" if mode == "migration" else ""
    print(f"tuned {policy} ({mode}{moves}) for {slo}: {len(specs)} settings in {took:.1f} s on {processes} core(s)")
    print(f"cheapest setting that meets it: {describe(result.spec)}")
    if result.chosen["scale_outs"] == 0:
        print("(on-prem alone meets it on this history: no cloud node was started)")
    print(format_table([result.chosen]))
    print(f"Pareto plot (chosen setting starred): {picture}")
    print("orchestrator configuration:")
    for line in lines:
        print(f"  {line}")
    return 0
