"""labkit.course.report on a real course: real nbgrader autograde into a temporary SQLite
gradebook, then feedback (nbgrader's generate_feedback), grade CSVs and the class summary.

One autograde run for the module: alice answers everything, bob hands in the blank
release notebook, carol solves only the Part A and Part B exercises (no predictions); her
Part A answer cell also displays hostile HTML.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
import warnings
import xml.etree.ElementTree as ET
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter
from nbgrader.api import Gradebook
from nbgrader.preprocessors import ClearHiddenTests
from traitlets.config import Config
from traitlets.utils.importstring import import_item

from course_helpers import (
    ROOT,
    hidden_secrets,
    kernel_env,
    nbgrader_meta,
    notebook_path,
    run_nbgrader,
)
from labkit.core.answers import AnswerStore
from labkit.course import feedback as fb
from labkit.course import report
from labkit.labs import LABS

LAB = LABS["lab1"]
TRACK = "cloud_fleet"
ASSIGNMENT = LAB.assignment(TRACK)
NOTEBOOK = LAB.module
STUDENTS = ("alice", "bob", "carol")
CAROL_NOTE = "answer_B matches a classmate's digit for digit"
COMMITTED_PREDICTION = "Part A: we looked for your committed prediction"
HOSTILE_HTML = ("from IPython.display import HTML, display\n"
                "display(HTML('<script>window.__x=1</script>'\n"
                "             '<img src=x onerror=\"window.__y=1\">'))\n")


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
        p.checkpoint.commit(p.checkpoint_expected)  # only the right answer earns the point


def _secret(student: str) -> str:
    return hashlib.sha512(student.encode()).hexdigest()  # like secrets.token_hex(64)


def _add_hostile_cells(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    answer = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == "lab1-a-exercise")
    answer.source += "\n" + HOSTILE_HTML
    nbformat.write(nb, path)


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
        # what `nbgrader submit` puts beside the notebook (release_feedback needs both)
        (folder / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")
        (folder / "submission_secret.txt").write_text(_secret(student))
    alice = root / "submitted" / "alice" / ASSIGNMENT
    _paste_solutions(alice, {f"lab1-{p}-exercise" for p in "abcd"} | {"lab1-memo"})
    _commit_everything(alice)
    carol = root / "submitted" / "carol" / ASSIGNMENT
    _paste_solutions(carol, {"lab1-a-exercise", "lab1-b-exercise"})
    _add_hostile_cells(carol / f"{NOTEBOOK}.ipynb")

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
    assert header == ["assignment", "duedate", "timestamp", "student_id", "last_name",
                      "first_name", "email", "raw_score", "late_submission_penalty", "score",
                      "max_score", "part_A", "part_B", "part_C", "part_D",
                      "autograded", "autograded_max", "manual", "manual_max",
                      "needs_manual_grade", "flagged", "grader_notes"]
    rows = _rows(exported)
    assert sorted(rows) == list(STUDENTS)
    assert {r["assignment"] for r in rows.values()} == {ASSIGNMENT}
    assert {r["timestamp"] for r in rows.values()} == {"2026-11-30 12:00:00"}


def _stock_csv(db_url: str, dest: Path, plugin: type) -> dict[str, dict[str, str]]:
    with Gradebook(db_url, "labkit") as gb:
        plugin(to=str(dest)).export(gb)
    return {r["student_id"]: r for r in csv.DictReader(dest.open())}


def test_stock_columns_and_late_penalty_are_nbgraders(course, tmp_path):
    """Beside the part columns, the export has the columns and values of nbgrader's own
    CsvExportPlugin, the late penalty taken off as nbgrader does: max(0, raw - penalty)."""
    from nbgrader.plugins import CsvExportPlugin

    root, db_url = course
    db = tmp_path / "late.db"
    shutil.copy(db_url.removeprefix("sqlite:///"), db)
    late = f"sqlite:///{db}"
    with Gradebook(late, "labkit") as gb:                 # alice 1.5 late, bob 2 on 0
        for student, penalty in (("alice", 1.5), ("bob", 2.0)):
            (nb,) = gb.find_submission(ASSIGNMENT, student).notebooks
            nb.late_submission_penalty = penalty
        gb.db.commit()
    ours = _stock_csv(late, tmp_path / "ours.csv", report.LabkitExportPlugin)
    stock = _stock_csv(late, tmp_path / "stock.csv", CsvExportPlugin)
    assert set(ours) == set(stock) == set(STUDENTS)
    for student in STUDENTS:
        assert {k: ours[student][k] for k in report.STOCK_COLUMNS} == stock[student], student
    assert float(ours["alice"]["raw_score"]) == 17 and float(ours["alice"]["score"]) == 15.5
    assert float(ours["bob"]["score"]) == 0.0         # never below zero
    assert float(ours["alice"]["part_A"]) == 4       # the parts are before the penalty
    with Gradebook(late, "labkit") as gb:
        (row,) = [r for r in report.grade_rows(gb, root, ASSIGNMENT) if r.student_id == "alice"]
    assert (row.total, row.late_penalty, row.score) == (17, 1.5, 15.5)


def test_nbgrader_export_runs_the_plugin(course, tmp_path):
    root, db_url = course
    dest = tmp_path / "grades.csv"
    run_nbgrader(root, "export", "--exporter=labkit.course.report.LabkitExportPlugin",
                 f"--to={dest}", env=kernel_env(tmp_path),
                 db=Path(db_url.removeprefix("sqlite:///")))
    rows = list(csv.DictReader(dest.open()))
    assert sorted(r["student_id"] for r in rows) == list(STUDENTS)
    assert all(r["max_score"] == "20.0" for r in rows)
    assert {r["student_id"]: r["part_A"] for r in rows} == {"alice": "4", "bob": "0",
                                                            "carol": "2"}


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
        assert float(row["autograded_max"]) + float(row["manual_max"]) == float(
            row["max_score"])
        assert float(row["max_score"]) == total == 20
        assert float(row["manual_max"]) == 3         # the memo
        assert float(row["raw_score"]) == float(row["autograded"]) + float(row["manual"])


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
    totals = lab["totals"]                           # alice 17, bob 0, carol 4 of 20
    assert totals["max_score"] == 20 and totals["mean"] == pytest.approx(7.0)
    assert totals["distribution"] == {"[0, 4)": 1, "[4, 8)": 1, "[8, 12)": 0,
                                      "[12, 16)": 0, "[16, 20]": 1}
    assert totals["memos_waiting"] == 1              # alice wrote one; the others left it
    assert totals["flagged"] == [] and totals["not_graded"] == []


def test_summary_html_is_self_contained_with_a_chart_per_part(exported):
    page = exported.summary_html.read_text()
    assert page.count("<svg") >= 2 * 5              # lab and track: 4 parts + checks each
    for part in "ABCD":
        assert f"Part {part} (" in page
    text = re.sub(r"<[^>]+>", "", page)   # the words, whatever the markup
    assert "3 submissions" in text and "struggled most with Part C" in text
    assert "Total score (20 points)" in page and "mean 7.00 of 20 points" in page
    assert "1 memo waits for a person" in page
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


@pytest.fixture(scope="module")
def feedback(course) -> dict[str, Path]:
    """write_feedback once for the module: student -> feedback HTML."""
    root, db_url = course
    return {p.parts[-3]: p for p in fb.write_feedback(root, db_url, [ASSIGNMENT])}


def test_feedback_for_every_submission(course, feedback):
    root, _ = course
    expected = {s: root / "feedback" / s / ASSIGNMENT / f"{NOTEBOOK}.html" for s in STUDENTS}
    assert feedback == expected
    for path in feedback.values():
        assert "Part A" in path.read_text()


def test_nbgrader_release_feedback_releases_every_feedback(course, feedback, tmp_path):
    """The secret `nbgrader submit` left beside each submission reaches the feedback folder
    (autograde and generate_feedback copy it), where release_feedback names the file."""
    from nbgrader.utils import notebook_hash

    root, db_url = course
    for student, path in feedback.items():
        assert (path.parent / "submission_secret.txt").read_text() == _secret(student)
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    run_nbgrader(root, "release_feedback", ASSIGNMENT, f"--Exchange.root={exchange}",
                 "--course=labkit", env=kernel_env(tmp_path),
                 db=Path(db_url.removeprefix("sqlite:///")))
    released = exchange / "labkit" / "feedback"
    want = {f"{notebook_hash(secret=_secret(s), notebook_id=NOTEBOOK)}.html": s
            for s in STUDENTS}
    assert sorted(p.name for p in released.iterdir()) == sorted(want)
    for name, student in want.items():
        assert (released / name).read_bytes() == feedback[student].read_bytes()


class _Page(HTMLParser):
    """A page's visible text, its scripts and its event-handler attributes."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.raw = page
        self.text: list[str] = []
        self.scripts: list[str] = []
        self.handlers: list[tuple[str, str, str]] = []
        self._raw: str | None = None
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._raw = tag if tag in ("script", "style") else None
        self.handlers += [(tag, k, v or "") for k, v in attrs if k.lower().startswith("on")]

    def handle_endtag(self, tag: str) -> None:
        self._raw = None

    def handle_data(self, data: str) -> None:
        if self._raw == "script":
            self.scripts.append(data)
        elif self._raw != "style":
            self.text.append(data)

    @property
    def all_text(self) -> str:
        """Everything a reader or a script of the page could see, but the CSS."""
        return "".join(self.text) + "\n" + "\n".join(self.scripts)


