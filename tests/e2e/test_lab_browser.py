"""A student's JupyterLab tab while the orchestrator moves their server off
a cloud node: real JupyterHub + CHP, real JupyterLab in headless Chromium,
the Elastic Python kernel, `elastichub orchestrator` as its own process.

Live moves (make-before-break, issue #11, `move_method = "live"`): the same
tab keeps working: no dialog at any time during the move, no reload, and the
next cell sees the variables made before the move.

Break-before-make (`move_method = "restart"`, today's behaviour): the test
records what the tab shows (dialogs, kernel status, whether the next cell
works) in tmp_path/restart-findings.json and the test output; it asserts only
that the move happened, not today's exact dialog.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import time

import pytest
from labtools import LabPage, lab_browser
from movetools import MoveLab, create_notebook, move_method_available

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]

USER = "alice"
NOTEBOOK = "lab.ipynb"


def numpy_available() -> bool:
    return importlib.util.find_spec("numpy") is not None  # the pods run this environment


BEFORE = ["x = 41", "import numpy as np; a = np.arange(10)"] if numpy_available() else ["x = 41"]
AFTER = "x + 1, a.sum()" if numpy_available() else "x + 1"
EXPECTED = "(42, np.int64(45))" if numpy_available() else "42"


async def prepare(cluster_factory, hub_factory, tmp_path, method: str, browser):
    lab = await MoveLab(cluster_factory, hub_factory, tmp_path, method).start()
    await lab.put_on_cloud(USER)
    await create_notebook(lab.hub, USER, NOTEBOOK)
    tab = await LabPage.login(browser, lab.hub.url, USER, lab.password)
    await tab.open_notebook(NOTEBOOK)
    for code in BEFORE:
        result = await tab.run_cell(code)
        assert result.outputs == [] and not await tab.open_dialogs(), (code, result, await tab.open_dialogs())
    assert (await tab.run_cell("x")).text == "41"
    return lab, tab


async def move_while_watching(lab: MoveLab, tab: LabPage, timeout: float = 240) -> list[dict]:
    """The orchestrator moves the server (load falls) while the tab is polled;
    returns the orchestrator's reports of USER's moves."""
    stop = asyncio.Event()
    watcher = asyncio.create_task(tab.watch(stop, every=0.2))
    try:
        await lab.start_orchestrator()
        lab.let_load_fall()
        await lab.wait_moved(USER, timeout=timeout)
        return await lab.move_reports(USER)
    finally:
        stop.set()
        await watcher
        await lab.stop_orchestrator()


# ELASTICHUB_LAB_LIVE_TEST_METHOD=restart runs the live test's body against
# today's break-before-make move: it must fail (the check that its assertions bite).
LIVE_TEST_METHOD = os.environ.get("ELASTICHUB_LAB_LIVE_TEST_METHOD", "live")


@pytest.mark.xfail(LIVE_TEST_METHOD == "live" and not move_method_available(), run=False, strict=True,
                   reason="ElasticOrchestrator.move_method (issue #11, live moves) is not in this build")
async def test_live_move_the_tab_keeps_working_without_a_dialog_or_reload(cluster_factory, hub_factory,
                                                                          tmp_path):
    async with lab_browser() as browser:
        lab, tab = await prepare(cluster_factory, hub_factory, tmp_path, LIVE_TEST_METHOD, browser)
        # movetools.LIVE_HUB_CONFIG could not add the hub side of live moves (elastichub.hubapi)?
        assert "ELASTICHUB-LAB:" not in lab.hub.log_text(200_000), lab.hub.log_text(200_000)[-3000:]
        t_move = time.time()
        reports = await move_while_watching(lab, tab)
        moved = [r for r in reports if r["outcome"] == "moved"]
        assert moved and moved[-1]["from"] == "cloud-1" and moved[-1]["to"] == "onprem-1", reports
        events = await tab.events()
        dialogs = await tab.dialogs_seen()
        assert dialogs == [], f"dialogs during the live move: {dialogs}"
        assert not await tab.reloaded(), "the page reloaded during the live move"
        assert not any(p["reloaded"] for p in tab.polled), "a poll saw the page reloading"
        during = [e["text"] for e in events if e["kind"] == "status" and e["t"] >= t_move]
        assert not [s for s in during if re.search(r"dead|restarting|disconnected", s, re.I)], during

        result = await tab.run_cell(AFTER)
        # The same kernel's namespace, and its execution counter continued: cell 4 of the tab.
        assert result.outputs and result.outputs[-1] == EXPECTED, (result, events)
        assert result.prompt == f"[{len(BEFORE) + 2}]:", (result, events)
        assert not any("did not run" in o for o in result.outputs), result
        assert not await tab.dialogs_seen() and not await tab.reloaded()
        assert lab.pod_node(USER) == "onprem-1"
        assert "Traceback" not in lab.orch.log(), lab.orch.log()[-4000:]


async def test_restart_move_records_what_the_tab_shows(cluster_factory, hub_factory, tmp_path):
    """Today's break-before-make move, seen from the tab: recorded, not judged."""
    async with lab_browser() as browser:
        lab, tab = await prepare(cluster_factory, hub_factory, tmp_path, "restart", browser)
        t0 = time.time()
        reports = await move_while_watching(lab, tab)
        moved_at = time.time()
        assert lab.pod_node(USER) == "onprem-1"
        await asyncio.sleep(3)  # let the tab notice the new server
        findings = {"move_s": round(moved_at - t0, 1), "dialogs_during_move": await tab.dialogs_seen(),
                    "reloaded": await tab.reloaded(), "status_after_move": await tab.kernel_status(),
                    "open_dialogs_after_move": await tab.open_dialogs()}
        await tab.screenshot(tmp_path / "restart-after-move.png")
        # The next cell, as a student would run it: dismiss whatever dialog is up first (its default button).
        dismissed = []
        while await tab.open_dialogs() and len(dismissed) < 3:
            dismissed.append(await tab.dismiss_dialog())
        findings["dismissed"] = dismissed
        try:
            result = await tab.run_cell(AFTER, timeout=90)
            findings["next_cell"] = {"prompt": result.prompt, "outputs": result.outputs}
        except AssertionError as e:
            findings["next_cell"] = {"error": str(e)[:1500]}
        findings["dialogs_after_next_cell"] = await tab.open_dialogs()
        findings["status_after_next_cell"] = await tab.kernel_status()
        findings["timeline"] = [{**e, "t": round(e["t"] - t0, 2)} for e in await tab.events()]
        findings["move_reports"] = reports
        await tab.screenshot(tmp_path / "restart-after-next-cell.png")
        # Then what a student does next: save, reload the page, run the cell again.
        while await tab.open_dialogs() and len(dismissed) < 6:
            dismissed.append(await tab.dismiss_dialog())
        await tab.page.keyboard.press("Control+s")
        await asyncio.sleep(1)
        await tab.open_notebook(NOTEBOOK)
        try:
            result = await tab.run_cell(AFTER, timeout=90)
            findings["after_reload"] = {"prompt": result.prompt, "outputs": result.outputs}
        except AssertionError as e:
            findings["after_reload"] = {"error": str(e)[:1500]}
        findings["dialogs_after_reload"] = await tab.open_dialogs()
        findings["status_after_reload"] = await tab.kernel_status()
        findings["server_log"] = lab.pod_log(USER)
        await tab.screenshot(tmp_path / "restart-after-reload.png")
        (tmp_path / "restart-findings.json").write_text(json.dumps(findings, indent=1))
        print("RESTART-FINDINGS", json.dumps(findings, indent=1))
        moved = [r for r in findings["move_reports"] if r["outcome"] == "moved"]
        assert moved and moved[-1]["to"] == "onprem-1", findings["move_reports"]
