#!/usr/bin/env python
"""`elastichub simulate --trace T --tune` on generated two-day traces, timed.

Writes the paper workload (seed 1) as a trace CSV at each scale (1x: the
paper's 8+8 nodes; 10x: the users and the nodes times ten), runs the tune
command on it exactly as an admin would, and prints the chosen setting, its
cost and waits, and the wall time of the search. The reference, measured in
the same run: one run of the chosen setting alone, times the number of
settings, over the cores (the time a perfect parallel search would take).
Targets: 1x under 30 s (issue 12), 10x under 2 minutes (issue 14), 2 cores.

`--long DAYS` (e.g. 91, a term) times instead one replay of one setting of
the grid on a DAYS-long trace (the paper's mix at `--long-scale` the users;
0.43 gives a term of ~49,000 sessions) against the same replay of the
two-day 1x trace, measured in the same run: time per session and per Tmon
of each and the ratio, long over short (1: a replay grows linearly with the
history; a tune is 30 such replays over the cores).

    python benchmarks/tune_bench.py [--scales 1,10] [--slo-p95 60] [--slo-max 300]
    python benchmarks/tune_bench.py --long 91 [--long-scale 0.43] [--onprem-nodes 4]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
from pathlib import Path

from elastichub.cli import main as cli
from elastichub.simulator import ClusterParams
from elastichub.simulator.runner import RunSpec, execute
from elastichub.simulator.scenarios import write_trace
from elastichub.simulator.trace import load_trace
from elastichub.simulator.workload import LifetimeModel, paper_workload


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", default="1,10")
    ap.add_argument("--slo-p95", default="60")
    ap.add_argument("--slo-max", default="300")
    ap.add_argument("--long", type=float, default=0.0, help="days of a long trace: time one replay of it")
    ap.add_argument("--long-scale", type=float, default=0.43, help="users of the long trace, times the paper's")
    ap.add_argument("--onprem-nodes", type=int, default=4, help="on-prem nodes of the --long replays (cloud: 8)")
    a = ap.parse_args()
    if a.long:
        return long_trace(a.long, a.long_scale, a.onprem_nodes)
    with tempfile.TemporaryDirectory() as tmp:
        for scale in (float(s) for s in a.scales.split(",")):
            nodes = str(round(8 * scale))
            trace = write_trace(paper_workload(days=2.0, seed=1, lifetime=LifetimeModel(), scale=scale),
                                Path(tmp) / f"paper-x{scale:g}.csv")
            argv = ["simulate", "--trace", str(trace), "--onprem-nodes", nodes, "--cloud-nodes", nodes, "--tune",
                    "--slo-p95-wait", a.slo_p95, "--slo-max-wait", a.slo_max, "--json", "--out", tmp]
            t0 = time.perf_counter()
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                cli(argv)
            wall = time.perf_counter() - t0
            doc = json.loads(buffer.getvalue())
            chosen, setting = doc["chosen"], doc["setting"]
            params = ClusterParams(onprem_nodes=int(nodes), cloud_nodes=int(nodes))
            workload = load_trace(trace, params.node_shapes)
            options = {k: v for k, v in setting.items() if k not in ("policy", "mode", "theta_out")}
            spec = RunSpec(setting["policy"], setting["mode"], setting["theta_out"], options=options)
            t1 = time.perf_counter()
            execute(spec, workload, params, 1)
            one = time.perf_counter() - t1
            ideal = one * len(doc["runs"]) / doc["processes"]
            print(f"{scale:g}x ({len(workload.requests)} servers, {nodes}+{nodes} nodes): "
                  f"{len(doc['runs'])} settings searched in {doc['search_s']:.1f} s "
                  f"({wall:.1f} s with trace load and plot) on {doc['processes']} of {os.cpu_count()} cores; "
                  f"reference: one run {one:.2f} s x {len(doc['runs'])} / {doc['processes']} = {ideal:.1f} s")
            print(f"  chosen: {setting}: {chosen['cloud_node_hours']:.2f} node-h, p95 {chosen['wait_p95_s']:g} s, "
                  f"max {chosen['wait_max_s']} s, downtime max {chosen['migration_downtime_max_s']} s")
    return 0


def long_trace(days: float, scale: float, onprem: int) -> int:
    params = ClusterParams(onprem_nodes=onprem, cloud_nodes=8)
    spec = RunSpec("elastic", "migration", 80.0, options={"standing_reserve": 0.5})
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for d, s in ((2.0, 1.0), (days, scale)):
            path = write_trace(paper_workload(days=d, seed=1, lifetime=LifetimeModel(), scale=s), Path(tmp) / "t.csv")
            workload = load_trace(path, params.node_shapes)  # as --trace replays it: lifetimes estimated
            t0 = time.perf_counter()
            result = execute(spec, workload, params, 1)
            wall = time.perf_counter() - t0
            n = len(workload.requests)
            rows.append((wall / n, wall / result.decisions))
            print(f"{d:g} days x{s:g} ({n} sessions, {result.decisions} Tmons, {onprem}+8 nodes): one replay "
                  f"{wall:.2f} s = {wall / n * 1e6:.1f} us/session, {wall / result.decisions * 1e6:.2f} us/Tmon")
    (short_s, short_t), (long_s, long_t) = rows
    print(f"long / two-day (reference, same run): {long_s / short_s:.2f}x per session, "
          f"{long_t / short_t:.2f}x per Tmon (1.00: linear)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
