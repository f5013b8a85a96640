"""Student feedback after autograde, with nbgrader's own converter.

:func:`write_feedback` runs nbgrader's ``generate_feedback`` in-process
(:class:`nbgrader.apps.api.NbGraderAPI`), one submission at a time, so a submission whose
feedback fails is reported (a :class:`FeedbackWarning`) and skipped instead of stopping
the others. Feedback keeps the hidden tests hidden (:class:`ClearHiddenTestsInFeedback`,
:class:`WithholdHiddenTestOutputs`) and never runs a student's HTML or JavaScript
(:func:`feedback_config`, which ``course/nbgrader_config.py`` applies to ``nbgrader
generate_feedback`` and the formgrader too). Feedback that ``nbgrader release_feedback``
could not release is set aside for handing out by hand, so one such submission never
stops the release for the class.
"""

from __future__ import annotations

import html
import logging
import os
import re
import shutil
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import nbformat
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbformat import NotebookNode
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import ClearHiddenTests, GetGrades, NbGraderPreprocessor
from traitlets import Bool
from traitlets.config import Config

log = logging.getLogger(__name__)
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class FeedbackWarning(UserWarning):
    """nbgrader could not generate or cannot release feedback for one submission."""


_BEGIN_HIDDEN, _END_HIDDEN = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"  # nbgrader's markers
_QUOTE_CHARS = 12  # shorter hidden lines (")", "x = 1") are no evidence of a quote
WITHHELD = "[output withheld from feedback: it quotes the hidden tests]\n"


def _is_test_cell(cell: NotebookNode) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return (cell.get("cell_type") == "code" and bool(meta.get("grade"))
            and not meta.get("solution"))


def _hidden_lines(nb: NotebookNode) -> set[str]:
    """The lines inside the hidden-test regions of ``nb``'s test cells (stripped, at least
    ``_QUOTE_CHARS`` long) that appear nowhere outside those regions."""
    hidden: set[str] = set()
    shown: set[str] = set()
    for cell in nb.cells:
        inside = False
        for line in str(cell.get("source", "")).splitlines():
            if _BEGIN_HIDDEN in line or _END_HIDDEN in line:
                inside = _BEGIN_HIDDEN in line
            elif len(text := line.strip()) >= _QUOTE_CHARS:
                (hidden if inside and _is_test_cell(cell) else shown).add(text)
    return hidden - shown


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _quotes(value: object, lines: set[str]) -> bool:
    """Whether any string in ``value`` (ANSI colours and HTML escapes undone) holds one of
    ``lines``."""
    if not lines:
        return False
    texts = [html.unescape(_ANSI_RE.sub("", t)) for t in _strings(value)]
    return any(line in text for text in texts for line in lines)


class WithholdHiddenTestOutputs(NbGraderPreprocessor):
    """Feedback preprocessor: no output carries the hidden tests' source to the student.

    * the error of a test cell is shown as ``ename: evalue`` (the message written for the
      student), without its traceback: IPython's traceback quotes the cell's source around
      the failing line, hidden tests included;
    * any other output, of any cell, that quotes a hidden test line verbatim (a student
      cell printing ``In`` after the tests ran) is replaced by :data:`WITHHELD`.

    It reads the hidden regions, so it runs *before* :class:`ClearHiddenTestsInFeedback`.
    A quote that is encoded or paraphrased is not recognised: the outputs of code that
    runs in the same kernel as the hidden tests cannot be trusted, only screened.
    """

    def preprocess(self, nb: NotebookNode,
                   resources: dict) -> tuple[NotebookNode, dict]:
        lines = _hidden_lines(nb)
        for cell in nb.cells:
            if cell.get("cell_type") == "code":
                cell.outputs = [self._screen(o, _is_test_cell(cell), lines)
                                for o in cell.get("outputs", [])]
        return nb, resources

    @staticmethod
    def _screen(output: NotebookNode, test: bool, lines: set[str]) -> NotebookNode:
        if output.get("output_type") == "error":
            if test or _quotes(output.get("traceback", []), lines):
                message = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
                output.traceback = [message if not _quotes(message, lines) else
                                    f"{output.get('ename', 'Error')}: {WITHHELD.strip()}"]
            return output
        if _quotes({k: v for k, v in output.items() if k != "metadata"}, lines):
            return nbformat.v4.new_output("stream", name="stdout", text=WITHHELD)
        return output


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = "(an interactive view: open the notebook in JupyterLab to use it)"


class SummariseWidgetOutputs(NbGraderPreprocessor):
    """Feedback preprocessor: a widget output reads as a short note, not its Python repr.

    Static HTML cannot run a widget, so nbconvert shows a widget view's ``text/plain``
    fallback -- ``VBox(children=(HTML(value='<div>...``, the widget's whole state as
    code. The note replaces that fallback; other outputs are left as they are."""

    def preprocess(self, nb: NotebookNode,
                   resources: dict) -> tuple[NotebookNode, dict]:
        for cell in nb.cells:
            for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
                data = output.get("data", {})
                if WIDGET_VIEW in data:
                    output.data = {"text/plain": WIDGET_NOTE}
        return nb, resources


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


#: ``GenerateFeedback.preprocessors``: nbgrader's defaults (GetGrades first, the CSS last)
#: with the hidden tests withheld from the outputs, then cleared from the sources.
#: Widget views read as a note (:class:`SummariseWidgetOutputs`).
FEEDBACK_PREPROCESSORS: list[type] = [GetGrades, WithholdHiddenTestOutputs,
                                      ClearHiddenTestsInFeedback, SummariseWidgetOutputs,
                                      CSSHTMLHeaderPreprocessor]


def feedback_config() -> Config:
    """The nbgrader configuration feedback needs (``course/nbgrader_config.py`` sets the
    same): the hidden tests kept out of it, and ``HTMLExporter.sanitize_html`` so that
    HTML in a student's outputs and markdown is cleaned -- no ``<script>``, no event
    handler attributes, no widget JavaScript. The formgrader reads the same
    ``HTMLExporter`` setting."""
    cfg = Config()
    cfg.GenerateFeedback.preprocessors = list(FEEDBACK_PREPROCESSORS)
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
    api = NbGraderAPI(coursedir=coursedir, config=feedback_config())
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
