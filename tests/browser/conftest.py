"""Browser-test fixtures: Debian's chromium through Playwright, and real JupyterLab servers
over a temporary copy of the student's ``release/`` (the instructor's formgrader runs
in tests/hub, behind a real JupyterHub).

Chromium is never downloaded: the tests launch ``/usr/bin/chromium`` (``apt-get install
chromium``; ``.ci/run`` installs it). Without it they fail with that instruction rather
than skip, so CI can never pass without running them. On a failure the hook below saves
screenshots, the page's console errors and the server log under ``tests/browser/artifacts/``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from browser_helpers import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, JupyterServer, NotebookPage
from course_helpers import ROOT

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
TALL_SCREENSHOT_PX = 16_000


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (`apt-get install -y "
                    "chromium`, as .ci/run does) or deselect these tests with -m 'not browser'",
                    pytrace=False)
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    b = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                   timeout=60_000)
    yield b
    b.close()


@pytest.fixture(scope="session")
def student_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    """JupyterLab over a temporary copy of ``release/``: exactly what a student receives."""
    tmp = tmp_path_factory.mktemp("student")
    root = tmp / "release"
    shutil.copytree(ROOT / "release", root)
    home = tmp / "home"
    home.mkdir()
    server = JupyterServer(root, home, "student",
                           env={"LABKIT_LEDGER": str(tmp / "ledger.json")}).start()
    yield server
    server.stop()


# -- failure artifacts ------------------------------------------------------------------------

def _pages(item: pytest.Item) -> list[tuple[str, Page, object]]:
    found = []
    for name, value in getattr(item, "funcargs", {}).items():
        value = getattr(value, "nb", value)
        if isinstance(value, NotebookPage):
            found.append((name, value.page, value))
        elif isinstance(value, Page):
            found.append((name, value, None))
    return found


def _save_artifacts(item: pytest.Item, when: str) -> None:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid.split("::", 1)[-1])[:150] + f"-{when}"
    ARTIFACTS.mkdir(exist_ok=True)
    for name, page, nb in _pages(item):
        base = ARTIFACTS / f"{stem}-{name}"
        try:
            page.screenshot(path=f"{base}.png", full_page=True, timeout=15_000)
            # JupyterLab scrolls inside the notebook, not the page: also grow the viewport to
            # the notebook's height so one image shows every cell.
            height = page.evaluate("() => Math.max(0, ...Array.from(document.querySelectorAll("
                                   "'.jp-WindowedPanel-outer, .jp-Notebook'), e => "
                                   "{ e.scrollTop = 0; return e.scrollHeight; }))")
            if height:
                size = page.viewport_size or VIEWPORT
                page.set_viewport_size({"width": size["width"],
                                        "height": min(int(height) + 200, TALL_SCREENSHOT_PX)})
                page.screenshot(path=f"{base}-tall.png", timeout=15_000)
                page.set_viewport_size(size)
        except Exception as exc:  # the page may be gone; keep whatever else we can
            (ARTIFACTS / f"{base.name}-screenshot-error.txt").write_text(repr(exc))
        if isinstance(nb, NotebookPage):
            (ARTIFACTS / f"{base.name}-console.txt").write_text(
                "\n".join(nb.console_errors) or "(no console errors)", encoding="utf-8")
            (ARTIFACTS / f"{base.name}-server.log").write_text(nb.server.log_tail(200_000),
                                                               encoding="utf-8")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when in ("setup", "call"):
        _save_artifacts(item, report.when)
