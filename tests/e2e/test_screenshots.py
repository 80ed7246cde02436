"""What a person sees, in headless Chromium (Debian's chromium, driven by
Playwright): the hub's spawn page while a server moves, and the
orchestrator's status page behind the hub's login. The screenshots are the
tutorial's (docs/_static/tutorial-*.png), refreshed by every run."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from podtools import until

from elastichub import podmeta
from elastichub.demo.notebook import Notebook
from elastichub.demo.stage import Stage, StageSettings

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

DOCS_STATIC = Path(__file__).resolve().parents[2] / "docs" / "_static"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
async def stage(tmp_path):
    stage = Stage(StageSettings(workdir=tmp_path / "demo"))
    await stage.start(log=lambda m: None)
    yield stage
    await stage.stop()


@pytest.fixture
async def browser():
    from playwright.async_api import async_playwright

    assert Path(CHROMIUM).exists(), "Chromium is missing: scripts/setup.sh installs Debian's chromium"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield browser
        await browser.close()


async def login(browser, stage, user: str):
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(f"{stage.url}/hub/login")
    await page.fill("#username_input", user)
    await page.fill("#password_input", stage.s.password)
    await page.click("#login_submit")
    await page.wait_for_url("**/hub/**")
    return page


async def test_the_spawn_page_during_a_move_and_the_status_page(stage, browser):
    cluster = stage.cluster
    await stage.api("POST", "/users/alice")
    await stage.api("POST", "/users/alice/server")
    await until(_server(stage, ready=True), timeout=90, what="alice's server")
    nb = await Notebook(stage.url, "alice", stage.token, "lesson.ipynb").open()
    assert (await nb.run("import numpy as np\ndata = np.arange(1_000_000)"))["status"] == "ok"
    nb.close()
    # Her node goes away for maintenance: stop, and start again elsewhere.
    node = cluster.store.get("pods", "jupyter-alice", "default")["spec"]["nodeName"]
    cluster.store.update("nodes", node, lambda n: n["spec"].__setitem__("unschedulable", True))
    # What a drain writes on the pod just before its stop: only then is the next start a move.
    cluster.store.update("pods", "jupyter-alice", lambda p: p["metadata"]["annotations"].__setitem__(
        podmeta.MOVING_ANNOTATION, node), namespace="default")
    await stage.api("DELETE", "/users/alice/server")
    await until(_server(stage, ready=False), timeout=60, what="alice's server stopped")

    page = await login(browser, stage, "alice")
    # The start request answers only once the spawn is done (or slow): watch the page meanwhile.
    start = asyncio.create_task(stage.api("POST", "/users/alice/server"))
    await until(_pending(stage), timeout=30, what="alice's spawn under way")
    await page.goto(f"{stage.url}/hub/spawn-pending/alice")
    await page.click("text=Event log")
    await page.wait_for_selector("text=Moving your server from", timeout=60_000)
    await page.wait_for_selector("text=Your variables will be restored", timeout=60_000)
    spawn_png = DOCS_STATIC / "tutorial-spawn-move.png"
    await page.screenshot(path=str(spawn_png))
    assert spawn_png.stat().st_size > 10_000
    assert (await start)[0] in (201, 202)

    admin = await login(browser, stage, "admin")
    await admin.goto(stage.status_url)  # through the hub's OAuth (no confirmation for its own service)
    try:
        await admin.wait_for_selector("text=ElasticHub orchestrator", timeout=30_000)
    except Exception:
        raise AssertionError(f"at {admin.url}:\n{(await admin.inner_text('body'))[:2000]}") from None
    await admin.wait_for_selector("text=alice", timeout=30_000)
    text = await admin.inner_text("body")
    assert "onprem-1" in text and "cloud-1" in text and "theta_out 80" in text
    status_png = DOCS_STATIC / "tutorial-status-page.png"
    await admin.screenshot(path=str(status_png), full_page=True)
    assert status_png.stat().st_size > 10_000


def _pending(stage):
    async def check():
        code, user = await stage.api("GET", "/users/alice")
        return code == 200 and ((user.get("servers") or {}).get("") or {}).get("pending") == "spawn"
    return check


def _server(stage, ready: bool):
    """A check: alice's server is ready (True) or gone (False), as the hub says."""
    async def check():
        code, user = await stage.api("GET", "/users/alice")
        server = (user or {}).get("servers", {}).get("") if code == 200 else None
        return bool(server and server.get("ready")) if ready else code == 200 and server is None
    return check
