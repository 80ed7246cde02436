#!/usr/bin/env python
"""A digest of everything the simulator measures, to prove a speed-up changed nothing.

Runs a fixed matrix (the paper scenario over several seeds, `teaching-day`,
`weekend`, and the paper mix at 10x the users) for every strategy, mode and
theta_out, and prints one line per run: a SHA-256 of the run's full record
(every wait, every migration downtime, node-hours, counters, the whole
step-function series; never the wall time), then a digest of all lines.
Compare two commits with `diff`:

    python benchmarks/sim_fingerprint.py > before.txt
    (change the code)
    python benchmarks/sim_fingerprint.py > after.txt && diff before.txt after.txt

`--quick` runs the paper scenario only (seed 1).
"""

from __future__ import annotations

import argparse
import hashlib

from elastichub.simulator import ClusterParams, make_workload, plan_runs, run_all
from elastichub.simulator.workload import LifetimeModel, paper_workload

POLICIES = ["paper", "elastic", "calendar"]
MODES = ["onprem-only", "no-migration", "migration"]
THETAS = [60.0, 70.0, 80.0, 90.0, 95.0]


def record(result) -> bytes:
    """The run's measurements as bytes (floats by repr: exact)."""
    fields = (result.policy, result.mode, result.theta_out, result.workload, result.seed,
              repr(result.cloud_node_hours), result.waits, result.migration_waits, result.servers,
              result.still_queued, result.migrations, result.scale_outs, result.scale_ins,
              result.decisions, result.simulated_s, result.series,
              getattr(result, "downtimes", None))
    return repr(fields).encode()


def matrix(quick: bool):
    yield make_workload("paper", seed=1), ClusterParams(), 1
    if quick:
        return
    for seed in range(2, 6):
        yield make_workload("paper", seed=seed), ClusterParams(), seed
    yield make_workload("teaching-day", seed=1), ClusterParams(), 1
    yield make_workload("weekend", seed=1), ClusterParams(), 1
    yield (paper_workload(days=2.0, seed=1, lifetime=LifetimeModel(), scale=10.0),
           ClusterParams(onprem_nodes=80, cloud_nodes=80), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    total = hashlib.sha256()
    for workload, params, seed in matrix(a.quick):
        policies = POLICIES if workload.classes else [p for p in POLICIES if p != "calendar"]
        specs = plan_runs(policies, MODES, THETAS if params.onprem_nodes == 8 else [80.0])
        for r in run_all(specs, workload, params, seed):
            digest = hashlib.sha256(record(r)).hexdigest()[:16]
            line = (f"{r.workload:14} seed {r.seed:2} {r.policy:8} {r.mode:12} {str(r.theta_out):5} "
                    f"node-h {r.cloud_node_hours:8.3f} servers {r.servers:6} {digest}")
            total.update(line.encode())
            print(line, flush=True)
    print("all", total.hexdigest())


if __name__ == "__main__":
    main()
