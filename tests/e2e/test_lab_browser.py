"""A student's JupyterLab tab while the orchestrator moves their server off
a cloud node: real JupyterHub + CHP, real JupyterLab in headless Chromium,
the Elastic Python kernel, `elastichub orchestrator` as its own process.

A live move (make-before-break, `move_method = "live"`): the same tab keeps
working: no dialog at any time during the move, no reload, the kernel never
shown dead or restarting, and the next cell sees the variables made before
the move, its execution counter continued.

ELASTICHUB_LAB_LIVE_TEST_METHOD=restart runs the same body against a restart
move (break-before-make): it fails ("Server unavailable or unreachable", then
"Kernel died unexpectedly"; the next cell never runs without a reload), the
check that these assertions bite.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import time

import pytest
from labtools import LabPage, lab_browser
from movetools import MoveLab, create_notebook

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


LIVE_TEST_METHOD = os.environ.get("ELASTICHUB_LAB_LIVE_TEST_METHOD", "live")


async def test_live_move_the_tab_keeps_working_without_a_dialog_or_reload(cluster_factory, hub_factory,
                                                                          tmp_path):
    async with lab_browser() as browser:
        lab, tab = await prepare(cluster_factory, hub_factory, tmp_path, LIVE_TEST_METHOD, browser)
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
