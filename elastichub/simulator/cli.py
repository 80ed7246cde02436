"""`elastichub simulate`: the paper's evaluation, or your own hub's trace.

With no options: the two-day `paper` workload, the default policy
(`DEFAULT_POLICIES`) at theta_out 80 %, in the three modes, as a table. Values are parsed here, not
by argparse, so every bad value becomes one line naming its option.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import math
import sys
import time
from pathlib import Path

from ..cli import UsageError

DEFAULT_POLICIES = "elastic"  # issue 5: the best strategy; `paper` reproduces the publication
# --theta-out and --mode default to None: --tune searches its own grid and
# mode unless they were given, whatever text was given.
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
    "--drain-concurrency": ("drain_concurrency", int, "1 on the built-in workloads (the paper's: one restart after "
                                                      "another); with --trace or --tune 4, the orchestrator's "
                                                      "drain_concurrency default (restart moves of one drain at once)"),
}
LIFETIME_OPTIONS = {
    "--lifetime-mean-min": ("mean_s", "60"),
    "--lifetime-sd-min": ("sd_s", "15"),
    "--lifetime-min-min": ("min_s", "5 (shorter draws are re-drawn)"),
}


def drain_note(params) -> str:
    """Which drain was simulated, and the orchestrator line that runs it (its default differs from the paper's)."""
    from .params import ORCHESTRATOR_DRAIN_CONCURRENCY

    n = params.drain_concurrency
    return (f"each drain restarted up to {n} server{'s' if n > 1 else ''} at once (--drain-concurrency); a hub "
            f"drains so with c.ElasticOrchestrator.drain_concurrency = {n} (its default: "
            f"{ORCHESTRATOR_DRAIN_CONCURRENCY})")


def _zone(name: str | None):
    """The tzinfo of --timezone, or None without it."""
    if name is None:
        return None
    from .loglines import parse_zone

    try:
        return parse_zone(name)
    except ValueError as e:
        raise UsageError(f"--timezone: {e}") from None


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
    g.add_argument("--timezone", metavar="ZONE",
                   help="the hub's time zone (e.g. Europe/Berlin, or a fixed offset: +01:00): a trace's timestamps are "
                        "replayed on its wall clock, so calendar times and days are the hub's (default: each "
                        "timestamp's own offset)")
    g.add_argument("--too-big", metavar="skip|error", default="skip",
                   help="a trace's session that asks for more than any simulated node holds (a GPU profile's): "
                        "skip leaves it out and counts it in every report (default), error stops at it")
    g.add_argument("--calendar", metavar="FILE.csv",
                   help="classes to add (header start,users,cpu,ram_gib[,spread_s,name]; start as seconds "
                        "or 'D HH:MM'): their students arrive, and the calendar policy knows the schedule")
    g.add_argument("--schedule", metavar="FILE.csv",
                   help="the same file for a trace that already holds the classes' students (a hub's own "
                        "history): the calendar policy knows the schedule, nobody is added")
    g.add_argument("--seed", metavar="N", default="1", help="random seed of workload and migrations (default 1)")
    g.add_argument("--policy", metavar="NAME[,NAME...]", default=DEFAULT_POLICIES,
                   help=f"scaling strategies to compare (default {DEFAULT_POLICIES})")
    g.add_argument("--mode", metavar="MODE[,MODE...]",
                   help=f"modes to run (default {DEFAULT_MODES}; with --tune: migration)")
    g.add_argument("--theta-out", metavar="V[,V...]",
                   help=f"scale-out threshold(s), percent RAM; a list is a sweep (default {DEFAULT_THETAS}; with "
                        "--tune: 50,55,...,95)")
    g.add_argument("--option", metavar="KEY=VALUE", action="append", default=[],
                   help="an option of the strategy, named as in ElasticOrchestrator.policy_options "
                        "(docs/strategies.md), e.g. standing_reserve=0.5; repeat for more. With --tune it is "
                        "kept, not searched")
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
    from ..policy import STRATEGIES, theta_in_mistake, theta_out_mistake
    from .params import ORCHESTRATOR_DRAIN_CONCURRENCY, ClusterParams
    from .runner import MODES
    from .workload import LifetimeModel, workload_names

    values = {}
    for option, (field_name, kind, _) in MODEL_OPTIONS.items():
        text = getattr(args, option[2:].replace("-", "_"))
        if text is not None:  # the orchestrator's move_method is caseless
            values[field_name] = text.strip().lower() if kind is str else _number(option, text, kind)
    for tier in ("onprem", "cloud"):
        if f"{tier}_node_ru" in values and f"{tier}_node_cpu" in values:
            raise UsageError(f"--{tier}-node-ru and --{tier}-node-cpu/--{tier}-node-ram-gib say the same: give one")
    if "drain_concurrency" not in values and (args.trace or args.tune):  # your hub: drained as it will be
        values["drain_concurrency"] = ORCHESTRATOR_DRAIN_CONCURRENCY
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
    modes = _list("--mode", DEFAULT_MODES if args.mode is None else args.mode)
    for mode in modes:
        if mode not in MODES:
            raise UsageError(f"--mode: unknown mode {mode!r}: choose from {', '.join(MODES)}")
    theta_text = DEFAULT_THETAS if args.theta_out is None else args.theta_out
    thetas = [_number("--theta-out", v) for v in _list("--theta-out", theta_text)]
    for theta in thetas:
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
    options = _options(args.option, policies)
    if args.theta_out is not None or not args.tune:  # --tune's own grid leaves out what these refuse
        for theta in thetas:  # the orchestrator refuses it: a run of it would tune nothing it can run
            if theta_in_mistake(options.get("theta_in"), theta):
                raise UsageError(f"--option: {theta_in_mistake(options.get('theta_in'), theta)}")
    return params, lifetime_model, policies, modes, thetas, seed, days, workload, options


def _options(texts: list[str], policies: list[str]) -> dict:
    """--option KEY=VALUE, as the strategies name and check them (values:
    numbers, true/false (yes/no, on/off), none, or text)."""
    from ..policy import STRATEGIES, PolicyConfig, option_names

    options = {}
    for text in texts:
        key, sep, value = (part.strip() for part in text.partition("="))
        if not sep or not key:
            raise UsageError(f"--option: expected KEY=VALUE, got {text!r}")
        for policy in policies:
            known = (option_names(policy) or set()) - {"schedule"}  # a timetable comes from --calendar/--schedule
            if key not in known:
                hint = difflib.get_close_matches(key, known, n=1)
                raise UsageError(f"--option {key}: policy {policy!r} has no option {key!r}" + (
                    f" (did you mean {hint[0]}?)" if hint else
                    f"; its options are {', '.join(sorted(known))}" if known else "; it takes none"))
        options[key] = _option_value(value)
    for policy in policies:
        kind = getattr(STRATEGIES[policy], "strategy_class", None)
        if options and kind is not None:
            try:
                kind(PolicyConfig(), **options)
            except (ValueError, TypeError) as e:
                raise UsageError(f"--option: {e}") from None
    return options


def _option_value(text: str):
    lowered = text.lower()
    if lowered in ("true", "false", "yes", "no", "on", "off"):
        return lowered in ("true", "yes", "on")
    if lowered in ("none", "null"):
        return None
    try:
        return float(text)
    except ValueError:
        return text


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
    from .trace import TraceError, load_trace, too_big_fields, too_big_note
    from .workload import make_workload

    from .tune_cli import parse_tune, run_tune

    params, lifetime, policies, modes, thetas, seed, days, workload_name, options = _parse(args)
    tuning = parse_tune(args, policies, modes)
    if args.timezone is not None and not args.trace:
        raise UsageError("--timezone: only a --trace of timestamps has a clock to set")
    zone = _zone(args.timezone)
    too_big = args.too_big.strip().lower()
    if too_big not in ("skip", "error"):
        raise UsageError(f"--too-big: expected skip or error, got {args.too_big!r}")
    try:
        if args.trace:
            horizon = None if days is None else int(round(days * 86_400))
            workload = load_trace(args.trace, params.node_shapes, horizon, zone=zone, too_big=too_big)
        else:
            workload = make_workload(workload_name, days=days, seed=seed, lifetime=lifetime)
    except TraceError as e:
        raise UsageError(str(e)) from None
    except ValueError as e:
        raise UsageError(f"--workload {workload_name}: {e}") from None
    for warning in workload.meta.get("warnings", ()):
        print(f"elastichub simulate: warning: {warning}", file=sys.stderr)
    if args.calendar and args.schedule:
        raise UsageError("--calendar adds the classes' students, --schedule only their timetable: give one")
    if args.calendar or args.schedule:
        from .scenarios import load_calendar, with_calendar

        option, path = ("--calendar", args.calendar) if args.calendar else ("--schedule", args.schedule)
        try:
            workload = with_calendar(workload, load_calendar(path, params.node_shapes), seed, lifetime,
                                     students=bool(args.calendar), source=f"calendar file {path}")
        except ValueError as e:
            raise UsageError(f"{option}: {e}") from None
        if args.schedule and "calendar" not in policies:  # it adds nobody: a run without it is the same run
            print(f"elastichub simulate: warning: --schedule: only policy calendar decides with the timetable; "
                  f"{', '.join(policies)} run{'s' if len(policies) == 1 else ''} as without it", file=sys.stderr)

    if tuning:
        if args.move_method is None:  # tune for the orchestrator as it runs by default
            params = dataclasses.replace(params, move_method="live")
        return run_tune(args, workload, params, seed, thetas, options, *tuning)
    specs = plan_runs(policies, modes, thetas, options=options)
    progress = _Progress(not args.no_progress and is_terminal(sys.stderr) and len(specs) > 1)
    try:
        results = run_all(specs, workload, params, seed, progress)
    except ValueError as e:  # a strategy refusing its configuration
        raise UsageError(str(e)) from None
    summaries = [summary(r) for r in results]
    left_out = too_big_note(workload)
    document = {
        "runs": summaries,
        "workload": {"name": workload.name, "description": workload.description,
                     "servers": len(workload.requests), "horizon_s": workload.horizon_s, "seed": seed,
                     **too_big_fields(workload)},
        "parameters": {field: getattr(params, field) for field, _, _ in MODEL_OPTIONS.values()},
    }

    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(f"workload {workload.name}: {workload.description}; {len(workload.requests)} servers, "
              f"{workload.horizon_s / 3600:g} h simulated, seed {seed}")
        print(format_table(summaries))
        if left_out:
            print(f"note: {left_out}")
        if "migration" in modes and params.move_method == "restart":
            print(f"note: {drain_note(params)}")
    if args.out:
        out = Path(args.out)
        try:
            files = write_outputs(results, summaries, out, document)
            from .plots import write_plots

            files += write_plots(results, summaries, out, caption=left_out)
        except ModuleNotFoundError as e:
            raise UsageError(f"--out: plots need matplotlib ({e.name} is missing): pip install 'elastichub[sim]'") from None
        except OSError as e:
            raise UsageError(f"--out {out}: cannot write ({e.strerror or e})") from None
        print(f"wrote {len(files)} files to {out}/", file=sys.stderr if args.json else sys.stdout)
    return 0
