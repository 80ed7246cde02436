#!/usr/bin/env python
"""Mutation run over the safety-critical functions, with cosmic-ray (PyPI).

Not part of the default test run (it takes 15-30 min on 2 cores): run it
with ``tox -e mutation`` or ``.venv/bin/python scripts/mutation.py``.

Each target is a module, the functions in it whose mistakes would lose or
corrupt data or break a placement rule, and the tests that claim to guard
them. cosmic-ray mutates only those functions' lines (its line filter),
runs the tests once per mutant, and the script writes a report: killed and
survived per function, and every survivor with its diff and either the
reason it is an equivalent mutant (``EQUIVALENT`` below, reviewed by hand)
or "NOT EXPLAINED" (exit status 1: a test is missing).

cosmic-ray edits the source files in place while it runs (and restores
them): run nothing else in this checkout meanwhile.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# -x: a mutant is killed at the first failure. Plugins the kernel tests do
# not use are left out: ~0.5 s less per mutant.
PYTEST = f"{sys.executable} -m pytest -x -q -p no:cacheprovider"
KERNEL_PYTEST = f"{PYTEST} -p no:hypothesispytest -p no:asyncio"

# (module file, functions, pytest command and the tests that guard them).
# "name:N" mutates only the first N lines of a function's body (a guard at
# its top).
TARGETS = [
    ("kernel/elastichub_kernel/storage.py",
     ["read_checkpoint", "_read_index_fd", "_validate_index", "_ownership_problem"],
     f"{KERNEL_PYTEST} kernel/tests/test_storage_index.py kernel/tests/test_storage.py -k 'not 32MiB'"),
    ("kernel/elastichub_kernel/engine.py", ["value_fingerprint", "_recompute_pure"],
     f"{KERNEL_PYTEST} kernel/tests/test_engine.py"),
    ("kernel/elastichub_kernel/recorder.py", ["_is_pure"],
     f"{KERNEL_PYTEST} kernel/tests/test_recorder.py kernel/tests/test_engine.py"),
    ("elastichub/policy/placement.py", ["plan_migration"],
     f"{PYTEST} tests/policy/test_placement_rules.py tests/policy/test_paper_policy.py "
     "tests/policy/test_elastic_rules.py"),
    ("elastichub/policy/elastic.py", ["_still_draining", "_scale_in_plan:2", "decide:2"],
     f"{PYTEST} tests/policy/test_scale_in_guards.py tests/policy/test_elastic_rules.py "
     "tests/policy/test_drain_exclusive_props.py"),
]

# Survivors reviewed by hand: (file, function, the mutated line as written,
# operator name) -> why no test can tell the mutant from the original.
# The operator is matched as a prefix ("core/ReplaceBinaryOperator": any of them).
EQUIVALENT: dict[tuple[str, str, str, str], str] = {
    ("kernel/elastichub_kernel/storage.py", "read_checkpoint",
     '_drop_behind(fd, entry["offset"] + start, got)', "core/ReplaceBinaryOperator"):
        "only where the page-cache eviction hint points: the bytes read and checked are the same "
        "(the benchmark's restore figure is what notices it).",
    ("kernel/elastichub_kernel/storage.py", "_read_index_fd", "if version != FORMAT_VERSION:",
     "core/ReplaceComparisonOperator_NotEq_IsNot"):
        "the version comes from struct.unpack and FORMAT_VERSION is 1: CPython's small ints are "
        "singletons, so `is not` and `!=` agree on every value.",
    ("kernel/elastichub_kernel/storage.py", "_validate_index",
     'if index.get("format") != FORMAT_VERSION or not isinstance(index.get("chunk"), int) or index["chunk"] <= 0:',
     "core/ReplaceComparisonOperator_NotEq_IsNot"):
        "small ints are singletons, so `is not 1` and `!= 1` agree on every int; for 1.0 or true "
        "the mutant refuses what the original accepts (stricter): no file it accepts is refused "
        "by the original.",
    ("kernel/elastichub_kernel/storage.py", "_read_index_fd", "if size < _HEADER.size + _TRAILER.size:",
     "core/ReplaceBinaryOperator_Add_BitXor"):
        "16 ^ 32 == 16 + 32: the same number.",
    ("kernel/elastichub_kernel/storage.py", "_read_index_fd", "if size < _HEADER.size + _TRAILER.size:",
     "core/ReplaceBinaryOperator_Add_BitOr"):
        "16 | 32 == 16 + 32: the same number.",
    ("kernel/elastichub_kernel/storage.py", "_read_index_fd", "if size < _HEADER.size + _TRAILER.size:",
     "core/ReplaceComparisonOperator_Lt_LtE"):
        "a file of exactly 48 bytes (header and trailer, an empty index) is refused either way: "
        "as 'truncated' by the mutant, as a malformed (empty) index by the original.",
    ("kernel/elastichub_kernel/storage.py", "_read_index_fd", "if len(raw) != length or crc32(raw) != crc:",
     "core/ReplaceComparisonOperator_NotEq_Gt"):
        "a short read of the index (the file shrank after the size check) fails the checksum in the "
        "same condition, with the same message.",
    ("kernel/elastichub_kernel/storage.py", "_read_index_fd", "if len(raw) != length or crc32(raw) != crc:",
     "core/ReplaceComparisonOperator_NotEq_Lt"):
        "os.pread never returns more bytes than asked for: `<` and `!=` agree.",
    ("kernel/elastichub_kernel/storage.py", "read_checkpoint", "if got != len(part):",
     "core/ReplaceComparisonOperator_NotEq_Lt"):
        "os.preadv never returns more bytes than its buffers hold: `<` and `!=` agree.",
    ("elastichub/policy/placement.py", "plan_migration",
     "if best is None or key > best_key or (key == best_key and slot[5] < best[5]):",
     "core/ReplaceComparisonOperator_Eq_GtE"):
        "where key > best_key the clause before is already true: `>=` adds nothing to `==`.",
    ("elastichub/policy/placement.py", "plan_migration",
     "if best is None or key > best_key or (key == best_key and slot[5] < best[5]):",
     "core/ReplaceComparisonOperator_Lt_LtE"):
        "node names are unique in a snapshot and a slot is never compared with itself: two "
        "different names are never equal.",
    ("elastichub/policy/placement.py", "plan_migration", "share = slot[1] / slot[2] if slot[2] > 0 else 1.0",
     "core/ReplaceComparisonOperator_Gt_NotEq"):
        "allocatable RAM is never negative: `> 0` and `!= 0` agree.",
    ("elastichub/policy/placement.py", "plan_migration", "share = slot[1] / slot[2] if slot[2] > 0 else 1.0",
     "core/NumberReplacer"):
        "`> 1` differs only for a node with exactly one byte of allocatable RAM (share 1.0 instead "
        "of 0 or 1): no real node; the other number mutants here are killed.",
    ("kernel/elastichub_kernel/storage.py", "_ownership_problem", "if st.st_uid != os.geteuid():",
     "core/ReplaceComparisonOperator_NotEq_IsNot"):
        "equivalent only as root (uid 0 is a cached small int), as this run is; as any user with "
        "a uid above 256 the mutant refuses the user's own checkpoints, which every round-trip "
        "test would catch.",
    ("elastichub/policy/elastic.py", "_still_draining", "return node.status is NodeStatus.CORDONED",
     "core/ReplaceComparisonOperator_Is_Eq"):
        "enum members are singletons: `is` and `==` agree.",
    ("kernel/elastichub_kernel/engine.py", "value_fingerprint",
     "return hashlib.sha256(pickle.dumps(value, protocol=5)).hexdigest()", "core/NumberReplacer"):
        "the protocol number is the same at checkpoint and at restore (one function), and the values "
        "fingerprinted (str, bytes, tuples of scalars: _plain_size) pickle to the same meaning under "
        "protocols 4 and 5; any other protocol only changes the digests, consistently. A file from a "
        "kernel that used another protocol gets a mismatch: named, never swapped.",
}


def function_lines(path: Path, specs: list[str]) -> dict[str, tuple[int, int]]:
    """Line range of each named function's body (methods included); for
    "name:N", of its first N statements' lines."""
    wanted = dict((spec.split(":") + [None])[:2] for spec in specs)
    tree = ast.parse(path.read_text())
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in wanted:
            body = node.body[1:] if isinstance(node.body[0], ast.Expr) and isinstance(
                getattr(node.body[0], "value", None), ast.Constant) else node.body  # not the docstring
            n = wanted[node.name]
            last = body[int(n) - 1] if n else body[-1]
            found[node.name] = (body[0].lineno, last.end_lineno)
    names = set(wanted)
    missing = names - set(found)
    if missing:
        raise SystemExit(f"{path}: no function named {', '.join(sorted(missing))}")
    return found


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, check=True, **kwargs)


