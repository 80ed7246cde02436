"""User-visible downtime of one server move: live (make-before-break, issue
#11) against break-before-make (restart), in the same run.

Each arm is a real JupyterHub + CHP with ElasticSpawner on the local cluster
(one on-prem, one cloud node) and `elastichub orchestrator` as its own process
with `c.ElasticOrchestrator.move_method = "live"` or `"restart"` (the test
harness of tests/e2e/movetools.py). Per run: a fresh user's server on the
cloud node with a state built in its notebook (hello-world, or a numpy array
of --big-gib GiB), the orchestrator started, the load falls (the on-prem
filler pod goes), a small variable is changed once the orchestrator reports
the move in flight (after the live path's pre-copy has begun), and the run
ends once the server runs on-prem, the cloud VM is stopped and the probe has
answered for a while. The state is then checked on the moved kernel.

The probe: a client of the same notebook as a JupyterLab tab (the product's
client, elastichub/demo/notebook.py: a session, then the kernel's websocket
through the hub's proxy) sends a trivial execute_request every
--probe-interval s and waits for its reply; when the socket closes or a
request goes unanswered for --probe-timeout s it reconnects (reopening the
session by path, as a tab reopened would: after a restart move that is what
creates the restored kernel). Downtime = the longest interval between two
consecutive successful replies (status "ok") around the move.

Also printed: the orchestrator's own report of the move (the `migrations`
of its status API: downtime_s, the checkpoint, and whatever per-phase
seconds the live path adds; every numeric field is shown).

Note: the probe's cells are activity for the live path's final step: a cell
that arrives during the pause makes the orchestrator thaw the source (the
cell runs there) and try again; its third try goes ahead and the cell is told
it did not run. So a short --probe-interval measures the busiest user, the
default 0.1 s a very busy one.

    python benchmarks/live_migration_bench.py [--methods restart,live] [--runs 3] [--big-runs 2]
        [--big-gib 1] [--probe-interval 0.05] [--json]

Not part of the test suite (minutes of real processes).
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

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "tests", REPO / "tests" / "e2e"):  # the e2e harness (hub, orchestrator, cluster)
    sys.path.insert(0, str(path))

from hubtools import Hub, open_notebook  # noqa: E402
from movetools import MoveLab  # noqa: E402

from elastichub.demo.notebook import Notebook, NotebookError  # noqa: E402

HELLO = "msg = 'Hello World!'\nsmall = 1"
HELLO_CHECK = "print(msg, small)"
HELLO_EXPECT = "Hello World! 2"
BIG = ("import numpy as np\nbig = np.random.default_rng(7).random(int({gib} * 2**30 // 8))\n"
       "check = float(big[::4096].sum())\nsmall = 1")
BIG_CHECK = "print(float(big[::4096].sum()) == check, big.nbytes, small)"
DELTA = "small = 2"  # the small change made while the move is in flight
PROBE = "1"


class Probe:
    """Trivial cells on `user`'s notebook at `path`, every `interval` s; reply times."""

    def __init__(self, hub: Hub, user: str, path: str, interval: float, timeout: float):
        self.hub, self.user, self.path = hub, user, path
        self.interval, self.timeout = interval, timeout
        self.ok: list[float] = []  # monotonic times of successful replies
        self.failures: list[tuple[float, str]] = []  # (time, what) of errors and reconnects
        self.reconnects = 0
        self._stop = asyncio.Event()
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        self._stop.set()
        if self.task is not None:
            await self.task

    async def _run(self) -> None:
        nb: Notebook | None = None
        while not self._stop.is_set():
            if nb is None:
                try:
                    nb = await asyncio.wait_for(
                        Notebook(self.hub.url, self.user, self.hub.token, self.path).open(create=False), 10)
                except (NotebookError, OSError, asyncio.TimeoutError, Exception) as e:
                    self.failures.append((time.monotonic(), f"open: {type(e).__name__}: {str(e)[:120]}"))
                    nb = None
                    await asyncio.sleep(self.interval)
                    continue
            sent = time.monotonic()
            try:
                out = await nb.run(PROBE, timeout=self.timeout)
                if out["status"] == "ok":
                    self.ok.append(time.monotonic())
                else:
                    self.failures.append((time.monotonic(), f"reply {out['status']}: {out['error']} "
                                                            f"{out['stderr'][:160]}"))
            except (NotebookError, OSError, asyncio.TimeoutError, Exception) as e:
                self.failures.append((time.monotonic(), f"run: {type(e).__name__}: {str(e)[:120]}"))
                nb.close()
                nb = None
                self.reconnects += 1
            await asyncio.sleep(max(0.0, self.interval - (time.monotonic() - sent)))
        if nb is not None:
            nb.close()

    def downtime(self, start: float, end: float) -> tuple[float, float | None]:
        """The longest gap between consecutive successful replies that overlaps
        [start, end], and where it began (seconds after start)."""
        best, at = 0.0, None
        for a, b in zip(self.ok, self.ok[1:]):
            if b >= start and a <= end and b - a > best:
                best, at = b - a, a - start
        return best, at