@pytest.fixture(scope="module")
def pages(course, feedback) -> dict[str, _Page]:
    """Every feedback page: write_feedback's, and the `nbgrader generate_feedback` CLI's
    (the course's nbgrader_config.py) into feedback_cli/."""
    root, db_url = course
    run_nbgrader(root, "generate_feedback", ASSIGNMENT, "--force",
                 "--CourseDirectory.feedback_directory=feedback_cli", env=kernel_env(root),
                 db=Path(db_url.removeprefix("sqlite:///")))
    cli = sorted((root / "feedback_cli").glob(f"*/{ASSIGNMENT}/{NOTEBOOK}.html"))
    assert {p.parts[-3] for p in cli} == set(STUDENTS)
    pages = {f"api/{s}": p for s, p in feedback.items()}
    pages |= {f"cli/{p.parts[-3]}": p for p in cli}
    return {name: _Page(path.read_text()) for name, path in pages.items()}


def test_feedback_shows_no_hidden_test_and_no_expected_value(pages):
    lines, numbers = hidden_secrets(LAB.id, TRACK)
    assert len(lines) >= 8 and "0.6404494382022472" in numbers  # Part C's expected value
    for name, page in pages.items():
        text = page.all_text
        assert 'expect_number("answer_A", answer_A, "A",' in text, name  # visible code shows
        assert not [line for line in lines if line in text], name
        assert not [n for n in numbers if n in text], name
        assert "BEGIN HIDDEN TESTS" not in text, name
    bob = pages["api/bob"].all_text                    # blank: every test cell failed
    # plain `nbgrader autograde` runs the checks in the kernel: SelfCheckError is the
    # AssertionError labkit.grading raises (the judge of `labkit course grade` names it so)
    assert re.search(rf"(AssertionError|SelfCheckError): {re.escape(COMMITTED_PREDICTION)}",
                     bob)
    assert "Traceback (most recent call last)" not in bob and "Cell In[" not in bob


