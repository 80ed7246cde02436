"""Live-migration timings with two real Elastic kernels (not part of the test suite).

    PYTHONPATH=kernel python kernel/benchmarks/bench_live.py [--gib 1] [--dir /tmp/x]

State: ``--gib`` GiB of numpy arrays (8 arrays) plus a few small variables.
Pre-copy, start the destination (it restores the pre-copy), change one
small variable, then time freeze (delta write) and apply, as the kernels
report them ("seconds") and as the caller waits for them (round trip).
Then the same for a hello-world state (one int).

"cell during precopy": trivial cells (``pass``) sent one after another
from the moment the pre-copy request is sent until it answers; the longest
wait for a reply is how long the user's kernel did not answer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from elastichub_kernel.install import kernel_json


def start(kernels_dir, root, env_extra=None):
    env = {**os.environ, "ELASTICHUB_CHECKPOINT_DIR": root, "JPY_SESSION_NAME": "bench/live.ipynb",
           "ELASTICHUB_DISK_SPEED_MBPS": "500", **(env_extra or {})}
    km = KernelManager(kernel_name="elastic-python", kernel_spec_manager=KernelSpecManager(kernel_dirs=[kernels_dir]))
    km.start_kernel(env=env)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    return km, kc


def cell(kc, code):
    reply = kc.execute_interactive(code, timeout=600, output_hook=lambda m: None)
    assert reply["content"]["status"] == "ok", reply["content"]


def live(kc, phase, **content):
    msg = kc.session.msg("elastichub_live_request", {"phase": phase, **content})
    started = time.perf_counter()
    kc.control_channel.send(msg)
    while True:
        reply = kc.control_channel.get_msg(timeout=600)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            body = reply["content"]
            body["round_trip"] = round(time.perf_counter() - started, 4)
            assert body["ok"], body
            return body


def precopy_with_cells(kc):
    """Pre-copy while trivial cells run back to back: (reply, cell waits)."""
    msg = kc.session.msg("elastichub_live_request", {"phase": "precopy"})
    started = time.perf_counter()
    kc.control_channel.send(msg)
    waits, reply = [], None
    while reply is None:
        sent = time.perf_counter()
        cell_id = kc.execute("pass", silent=True)
        while True:
            got = kc.shell_channel.get_msg(timeout=600)
            if got["parent_header"].get("msg_id") == cell_id:
                break
        waits.append(time.perf_counter() - sent)
        try:
            while True:
                answer = kc.control_channel.get_msg(timeout=0)
                if answer["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                    reply = answer["content"]
                    break
        except Exception:  # queue.Empty: still writing
            pass
    reply["round_trip"] = round(time.perf_counter() - started, 4)
    assert reply["ok"], reply
    return reply, waits


def run(kernels_dir, root, setup, change, label):
    src_km, src = start(kernels_dir, root)
    dst_km = None
    try:
        cell(src, setup)
        pre, waits = precopy_with_cells(src)
        dst_km, dst = start(kernels_dir, root, {"ELASTICHUB_LIVE_DESTINATION": "1"})
        cell(src, change)
        frozen = live(src, "freeze", wait_s=5, lease_s=60)
        applied = live(dst, "apply", delta_id=frozen["delta_id"])
        retired = live(src, "retire")
        print(json.dumps({
            "state": label,
            "precopy": {"seconds": pre["seconds"], "round_trip": pre["round_trip"], "bytes": pre["bytes"]},
            "cell during precopy": {"cells": len(waits), "max_wait_s": round(max(waits), 4),
                                    "median_wait_s": round(sorted(waits)[len(waits) // 2], 4)},
            "freeze": {k: frozen[k] for k in ("seconds", "round_trip", "bytes", "changed_buffers", "reused_buffers")},
            "apply": {k: applied[k] for k in ("seconds", "round_trip", "bytes_read")},
            "retire": {k: retired[k] for k in ("seconds", "round_trip")},
            "freeze+apply+retire round trips": round(frozen["round_trip"] + applied["round_trip"]
                                                     + retired["round_trip"], 4),
        }))
    finally:
        for km in (src_km, dst_km):
            if km is not None:
                km.shutdown_kernel(now=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="elastichub-bench-")
    kernels = os.path.join(base, "kernels")
    os.makedirs(os.path.join(kernels, "elastic-python"), exist_ok=True)
    with open(os.path.join(kernels, "elastic-python", "kernel.json"), "w") as f:
        json.dump(kernel_json(executable=sys.executable), f)  # the installed kernelspec, as a hub runs it
    n = int(args.gib * 2**30 / 8 / 8)
    run(kernels, os.path.join(base, "big"),
        f"import numpy as np\nrng = np.random.default_rng(1)\narrays = [rng.random({n}) for _ in range(8)]\n"
        "first = arrays[0]\nsmall = {'a': 1}", "small = {'a': 2}", f"{args.gib:g} GiB numpy, small change")
    run(kernels, os.path.join(base, "big2"),
        f"import numpy as np\nrng = np.random.default_rng(1)\narrays = [rng.random({n}) for _ in range(8)]",
        "arrays[3][0] = -1.0", f"{args.gib:g} GiB numpy, one 1/8 array changed in place")
    run(kernels, os.path.join(base, "hello"), "x = 1", "x = 2", "hello world")


if __name__ == "__main__":
    main()
