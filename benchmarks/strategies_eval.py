"""Issue 5's checks on the paper scenario, over several seeds, in one run.

For each seed: `paper`, `elastic` and `calendar` at every theta_out of the
sweep, with and without migration. Prints, per seed, the issue's figures:

- elastic's max wait against the bound cloud boot + server start + Tmon;
- elastic's cloud node-hours against `paper` with migration, and its p95
  wait against `paper` without migration (same theta_out, and paper's
  published 80 % against elastic's best theta);
- the calendar's max wait inside every class's arrival window.

    python benchmarks/strategies_eval.py [--seeds 1,2,3,4,5] [--thetas 80,90,95] [--plot DIR]
"""

from __future__ import annotations

import argparse
import statistics

from elastichub.simulator import ClusterParams, make_workload
from elastichub.simulator.runner import plan_runs, run_all, summary
from elastichub.simulator.scenarios import class_window_waits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--thetas", default="80,90,95")
    ap.add_argument("--workload", default="paper")
    ap.add_argument("--plot", metavar="DIR", help="write the Pareto plot of the first seed there")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    thetas = [float(t) for t in a.thetas.split(",")]
    params = ClusterParams()
    bound = params.cloud_boot_s + params.server_start_s + params.tmon_s
    specs = plan_runs(["paper", "elastic", "calendar"], ["no-migration", "migration"], thetas)
    savings = []
    for seed in seeds:
        wl = make_workload(a.workload, seed=seed)
        results = run_all(specs, wl, params, seed)
        rows = {(r.policy, r.mode, r.theta_out): (r, summary(r)) for r in results}
        print(f"\nseed {seed}: {wl.description}, {len(wl.requests)} servers")
        print(f"{'policy':9} {'mode':13} {'theta':>5} {'node-h':>7} {'p95 s':>6} {'max s':>6} {'class max s':>11}")
        for (policy, mode, theta), (r, s) in rows.items():
            cls = max(class_window_waits(r, wl).values(), default=0)
            print(f"{policy:9} {mode:13} {theta:5g} {s['cloud_node_hours']:7.2f} {s['wait_p95_s']:6.0f} "
                  f"{s['wait_max_s']:6d} {cls:11d}")
        ref_mig = rows[("paper", "migration", 80.0)][1] if 80.0 in thetas else None
        ref_nomig = rows[("paper", "no-migration", 80.0)][1] if 80.0 in thetas else None
        for theta in thetas:
            e = rows[("elastic", "migration", theta)][1]
            pm = rows[("paper", "migration", theta)][1]
            pn = rows[("paper", "no-migration", theta)][1]
            cal_r = rows[("calendar", "migration", theta)][0]
            cal = class_window_waits(cal_r, wl)
            line = (f"  theta {theta:g}: elastic max {e['wait_max_s']} s (bound {bound:g}); "
                    f"node-h {e['cloud_node_hours']:.2f} vs paper-migration {pm['cloud_node_hours']:.2f} "
                    f"({_pct(e['cloud_node_hours'], pm['cloud_node_hours'])}); p95 {e['wait_p95_s']:.0f} vs "
                    f"paper-no-migration {pn['wait_p95_s']:.0f}; calendar class max {max(cal.values(), default=0)} s")
            if ref_mig:
                line += (f" | vs paper@80: node-h {_pct(e['cloud_node_hours'], ref_mig['cloud_node_hours'])}, "
                         f"p95 {e['wait_p95_s']:.0f} vs {ref_nomig['wait_p95_s']:.0f}")
                if theta == max(thetas):
                    savings.append(1 - e["cloud_node_hours"] / ref_mig["cloud_node_hours"])
            print(line)
        if a.plot and seed == seeds[0]:
            from pathlib import Path

            from elastichub.simulator.pareto import plot_pareto

            out = Path(a.plot)
            out.mkdir(parents=True, exist_ok=True)
            print("wrote", plot_pareto([s for _, s in rows.values()], out))
    if savings:
        print(f"\nelastic@{max(thetas):g} vs paper-migration@80 node-hours saving over seeds: "
              f"mean {statistics.mean(savings):.1%}, min {min(savings):.1%}")


def _pct(x: float, ref: float) -> str:
    return f"{(x / ref - 1):+.1%}" if ref else "n/a"


if __name__ == "__main__":
    main()
