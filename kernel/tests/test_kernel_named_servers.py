"""A user's named servers often share one home, so one checkpoint root: the
same notebook open in two of them keeps two checkpoints, and each server's
kernel restores its own variables, never the other's."""

import os

import pytest

from elastichub_kernel.storage import CHECKPOINT_NAME, session_key

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

SESSION = "course/lab1.ipynb"


def test_the_default_server_keys_as_before_and_each_named_server_apart():
    default = session_key(SESSION)
    assert session_key(SESSION, server_name="") == session_key(SESSION, server_name=None) == default
    gpu, exam = session_key(SESSION, server_name="gpu"), session_key(SESSION, server_name="exam")
    assert len({default, gpu, exam}) == 3
    assert gpu.startswith("lab1.ipynb-")  # still readable by the notebook's name
    # Where the name ends and the path begins is unambiguous.
    assert session_key("b/c.ipynb", server_name="a") != session_key("c.ipynb", server_name="a/b")


def test_the_same_notebook_in_two_servers_restores_each_its_own_state(tmp_path, start_elastic_kernel,
                                                                      stop_elastic_kernel, run_cell):
    for server, value in (("", 1), ("gpu", 2)):
        km, kc = start_elastic_kernel(tmp_path, session_name=SESSION, env={"JUPYTERHUB_SERVER_NAME": server})
        assert run_cell(kc, f"x = {value}")["error"] is None
        stop_elastic_kernel(km, kc)
    assert sorted(os.listdir(tmp_path)) == sorted([session_key(SESSION), session_key(SESSION, server_name="gpu")])
    for server, value in (("", 1), ("gpu", 2)):
        assert (tmp_path / session_key(SESSION, server_name=server) / CHECKPOINT_NAME).exists()
        km, kc = start_elastic_kernel(tmp_path, session_name=SESSION, env={"JUPYTERHUB_SERVER_NAME": server})
        assert run_cell(kc, "print(x)")["stdout"].strip() == str(value), server
        stop_elastic_kernel(km, kc)
