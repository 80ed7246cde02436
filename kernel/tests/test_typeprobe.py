"""Lazy type probing: types from class metadata; importing the kernel imports no user library."""

import io
import socket
import subprocess
import sys
import tempfile
import threading

from elastichub_kernel import typeprobe

HEAVY = ["numpy", "pandas", "torch", "scipy", "sklearn", "matplotlib", "polars", "lightgbm", "networkx"]


def test_importing_the_kernel_imports_no_user_library():
    code = (
        "import sys, json\n"
        "import elastichub_kernel.kernel, elastichub_kernel.launcher\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_process_bound_objects_are_named_with_a_reason():
    sock = socket.socket()
    gen = (i for i in range(3))
    lock, rlock = threading.Lock(), threading.RLock()
    lock.acquire()  # held: a free one is made again (idioms6)
    rlock.acquire()
    with tempfile.SpooledTemporaryFile() as spooled:
        for obj, words in ((sock, "socket"), (gen, "generator"), (lock, "lock"), (rlock, "lock"),
                           (spooled, "file")):
            reason = typeprobe.unrestorable_reason(obj)
            assert reason and words in reason, (obj, reason)
    sock.close()


def test_the_file_objects_of_open_are_left_to_the_idioms():
    # saved as their file, or refused with the reason, by idioms._file_handle
    with tempfile.TemporaryFile() as fh, tempfile.TemporaryFile("w+") as text:
        for obj in (fh, text, fh.raw, open(__file__, "rb", buffering=0)):
            assert typeprobe.unrestorable_reason(obj) is None, obj


def test_plain_values_and_in_memory_streams_are_restorable():
    for obj in (1, "s", [1], {"a": 1}, io.BytesIO(b"x"), io.StringIO("x"), typeprobe):
        assert typeprobe.unrestorable_reason(obj) is None


def test_class_names_follow_the_mro_without_imports():
    class Base:
        pass

    class Child(Base):
        pass

    names = typeprobe.class_names(Child())
    assert names[0].endswith("Child") and names[1].endswith("Base") and names[-1] == "builtins.object"
    assert typeprobe.type_name(3) == "int"
