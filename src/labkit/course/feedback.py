"""Student feedback after autograde, with nbgrader's own converter.

:func:`write_feedback` runs nbgrader's ``generate_feedback`` in-process
(:class:`nbgrader.apps.api.NbGraderAPI`), one submission at a time, so a submission whose
feedback fails is reported (a :class:`FeedbackWarning`) and skipped instead of stopping
the others. Feedback shows what the notebook holds once
:class:`~labkit.course.sanitize.SanitizeNotebook` made it safe, in a page whose
Content-Security-Policy forbids every script and remote fetch (:class:`FeedbackExporter`);
test cells show only the grader's verdict and never their hidden part
(:class:`ShowTestVerdicts`, :class:`ClearHiddenTestsInFeedback`). :func:`feedback_config`
is what ``course/nbgrader_config.py`` sets for ``nbgrader generate_feedback`` too.
Feedback that ``nbgrader release_feedback`` could not release is set aside for handing out
by hand, so one such submission never stops the release for the class.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat
from nbconvert import HTMLExporter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbformat import NotebookNode
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import ClearHiddenTests, GetGrades, NbGraderPreprocessor
from traitlets import Bool
from traitlets.config import Config

from labkit.course.sanitize import WIDGET_NOTE as WIDGET_NOTE  # re-exported
from labkit.course.sanitize import WIDGET_VIEW as WIDGET_VIEW  # re-exported
from labkit.course.sanitize import SanitizeNotebook

log = logging.getLogger(__name__)

#: No script at all, nothing fetched from any host: images are data: URIs, styles inline.
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; "
       "base-uri 'none'; form-action 'none'")
_HEAD = re.compile(r"<head(?:\s[^>]*)?>", re.I)


class FeedbackWarning(UserWarning):
    """nbgrader could not generate or cannot release feedback for one submission."""


def _is_test_cell(cell: NotebookNode) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return (cell.get("cell_type") == "code" and bool(meta.get("grade"))
            and not meta.get("solution"))


class ShowTestVerdicts(NbGraderPreprocessor):
    """Feedback preprocessor: a test cell's outputs are the grader's verdict, nothing else.

    A failed test shows ``ename: evalue`` (the message written for the student) without a
    traceback, which would quote the hidden tests around the failing line; a passed test
    keeps its printed lines. Tests never run in the student's kernel
    (:mod:`labkit.course.judge`), so no other output can hold them: other cells' outputs
    are left alone, never screened by content (a screen tells a student which guessed
    line is a hidden test).
    """

    def preprocess(self, nb: NotebookNode,
                   resources: dict) -> tuple[NotebookNode, dict]:
        for cell in nb.cells:
            if _is_test_cell(cell):
                cell.outputs = self._verdict(cell.get("outputs", []))
        return nb, resources

    @staticmethod
    def _verdict(outputs: list[NotebookNode]) -> list[NotebookNode]:
        for out in outputs:
            if out.get("output_type") == "error":
                message = f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"
                return [nbformat.v4.new_output("error", ename=out.get("ename", "Error"),
                                               evalue=out.get("evalue", ""),
                                               traceback=[message])]
        return [o for o in outputs if o.get("output_type") == "stream"]


class ClearHiddenTestsInFeedback(ClearHiddenTests):
    """nbgrader's :class:`~nbgrader.preprocessors.ClearHiddenTests`, for feedback.

    Removes every hidden-test region from the sources, as ``generate_assignment`` does for
    the release. In feedback any cell may hold the marker (a student can type it), so the
    cell need not be a grade cell (``enforce_metadata`` off), and a region a student's cell
    opens and never closes (or nests) is cut to the end of that cell instead of failing
    the student's whole feedback.
    """

    enforce_metadata = Bool(False, help=ClearHiddenTests.enforce_metadata.help).tag(
        config=True)

    def _remove_hidden_test_region(self, cell: NotebookNode) -> bool:
        try:
            return bool(super()._remove_hidden_test_region(cell))
        except RuntimeError:  # unbalanced markers: keep only what comes before the first
            lines = cell.source.split("\n")
            first = next(i for i, line in enumerate(lines)
                         if self.begin_test_delimeter in line)
            cell.source = "\n".join(lines[:first])
            return True


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter with a strict Content-Security-Policy ``<meta>`` first in
    ``<head>``: whatever got through, the page runs no script and fetches nothing.

    When :class:`~labkit.course.sanitize.SanitizeNotebook` is among its preprocessors,
    nbconvert's own ``sanitize_html`` (bleach, quadratic on nested HTML: minutes for one
    hostile output) is skipped: the notebook already holds only nh3-cleaned content."""

    def _init_resources(self, resources: Any) -> Any:
        resources = super()._init_resources(resources)
        if any(isinstance(p, SanitizeNotebook) and p.enabled for p in self._preprocessors):
            resources["should_sanitize_html"] = False
        return resources

    def _preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        """The sanitizers first of all: nbconvert validates the notebook after each
        preprocessor, and a hostile one (a cell id that is markup) would fail there."""
        first = [p for p in self._preprocessors if isinstance(p, SanitizeNotebook)]
        nb = copy.deepcopy(nb)
        for pp in first:
            nb, resources = pp(nb, resources)
        every, self._preprocessors = self._preprocessors, [
            p for p in self._preprocessors if p not in first]
        try:
            return super()._preprocess(nb, resources)
        finally:
            self._preprocessors = every

    def from_notebook_node(self, nb: NotebookNode, resources: Any = None,  # type: ignore[override]
                           **kw: Any) -> tuple[str, Any]:
        page, resources = super().from_notebook_node(nb, resources, **kw)
        return with_csp(page), resources


