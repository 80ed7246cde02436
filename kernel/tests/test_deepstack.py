"""Pickling never runs past the end of the C stack, whatever recursion limit
the notebook set (deepstack.py). In a child process: a failure here would be
a SIGSEGV, not an exception."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(120)


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=100)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    return done.stdout.strip()


def test_a_deep_list_under_a_huge_limit_is_named_not_a_crash():
    # The limit is past what the helper's largest stack holds (made small here): lowered while
    # pickling, then the user's again.
    out = _run("""
        import sys
        from elastichub_kernel import deepstack
        from elastichub_kernel.serializer import dump_namespace
        deepstack.MAX_STACK = 16 << 20
        top = cur = []
        for _ in range(200_000):
            cur.append([])
            cur = cur[0]
        sys.setrecursionlimit(10_000_000)
        result = deepstack.run(dump_namespace, {"deep": top, "x": [1, 2]}, ["deep", "x"])
        print([r.name for r in result.records], "recursion" in result.failed["deep"], sys.getrecursionlimit())
    """)
    assert out == "['x'] True 10000000"


def test_a_deep_list_a_raised_limit_holds_is_pickled_on_a_deep_stack():
    # 100,000 levels: past an 8 MB stack (ulimit -s), within the limit. The caller's thread runs
    # what the pickling thread hands it (a sqlite3 connection is read on the thread that made it).
    out = _run("""
        import sys, threading
        from elastichub_kernel import deepstack
        from elastichub_kernel.serializer import dump_namespace
        top = cur = []
        for _ in range(100_000):
            cur.append([])
            cur = cur[0]
        sys.setrecursionlimit(300_000)
        def inside():
            assert deepstack.waiting_thread() is threading.main_thread()
            assert deepstack.on_waiting_thread(threading.current_thread) is threading.main_thread()
            return dump_namespace({"deep": top}, ["deep"])
        result = deepstack.run(inside)
        print(result.failed, [r.name for r in result.records], deepstack.waiting_thread())
    """)
    assert out == "{} ['deep'] None"
