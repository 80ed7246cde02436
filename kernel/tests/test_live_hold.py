"""A restart move's checkpoint holds the kernel's cells until the stop: a
cell sent between the orchestrator's last look and the hub's stop used to
start, run past the checkpoint and be interrupted by the stop, its side
effects half done (the stop's interrupt now answers it "did not run")."""

from __future__ import annotations

from queue import Empty

import pytest
from test_live import SESSION, live

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def checkpoint(control_request, kc, **content):
    reply = control_request(kc, "elastichub_checkpoint_request", content)
    assert reply["msg_type"] == "elastichub_checkpoint_reply"
    return reply["content"]


def held_with_a_waiting_cell(tmp_path, start_elastic_kernel, run_cell, control_request):
    km, kc = start_elastic_kernel(tmp_path, session_name=SESSION)
    run_cell(kc, "n = 1")
    saved = checkpoint(control_request, kc, hold_s=60)
    assert saved["ok"] is True and saved["held_s"] == 60 and saved["migrated"] == ["n"], saved
    msg_id = kc.execute("n += 1\nprint('ran', n)")
    with pytest.raises(Empty):
        kc.get_shell_msg(timeout=1.0)  # held: not run after the checkpoint
    status = control_request(kc, "elastichub_status_request")["content"]["live"]
    assert status["phase"] == "frozen" and status["held"] is True, status
    return km, kc, msg_id


def test_the_stops_interrupt_answers_a_held_cell_which_never_ran(tmp_path, start_elastic_kernel, run_cell,
                                                                 control_request):
    km, kc, msg_id = held_with_a_waiting_cell(tmp_path, start_elastic_kernel, run_cell, control_request)
    # The hub's stop: the spawner's checkpoint (unchanged: nothing ran) holds on anew, then the interrupt.
    again = checkpoint(control_request, kc)
    assert again["ok"] is True and again["unchanged"] is True and again["held_s"] == 60, again
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "error"
    assert "this cell did not run" in reply["content"]["evalue"]
    assert live(control_request, kc, "thaw")["ok"] is True
    assert run_cell(kc, "print(n)")["stdout"].strip() == "1"  # the held cell never ran


def test_a_thaw_lets_the_held_cell_run_and_the_lease_ends_a_hold_by_itself(tmp_path, start_elastic_kernel,
                                                                          run_cell, control_request):
    km, kc, msg_id = held_with_a_waiting_cell(tmp_path, start_elastic_kernel, run_cell, control_request)
    assert live(control_request, kc, "thaw")["ok"] is True  # the orchestrator saw it waiting
    reply = kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "ok"
    assert checkpoint(control_request, kc, hold_s=0.5)["held_s"] == 0.5
    assert run_cell(kc, "print(n)")["stdout"].strip() == "2"  # the stop never came: runs once the lease ends
    assert control_request(kc, "elastichub_status_request")["content"]["live"]["held"] is False
    bad = checkpoint(control_request, kc, hold_s="long")
    assert bad["ok"] is False and "'hold_s' must be a number of seconds" in bad["error"]


def test_a_cell_held_for_more_than_a_moment_says_why_it_waits(tmp_path, start_elastic_kernel, run_cell,
                                                              control_request):
    """A held cell waited without a word, up to the lease (a minute): it looked hung."""
    km, kc, msg_id = held_with_a_waiting_cell(tmp_path, start_elastic_kernel, run_cell, control_request)
    said = []
    while not said:  # the held cell's own output, before it runs
        msg = kc.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            said.append(msg["content"])
    assert said[0]["name"] == "stderr", said
    assert said[0]["text"].startswith("ElasticHub is moving this server to another node: this cell waits (at most ")
    assert "if the server moves first, you will be told it did not run" in said[0]["text"]
    assert live(control_request, kc, "thaw")["ok"] is True
    reply = kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "ok"
