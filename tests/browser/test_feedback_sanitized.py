"""Student HTML and JavaScript never run where feedback is read: a notebook whose outputs
hold a ``<script>`` and an ``<img onerror>`` is rendered with the feedback configuration
(``labkit.course.feedback.feedback_config``, the HTMLExporter settings the formgrader shares)
and opened in Debian's chromium; neither runs. The same notebook rendered with nbconvert's
defaults runs both, so the check can fail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from playwright.sync_api import Browser, Page
from traitlets.config import Config

from browser_helpers import new_page
from labkit.course.feedback import feedback_config

pytestmark = pytest.mark.browser

PAYLOAD = ('<script>window.__x = 1</script>'
           '<img src="x" onerror="window.__y = 1">')


def _hostile_notebook() -> nbformat.NotebookNode:
    cell = new_code_cell("from IPython.display import HTML\nHTML(payload)", outputs=[
        new_output("display_data", data={"text/html": PAYLOAD, "text/plain": "<HTML>"}),
        new_output("execute_result", data={"text/html": PAYLOAD}, execution_count=1)])
    return new_notebook(cells=[new_markdown_cell("Answer: " + PAYLOAD), cell])


def _render(config: Config, path: Path) -> Path:
    html, _ = HTMLExporter(config=config).from_notebook_node(_hostile_notebook())
    path.write_text(html)
    return path


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    p = new_page(browser)
    yield p
    p.context.close()


def _ran(page: Page, path: Path) -> dict[str, object]:
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)  # an image error fires after load
    return page.evaluate("() => ({x: window.__x ?? null, y: window.__y ?? null})")


def test_feedback_html_runs_no_student_script(page: Page, tmp_path: Path):
    assert _ran(page, _render(feedback_config(), tmp_path / "feedback.html")) == {
        "x": None, "y": None}


def test_the_same_notebook_unsanitized_would_run_both(page: Page, tmp_path: Path):
    assert _ran(page, _render(Config(), tmp_path / "raw.html")) == {"x": 1, "y": 1}
