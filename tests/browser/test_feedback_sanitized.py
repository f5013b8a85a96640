"""Student HTML and JavaScript never run, and nothing is fetched, where feedback is read.

The hostile notebook of ``tests/test_course_sanitize.py`` (every road in: image metadata
that plants ``onerror``, markdown and output HTML, SVG, ``filenames``, remote images and
CSS, a missing attachment) goes through the feedback pipeline
(:func:`labkit.course.feedback.feedback_config`: SanitizeNotebook, nbgrader's feedback
template, the Content-Security-Policy) and is opened in Debian's chromium: no script of the
student's runs, no request leaves the page, the memo is still there. The same notebook
rendered with the old setting (nbconvert's ``sanitize_html`` alone) runs a student's script
and fetches a remote URL, so the checks can fail."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter
from playwright.sync_api import Browser, Page, Route
from traitlets.config import Config

from browser_helpers import new_page
from test_course_sanitize import (
    BOOTSTRAP,
    MARKDOWN,
    NBGRADER,
    RUN,
    TEMPLATES,
    _Grades,
    feedback_page,
    hostile_notebook,
)

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    p = new_page(browser)
    yield p
    p.context.close()


def _opened(page: Page, path: Path) -> dict[str, object]:
    """Open ``path``; what ran (``window.__x``) and every request beyond the file itself
    (each is aborted, never sent)."""
    requests: list[str] = []

    def record(route: Route) -> None:
        if route.request.url == path.as_uri():
            route.continue_()
        else:
            requests.append(route.request.url)
            route.abort()

    page.route("**/*", record)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(500)  # image errors and CSS fetches come after load
    ran = page.evaluate("() => window.__x ?? null")
    return {"ran": ran, "requests": requests, "text": page.inner_text("body")}


def test_feedback_runs_no_student_script_and_fetches_nothing(page: Page, tmp_path: Path):
    html, _ = feedback_page(hostile_notebook())
    path = tmp_path / "feedback.html"
    path.write_text(html)
    seen = _opened(page, path)
    assert seen["ran"] is None
    assert seen["requests"] == []          # no remote image, CSS or MathJax: the CSP holds
    assert "My memo." in str(seen["text"])


def test_the_same_notebook_with_bleach_alone_runs_and_fetches(page: Page, tmp_path: Path):
    """Control: nbgrader's feedback template with ``sanitize_html`` and no labkit
    preprocessor (the old feedback) lets the student's script run and the page fetch."""
    cfg = Config()
    cfg.HTMLExporter.template_name = "feedback"
    cfg.HTMLExporter.extra_template_basedirs = [str(TEMPLATES)]
    cfg.HTMLExporter.extra_template_paths = [str(BOOTSTRAP)]
    cfg.HTMLExporter.sanitize_html = True
    exporter = HTMLExporter(config=cfg)
    exporter.register_preprocessor(_Grades)
    markdown = [m for m in MARKDOWN if not re.search("attachment:", m)]  # would fail
    nb = nbformat.from_dict(hostile_notebook(markdown))
    nb.cells[-2]["id"] = "plain"  # nbconvert refuses the planted id: no page at all
    html, _ = exporter.from_notebook_node(nb, resources={"nbgrader": dict(NBGRADER)})
    assert RUN in html
    path = tmp_path / "raw.html"
    path.write_text(html)
    seen = _opened(page, path)
    assert seen["ran"] == 1
    assert any("evil.example" in url for url in seen["requests"])  # type: ignore[union-attr]
