"""Drive a real JupyterLab, through the hub, in headless Chromium (Debian's
/usr/bin/chromium, driven by Playwright; never `playwright install`).

    async with lab_browser() as browser:
        lab = await LabPage.login(browser, hub.url, "alice", password)
        await lab.open_notebook("lab.ipynb")          # /user/alice/lab/tree/lab.ipynb
        out = await lab.run_cell("x = 41\\nx")          # -> "41"
        lab.dialogs()                                   # every .jp-Dialog seen so far
        await lab.reloaded()                            # did the page reload since open?

Selectors are JupyterLab 4's DOM: .jp-Notebook, .jp-Cell (.jp-CodeCell),
.jp-InputPrompt, .jp-OutputArea-output, .jp-Dialog. A watcher installed in
the page (a MutationObserver) records every dialog, toast notification and
kernel status change with its time, so a short dialog between two polls is
not missed; `window.__elastichub_marker` tells a reload (a reload drops it).
"""

from __future__ import annotations

import asyncio
import re
import secrets
import shutil
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# The notebook toolbar's execution indicator (its data-status: idle, busy,
# ...), then the status bar's kernel item ("Elastic Python | Idle").
KERNEL_STATUS_JS = """() => {
  const norm = (s) => (s || '').trim().replace(/\\s+/g, ' ');
  const ind = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
  const items = Array.from(document.querySelectorAll('.jp-StatusBar-Widget .jp-StatusBar-TextItem, '
                                                     + '.jp-StatusBar-Item')).map((e) => norm(e.innerText));
  const bar = items.find((t) => / \\| /.test(t)) || '';
  return norm(ind && (ind.getAttribute('data-status') || ind.innerText)) + ' / ' + bar;
}"""

# Runs in the page once the notebook is open: the marker, and a log of what
# the user is shown (dialogs, toasts, kernel status) with timestamps.
WATCHER_JS = """
(marker) => {
  window.__elastichub_marker = marker;
  window.__elastichub_kernel_status = KERNEL_STATUS_JS;
  const log = window.__elastichub_events = [];
  const seen = new Map();  // element -> its log entry (text updated while the dialog fills in)
  const text = (el) => (el.innerText || el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 2000);
  let lastStatus = null;
  const scan = () => {
    for (const el of document.querySelectorAll('.jp-Dialog, .Toastify__toast')) {
      let entry = seen.get(el);
      if (!entry) {
        entry = {t: Date.now() / 1000, kind: el.classList.contains('jp-Dialog') ? 'dialog' : 'toast', text: ''};
        seen.set(el, entry); log.push(entry);
      }
      const now = text(el);
      if (now.length > entry.text.length) entry.text = now;
    }
    const now = window.__elastichub_kernel_status();
    if (now !== lastStatus) { lastStatus = now; log.push({t: Date.now() / 1000, kind: 'status', text: now}); }
  };
  new MutationObserver(scan).observe(document.body, {childList: true, subtree: true, attributes: true,
                                                     characterData: true});
  scan();
  return true;
}
""".replace("KERNEL_STATUS_JS", KERNEL_STATUS_JS)


@asynccontextmanager
async def lab_browser():
    """Headless Debian Chromium under Playwright."""
    from playwright.async_api import async_playwright

    assert Path(CHROMIUM).exists(), "Chromium is missing: scripts/setup.sh installs Debian's chromium"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield browser
        finally:
            await browser.close()


class LabError(AssertionError):
    """JupyterLab did not do what the driver asked (with what the page showed)."""


@dataclass
class CellResult:
    prompt: str  # "[3]:" once run
    outputs: list[str] = field(default_factory=list)  # inner text of each .jp-OutputArea-output

    @property
    def text(self) -> str:
        return "\n".join(self.outputs).strip()