def test_the_hidden_test_check_would_see_a_leak(course):
    """Control: the same notebook rendered with nbconvert's defaults shows the hidden
    tests (in the sources and the tracebacks), so the check above can fail."""
    root, _ = course
    lines, numbers = hidden_secrets(LAB.id, TRACK)
    for student in ("alice", "carol"):
        nb = nbformat.read(root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb",
                           as_version=4)
        text = _Page(HTMLExporter().from_notebook_node(nb)[0]).all_text
        assert [line for line in lines if line in text]
        assert [n for n in numbers if n in text]


def test_feedback_never_runs_student_html_or_javascript(course, pages):
    root, _ = course
    for name, page in pages.items():
        assert page.raw.count("Content-Security-Policy") == 1, name
        assert "<script>window.__x" not in page.raw and "<img src=x" not in page.raw, name
        assert not [s for s in page.scripts if "window.__" in s], name
        assert not [h for h in page.handlers if "window.__" in h[2] or h[1] == "onerror"], (
            name, page.handlers)
    carol_path = root / "autograded" / "carol" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    raw = HTMLExporter().from_notebook_node(nbformat.read(carol_path, as_version=4))[0]
    unsafe = _Page(raw)                                # control: unsanitised, it would run
    assert [s for s in unsafe.scripts if "window.__x=1" in s]
    assert [h for h in unsafe.handlers if h[1] == "onerror"]


