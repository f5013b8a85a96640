"""Every notebook runs: source notebooks under papermill (any error fails), release
notebooks under nbclient, where a blank submission may fail only its own test cells.

Headless (issue 26): one papermill run per lab builds every view (``LABKIT_HEADLESS=0``,
:data:`FULL_VIEWS`), so a broken chart or callout still fails here; every other run is
headless (``LABKIT_HEADLESS=1``), as the grading kernel is, and still fails on a broken
model (a headless part computes its model when its cell shows it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import papermill
import pytest
from nbclient import NotebookClient

from course_helpers import LABS, TRACKS, is_grade_cell, kernel_env, notebook_path
from text_checks import problems

CELL_TIMEOUT_S = 120
FULL_VIEWS = {lab: TRACKS[i % len(TRACKS)] for i, lab in enumerate(LABS)}
"""The one track per lab whose smoke run builds every view (the tracks differ by lab)."""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in kernel_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    return tmp_path


@pytest.mark.parametrize("track", TRACKS)
@pytest.mark.parametrize("lab", LABS)
def test_source_notebook_runs_without_error_under_papermill(lab, track, workdir, monkeypatch):
    full = FULL_VIEWS[lab] == track
    monkeypatch.setenv("LABKIT_HEADLESS", "0" if full else "1")
    src = notebook_path("source", lab, track)
    out = workdir / "executed.ipynb"
    papermill.execute_notebook(str(src), str(out), cwd=str(workdir), kernel_name="python3",
                               execution_timeout=CELL_TIMEOUT_S, progress_bar=False,
                               log_output=False, request_save_on_cell_execute=False)
    nb = nbformat.read(out, as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error" or o.get("name") == "stderr"]
    assert not errors, errors[:2]
    assert (workdir / "labkit_answers.json").exists()
    found = problems(shown_texts(nb, widgets=full))
    assert not found, "\n".join(found[:20])


def shown_texts(nb: nbformat.NotebookNode, *, widgets: bool = True) -> dict[str, str]:
    """Everything the executed notebook shows a student: its Markdown, its text and HTML
    outputs, and (``widgets``: a run with views) the value of every HTML widget in the
    saved widget state (the parts' readouts, callouts, reveals and math peeks as the run
    left them)."""
    texts: dict[str, str] = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            texts[f"cell {i} (markdown)"] = cell.source
            continue
        for j, o in enumerate(cell.get("outputs", [])):
            data = o.get("data", {})
            text = o.get("text") or data.get("text/html") or data.get("text/markdown") or ""
            if not data.get("application/vnd.jupyter.widget-view+json"):
                texts[f"cell {i} output {j}"] = "".join(text)
    if not widgets:
        return texts
    state = nb.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    assert state, "papermill saved no widget state: the widget check would see nothing"
    for model_id, model in state.items():
        if model.get("model_name") in ("HTMLModel", "HTMLMathModel", "LabelModel"):
            texts[f"widget {model_id[:8]}"] = str(model.get("state", {}).get("value", ""))
    return texts


@pytest.mark.parametrize("track", TRACKS)
@pytest.mark.parametrize("lab", LABS)
def test_blank_release_fails_only_its_test_cells(lab, track, workdir, monkeypatch):
    monkeypatch.setenv("LABKIT_HEADLESS", "1")  # what is tested is which cells raise
    shutil.copy(notebook_path("release", lab, track), workdir / "student.ipynb")
    nb = nbformat.read(workdir / "student.ipynb", as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            allow_errors=True, resources={"metadata": {"path": str(workdir)}})
    client.execute(env=dict(os.environ))
    failed_cells = [c for c in nb.cells if c.cell_type == "code" and any(
        o.get("output_type") == "error" for o in c.get("outputs", []))]
    not_tests = [c.source[:80] for c in failed_cells if not is_grade_cell(c)]
    assert not not_tests, f"non-test cells raised: {not_tests}"
    grade_cells = [c for c in nb.cells if is_grade_cell(c)]
    assert grade_cells and all(c in failed_cells for c in grade_cells), (
        "an unanswered exercise passed its test")
