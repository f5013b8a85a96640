"""labkit.course.report on a real course: real nbgrader autograde into a temporary SQLite
gradebook, then feedback (nbgrader's generate_feedback), grade CSVs and the class summary.

One autograde run for the module: alice answers everything, bob hands in the blank
release notebook, carol solves only the Part A and Part B exercises (no predictions).
"""

from __future__ import annotations

import csv
import json
import shutil
import warnings
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from course_helpers import ROOT, kernel_env, nbgrader_meta, notebook_path, run_nbgrader
from labkit.core.answers import AnswerStore
from labkit.course import report
from labkit.labs import LABS

LAB = LABS["lab1"]
TRACK = "cloud_fleet"
ASSIGNMENT = LAB.assignment(TRACK)
NOTEBOOK = LAB.module
STUDENTS = ("alice", "bob", "carol")
CAROL_NOTE = "answer_B matches a classmate's digit for digit"
COMMITTED_PREDICTION = "Part A: we looked for your committed prediction"


def _paste_solutions(folder: Path, grade_ids: set[str]) -> None:
    """Type the source notebook's solution into each cell of ``grade_ids``."""
    path = folder / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(path, as_version=4)
    source = nbformat.read(notebook_path("source", LAB.id, TRACK), as_version=4)
    solutions = {nbgrader_meta(c)["grade_id"]: c.source for c in source.cells
                 if nbgrader_meta(c).get("solution")}
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id", "")
        if gid in grade_ids:
            cell.source = solutions[gid].replace("### BEGIN SOLUTION\n", "").replace(
                "\n### END SOLUTION", "")
    nbformat.write(nb, path)


def _commit_everything(folder: Path) -> None:
    lab = LAB.lab(TRACK, store=AnswerStore(folder / "labkit_answers.json"))
    for part in "ABCD":
        p = lab.part(part)
        p.predict.commit(p.predict.options[-1])
        p.checkpoint.commit(p.checkpoint.options[0])


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("report")
    env = kernel_env(tmp)
    root, db = tmp / "course", tmp / "gradebook.db"
    root.mkdir()
    shutil.copytree(ROOT / "course", root / "course")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "source" / ASSIGNMENT, root / "source" / ASSIGNMENT)
    run_nbgrader(root, "generate_assignment", ASSIGNMENT, "--force", env=env, db=db)

    for student in STUDENTS:
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        shutil.copy(notebook_path("release", LAB.id, TRACK), folder)
    alice = root / "submitted" / "alice" / ASSIGNMENT
    _paste_solutions(alice, {f"lab1-{p}-exercise" for p in "abcd"} | {"lab1-memo"})
    _commit_everything(alice)
    _paste_solutions(root / "submitted" / "carol" / ASSIGNMENT,
                     {"lab1-a-exercise", "lab1-b-exercise"})

    run_nbgrader(root, "autograde", ASSIGNMENT, env=env, db=db)
    graded = root / "autograded"
    (graded / "carol" / ASSIGNMENT / report.GRADING_NOTES).write_text(json.dumps(
        {"findings": [{"code": "similarity", "message": CAROL_NOTE}]}))
    (graded / "bob" / ASSIGNMENT / report.GRADING_NOTES).write_text("{not json")
    return root, f"sqlite:///{db}"


@pytest.fixture(scope="module")
def exported(course, tmp_path_factory) -> report.Export:
    root, db_url = course
    return report.export(root, db_url, tmp_path_factory.mktemp("out"), [ASSIGNMENT])


def _rows(result: report.Export) -> dict[str, dict[str, str]]:
    (path,) = result.csv_paths
    assert path.name == f"grades_{ASSIGNMENT}.csv"
    return {r["student_id"]: r for r in csv.DictReader(path.open())}


def test_csv_has_one_row_per_submission_with_the_documented_columns(exported):
    (path,) = exported.csv_paths
    with path.open() as fh:
        header = next(csv.reader(fh))
    assert header == ["student_id", "assignment", "part_A", "part_B", "part_C", "part_D",
                      "autograded", "autograded_max", "manual", "manual_max", "total", "max",
                      "needs_manual_grade", "grader_notes"]
    rows = _rows(exported)
    assert sorted(rows) == list(STUDENTS)
    assert {r["assignment"] for r in rows.values()} == {ASSIGNMENT}


def test_part_scores_follow_what_each_student_did(exported):
    rows = _rows(exported)
    parts = {s: [float(rows[s][f"part_{p}"]) for p in "ABCD"] for s in STUDENTS}
    full = [r.part_max[p] for r in exported.rows if r.student_id == "alice" for p in "ABCD"]
    assert full == [4, 4, 4, 5]                      # predict 1 + checkpoint 1 + exercise
    assert parts["alice"] == full
    assert parts["bob"] == [0, 0, 0, 0]
    assert parts["carol"] == [2, 2, 0, 0]            # the two exercises, no predictions
    alice, bob = rows["alice"], rows["bob"]
    assert float(alice["autograded"]) == float(alice["autograded_max"]) == 17
    assert float(bob["autograded"]) == 0
    assert float(rows["carol"]["autograded"]) == 4
    assert alice["needs_manual_grade"] == "true"     # her memo waits for a grader


