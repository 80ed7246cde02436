"""The paper's migration figure, measured on the local cluster in one run.

The paper (Podman, 8 vCPU): restarting a hello-world server takes 5.6 s with
stock Jupyter, 8.4 s with ElasticNotebook's checkpoint/restore, 6.2 s
(+10.7 %) with lazy type probing. Here, the same measurement: the time from
the stop request to the user's restored kernel answering an execute_request,
the server moved to another node (its node cordoned), for

  (a) stock ipykernel with KubeSpawner (the state is lost: nothing to save);
  (b) ElasticSpawner + the Elastic Python kernel, hello-world state and a
      1 GiB state (restored, checked after the timing).

Both run the repository's jupyterhub_config_example.py on the local cluster
(the demo's stage), (a) with the spawner class swapped for KubeSpawner.
Reported: medians and the ratio (b)/(a), and where the time goes:

  checkpoint   the kernels' checkpoint inside the stop (the spawner's record)
  stop         the rest of the stop (pod deletion, the hub's bookkeeping)
  schedule     start request -> pod bound to a node (the hub's spawn included)
  start        pod bound -> the server answers (the hub says ready)
  kernel       session request -> the kernel answers, its restore included
  restore      the kernel's own restore time (its status endpoint)

    python benchmarks/migration_bench.py [--runs 5] [--big-runs 3] [--big-gib 1] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from elastichub.demo.notebook import Notebook
from elastichub.demo.stage import EXAMPLE_CONFIG, Stage, StageSettings

USER = "bench"
HELLO = "msg = 'Hello World!'"
BIG = "import numpy as np\nbig = np.random.default_rng(7).random({n})\ncheck = float(big[::4096].sum())"
PROBE = "print(1 + 1)"

BENCH_CONFIG = """
load_subconfig({example!r})
c.JupyterHub.spawner_class = {spawner!r}
# the orchestrator is not part of this measurement: never let it act
c.JupyterHub.services = [s for s in c.JupyterHub.services if s["name"] != "elastichub-orchestrator"]
c.JupyterHub.load_roles = [r for r in c.JupyterHub.load_roles if r["name"] != "elastichub-orchestrator"]
for role in c.JupyterHub.load_roles:
    if role["name"] == "elastichub-demo":
        role["scopes"].append("admin:server_state")