def test_feedback_config_is_the_course_config():
    config = Config()
    path = ROOT / "course" / "nbgrader_config.py"
    exec(compile(path.read_text(), str(path), "exec"),
         {"get_config": lambda: config, "__file__": str(path)})
    ours = fb.feedback_config()
    assert config.GenerateFeedback.preprocessors == ours.GenerateFeedback.preprocessors
    exporter = config.GenerateFeedback.exporter_class
    exporter = import_item(exporter) if isinstance(exporter, str) else exporter
    assert exporter is ours.GenerateFeedback.exporter_class is fb.FeedbackExporter
    assert config.HTMLExporter.sanitize_html is ours.HTMLExporter.sanitize_html is True
    names = [p.__name__ for p in ours.GenerateFeedback.preprocessors]
    assert names[:2] == ["SanitizeNotebook", "GetGrades"]   # before the grader's comments
    assert names[-1] == "CSSHTMLHeaderPreprocessor"
    assert issubclass(fb.ClearHiddenTestsInFeedback, ClearHiddenTests)
    # nbconvert runs a registered preprocessor only when it is enabled
    assert fb.ShowTestVerdicts().enabled and fb.SanitizeNotebook().enabled
    assert fb.ClearHiddenTestsInFeedback().enabled


def test_write_feedback_applies_the_course_config_under_labkits(tmp_path):
    """A course setting for feedback (here the exporter's prompts and the sanitizer's
    size cap) reaches write_feedback; what keeps feedback safe cannot be set away."""
    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.HTMLExporter.exclude_input_prompt = True\n"
        "c.SanitizeNotebook.max_text_bytes = 4096\n"
        "c.GenerateFeedback.preprocessors = []\n"
        "c.HTMLExporter.sanitize_html = False\n")
    cfg = fb._course_feedback_config(tmp_path)
    assert cfg.HTMLExporter.exclude_input_prompt is True
    assert cfg.SanitizeNotebook.max_text_bytes == 4096
    assert cfg.GenerateFeedback.preprocessors == fb.FEEDBACK_PREPROCESSORS
    assert cfg.GenerateFeedback.exporter_class is fb.FeedbackExporter
    assert cfg.HTMLExporter.sanitize_html is True


def _cell(source: str, *, test: bool = True, outputs: list | None = None):
    meta = {"nbgrader": {"grade": test, "solution": False, "grade_id": "t", "points": 1}}
    return nbformat.v4.new_code_cell(source, metadata=meta, outputs=outputs or [])


def test_hidden_regions_a_student_opened_do_not_break_feedback():
    pp = fb.ClearHiddenTestsInFeedback()
    nb = nbformat.v4.new_notebook(cells=[
        _cell("shown()\n### BEGIN HIDDEN TESTS\nsecret_check(0.123456)\n"
              "### END HIDDEN TESTS\nalso_shown()"),
        _cell("mine = 1\n# ### BEGIN HIDDEN TESTS, never closed\nsecret = 2", test=False),
        _cell("### BEGIN HIDDEN TESTS\n### BEGIN HIDDEN TESTS\nx\n### END HIDDEN TESTS",
              test=False)])
    nb, _ = pp.preprocess(nb, {})
    assert [c.source for c in nb.cells] == ["shown()\nalso_shown()", "mine = 1", ""]


def test_test_cells_show_the_verdict_and_no_output_is_screened():
    """A failed test shows ``ename: evalue`` only, a passed one its printed lines; other
    cells' outputs stay as they are whatever they quote: feedback never tells a student
    whether a guessed line is a hidden test."""
    hidden = "_want = secret_formula(answer_A)"
    error = nbformat.v4.new_output("error", ename="AssertionError",
                                   evalue="Part A: yours is too high",
                                   traceback=["\x1b[0;31mAssertionError\x1b[0m", hidden])
    shown = nbformat.v4.new_output("display_data", data={"text/plain": hidden})
    quoting = nbformat.v4.new_output("stream", name="stdout", text=f"I found: {hidden}\n")
    fine = nbformat.v4.new_output("stream", name="stdout", text="Part A: ok\n")
    nb = nbformat.v4.new_notebook(cells=[
        _cell(f"expect_number()\n### BEGIN HIDDEN TESTS\n{hidden}\n### END HIDDEN TESTS",
              outputs=[fine, error]),
        _cell("check()", outputs=[fine, shown]),
        _cell("print(guess)", test=False, outputs=[quoting, fine, shown])])
    nb, _ = fb.ShowTestVerdicts().preprocess(nb, {})
    (verdict,) = nb.cells[0].outputs
    assert verdict.traceback == ["AssertionError: Part A: yours is too high"]
    assert nb.cells[1].outputs == [fine]                      # passed: the printed lines
    assert nb.cells[2].outputs == [quoting, fine, shown]      # never screened by content


