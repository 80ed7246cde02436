#!/usr/bin/env python
"""What the namespace pickler's extra work costs, against plain cloudpickle.

In-process, no kernel. Each figure is a median of ``--repeats`` next to its
reference measured in the same run:

- an ordinary state (200,000 objects of a notebook class, 300,000 dicts, a
  40 MB array): ``dump_namespace`` vs one cloudpickle dump of the same
  values (the per-object checks for idioms, views and flat saving);
- a linked list of ``--nodes`` nodes, too deep for pickle's recursion and
  saved flat: time per node vs the same number of independent nodes saved
  the usual way;
- the same ordinary state plus three such lists: each variable found too
  deep costs one more pass over the variables saved before it.

Usage: python benchmarks/serializer_bench.py [--repeats 5] [--nodes 100000] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import cloudpickle
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kernel"))
from elastichub_kernel import serializer  # noqa: E402
from policy_bench import median_seconds  # noqa: E402  (this directory: the script's own)

STATE = '''
class Point:
    def __init__(self, i):
        self.i, self.tags = i, ["a", i]
class Link:
    def __init__(self, nxt=None):
        self.nxt = nxt
points = [Point(i) for i in range(200_000)]
rows = [{"id": i, "name": f"n{i}", "score": i * 0.5} for i in range(300_000)]
arr = np.random.rand(5_000_000)
'''


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    ns = {"__name__": "__main__", "np": np}
    exec(STATE, ns)
    names = ["points", "rows", "arr"]
    chain = None
    for _ in range(args.nodes):
        chain = ns["Link"](chain)
    ns["chain"] = chain
    ns["loose"] = [ns["Link"]() for _ in range(args.nodes)]
    for k in range(3):
        deep = None
        for _ in range(2_000):
            deep = ns["Link"](deep)
        ns[f"deep{k}"] = deep

    def plain_dump():
        cloudpickle.Pickler(io.BytesIO(), protocol=5, buffer_callback=lambda b: False).dump(
            [ns[n] for n in names])

    ordinary = median_seconds(lambda: serializer.dump_namespace(ns, names), args.repeats)
    reference = median_seconds(plain_dump, args.repeats)
    flat = median_seconds(lambda: serializer.dump_namespace(ns, ["chain"]), args.repeats)
    loose = median_seconds(lambda: serializer.dump_namespace(ns, ["loose"]), args.repeats)
    deep3 = median_seconds(lambda: serializer.dump_namespace(ns, names + ["deep0", "deep1", "deep2"]), args.repeats)
    report = {
        "ordinary_state_s": ordinary, "cloudpickle_same_values_s": reference,
        "ordinary_vs_cloudpickle": ordinary / reference,
        "flat_chain_s": flat, "independent_nodes_s": loose, "flat_vs_independent": flat / loose,
        "with_three_deep_variables_s": deep3, "three_deep_vs_ordinary": deep3 / ordinary,
        "nodes": args.nodes, "repeats": args.repeats,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"ordinary state: {ordinary:.3f} s vs one cloudpickle dump {reference:.3f} s: "
              f"{report['ordinary_vs_cloudpickle']:.2f}x")
        print(f"linked list of {args.nodes:,} saved flat: {flat:.3f} s vs {args.nodes:,} independent nodes "
              f"{loose:.3f} s: {report['flat_vs_independent']:.2f}x")
        print(f"ordinary state + 3 lists too deep: {deep3:.3f} s: {report['three_deep_vs_ordinary']:.2f}x the "
              f"ordinary state (one more pass per deep variable)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
