"""`elastichub demo`'s refusals of bad input and of an unusable port or
work directory: one line each, before anything starts."""

from __future__ import annotations

import argparse
import asyncio
import json
import socket

import pytest

from elastichub.cli import UsageError
from elastichub.demo import cli
from elastichub.demo.stage import Stage, StageError, StageSettings, check_port_free, claim_workdir


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize("argv, said", [
    (["--port", "70000"], "--port 70000: not a port"),
    (["--port", "-5"], "--port -5: not a port"),
    (["--boot-delay", "nan"], "--boot-delay must be a number of seconds >= 0"),
    (["--boot-delay", "inf"], "--boot-delay must be a number of seconds >= 0"),
    (["--boot-delay", "-1"], "--boot-delay must be a number of seconds >= 0"),
])
def test_bad_numbers_are_refused_in_one_line(argv, said):
    with pytest.raises(UsageError, match=said.replace("-", r"\-").replace("+", r"\+")):
        cli.run(args(*argv))


def test_a_config_that_is_a_directory_says_so(tmp_path):
    with pytest.raises(UsageError, match="is a directory, not a hub config file"):
        cli.run(args("--config", str(tmp_path)))


def test_a_port_another_program_holds_is_refused_by_number():
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        with pytest.raises(StageError, match=rf"port {port} is in use by another program"):
            check_port_free(port)
    check_port_free(port)  # free again once the other program is gone


def test_a_failed_start_in_json_mode_still_prints_one_object(capsys):
    """A script reading `elastichub demo --json` got nothing on stdout when the
    demo could not start, only the error on stderr."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        assert cli.run(args("--json", "--port", str(port))) == 1
    out = capsys.readouterr().out
    said = json.loads(out)
    assert list(said) == ["error"] and said["error"].startswith(f"port {port} is in use by another program"), out


def test_a_workdir_that_cannot_be_created_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    stage = Stage(StageSettings(workdir=blocker / "sub"))
    with pytest.raises(StageError, match=r"--workdir .*/file/sub: cannot create it"):
        asyncio.run(stage.start(log=lambda m: None))


def test_a_workdir_that_cannot_be_written_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StageError, match=r"--workdir .*/file: cannot write there"):
        claim_workdir(blocker)


def test_the_demos_servers_keep_their_files_in_the_demos_directory_not_the_admins_home(tmp_path, monkeypatch):
    """Kernels' connection files and the like went to ~/.local/share/jupyter
    and were never removed: 99 of them after a day of demos."""
    import json
    from pathlib import Path

    from traitlets.config import Config

    example = Path(cli.__file__).resolve().parents[2] / "jupyterhub_config_example.py"
    settings = {"workdir": str(tmp_path), "port": 1, "hub_port": 2, "proxy_api_port": 3, "service_port": 4,
                "proxy": "chp", "kubeconfig": str(tmp_path / "kc"), "cluster_host": "127.0.0.1", "cluster_port": 5,
                "token": "t", "password": "p", "tmon": 1.0, "tcool": 10.0, "theta_out": 80.0, "boot_s": 5.0,
                "allow_root": True}
    (tmp_path / "demo.json").write_text(json.dumps(settings))
    monkeypatch.setenv("ELASTICHUB_DEMO", str(tmp_path / "demo.json"))
    c = Config()
    exec(compile(example.read_text(), str(example), "exec"), {"get_config": lambda: c, "__file__": str(example)})
    assert c.KubeSpawner.environment["HOME"] == f"{tmp_path}/home/{{username}}"


def test_a_class_larger_than_the_demos_cluster_holds_is_refused_before_it_starts():
    """17 students: the 17th waited for a server that could never start, and
    the demo failed four minutes later."""
    with pytest.raises(UsageError, match="--students 17: the demo's cluster holds 16 servers"):
        cli.run(args("--students", "17"))