def test_widget_outputs_read_as_a_note_not_their_repr():
    view = nbformat.v4.new_output("display_data", data={
        fb.WIDGET_VIEW: {"model_id": "abc", "version_major": 2, "version_minor": 0},
        "text/plain": "VBox(children=(HTML(value='<div>You predicted <b>365</b>')))"})
    text = nbformat.v4.new_output("stream", name="stdout", text="Part A: ok\n")
    nb = nbformat.v4.new_notebook(cells=[_cell("show()", test=False, outputs=[view, text])])
    nb, _ = fb.SanitizeNotebook().preprocess(nb, {})
    assert nb.cells[0].outputs[0].data == {"text/plain": fb.WIDGET_NOTE}
    assert nb.cells[0].outputs[1] == text
    assert fb.SanitizeNotebook in fb.FEEDBACK_PREPROCESSORS


def test_feedback_release_feedback_cannot_release_is_set_aside(course, tmp_path):
    """A submission without nbgrader submit's secret (collected by hand) would stop
    `nbgrader release_feedback` for everyone after it: its feedback moves to
    feedback-by-hand/ with a warning, and the release goes on for the others."""
    root, db_url = course
    copy = tmp_path / "course"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("feedback"))
    db = tmp_path / "gradebook.db"
    shutil.copy(db_url.removeprefix("sqlite:///"), db)
    (copy / "autograded" / "alice" / ASSIGNMENT / "submission_secret.txt").unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paths = fb.write_feedback(copy, f"sqlite:///{db}", [ASSIGNMENT])
    assert {p.parts[-3] for p in paths} == {"bob", "carol"}
    messages = [str(w.message) for w in caught if w.category is fb.FeedbackWarning]
    assert any("alice/" in m and "submission_secret.txt" in m for m in messages), messages
    assert (copy / "feedback-by-hand" / "alice" / ASSIGNMENT / f"{NOTEBOOK}.html").is_file()
    assert not (copy / "feedback" / "alice").joinpath(ASSIGNMENT).exists()
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    run_nbgrader(copy, "release_feedback", ASSIGNMENT, f"--Exchange.root={exchange}",
                 "--course=labkit", env=kernel_env(tmp_path), db=db)
    released = sorted((exchange / "labkit" / "feedback").iterdir())
    assert len(released) == 2


