#!/usr/bin/env python
"""Simulator speed: the 2-day paper scenario, all three modes, one process.

Reports, as medians of ``--repeats`` runs:

- wall time of the three modes together (target: under 3 s on the project's
  2-core machine), and simulated seconds per wall second;
- against a reference measured in the same runs: the time the policy's own
  `decide` calls take (one per Tmon, the work any simulator of this policy
  must do); the ratio says how much the engine adds around them;
- where the time goes: workload generation, engine, summary.

Usage: python benchmarks/sim_bench.py [--repeats 5] [--days 2] [--policy paper] [--json] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time

from elastichub.simulator import ClusterParams, make_workload, plan_runs, run_all, simulate, summary
from elastichub.simulator.runner import build_strategy

MODES = ["onprem-only", "no-migration", "migration"]
TARGET_S = 3.0


class TimedStrategy:
    """Wraps a strategy and adds up the wall time of its decisions (two
    clock reads per decision: ~10 ms over the 34,560 decisions of a run)."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0

    def decide(self, snapshot, state, now):
        t0 = time.perf_counter()
        try:
            return self.inner.decide(snapshot, state, now)
        finally:
            self.seconds += time.perf_counter() - t0


def scenario(days: float, seed: int, policy: str = "paper") -> tuple[float, float, float, float, int]:
    """(workload s, engine s, summary s, decide s, simulated s) for the three
    modes; decide s is the part of engine s spent in the policy's `decide`."""
    t0 = time.perf_counter()
    workload = make_workload("paper", days=days, seed=seed)
    t1 = time.perf_counter()
    params = ClusterParams()
    results, decide = [], 0.0
    for spec in plan_runs([policy], MODES, [80.0]):
        strategy = TimedStrategy(build_strategy(spec, workload, params))
        results.append(simulate(workload, strategy, params, seed=seed, mode=spec.mode, theta_out=spec.theta_out))
        decide += strategy.seconds
    t2 = time.perf_counter()
    for r in results:
        summary(r)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, decide, sum(r.simulated_s for r in results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--days", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--policy", default="paper", help="strategy to time (default paper)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", action="store_true", help="print the top of a cProfile of one run")
    args = parser.parse_args()

    scenario(0.1, args.seed)  # warm imports and caches (with `paper`: 0.1 day holds no class for `calendar`)
    runs = [scenario(args.days, args.seed, args.policy) for _ in range(args.repeats)]
    simulated = runs[0][4]
    gen = statistics.median(r[0] for r in runs)
    engine = statistics.median(r[1] for r in runs)
    summ = statistics.median(r[2] for r in runs)
    total = statistics.median(r[0] + r[1] + r[2] for r in runs)
    decide = statistics.median(r[3] for r in runs)
    ratio = statistics.median((r[0] + r[1] + r[2]) / r[3] for r in runs)
    report = {
        "policy": args.policy,
        "days": args.days,
        "modes": len(MODES),
        "simulated_s": simulated,
        "wall_s": round(total, 4),
        "target_s": TARGET_S,
        "within_target": total < TARGET_S,
        "simulated_s_per_wall_s": round(simulated / total),
        "workload_s": round(gen, 4),
        "engine_s": round(engine, 4),
        "summary_s": round(summ, 4),
        "policy_decide_s": round(decide, 4),
        "ratio_vs_policy_decide": round(ratio, 3),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"paper scenario, policy {args.policy}, {args.days:g} days x {len(MODES)} modes = {simulated} simulated s "
              f"(median of {args.repeats})")
        print(f"  wall            {total:.3f} s  (target < {TARGET_S:g} s: "
              f"{'ok' if total < TARGET_S else 'MISSED'})")
        print(f"  speed           {simulated / total:,.0f} simulated s per wall s")
        print(f"  split           workload {gen:.3f} s, engine {engine:.3f} s, summaries {summ:.3f} s")
        print(f"  reference       the policy's decide() calls alone: {decide:.3f} s; "
              f"the whole simulation takes {ratio:.2f}x that (same runs)")
    if args.profile:
        workload = make_workload("paper", days=args.days, seed=args.seed)
        profiler = cProfile.Profile()
        profiler.enable()
        run_all(plan_runs([args.policy], MODES, [80.0]), workload, ClusterParams(), args.seed)
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(15)
    return 0 if total < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