"""


def set_cordon(cluster, node: str, on: bool) -> None:
    def mutate(obj):
        obj["spec"]["unschedulable"] = on
    cluster.store.update("nodes", node, mutate)


async def bound_at(cluster, old_uid: str) -> float:
    """When (monotonic) a new pod of the server is bound to a node: the
    cluster runs in this process, so it is watched at 5 ms resolution."""
    while True:
        try:
            pod = cluster.store.get("pods", f"jupyter-{USER}", "default")
            if pod["metadata"]["uid"] != old_uid and pod["spec"].get("nodeName"):
                return time.monotonic()
        except Exception:  # not created yet
            pass
        await asyncio.sleep(0.005)


async def wait_server(stage, ready: bool, timeout: float = 300) -> dict | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code, user = await stage.api("GET", f"/users/{USER}")
        server = (user or {}).get("servers", {}).get("")
        if (server is not None and server.get("ready")) if ready else server is None:
            return server
        await asyncio.sleep(0.05)
    raise RuntimeError(f"the server did not {'start' if ready else 'stop'} within {timeout} s")


async def one_move(stage, kernel: str, path: str) -> dict:
    """Move the server to the other node; timings of the whole and its parts."""
    cluster = stage.cluster
    pod = cluster.store.get("pods", f"jupyter-{USER}", "default")
    here = pod["spec"]["nodeName"]
    for name in cluster.kubelets:
        if name.startswith("onprem-"):
            set_cordon(cluster, name, name == here)

    t0 = time.monotonic()
    code, _ = await stage.api("DELETE", f"/users/{USER}/server")
    assert code in (202, 204), code
    await wait_server(stage, ready=False)
    t_stopped = time.monotonic()
    binding = asyncio.create_task(bound_at(cluster, pod["metadata"]["uid"]))
    code, _ = await stage.api("POST", f"/users/{USER}/server")
    assert code in (201, 202), code
    server = await wait_server(stage, ready=True)
    t_ready = time.monotonic()
    schedule = await asyncio.wait_for(binding, 5) - t_stopped
    nb = await Notebook(stage.url, USER, stage.token, path, kernel=kernel).open(create=False)
    out = await nb.run(PROBE)
    t_answered = time.monotonic()
    assert out["stdout"] == "2\n", out

    new = cluster.store.get("pods", f"jupyter-{USER}", "default")
    assert new["spec"]["nodeName"] != here, "the server did not move"
    checkpoint = (((server or {}).get("state") or {}).get("elastichub") or {}).get("last_checkpoint") or {}
    restore = 0.0
    if kernel == "elastic-python":
        code, status = await stage.api("GET", f"{stage.url}/user/{USER}/api/elastichub/status")
        restored = ((status or {}).get("kernels") or [{}])[0].get("status", {}).get("restored") or {}
        restore = float(restored.get("seconds") or restored.get("wall_seconds") or 0.0)
    ckpt = float(checkpoint.get("seconds") or 0.0)
    return {
        "total": t_answered - t0,
        "checkpoint": ckpt,
        "stop": t_stopped - t0 - ckpt,
        "schedule": schedule,
        "start": t_ready - t_stopped - schedule,
        "kernel": t_answered - t_ready,
        "restore": restore,
        "checkpoint_status": checkpoint.get("status"),
        "to": new["spec"]["nodeName"],
        "nb": nb,
    }


async def variant(name: str, spawner: str, kernel: str, setups: list[tuple[str, str, int]], workdir: Path,
                  log) -> dict:
    config = workdir / f"bench_{name}.py"
    config.write_text(BENCH_CONFIG.format(example=str(EXAMPLE_CONFIG), spawner=spawner))
    stage = Stage(StageSettings(onprem_nodes=2, cloud_nodes=0, node_memory="8Gi", config=config,
                                workdir=workdir / name))
    results: dict = {}
    try:
        await stage.start(log=log, wait_for_orchestrator=False)
        await stage.api("POST", f"/users/{USER}")
        await stage.api("POST", f"/users/{USER}/server")
        await wait_server(stage, ready=True)
        for label, code, runs in setups:
            path = f"{label}.ipynb"
            nb = await Notebook(stage.url, USER, stage.token, path, kernel=kernel).open()
            out = await nb.run(code)
            assert out["status"] == "ok", out
            expected = (await nb.run("print(repr(check) if 'check' in dir() else msg)"))["stdout"]
            nb.close()
            rows = []
            for i in range(runs):
                row = await one_move(stage, kernel, path)
                if kernel == "elastic-python":  # after the timing: the state came back
                    got = (await row["nb"].run("print(repr(check) if 'check' in dir() else msg)"))["stdout"]
                    row["state_identical"] = got == expected
                row.pop("nb").close()
                rows.append(row)
                log(f"  {name} {label} move {i + 1}/{runs}: {row['total']:.2f} s "
                    f"(checkpoint {row['checkpoint']:.2f}, restore {row['restore']:.2f})")
            results[label] = rows
    finally:
        await stage.stop()
    return results


def medians(rows: list[dict]) -> dict:
    keys = ("total", "checkpoint", "stop", "schedule", "start", "kernel", "restore")
    return {k: round(statistics.median(r[k] for r in rows), 3) for k in keys}


async def main_async(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="elastichub-migration-bench-"))
    log = (lambda m: print(m, file=sys.stderr)) if args.json else print
    big = BIG.format(n=int(args.big_gib * 2**30 / 8))
    stock = await variant("stock", "kubespawner.KubeSpawner", "python3", [("hello", HELLO, args.runs)], work, log)
    setups = [("hello", HELLO, args.runs)] + ([("big", big, args.big_runs)] if args.big_runs else [])
    elastic = await variant("elastic", "elastic", "elastic-python", setups, work, log)
    report = {"runs": args.runs, "big_runs": args.big_runs, "big_gib": args.big_gib,
              "stock_hello": medians(stock["hello"]), "elastic_hello": medians(elastic["hello"])}
    report["ratio_hello"] = round(report["elastic_hello"]["total"] / report["stock_hello"]["total"], 4)
    if args.big_runs:
        report["elastic_big"] = medians(elastic["big"])
        report["ratio_big"] = round(report["elastic_big"]["total"] / report["stock_hello"]["total"], 4)
    report["states_identical"] = all(r.get("state_identical") for rows in elastic.values() for r in rows)
    report["checkpoints"] = sorted({r["checkpoint_status"] for rows in elastic.values() for r in rows} - {None})
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="moves per hello-world variant (default 5)")
    parser.add_argument("--big-runs", type=int, default=3, help="moves with the large state (0: skip)")
    parser.add_argument("--big-gib", type=float, default=1.0, help="the large state's size in GiB")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(report))
        return 0
    cols = ("total", "checkpoint", "stop", "schedule", "start", "kernel", "restore")
    print(f"\nmedians in seconds ({args.runs} moves each, {args.big_runs} with {args.big_gib:g} GiB):")
    print(f"{'':26}" + "".join(f"{c:>11}" for c in cols))
    rows = [("(a) stock, hello world", report["stock_hello"]), ("(b) elastic, hello world", report["elastic_hello"])]
    if args.big_runs:
        rows.append((f"(b) elastic, {args.big_gib:g} GiB", report["elastic_big"]))
    for label, m in rows:
        print(f"{label:26}" + "".join(f"{m[c]:>11.2f}" for c in cols))
    print(f"\n(b)/(a) hello world: {report['ratio_hello']:.3f} (target <= 1.02; the paper: 6.2/5.6 = 1.107)")
    if args.big_runs:
        print(f"(b)/(a) {args.big_gib:g} GiB:     {report['ratio_big']:.3f}")
    print(f"every restored state identical: {report['states_identical']}; checkpoints: {report['checkpoints']}")
    return 0 if report["states_identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
