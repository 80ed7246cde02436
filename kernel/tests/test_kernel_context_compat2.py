"""What a student reads when the kernel cannot tell its notebook, and a
newer kernel's checkpoint context restored by an older one."""

import pytest

pytestmark = pytest.mark.timeout(240)


def test_the_note_of_a_kernel_without_a_notebook_says_what_to_do_in_plain_words(start_in_work, run_cell,
                                                                                stop_elastic_kernel):
    """The note named an environment variable (JPY_SESSION_NAME) a student never set nor heard of."""
    km, kc = start_in_work(None)
    assert run_cell(kc, "answer = 42")["error"] is None
    stop_elastic_kernel(km, kc)

    km, kc = start_in_work(None)
    note = run_cell(kc, "pass")["stderr"]
    assert "did NOT restore" in note, note
    assert "JPY_SESSION_NAME" not in note and "$" not in note, note
    assert "JupyterLab" in note and "%elastic_restore" in note, note