def with_csp(page: str) -> str:
    """``page`` with :data:`CSP` (and no referrer) right after its ``<head>`` tag; a page
    without one gets a head first."""
    meta = (f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="referrer" content="no-referrer">')
    match = _HEAD.search(page)
    if match is None:
        return f"<head>{meta}</head>{page}"
    return page[:match.end()] + meta + page[match.end():]


#: ``GenerateFeedback.preprocessors``: the notebook made safe first (before GetGrades adds
#: the grader's scores and comments), nbgrader's GetGrades, test cells reduced to their
#: verdicts and cleared of hidden tests, nbgrader's CSS last.
FEEDBACK_PREPROCESSORS: list[type] = [SanitizeNotebook, GetGrades, ShowTestVerdicts,
                                      ClearHiddenTestsInFeedback, CSSHTMLHeaderPreprocessor]


def feedback_config() -> Config:
    """The nbgrader configuration feedback needs (``course/nbgrader_config.py`` sets the
    same): :data:`FEEDBACK_PREPROCESSORS` and :class:`FeedbackExporter`.
    ``HTMLExporter.sanitize_html`` stays on for other pages rendering student notebooks
    (the formgrader); the feedback exporter skips it, its notebook being sanitized."""
    cfg = Config()
    cfg.GenerateFeedback.preprocessors = list(FEEDBACK_PREPROCESSORS)
    cfg.GenerateFeedback.exporter_class = FeedbackExporter
    cfg.HTMLExporter.sanitize_html = True
    return cfg


def write_feedback(course_root: Path, db_url: str, assignments: Sequence[str]) -> list[Path]:
    """nbgrader ``generate_feedback`` for every autograded submission of ``assignments``.

    Returns the HTML files (``feedback/<student>/<assignment>/<notebook>.html``), made with
    :func:`feedback_config`. A submission whose feedback fails is skipped with a
    :class:`FeedbackWarning`. Feedback that ``nbgrader release_feedback`` cannot release
    (no ``timestamp.txt`` or ``submission_secret.txt``: the submission did not come
    through ``nbgrader submit``) would stop the release for the whole class: it is moved
    to ``feedback-by-hand/<student>/<assignment>/``, with a warning, to be handed out.
    """
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    root = Path(course_root).resolve()
    coursedir = CourseDirectory(root=str(root), db_url=db_url)
    api = NbGraderAPI(coursedir=coursedir, config=_course_feedback_config(root))
    written: list[Path] = []
    with Gradebook(db_url) as gb:
        todo = [(a, s, notebooks) for a in assignments
                for s, notebooks in submissions(gb, a)]
    for assignment, student, notebooks in todo:
        if not (root / "autograded" / student / assignment).is_dir():
            _warn(f"feedback for {student}/{assignment} skipped: no autograded folder")
            continue
        result = api.generate_feedback(assignment, student_id=student, force=True)
        htmls = [root / "feedback" / student / assignment / f"{nb}.html" for nb in notebooks]
        if not result.get("success"):
            detail = (result.get("error") or result.get("log") or "").strip().splitlines()
            _warn(f"feedback for {student}/{assignment} failed: "
                  f"{detail[-1] if detail else 'unknown error'}")
            continue
        missing = [p.name for p in htmls if not p.is_file()]
        if missing:
            _warn(f"feedback for {student}/{assignment} did not produce {', '.join(missing)}")
        if not _releasable(root, student, assignment):
            continue
        written += [p for p in htmls if p.is_file()]
    return written


def _course_feedback_config(root: Path) -> Config:
    """The course's nbgrader configuration (its settings for the feedback exporter and
    converter count) with :func:`feedback_config` over it: the safety settings win."""
    from labkit.course.config import load_config

    cfg = load_config(root)
    cfg.merge(feedback_config())
    return cfg


RELEASE_NEEDS = ("timestamp.txt", "submission_secret.txt")  # read by release_feedback


def _releasable(root: Path, student: str, assignment: str) -> bool:
    """True when nbgrader's release_feedback can release this feedback folder; else the
    folder moves to ``feedback-by-hand/`` (one missing file would stop the release for
    every student after this one) and a warning says why."""
    folder = root / "feedback" / student / assignment
    lacking = [name for name in RELEASE_NEEDS if not (folder / name).is_file()]
    if not lacking:
        return True
    by_hand = root / "feedback-by-hand" / student / assignment
    shutil.rmtree(by_hand, ignore_errors=True)
    by_hand.parent.mkdir(parents=True, exist_ok=True)
    os.replace(folder, by_hand)
    _warn(f"feedback for {student}/{assignment} moved to {by_hand.relative_to(root)}: the "
          f"submission has no {' or '.join(lacking)} (it did not come through `nbgrader "
          "submit`), so `nbgrader release_feedback` cannot release it; hand it out yourself")
    return False


def _warn(message: str) -> None:
    log.warning(message)
    warnings.warn(message, FeedbackWarning, stacklevel=3)


def submissions(gb: Gradebook, assignment: str) -> list[tuple[str, list[str]]]:
    """(student, notebook names) of every submission of ``assignment`` in the gradebook."""
    try:
        subs = gb.assignment_submissions(assignment)
    except MissingEntry:
        return []
    return sorted((s.student.id, sorted(nb.name for nb in s.notebooks)) for s in subs)
