"""The instructor's side in a real browser: JupyterLab 4 over a temporary course whose
gradebook was filled by ``nbgrader generate_assignment``; the Nbgrader menu opens the
formgrader, which lists the Lab 1 assignments."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from browser_helpers import APP_LOAD_MS, WIDGET_MS, JupyterServer, new_page
from course_helpers import ROOT

pytestmark = pytest.mark.browser

LAB1 = sorted(p.name for p in (ROOT / "source").glob("lab1_*") if p.is_dir())


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    p = new_page(browser)
    yield p
    p.context.close()


def test_formgrader_server_extension_lists_the_lab1_assignments(
        instructor_server: JupyterServer):
    listed = instructor_server.api("/formgrader/api/assignments")
    names = sorted(a["name"] for a in listed)  # type: ignore[union-attr]
    assert LAB1 and set(LAB1) <= set(names), names


def test_formgrader_opens_from_the_nbgrader_menu_and_lists_the_lab1_assignments(
        instructor_server: JupyterServer, page: Page):
    page.goto(f"{instructor_server.url}/lab?reset", timeout=APP_LOAD_MS)
    page.wait_for_function("() => window.__labkit !== undefined && window.jupyterapp "
                           "!== undefined", timeout=APP_LOAD_MS)
    page.evaluate("ms => window.__labkit.withTimeout(window.jupyterapp.restored, ms, "
                  "'JupyterLab restored')", APP_LOAD_MS)

    page.get_by_role("menuitem", name="Nbgrader").click()
    page.get_by_role("menuitem", name="Formgrader").click()

    frame_el = page.locator(".jp-MainAreaWidget iframe")
    expect(frame_el).to_have_count(1)
    assert (frame_el.get_attribute("src") or "").endswith("/formgrader")
    frame = page.frame_locator(".jp-MainAreaWidget iframe")
    expect(frame.locator("body")).to_contain_text("Manage Assignments", timeout=WIDGET_MS)
    names = frame.locator("table tbody tr td:first-child")
    expect(names.filter(has_text=LAB1[-1])).to_have_count(1)
    listed = names.all_inner_texts()
    assert set(LAB1) <= {n.strip() for n in listed}, listed
