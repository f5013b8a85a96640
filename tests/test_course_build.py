"""``labkit course build``: one lab source, four track notebooks, committed and current."""

from __future__ import annotations

import subprocess

import nbformat
import pytest

from course_helpers import BIN, LABS, ROOT, TRACKS, is_grade_cell, nbgrader_meta, notebook_path


def test_committed_source_and_release_are_current():
    proc = subprocess.run([str(BIN / "labkit"), "course", "build", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "up to date" in proc.stdout


@pytest.mark.parametrize("lab", LABS)
def test_every_track_is_its_own_assignment_with_equal_points(lab):
    totals = {}
    for track in TRACKS:
        nb = nbformat.read(notebook_path("source", lab, track), as_version=4)
        totals[track] = sum(nbgrader_meta(c).get("points", 0) for c in nb.cells
                            if nbgrader_meta(c).get("grade"))
    assert len(set(totals.values())) == 1, totals
    assert next(iter(totals.values())) > 0


@pytest.mark.parametrize("lab", LABS)
def test_one_source_of_truth_same_cells_in_every_track(lab):
    layouts = set()
    for track in TRACKS:
        nb = nbformat.read(notebook_path("source", lab, track), as_version=4)
        layouts.add(tuple((c.cell_type, nbgrader_meta(c).get("grade_id")) for c in nb.cells))
    assert len(layouts) == 1


@pytest.mark.parametrize("track", TRACKS)
@pytest.mark.parametrize("lab", LABS)
def test_release_hides_solutions_and_hidden_tests(lab, track):
    text = notebook_path("release", lab, track).read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "release_guardrails(",
                   "cost_crossover(", "state_capacity("):
        assert marker not in text, marker
    nb = nbformat.read(notebook_path("release", lab, track), as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    grade_ids = [nbgrader_meta(c).get("grade_id") for c in nb.cells]
    assert all(grade_ids) and len(set(grade_ids)) == len(grade_ids)
    assert any(is_grade_cell(c) for c in nb.cells)


@pytest.mark.parametrize("lab", LABS)
def test_every_part_grades_prediction_checkpoint_and_an_exercise(lab):
    nb = nbformat.read(notebook_path("source", lab, TRACKS[0]), as_version=4)
    graded = {nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c).get("grade")}
    for part in "abcd":
        for suffix in ("predict-done", "checkpoint-done", "exercise-check"):
            assert f"{lab}-{part}-{suffix}" in graded
    assert f"{lab}-memo" in graded