def test_max_columns_add_up_to_the_gradebooks_assignment_total(course, exported):
    _, db_url = course
    with Gradebook(db_url) as gb:
        total = gb.find_assignment(ASSIGNMENT).max_score
    for row in _rows(exported).values():
        assert float(row["autograded_max"]) + float(row["manual_max"]) == float(row["max"])
        assert float(row["max"]) == total == 20
        assert float(row["manual_max"]) == 3         # the memo
        assert float(row["total"]) == float(row["autograded"]) + float(row["manual"])


def test_grader_notes_come_from_labkit_grading_json_and_tolerate_bad_files(exported):
    rows = _rows(exported)
    assert rows["carol"]["grader_notes"] == CAROL_NOTE
    assert rows["bob"]["grader_notes"] == ""         # malformed file
    assert rows["alice"]["grader_notes"] == ""       # no file


def test_summary_json_part_means_distribution_and_failing_checks(exported):
    summary = json.loads(exported.summary_json.read_text())
    lab = summary["labs"]["lab1"]
    assert lab["submissions"] == 3 and lab["assignments"] == [ASSIGNMENT]
    means = {p: s["mean"] for p, s in lab["parts"].items()}
    assert means == pytest.approx({"A": 2.0, "B": 2.0, "C": 4 / 3, "D": 5 / 3}, abs=1e-3)
    assert lab["parts"]["A"]["max_points"] == 4
    assert lab["parts"]["A"]["distribution"] == {"0": 1, "1": 0, "2": 1, "3": 0, "4": 1}
    assert lab["weakest_part"] == "C"                # C and D tie at 1/3; first one wins
    checks = {(c["grade_id"], c["label"]): c["count"] for c in lab["failing_checks"]}
    assert len(checks) <= report.TOP_FAILING
    assert checks[("lab1-a-predict-done", COMMITTED_PREDICTION)] == 2   # bob and carol
    assert lab["failing_checks"][0]["count"] == 2
    assert not any(gid.startswith(("lab1-a-exercise", "lab1-b-exercise")) and n == 2
                   for (gid, _), n in checks.items())   # carol solved those
    track = lab["tracks"][TRACK]
    assert track["submissions"] == 3 and track["parts"] == lab["parts"]


def test_summary_html_is_self_contained_with_a_chart_per_part(exported):
    page = exported.summary_html.read_text()
    assert page.count("<svg") >= 2 * 5              # lab and track: 4 parts + checks each
    for part in "ABCD":
        assert f"Part {part} (" in page
    assert "3 submissions" in page and "struggled most with <strong>Part C" in page
    assert "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    assert "we looked for your committed prediction" in page


def test_html_and_svg_escape_hostile_labels():
    hostile = "<script>alert('x')</script> & \"quotes\""
    check = report.FailingCheck("lab1-a-predict-done", hostile, 3)
    part = report.part_stats("A", [(4.0, 4.0), (0.0, 4.0)])
    group = report.GroupSummary(hostile, (ASSIGNMENT,), 2, (part,), (check,))
    page = report.render_summary_html([report.LabSummary("lab1", group, (group,))])
    assert "<script" not in page and "&lt;script&gt;" in page
    svgs = [report.bar_chart_svg(hostile, [(hostile, 1)], x_label=hostile, y_label=hostile),
            report.hbar_chart_svg(hostile, [(hostile, 2)], x_label="n")]
    for svg in svgs:
        tree = ET.fromstring(svg)                    # well-formed XML
        texts = [t.text for t in tree.iter("{http://www.w3.org/2000/svg}text")]
        assert "<script" not in svg
        assert any(hostile == t for t in texts)


def test_check_label_takes_the_message_before_the_separator():
    assert report.check_label({"ename": "AssertionError", "evalue":
                               "Part B: `answer_B` must hold your answer -- it is still "
                               "None. Revisit: the Part B exercise cell"}) == (
        "Part B: `answer_B` must hold your answer")
    assert report.check_label({"ename": "NameError", "evalue": ""}) == "NameError"
    assert report.part_of("lab1-d-exercise-check") == "D"
    assert report.part_of("lab1-memo") is None


def test_feedback_for_every_submission(course):
    root, db_url = course
    paths = report.write_feedback(root, db_url, [ASSIGNMENT])
    expected = {root / "feedback" / s / ASSIGNMENT / f"{NOTEBOOK}.html" for s in STUDENTS}
    assert set(paths) == expected
    for path in paths:
        assert "Part A" in path.read_text()


def test_one_broken_submission_does_not_stop_the_others(course, tmp_path):
    root, db_url = course
    copy = tmp_path / "course"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("feedback"))
    db = tmp_path / "gradebook.db"
    shutil.copy(db_url.removeprefix("sqlite:///"), db)
    (copy / "autograded" / "bob" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").write_text("{broken")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paths = report.write_feedback(copy, f"sqlite:///{db}", [ASSIGNMENT])
    assert {p.parts[-3] for p in paths} == {"alice", "carol"}
    messages = [str(w.message) for w in caught if w.category is report.FeedbackWarning]
    assert Counter("bob/" in m for m in messages)[True] == 1