def numeric_fields(report: dict, prefix: str = "") -> dict:
    """Every number of an orchestrator move report, nested dicts flattened (a.b)."""
    out = {}
    for key, value in report.items():
        name = f"{prefix}{key}"
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and key != "at" and not key.endswith("_at"):  # not timestamps
            out[name] = value
        elif isinstance(value, dict):
            out.update(numeric_fields(value, name + "."))
    return out


async def one_move(lab: MoveLab, user: str, state: str, check: str, expect: str, args, log) -> dict:
    hub = lab.hub
    await lab.put_on_cloud(user)
    path = f"{user}.ipynb"
    nb = await open_notebook(hub, user, path)
    out = await nb.run(state, timeout=600)
    assert out["status"] == "ok", out
    probe = Probe(hub, user, path, args.probe_interval, args.probe_timeout)
    probe.start()
    await asyncio.sleep(2)  # a steady probe before anything happens
    assert probe.ok, f"the probe gets no answer before the move: {probe.failures[-3:]}"
    await lab.start_orchestrator()
    start = time.monotonic()
    lab.let_load_fall()
    # The small change, once the move is under way (after the live path's pre-copy began).
    deadline = time.monotonic() + 120
    while not [r for r in await lab.move_reports(user) if r["outcome"] == "in-flight"]:
        if time.monotonic() > deadline or [r for r in await lab.move_reports(user) if r["outcome"] != "in-flight"]:
            break
        await asyncio.sleep(0.1)
    delta_at = time.monotonic() - start
    try:
        delta = await nb.run(DELTA, timeout=60)
        delta_status = delta["status"]
    except Exception as e:  # the tab's socket died with the source (restart path)
        delta_status = f"{type(e).__name__}"
    nb.close()
    await lab.wait_moved(user, timeout=600)
    moved = time.monotonic()
    reports = await lab.move_reports(user)
    await asyncio.sleep(args.settle)
    await probe.stop()
    await lab.stop_orchestrator()
    down, down_at = probe.downtime(start, moved)
    nb = await open_notebook(hub, user, path)
    checked = (await nb.run(check, timeout=600))["stdout"].strip()
    nb.close()
    # The state must be intact; the small change ("small = 2") may be lost
    # only when its cell got no reply (delta_status not "ok": the socket was
    # cut, it may or may not have run before the source stopped).
    head, _, small = checked.rpartition(" ")
    state_ok = head == expect.rpartition(" ")[0] and (small == "2" or (delta_status != "ok" and small == "1"))
    report = next((r for r in reversed(reports) if r["outcome"] != "in-flight"), reports[-1] if reports else {})
    row = {"user": user, "downtime_s": round(down, 3), "downtime_starts_s": None if down_at is None else round(down_at, 2),
           "move_s": round(moved - start, 2), "delta_sent_at_s": round(delta_at, 2), "delta_status": delta_status,
           "probe_ok": len(probe.ok), "probe_failures": len(probe.failures), "probe_reconnects": probe.reconnects,
           "state_ok": state_ok, "small_kept": small == "2", "state": checked, "outcome": report.get("outcome"),
           "orchestrator": numeric_fields(report), "report": report,
           "failures_sample": [f"{t - start:+.2f}s {w}" for t, w in probe.failures[:3] + probe.failures[-3:]]}
    log(f"  {user}: downtime {row['downtime_s']:.2f} s (starts {row['downtime_starts_s']} s after the load "
        f"fell), move {row['move_s']:.1f} s, outcome {row['outcome']}, small change {delta_status} "
        f"(kept: {row['small_kept']}), "
        f"state ok {row['state_ok']} ({checked}), "
        f"probe {row['probe_ok']} ok / {row['probe_failures']} failed, orchestrator {row['orchestrator']}")
    await hub.stop_server(user, timeout=120)  # on-prem room for the next run's filler
    return row


