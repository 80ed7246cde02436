"""One orchestrator cycle from its caches at 1,000 nodes and 20,000 servers.

Target (issue 9): median under 100 ms. What is timed is `Controller.cycle()`
with the informers' caches already filled: the snapshot built from the cached
records (`observe`), the bookkeeping (metrics, timeline, reconcile) and the
policy's `decide`. The synthetic Node and Pod objects go *straight into the
cache*, parsed by the same functions the watch events go through (their
per-object cost is reported on its own line); they do not pass through
kubernetes_asyncio's model decoding, which the orchestrator skips (it reads
the raw JSON of list and watch answers). The cloud's `list_nodes` round trip
is left out (a fixed pool listed without I/O): it is the cloud's latency,
not the cycle's.

Printed beside it, measured in the same run: the policy's own `decide` on
the same snapshot (its share of the cycle), what following every server's
session adds when `history_file` is set, and one plain pass summing the RAM
requests of the 20,000 cached pods (the least any cycle could do). And the
snapshot alone with a drain's record on one node naming `--drain-servers`
servers, against the same snapshot without (what a drain under way costs
each cycle; run it at `--nodes 40 --servers 800` to see it).

    python benchmarks/orchestrator_bench.py [--repeat 21] [--policy elastic] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time

from elastichub import podmeta
from elastichub.orchestrator.cloud import RUNNING, STOPPED, VM
from elastichub.orchestrator.controller import Controller, Settings
from elastichub.orchestrator.history import SessionTracker
from elastichub.orchestrator.observe import ObserveConfig, observe
from elastichub.orchestrator.records import DRAIN_RECORD_VERSION, node_record, pod_record
from elastichub.policy import ControllerState, PolicyConfig, make_strategy


class CachedInformer:
    """What the controller reads of an Informer: its records."""

    def __init__(self, records: dict):
        self.records = records


class FixedPool:
    def __init__(self, vms):
        self.vms = vms

    async def list(self):
        return self.vms


def node_obj(name: str, tier: str, ready: bool = True) -> dict:
    return {"metadata": {"name": name, "labels": {podmeta.TIER_LABEL: tier}, "annotations": {},
                         "resourceVersion": "1"},
            "spec": {"providerID": f"bench://{name}"},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod_obj(i: int, node: str | None, rng: random.Random) -> dict:
    user = f"user{i}"
    return {"metadata": {"name": f"jupyter-{user}", "namespace": "jhub", "resourceVersion": "1",
                         "creationTimestamp": "2027-01-15T08:00:00Z",
                         "labels": {"component": "singleuser-server", podmeta.MANAGED_LABEL: "true",
                                    podmeta.MIGRATABLE_LABEL: "true"},
                         "annotations": {podmeta.USER_ANNOTATION: user, podmeta.SERVER_NAME_ANNOTATION: ""}},
            "spec": {"nodeName": node, "containers": [{"name": "notebook", "resources": {"requests": {
                "cpu": f"{rng.choice([250, 500, 1000])}m", "memory": f"{rng.choice([1, 2, 4, 8])}Gi"}}}]},
            "status": {"phase": "Running" if node else "Pending", "startTime": "2027-01-15T08:00:06Z"}}


def build(n_nodes: int, n_servers: int, seed: int = 1):
    rng = random.Random(seed)
    n_onprem = n_nodes // 2
    nodes = [node_obj(f"onprem-{i}", "on-prem") for i in range(n_onprem)]
    nodes += [node_obj(f"cloud-{i}", "cloud") for i in range(n_nodes - n_onprem)]
    running_cloud = (n_nodes - n_onprem) * 3 // 4  # a quarter of the pool stopped
    names = [n["metadata"]["name"] for n in nodes[:n_onprem + running_cloud]]
    pods = [pod_obj(i, names[i % len(names)], rng) for i in range(n_servers)]
    vms = [VM(f"i-{i}", f"cloud-{i}", RUNNING if i < running_cloud else STOPPED, f"cloud-{i}")
           for i in range(n_nodes - n_onprem)]
    return nodes, pods, vms


def drain_text(servers: int) -> str:
    """A drain record as a drain writes it, its servers restarted (each entry as `_move_steps` fills it)."""
    return json.dumps({"v": DRAIN_RECORD_VERSION, "state": "draining", "started": 1.8e9, "reason": "occupancy",
                       "servers": {f"user{i}": {
                           "user": f"user{i}", "name": "", "step": "done", "options": {}, "stop_sent": True,
                           "asked": "2027-01-15T08:00:00Z", "started": "2027-01-15T08:00:06Z", "to": "onprem-0",
                           "checkpoint": {"status": "saved", "kernels": 1, "bytes": 123456, "seconds": 1.2}}
                           for i in range(servers)}})


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--servers", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--policy", default="elastic")
    parser.add_argument("--drain-servers", type=int, default=60, help="servers the drain record names")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    nodes, pods, vms = build(args.nodes, args.servers)
    t0 = time.perf_counter()
    node_records = {n["metadata"]["name"]: node_record(n) for n in nodes}
    pod_records = {f"jhub/{p['metadata']['name']}": pod_record(p) for p in pods}
    parse_us = (time.perf_counter() - t0) / (len(nodes) + len(pods)) * 1e6

    # Dry run (decisions taken are only logged) and a fresh controller state
    # each cycle, so every cycle does the whole decision: no cooldown skips it.
    strategy = make_strategy(args.policy, PolicyConfig(theta_out=80, tmon=15, tcool=580))
    ctl = Controller(strategy, CachedInformer(node_records), CachedInformer(pod_records), kube=None, hub=None,
                     cloud=FixedPool(vms), settings=Settings(tmon=15, dry_run=True))
    loop = asyncio.new_event_loop()
    def cycle():
        ctl.state = ControllerState()
        loop.run_until_complete(ctl.cycle())
    cycle_ms = median_ms(cycle, args.repeat)
    actions = {d["action"] for d in ctl.decisions}
    snapshot = ctl.last.snapshot
    decide_ms = median_ms(lambda: strategy.decide(snapshot, ControllerState(), 0.0), args.repeat)
    records = list(pod_records.values())
    pass_ms = median_ms(lambda: sum(p.ram for p in records), args.repeat)
    # A drain under way: its record on the node names each of its servers (the cycle reads it for the
    # servers it restarts); observe with it vs without.
    drained = dict(node_records)
    cloud0 = nodes[len(nodes) // 2]
    annotations = {podmeta.DRAIN_ANNOTATION: drain_text(args.drain_servers)}
    drained["cloud-0"] = node_record(dict(cloud0, metadata={**cloud0["metadata"], "annotations": annotations}))
    config = ObserveConfig()
    plain_nodes, drain_nodes = list(node_records.values()), list(drained.values())
    pod_list = list(pod_records.values())
    observe_ms = median_ms(lambda: observe(plain_nodes, pod_list, vms, config, 0.0), args.repeat)
    drain_ms = median_ms(lambda: observe(drain_nodes, pod_list, vms, config, 0.0), args.repeat)
    tracker = SessionTracker()
    tracker.update(records, (), 0.0)  # then every cycle: the same sessions, still running
    history_ms = median_ms(lambda: tracker.update(records, (), 15.0), args.repeat)
    loop.close()

    report = {
        "nodes": args.nodes, "servers": args.servers, "policy": args.policy, "repeat": args.repeat,
        "cycle_ms_median": round(cycle_ms, 2), "target_ms": 100.0,
        "decide_ms_median": round(decide_ms, 2), "policy_share": round(decide_ms / cycle_ms, 3),
        "history_ms_median": round(history_ms, 2),
        "plain_pass_ms_median": round(pass_ms, 3), "cycle_over_plain_pass": round(cycle_ms / pass_ms, 1),
        "parse_us_per_object": round(parse_us, 1), "decisions": sorted(actions),
        "observe_ms_median": round(observe_ms, 3), "observe_drain_record_ms_median": round(drain_ms, 3),
        "drain_record_servers": args.drain_servers, "drain_record_ratio": round(drain_ms / observe_ms, 2),
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{args.nodes} nodes, {args.servers} servers, policy {args.policy}, median of {args.repeat}:")
        print(f"  one cycle from the caches (observe + bookkeeping + decide): {cycle_ms:.1f} ms (target < 100 ms)")
        print(f"  the policy's decide alone:                                {decide_ms:.1f} ms "
              f"({100 * decide_ms / cycle_ms:.0f} % of the cycle)")
        print(f"  with history_file, following every session adds:         {history_ms:.1f} ms "
              f"({history_ms / pass_ms:.0f} passes)")
        print(f"  reference, one plain pass over the cached pods:           {pass_ms:.2f} ms "
              f"(the cycle = {cycle_ms / pass_ms:.0f} passes)")
        print(f"  parsing one watched object into the cache:                {parse_us:.1f} us")
        print(f"  the snapshot (observe) with a drain record of {args.drain_servers} servers: {drain_ms:.2f} ms "
              f"vs {observe_ms:.2f} ms without ({drain_ms / observe_ms:.2f}x)")
        print(f"  decisions seen: {', '.join(sorted(actions))}")
    return 0 if cycle_ms < 100 else 1


if __name__ == "__main__":
    raise SystemExit(main())