def mutate(target, work: Path, timeout: float) -> list[dict]:
    module, functions, tests = target
    ranges = function_lines(ROOT / module, functions)
    stem = Path(module).stem
    config = work / f"{stem}.toml"
    session = work / f"{stem}.sqlite"
    session.unlink(missing_ok=True)
    lines = ", ".join(f'"{a}-{b}"' for a, b in ranges.values())
    config.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{tests}"\n'
        "[cosmic-ray.distributor]\n"
        'name = "local"\n'
        "[cosmic-ray.filters.line-filter]\n"
        f'lines = {{ "{module}" = [{lines}] }}\n'
    )
    bindir = Path(sys.executable).parent
    run([str(bindir / "cosmic-ray"), "init", str(config), str(session)])
    run([str(bindir / "cr-filter-lines"), str(session), "--config", str(config)])
    run([str(bindir / "cosmic-ray"), "exec", str(config), str(session)])
    dumped = run([str(bindir / "cosmic-ray"), "dump", str(session)], capture_output=True, text=True).stdout
    source = (ROOT / module).read_text().splitlines()
    results = []
    for line in dumped.splitlines():
        item, result = json.loads(line)
        if not result or result.get("worker_outcome") == "skipped":
            continue
        mutation = item["mutations"][0]
        lineno = mutation["start_pos"][0]
        function = next((f for f, (a, b) in ranges.items() if a <= lineno <= b), "?")
        code = source[lineno - 1].strip()
        outcome = result.get("test_outcome") if result.get("worker_outcome") == "normal" else result.get(
            "worker_outcome")
        results.append({
            "module": module, "function": function, "line": lineno, "code": code,
            "operator": mutation["operator_name"], "occurrence": mutation["occurrence"],
            "outcome": outcome, "diff": result.get("diff") or "",
            "why_equivalent": next((why for (m, f, c, op), why in EQUIVALENT.items() if (m, f, c) == (
                module, function, code) and mutation["operator_name"].startswith(op)), None),
        })
    return results