async def arm(method: str, args, workdir: Path, log) -> dict:
    from elastichub.localcluster.cluster import LocalCluster

    clusters, hubs = [], []

    async def cluster_factory(config, **settings):
        config = config.replace(port=0, kubeconfig=str(workdir / "kubeconfig"), workdir=str(workdir))
        cluster = LocalCluster(config, **settings)
        await cluster.start()
        clusters.append(cluster)
        return cluster

    async def hub_factory(cluster, extra_config="", spawner_class="elastic"):
        hubdir = workdir / "hub"
        hubdir.mkdir(exist_ok=True)
        hub = Hub(hubdir, cluster.kubeconfig, extra_config, spawner_class)
        hubs.append(hub)
        await hub.start()
        return hub

    rows: dict[str, list[dict]] = {"hello": [], "big": []}
    lab = MoveLab(cluster_factory, hub_factory, workdir, method)
    try:
        await lab.start()
        plan = [("hello", i) for i in range(args.runs)] + [("big", i) for i in range(args.big_runs)]
        for kind, i in plan:
            user = f"{method[:4]}-{kind}-{i}"
            if kind == "hello":
                row = await one_move(lab, user, HELLO, HELLO_CHECK, HELLO_EXPECT, args, log)
            else:
                gib = args.big_gib
                row = await one_move(lab, user, BIG.format(gib=gib), BIG_CHECK,
                                     f"True {int(gib * 2**30 // 8) * 8} 2", args, log)
            rows[kind].append(row)
    finally:
        if lab.orch is not None:
            await lab.orch.kill()
        for hub in hubs:
            await hub.stop()
        for cluster in clusters:
            await cluster.stop()
    return rows


def summary(rows: list[dict]) -> dict:
    if not rows:
        return {}
    out = {"runs": len(rows), "downtime_median_s": round(statistics.median(r["downtime_s"] for r in rows), 3),
           "downtime_max_s": max(r["downtime_s"] for r in rows),
           "move_median_s": round(statistics.median(r["move_s"] for r in rows), 2),
           "moved": sum(r["outcome"] == "moved" for r in rows), "state_ok": sum(r["state_ok"] for r in rows),
           "small_change_kept": sum(r["small_kept"] for r in rows)}
    keys = sorted({k for r in rows for k in r["orchestrator"]})
    out["orchestrator_medians"] = {k: round(statistics.median(r["orchestrator"][k] for r in rows
                                                              if k in r["orchestrator"]), 3) for k in keys}
    return out


async def main_async(args) -> dict:
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if args.json else (lambda m: print(m, flush=True))
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    result = {"probe_interval_s": args.probe_interval, "big_gib": args.big_gib, "arms": {}}
    for method in methods:
        log(f"{method}: {args.runs} hello-world run(s), {args.big_runs} run(s) of {args.big_gib:g} GiB")
        with tempfile.TemporaryDirectory(prefix=f"elastichub-live-bench-{method}-") as tmp:
            try:
                rows = await arm(method, args, Path(tmp), log)
            except Exception as e:
                log(f"{method}: FAILED: {type(e).__name__}: {str(e)[:2000]}")
                result["arms"][method] = {"error": f"{type(e).__name__}: {str(e)[:2000]}"}
                continue
        result["arms"][method] = {kind: {"summary": summary(r), "runs": r} for kind, r in rows.items()}
    return result


def print_table(result: dict) -> None:
    print(f"\nUser-visible downtime per move (probe every {result['probe_interval_s']:g} s; medians)")
    print(f"{'method':<8} {'state':<8} {'runs':>4} {'downtime':>10} {'max':>8} {'move':>8} {'moved':>6} {'state ok':>8} "
          f"{'delta kept':>10}")
    for method, arm_result in result["arms"].items():
        if "error" in arm_result:
            print(f"{method:<8} {arm_result['error']}")
            continue
        for kind, data in arm_result.items():
            s = data["summary"]
            if not s:
                continue
            label = kind if kind == "hello" else f"{result['big_gib']:g} GiB"
            print(f"{method:<8} {label:<8} {s['runs']:>4} {s['downtime_median_s']:>9.2f}s {s['downtime_max_s']:>7.2f}s "
                  f"{s['move_median_s']:>7.1f}s {s['moved']:>6} {s['state_ok']:>8} {s['small_change_kept']:>10}")
            for key, value in s["orchestrator_medians"].items():
                print(f"{'':<18} orchestrator {key}: {value}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default="restart,live", help="comma-separated: restart, live")
    parser.add_argument("--runs", type=int, default=3, help="hello-world runs per method")
    parser.add_argument("--big-runs", type=int, default=2, help="large-state runs per method")
    parser.add_argument("--big-gib", type=float, default=1.0)
    parser.add_argument("--probe-interval", type=float, default=0.1)
    parser.add_argument("--probe-timeout", type=float, default=5.0,
                        help="an unanswered probe cell after this many seconds: reconnect")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds of probing after the move")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(result, indent=1, default=str))
    else:
        print_table(result)
    failed = [m for m, a in result["arms"].items() if "error" in a and m != "live"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