def test_one_broken_submission_does_not_stop_the_others(course, tmp_path):
    root, db_url = course
    copy = tmp_path / "course"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("feedback"))
    db = tmp_path / "gradebook.db"
    shutil.copy(db_url.removeprefix("sqlite:///"), db)
    (copy / "autograded" / "bob" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").write_text("{broken")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paths = fb.write_feedback(copy, f"sqlite:///{db}", [ASSIGNMENT])
    assert {p.parts[-3] for p in paths} == {"alice", "carol"}
    messages = [str(w.message) for w in caught if w.category is fb.FeedbackWarning]
    assert Counter("bob/" in m for m in messages)[True] == 1


def test_total_bins_cover_zero_to_the_maximum():
    assert report.total_bins([0, 3.99, 4, 19.5, 20, 21], 20) == (
        ("[0, 4)", 2), ("[4, 8)", 1), ("[8, 12)", 0), ("[12, 16)", 0), ("[16, 20]", 3))
    assert report.total_bins([1.0], 0) == ()


def test_terminal_summary_counts_the_memo_and_lists_what_waits():
    from labkit.course.grade import GradeReport, Outcome

    outcomes = (Outcome(ASSIGNMENT, "alice", "graded", 17, 17),
                Outcome(ASSIGNMENT, "bob", "skipped", 0, 17),
                Outcome(ASSIGNMENT, "eve", "graded", 5, 17, ("edited_test",), True),
                Outcome(ASSIGNMENT, "mallory", "error", error="grading stopped: 900 s"))
    status = {ASSIGNMENT: report.AssignmentStatus(
        20, 3, {"alice": 19.0, "bob": 0.0, "eve": 5.0}, ("eve",), ("eve",))}
    text = GradeReport(outcomes, 10.0, 2, "off").summary(status)
    row = next(line for line in text.splitlines() if line.startswith(ASSIGNMENT))
    assert row.split()[1:] == ["3", "8.00", "0.0", "19.0", "20", "1", "1", "1"], row
    assert "the memo's 3 included" in text and "waiting for a person, 1 here" in text
    assert f"flagged for review (1): {ASSIGNMENT}/eve" in text
    assert f"FAILED {ASSIGNMENT}/mallory: grading stopped" in text
    assert "[0, 4) 1  [4, 8) 1  [8, 12) 0  [12, 16) 0  [16, 20] 1" in text
    plain = GradeReport(outcomes, 10.0, 2, "off").summary()   # no gradebook: autograded
    row = next(line for line in plain.splitlines() if line.startswith(ASSIGNMENT))
    assert row.split()[1:] == ["3", "7.33", "0.0", "17.0", "17", "1", "1"], row


def test_summary_page_lists_flagged_and_not_graded(tmp_path):
    (tmp_path / "submitted" / "dave" / ASSIGNMENT).mkdir(parents=True)
    (tmp_path / "submitted" / "eve" / ASSIGNMENT).mkdir(parents=True)
    eve = report.GradeRow("eve", ASSIGNMENT, {"A": 1.0}, {"A": 4.0}, 1, 17, 0, 3, 1, 20,
                          True, flagged=True, memo_waiting=True)
    missing = report.not_graded(tmp_path, ASSIGNMENT, [eve])
    assert missing == [f"dave/{ASSIGNMENT}"]
    group = report.summarise(TRACK, [ASSIGNMENT], [eve], Counter(), 20, missing)
    assert group.totals.memos_waiting == 1 and group.totals.flagged == (f"eve/{ASSIGNMENT}",)
    page = report.render_summary_html([report.LabSummary("lab1", group, (group,))])
    # what a reader sees, line by line: the flagged and the missing, each under its own
    # heading with its count, and the command that grades the missing (not the markup)
    lines = [" ".join(line.split()) for line in _Page(page).all_text.splitlines()]
    flagged = next(line for line in lines if "Flagged for review" in line)
    missing = next(line for line in lines if "not in the gradebook" in line)
    assert "(1)" in flagged and f"eve/{ASSIGNMENT}" in flagged and "dave" not in flagged
    assert "(1:" in missing and f"dave/{ASSIGNMENT}" in missing and "eve" not in missing
    assert "labkit course grade lab1" in missing


def test_a_hostile_student_id_and_check_label_come_out_as_text(tmp_path):
    """Student ids and check labels (a test's message may quote the student's answer) are
    text on the summary page: escaped by the templates, never markup."""
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    (tmp_path / "submitted" / evil / ASSIGNMENT).mkdir(parents=True)
    row = report.GradeRow(evil, ASSIGNMENT, {"A": 1.0}, {"A": 4.0}, 1, 17, 0, 3, 1, 20,
                          False, flagged=True)
    checks = Counter({("lab1-a-exercise-check", f"Part A: {evil}"): 1})
    group = report.summarise(TRACK, [ASSIGNMENT], [row], checks, 20,
                             [f"{evil}/{ASSIGNMENT}"])
    page = report.render_summary_html([report.LabSummary("lab1", group, (group,))])

    found: set[str] = set()

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.add(tag)

    Tags().feed(page)
    assert "svg" in found and not {"script", "img"} & found
    assert "<script" not in page and "onerror=alert" in page  # kept, as text
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3  # flagged, waiting, check


def test_the_summary_shows_what_the_class_believed(exported):
    """Per question: the class's first answers beside the computed one. Only alice
    committed (the last prediction option, the right checkpoint answer): one answer per
    question, counted under that option, 'chose it' exactly when it is the computed one."""
    summary = json.loads(exported.summary_json.read_text())
    beliefs = summary["labs"]["lab1"]["tracks"][TRACK]["beliefs"]
    assert [(b["part"], b["kind"]) for b in beliefs] == [
        (p, k) for p in "ABCD" for k in ("prediction", "checkpoint")]
    lab = LAB.lab(TRACK, store=AnswerStore(exported.summary_json.parent / "none.json"))
    for b in beliefs:
        part = lab.part(b["part"])
        q = part.predict if b["kind"] == "prediction" else part.checkpoint
        chose = q.options[-1] if b["kind"] == "prediction" else part.checkpoint_expected
        right = part.expected if b["kind"] == "prediction" else part.checkpoint_expected
        assert b["answered"] == 1
        counted = [a for a in b["answers"] if a["count"]]
        assert [a["label"] for a in counted] == [q.label_for(chose)]
        assert b["share_right"] == (1.0 if chose == right else 0.0)
        assert b["computed"] == q.label_for(right)
    page = exported.summary_html.read_text()
    assert "What the class believed" in page and page.count("<tr><td>A prediction") == 1
