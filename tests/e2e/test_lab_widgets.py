"""A slider on a student's JupyterLab page while the orchestrator moves
their server (a live move): real JupyterHub + CHP, real JupyterLab (with
ipywidgets' extension) in headless Chromium, the Elastic Python kernel.

The slider the page shows keeps working both ways after the move: a cell
that sets its value moves the slider on the page, and a value typed into
the slider on the page reaches the variable and the notebook's callback.
The kernel restored the widget under the id the page's output holds.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from labtools import LabPage, lab_browser
from movetools import MoveLab, create_notebook

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]

USER = "alice"
NOTEBOOK = "widgets.ipynb"
SETUP = ["import ipywidgets as widgets", "s = widgets.IntSlider(value=6, max=20); seen = []",
         "s.observe(lambda change: seen.append(change['new']), names='value')"]


async def readout_shows(tab: LabPage, text: str, timeout: float = 60) -> str:
    """Waits until the first slider's readout on the page shows `text`; returns what it shows last."""
    readout = tab.page.locator(".widget-readout").first
    deadline = time.monotonic() + timeout
    while True:
        shown = (await readout.inner_text()).strip() if await readout.count() else ""
        if shown == text or time.monotonic() > deadline:
            return shown
        await asyncio.sleep(0.2)


async def test_a_slider_on_the_page_keeps_working_after_a_live_move(cluster_factory, hub_factory, tmp_path):
    async with lab_browser() as browser:
        lab = await MoveLab(cluster_factory, hub_factory, tmp_path, "live").start()
        await lab.put_on_cloud(USER)
        await create_notebook(lab.hub, USER, NOTEBOOK)
        tab = await LabPage.login(browser, lab.hub.url, USER, lab.password)
        await tab.open_notebook(NOTEBOOK)
        for code in SETUP:
            assert (await tab.run_cell(code)).outputs == [], code
        await tab.run_cell("s")
        assert await readout_shows(tab, "6") == "6", await tab.body_text()

        await lab.start_orchestrator()
        try:
            lab.let_load_fall()
            await lab.wait_moved(USER)
        finally:
            await lab.stop_orchestrator()
        assert lab.pod_node(USER) == "onprem-1"

        # the kernel moves the page's slider (the cell's output: the move's note, which names nothing lost)
        moved = await tab.run_cell("s.value = 9")
        assert len(moved.outputs) == 1 and "moved" in moved.text and "Not restored" not in moved.text, moved
        assert await readout_shows(tab, "9") == "9", await tab.body_text()
        # the page moves the kernel's
        readout = tab.page.locator(".widget-readout").first
        await readout.click()
        await tab.page.keyboard.press("Control+A")
        await tab.page.keyboard.insert_text("12")
        await tab.page.keyboard.press("Enter")
        result = await tab.run_cell("s.value, seen")
        assert result.text == "(12, [9, 12])", (result, await tab.body_text())
