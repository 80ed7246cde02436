"""A newer kernel's checkpoint context restored by an older one: a new VALUE of a setting this kernel knows."""

import json
import logging
import os

import pytest

from elastichub_kernel.context import SessionContext

pytestmark = pytest.mark.timeout(240)


def test_a_newer_kernels_value_of_a_known_setting_is_named_and_the_rest_restored(kept_process):
    """A new %xmode or %autoreload mode, or a new kind of saved cell output, rejected the whole context as
    malformed: the working directory, the environment and every setting were lost with it."""
    process = kept_process
    (process / "data").mkdir()
    saved = {"cwd": str(process / "data"), "env": {"COMPAT3": "1"}, "xmode": "Fancy", "autoreload": "complete",
             "aimport": ["helpers"], "logging": {"loggers": {"compat3": {"level": 10, "handlers": [
                 {"kind": "stream", "level": 0, "to": "notebook"}, {"kind": "null", "level": 0}]}}},
             "history": {"count": 4, "in": ["", "x = 1", "x", "y"], "raw": [None] * 4,
                         "outputs": [[2, {"value": 1}], [3, {"html": "<b>1</b>"}], [1, {"value": 2}, "text/plain"]],
                         "unders": [{"html": "<b>1</b>"}, {"value": 1}, None]}}
    here = SessionContext.now()
    done, problems = here.restore(saved)
    assert os.getcwd() == str(process / "data") and os.environ["COMPAT3"] == "1", problems
    assert len(problems) == 1 and "newer version" in problems[0] and "malformed" not in problems[0], problems
    for name in ("%xmode Fancy", "%autoreload complete", "Out[3]", "Out[1]", "_, __ or ___",
                 "logging: loggers: 'compat3': handlers: a handler writing to notebook"):
        assert name in problems[0], (name, problems)
    assert "Out[2]" not in problems[0], problems
    logger = logging.getLogger("compat3")
    try:
        assert here.restore_after_load(saved) == []
        assert logger.level == 10 and [type(h).__name__ for h in logger.handlers] == ["NullHandler"]
    finally:
        logger.setLevel(logging.NOTSET)
        logger.handlers.clear()

    # A value of the wrong type is not a newer kernel's: still rejected, named.
    for field, value, named in (("xmode", 5, "xmode"), ("autoreload", 2, "autoreload"), (
            "logging", {"loggers": {"compat3": {"handlers": [{"kind": "stream", "level": 0, "to": 1}]}}},
            "logging: logger 'compat3'")):
        os.chdir(process)
        done, problems = here.restore({"cwd": str(process / "data"), field: value})
        assert os.getcwd() == str(process) and len(problems) == 1, problems
        assert "malformed" in problems[0] and f"({named})" in problems[0], problems
    done, problems = here.restore({"history": {"count": 2, "in": ["", "x"], "raw": [None, None],
                                               "outputs": [[1, "<b>1</b>"]]}})
    assert "malformed" in problems[0] and "(history)" in problems[0], problems


def test_the_settings_beside_a_newer_value_come_back_in_the_shell(tmp_path, start_elastic_kernel, run_cell):
    """In a real shell: the known settings and %aimport's marks come back beside a newer kernel's %xmode and
    %autoreload modes and kind of output (the marks were set with the mode only: lost with it, unsaid)."""
    km, kc = start_elastic_kernel(tmp_path / "ckpt", cwd=tmp_path)
    saved = {"extensions": ["autoreload"], "autoreload": "complete", "aimport": ["json"], "xmode": "Fancy",
             "precision": "%.2f",
             "history": {"count": 3, "in": ["", "x = 1", "x"], "raw": [None] * 3,
                         "outputs": [[1, {"value": 7}], [2, {"html": "<b>1</b>"}]]}}
    probe = (f"import json\nctx = get_ipython().kernel._context()\nsaved = json.loads({json.dumps(saved)!r})\n"
             "problems = ctx.restore(saved)[1] + ctx.restore_after_load(saved)\nip = get_ipython()\n"
             "reloader = ip.magics_manager.registry['AutoreloadMagics']._reloader\n"
             "print('FACTS' + json.dumps([problems, ip.InteractiveTB.mode, "
             "ip.display_formatter.formatters['text/plain'].float_precision, sorted(reloader.modules)]))")
    problems, xmode, precision, marked = run_cell.facts(kc, probe)
    assert len(problems) == 1 and "newer version" in problems[0], problems
    assert "%xmode Fancy" in problems[0] and "%autoreload complete" in problems[0] and "Out[2]" in problems[0]
    assert xmode == "Context" and precision == "%.2f" and marked == ["json"], (xmode, precision, marked)
