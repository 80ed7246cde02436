"""processes.descendants: what a terminal's shell started, read off /proc."""

import subprocess
import time


from elastichub_kernel.processes import descendants


def _fake_proc(tmp_path, table):
    for pid, (ppid, comm, cmdline) in table.items():
        d = tmp_path / str(pid)
        d.mkdir()
        (d / "stat").write_bytes(f"{pid} ({comm}) S {ppid} 1 1 0 -1".encode())
        (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in cmdline) + b"\0")
    (tmp_path / "self").mkdir()  # not a pid: skipped
    return str(tmp_path)


def test_the_whole_tree_under_each_shell_nearest_first(tmp_path):
    proc = _fake_proc(tmp_path, {
        10: (1, "bash", ["bash"]),
        11: (10, "python", ["python", "train.py", "--epochs", "9"]),
        12: (11, "odd) name (x", ["worker"]),  # comm with parentheses and spaces
        13: (12, "sh", ["sh", "-c", "true"]),
        20: (1, "bash", ["bash"]),
        30: (1, "other", ["other"]),
    })
    found = descendants({"1": 10, "2": 20}, proc)
    assert found == {"1": [{"pid": 11, "command": "python train.py --epochs 9"},
                           {"pid": 12, "command": "worker"}, {"pid": 13, "command": "sh -c true"}],
                     "2": []}


def test_without_proc_it_says_unknown_not_none(tmp_path):
    assert descendants({"1": 10}, str(tmp_path / "no-proc")) is None


def test_a_real_shell_and_its_silent_child():
    shell = subprocess.Popen(["sh", "-c", "sleep 123 & wait"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            found = descendants({"t": shell.pid})["t"]
            # between fork and exec the child is still a copy of the shell
            if [p["command"] for p in found] == ["sleep 123"]:
                break
            time.sleep(0.05)
        assert [p["command"] for p in found] == ["sleep 123"]
    finally:
        subprocess.run(["pkill", "-P", str(shell.pid)])
        shell.wait(10)
    assert descendants({"t": shell.pid})["t"] == []
