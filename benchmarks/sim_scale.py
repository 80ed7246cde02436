#!/usr/bin/env python
"""Simulator cost against hub size: the paper's mix at 1x, 10x and 50x the users.

Each scale multiplies the users (background rate and class sizes) and the
nodes (on-prem and cloud pool) by the same factor, two days, and runs one
policy in one mode. Prints wall time per simulated server and per decision
at each scale; the 1x row is the reference measured in the same run, and the
issue's target is that the cost per server grows by at most 1.5x from 1x to
50x (and a 50x run takes at most 10 s on the 2-core machine).

    python benchmarks/sim_scale.py [--scales 1,10,50] [--policy elastic,paper] [--mode migration]
                                   [--repeats 3] [--json] [--profile SCALE]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time

from elastichub.simulator import ClusterParams, plan_runs
from elastichub.simulator.runner import execute
from elastichub.simulator.workload import LifetimeModel, paper_workload


def scaled(scale: float, seed: int = 1):
    workload = paper_workload(days=2.0, seed=seed, lifetime=LifetimeModel(), scale=scale)
    n = round(8 * scale)
    return workload, ClusterParams(onprem_nodes=n, cloud_nodes=n)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", default="1,10,50")
    ap.add_argument("--policy", default="elastic,paper")
    ap.add_argument("--mode", default="migration")
    ap.add_argument("--theta-out", type=float, default=80.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--profile", type=float, metavar="SCALE", help="print a cProfile of one run at SCALE")
    a = ap.parse_args()
    scales = [float(s) for s in a.scales.split(",")]
    policies = a.policy.split(",")
    rows = []
    for scale in scales:
        workload, params = scaled(scale)
        for policy in policies:
            (spec,) = plan_runs([policy], [a.mode], [a.theta_out])
            walls, result = [], None
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                result = execute(spec, workload, params, 1)
                walls.append(time.perf_counter() - t0)
            wall = statistics.median(walls)
            rows.append({"scale": scale, "policy": policy, "mode": a.mode, "servers": result.servers,
                         "nodes": params.onprem_nodes + params.cloud_nodes, "decisions": result.decisions,
                         "wall_s": round(wall, 3), "us_per_server": round(wall / result.servers * 1e6, 1),
                         "us_per_decision": round(wall / result.decisions * 1e6, 1),
                         "node_hours": round(result.cloud_node_hours, 2)})
            if not a.json:
                r = rows[-1]
                print(f"{scale:4g}x {policy:8} {a.mode}: {r['servers']:7} servers, {r['nodes']:4} nodes, "
                      f"wall {wall:6.2f} s (median of {a.repeats}), {r['us_per_server']:6.1f} us/server, "
                      f"{r['us_per_decision']:7.1f} us/decision", flush=True)
    growth = {}
    for policy in policies:
        mine = [r for r in rows if r["policy"] == policy]
        growth[policy] = round(mine[-1]["us_per_server"] / mine[0]["us_per_server"], 2)
    if a.json:
        print(json.dumps({"runs": rows, "cost_per_server_growth": growth}, indent=2))
    else:
        for policy, g in growth.items():
            print(f"{policy}: cost per server {scales[-1]:g}x / {scales[0]:g}x = {g:.2f} (target <= 1.5)")
    if a.profile:
        workload, params = scaled(a.profile)
        (spec,) = plan_runs([policies[0]], [a.mode], [a.theta_out])
        prof = cProfile.Profile()
        prof.enable()
        execute(spec, workload, params, 1)
        prof.disable()
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