def recheck(results: list[dict]) -> None:
    """Run the survivors again against the tests as they are now (tests
    added after a run): apply each mutation, run its target's tests,
    restore the file."""
    bindir = Path(sys.executable).parent
    commands = {module: tests for module, _, tests in TARGETS}
    for r in results:
        if r["outcome"] != "survived":
            continue
        path = ROOT / r["module"]
        original = path.read_bytes()
        try:
            run([str(bindir / "cosmic-ray"), "apply", r["module"], r["operator"], str(r["occurrence"])],
                capture_output=True)
            done = subprocess.run(commands[r["module"]], shell=True, cwd=ROOT, capture_output=True)
        finally:
            path.write_bytes(original)
        if done.returncode != 0:
            r["outcome"] = "killed"
            r["killed_on_recheck"] = True


def report(results: list[dict]) -> tuple[str, int]:
    out = ["# Mutation run (cosmic-ray)", ""]
    out.append("| module | function | mutants | killed | survived | other |")
    out.append("| --- | --- | --- | --- | --- | --- |")
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in results:
        groups.setdefault((r["module"], r["function"]), []).append(r)
    for (module, function), rs in groups.items():
        killed = sum(r["outcome"] == "killed" for r in rs)
        survived = sum(r["outcome"] == "survived" for r in rs)
        out.append(f"| {module} | {function} | {len(rs)} | {killed} | {survived} | {len(rs) - killed - survived} |")
    killed = sum(r["outcome"] == "killed" for r in results)
    survivors = [r for r in results if r["outcome"] == "survived"]
    later = [r for r in results if r.get("killed_on_recheck")]
    out += ["", f"Total: {len(results)} mutants, {killed} killed, {len(survivors)} survived, "
            f"{len(results) - killed - len(survivors)} other (timeout / incompetent)."
            + (f" {len(later)} of the killed survived the first run and were killed by tests added "
               "after it (--recheck):" if later else ""), ""]
    for r in later:
        out.append(f"- {r['module']}:{r['line']} {r['function']} ({r['operator']}): `{r['code']}`")
    out.append("")
    unexplained = 0
    for r in survivors:
        why = r["why_equivalent"]
        unexplained += why is None
        out.append(f"## {r['module']}:{r['line']} {r['function']} ({r['operator']}, occurrence {r['occurrence']})")
        out.append("")
        out.append(f"Equivalent: {why}" if why else "NOT EXPLAINED: a test is missing.")
        out += ["", "```diff", r["diff"].strip(), "```", ""]
    return "\n".join(out), unexplained


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, default=ROOT / "build" / "mutation", help="sessions and report go here")
    p.add_argument("--only", help="run only the target whose module path contains this")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant's test run")
    p.add_argument("--recheck", action="store_true",
                   help="only run the survivors of the last run (results.json) against the tests as they are now")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.recheck:
        results = json.loads((args.work / "results.json").read_text())
        for r in results:  # explanations as they are now
            r["why_equivalent"] = next((why for (m, f, c, op), why in EQUIVALENT.items() if (m, f, c) == (
                r["module"], r["function"], r["code"]) and r["operator"].startswith(op)), None)
        recheck(results)
    else:
        results = []
        for target in TARGETS:
            if args.only and args.only not in target[0]:
                continue
            results += mutate(target, args.work, args.timeout)
    text, unexplained = report(results)
    (args.work / "report.md").write_text(text)
    (args.work / "results.json").write_text(json.dumps(results, indent=1))
    print(text)
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