class LabPage:
    """One browser tab on `user`'s JupyterLab, logged in through the hub."""

    def __init__(self, page, hub_url: str, user: str):
        self.page, self.hub_url, self.user = page, hub_url.rstrip("/"), user
        self.marker: str | None = None
        self.polled: list[dict] = []  # what poll() saw: {"t", "dialogs", "status", "marker"}

    # -- login and opening -------------------------------------------------------------------

    @classmethod
    async def login(cls, browser, hub_url: str, user: str, password: str, viewport=(1280, 900)) -> "LabPage":
        page = await browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        await page.goto(f"{hub_url}/hub/login")
        await page.fill("#username_input", user)
        await page.fill("#password_input", password)
        await page.click("#login_submit")
        await page.wait_for_url(re.compile(r".*/(hub|user)/.*"))
        if "/hub/login" in page.url:
            raise LabError(f"login of {user} failed: {(await page.inner_text('body'))[:500]}")
        return cls(page, hub_url, user)

    @property
    def lab_url(self) -> str:
        return f"{self.hub_url}/user/{self.user}/lab"

    async def open_notebook(self, path: str, timeout: float = 90) -> None:
        """Open `path` (it must exist; its metadata names the kernel) in JupyterLab,
        wait until its kernel is idle, then install the marker and the watcher."""
        await self.page.goto(f"{self.lab_url}/tree/{path}", timeout=timeout * 1000)
        try:
            await self.page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=timeout * 1000)
            await self.wait_kernel_idle(timeout)
        except Exception as e:
            raise LabError(f"JupyterLab did not open {path} at {self.page.url}: {e}\n"
                           f"{(await self.body_text())[:1500]}") from None
        self.marker = secrets.token_hex(8)
        await self.page.evaluate(WATCHER_JS, self.marker)

    # -- cells -----------------------------------------------------------------------------

    def _notebook(self):
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first

    async def cell_count(self) -> int:
        return await self._notebook().locator(".jp-Cell").count()

    async def run_cell(self, code: str, timeout: float = 60) -> CellResult:
        """Type `code` into the last cell and run it (Shift+Enter); wait until
        its prompt shows an execution count; return its outputs."""
        dialogs = await self.open_dialogs()
        if dialogs:
            raise LabError(f"a dialog blocks the notebook: {dialogs}")
        cells = self._notebook().locator(".jp-Cell")
        index = await cells.count() - 1
        cell = cells.nth(index)
        editor = cell.locator(".cm-content")
        await editor.click()
        await self.page.keyboard.press("Control+A")
        await self.page.keyboard.press("Delete")
        await self.page.keyboard.insert_text(code)
        # CodeMirror reads inserted text from the DOM on its next flush (a key
        # event or a frame later): only then does the cell's model hold it. Run
        # before that and JupyterLab runs an empty cell (no prompt number).
        await self.page.keyboard.press("End")
        await self.page.wait_for_timeout(150)
        typed = (await editor.inner_text()).replace("\u00a0", " ")
        if typed.strip() != code.strip():
            raise LabError(f"the editor holds {typed!r}, not {code!r}")
        await self.page.keyboard.press("Shift+Enter")
        return await self.wait_cell(index, timeout)

    async def wait_cell(self, index: int, timeout: float = 60) -> CellResult:
        cell = self._notebook().locator(".jp-Cell").nth(index)
        prompt = cell.locator(".jp-InputPrompt").first
        deadline = time.monotonic() + timeout
        while True:
            text = (await prompt.inner_text()).strip()
            if re.fullmatch(r"\[\d+\]:", text):
                outputs = await cell.locator(".jp-OutputArea-output").all_inner_texts()
                return CellResult(text, [o.strip() for o in outputs])
            if time.monotonic() > deadline:
                raise LabError(f"cell {index} did not finish in {timeout:g} s (prompt {text!r}); "
                               f"kernel {await self.kernel_status()!r}; dialogs {await self.open_dialogs()}")
            await asyncio.sleep(0.1)

    # -- what the user sees ------------------------------------------------------------------

    async def kernel_status(self) -> str:
        """The notebook toolbar's execution indicator (idle, busy, ...) and the
        status bar's kernel text: "idle / Elastic Python | Idle"."""
        return await self.page.evaluate(KERNEL_STATUS_JS)

    async def wait_kernel_idle(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            status = await self.kernel_status()
            if re.search(r"\bidle\b", status, re.I):
                return
            if time.monotonic() > deadline:
                raise LabError(f"kernel not idle after {timeout:g} s: {status!r}")
            await asyncio.sleep(0.2)

    async def open_dialogs(self) -> list[str]:
        """Text of every .jp-Dialog on the page now."""
        return [t.strip() for t in await self.page.locator(".jp-Dialog").all_inner_texts()]

    async def dismiss_dialog(self, button: str | None = None) -> str | None:
        """Click `button` (its label) or else the dialog's last footer button
        (JupyterLab puts the dismissing one there: "Dismiss", "Ok"); returns
        "<dialog text> -> [<button clicked>]"."""
        dialog = self.page.locator(".jp-Dialog").first
        if not await dialog.count():
            return None
        text = re.sub(r"\s+", " ", await dialog.inner_text()).strip()
        target = (dialog.get_by_role("button", name=button) if button
                  else dialog.locator(".jp-Dialog-footer button").last)
        label = (await target.inner_text()).strip()
        await target.click()
        await self.page.wait_for_selector(".jp-Dialog", state="detached", timeout=10_000)
        return f"{text} -> [{label}]"

    async def reloaded(self) -> bool:
        """True if the page was reloaded (or navigated) since open_notebook."""
        try:
            value = await self.page.evaluate("() => window.__elastichub_marker || null")
        except Exception:  # navigation in progress
            return True
        return value != self.marker

    async def events(self) -> list[dict]:
        """The watcher's log: {"t", "kind": "dialog"|"toast"|"status", "text"} (empty after a reload)."""
        try:
            return await self.page.evaluate("() => window.__elastichub_events || []")
        except Exception:
            return []

    async def poll(self) -> dict:
        """One look: open dialogs, kernel status, marker (kept in self.polled)."""
        try:
            entry = {"t": time.time(), "dialogs": await self.open_dialogs(), "status": await self.kernel_status(),
                     "reloaded": await self.reloaded()}
        except Exception as e:  # the page is navigating: that is a reload too
            entry = {"t": time.time(), "dialogs": [], "status": f"unreadable: {e}", "reloaded": True}
        self.polled.append(entry)
        return entry

    async def watch(self, stop: asyncio.Event, every: float = 0.2) -> None:
        """poll() until `stop` is set (run it as a task during a move)."""
        while not stop.is_set():
            await self.poll()
            try:
                await asyncio.wait_for(stop.wait(), every)
            except asyncio.TimeoutError:
                pass

    async def dialogs_seen(self) -> list[str]:
        """Every dialog text seen since open_notebook, by the watcher or by a poll."""
        def norm(text: str) -> str:
            return re.sub(r"\s+", " ", text).strip()

        texts = [norm(e["text"]) for e in await self.events() if e["kind"] == "dialog"]
        for entry in self.polled:
            texts += [norm(d) for d in entry["dialogs"] if norm(d) not in texts]
        return texts

    async def body_text(self) -> str:
        try:
            return await self.page.inner_text("body")
        except Exception as e:
            return f"(unreadable: {e})"

    async def screenshot(self, path: Path) -> None:
        await self.page.screenshot(path=str(path))
