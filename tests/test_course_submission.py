"""The graded notebook is rebuilt from the release: answers from the student, the rest not.

Pure and fast: :func:`canonicalise`, :func:`parse_notebook` and :func:`prepare` against the
real Lab 1 release notebook, with the student's edits simulated on its JSON.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.core.answers import AnswerStore
from labkit.course.submission import (
    ANSWERS_FILE,
    MAX_NOTEBOOK_BYTES,
    MAX_SECRET_BYTES,
    SECRET_FILE,
    TIMESTAMP_FILE,
    Finding,
    canonicalise,
    parse_notebook,
    prepare,
)

ROOT = Path(__file__).resolve().parents[1]
RELEASE_DIR = ROOT / "release" / "lab1_cloud_fleet"
NB_NAME = "inference_economy"
RELEASE_PATH = RELEASE_DIR / f"{NB_NAME}.ipynb"

ANSWER = "lab1-a-exercise"          # a code answer cell (nbgrader solution)
TEST = "lab1-a-exercise-check"      # the graded test right after it
LOCKED_MD = "lab1-intro"            # locked instructions (markdown)


@pytest.fixture(scope="module")
def release() -> nbformat.NotebookNode:
    nb = nbformat.read(RELEASE_PATH, as_version=4)
    # The premises every test below relies on: a fixed release, not a skip.
    kinds = {gid(c): c for c in nb.cells}
    assert kinds[ANSWER].metadata.nbgrader.solution and kinds[ANSWER].cell_type == "code"
    assert kinds[TEST].metadata.nbgrader.grade and not kinds[TEST].metadata.nbgrader.solution
    assert kinds[LOCKED_MD].cell_type == "markdown" and kinds[LOCKED_MD].metadata.nbgrader.locked
    assert index(nb, TEST) == index(nb, ANSWER) + 1
    return nb


def gid(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def index(nb, grade_id: str) -> int:
    cells = nb["cells"] if isinstance(nb, dict) else nb.cells
    return next(i for i, c in enumerate(cells) if gid(c) == grade_id)


def submitted(release) -> dict:
    """The release as the student's notebook JSON (what parse_notebook would return)."""
    return json.loads(nbformat.writes(release))


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


def only(findings: list[Finding], code: str) -> Finding:
    hits = [f for f in findings if f.code == code]
    assert len(hits) == 1, findings
    return hits[0]


def assert_instructor_cells_are_the_release(out, release) -> None:
    """Every release cell, in release order, with the release's metadata and type; every
    non-answer cell also with the release's source."""
    graded = [c for c in out.cells if gid(c)]
    assert [gid(c) for c in graded] == [gid(c) for c in release.cells]
    for got, ref in zip(graded, release.cells, strict=True):
        assert got.cell_type == ref.cell_type
        assert got.metadata == ref.metadata
        if not ref.metadata.nbgrader.solution:
            assert got.source == ref.source, gid(ref)


# -- canonicalise -----------------------------------------------------------------------

def test_untouched_release_is_graded_as_is(release):
    out, findings = canonicalise(submitted(release), release)
    assert findings == []
    assert len(out.cells) == len(release.cells)
    for got, ref in zip(out.cells, release.cells, strict=True):
        assert (got.cell_type, got.source, got.metadata) == (ref.cell_type, ref.source,
                                                             ref.metadata)
        assert got.get("id") == ref.get("id")
    assert out.metadata == release.metadata
    nbformat.validate(out)


def test_student_answer_is_kept(release):
    nb = submitted(release)
    nb["cells"][index(nb, ANSWER)]["source"] = "answer_A = 42\n"
    nb["cells"][index(nb, "lab1-memo")]["source"] = "### Memo\nBuy more GPUs."
    out, findings = canonicalise(nb, release)
    assert findings == []
    assert out.cells[index(release, ANSWER)].source == "answer_A = 42\n"
    assert out.cells[index(release, "lab1-memo")].source == "### Memo\nBuy more GPUs."
    assert_instructor_cells_are_the_release(out, release)


def test_answer_given_as_a_list_of_lines_is_joined(release):
    nb = submitted(release)
    nb["cells"][index(nb, ANSWER)]["source"] = ["answer_A = (\n", "    42)\n"]
    out, findings = canonicalise(nb, release)
    assert findings == []
    assert out.cells[index(release, ANSWER)].source == "answer_A = (\n    42)\n"


def test_outputs_and_execution_counts_are_not_carried_over(release):
    nb = submitted(release)
    cell = nb["cells"][index(nb, ANSWER)]
    cell["source"] = "answer_A = 1"
    cell["execution_count"] = 7
    cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "forged ok\n"}]
    out, _ = canonicalise(nb, release)
    got = out.cells[index(release, ANSWER)]
    assert got.outputs == [] and got.execution_count is None


def test_edited_test_cell_is_restored_and_flagged(release):
    nb = submitted(release)
    nb["cells"][index(nb, TEST)]["source"] = "pass  # always full marks"
    out, findings = canonicalise(nb, release)
    f = only(findings, "test-restored")
    assert f.flag and TEST in f.message
    assert codes(findings) == ["test-restored"]
    assert out.cells[index(release, TEST)].source == release.cells[index(release, TEST)].source
    assert_instructor_cells_are_the_release(out, release)


def test_test_cell_turned_into_markdown_is_restored(release):
    nb = submitted(release)
    cell = nb["cells"][index(nb, TEST)]
    cell["cell_type"] = "markdown"
    cell.pop("outputs", None)
    cell.pop("execution_count", None)
    out, findings = canonicalise(nb, release)
    assert only(findings, "test-restored").flag
    assert out.cells[index(release, TEST)].cell_type == "code"


def test_edited_locked_markdown_is_restored_unflagged(release):
    nb = submitted(release)
    nb["cells"][index(nb, LOCKED_MD)]["source"] = "# My own lab"
    out, findings = canonicalise(nb, release)
    f = only(findings, "cell-restored")
    assert not f.flag and LOCKED_MD in f.message
    assert codes(findings) == ["cell-restored"]
    assert out.cells[0].source == release.cells[0].source


def test_deleted_test_cell_is_put_back_in_place(release):
    nb = submitted(release)
    del nb["cells"][index(nb, TEST)]
    out, findings = canonicalise(nb, release)
    f = only(findings, "test-readded")
    assert f.flag and TEST in f.message
    assert codes(findings) == ["test-readded"]
    i = index(release, TEST)
    assert gid(out.cells[i]) == TEST and out.cells[i].source == release.cells[i].source
    assert gid(out.cells[i - 1]) == ANSWER
    assert_instructor_cells_are_the_release(out, release)


def test_deleted_instructor_and_answer_cells(release):
    nb = submitted(release)
    for g in (LOCKED_MD, ANSWER):
        del nb["cells"][index(nb, g)]
    out, findings = canonicalise(nb, release)
    assert sorted(codes(findings)) == ["answer-missing", "cell-readded"]
    assert not any(f.flag for f in findings)
    assert out.cells[index(release, ANSWER)].source == release.cells[index(release, ANSWER)].source
    assert_instructor_cells_are_the_release(out, release)


@pytest.mark.parametrize("edit", ["points", "tags", "grade", "grade_and_points", "no_tags"])
def test_metadata_edits_on_a_test_cell_are_restored(release, edit):
    nb = submitted(release)
    meta = nb["cells"][index(nb, TEST)]["metadata"]
    if edit == "points":
        meta["nbgrader"]["points"] = 100
    elif edit == "tags":
        meta["tags"] = ["raises-exception", "skip-execution"]
    elif edit == "grade":
        meta["nbgrader"]["grade"] = False
    elif edit == "grade_and_points":
        meta["nbgrader"].update(grade=False, points=0, locked=False)
    else:
        del meta["tags"]
    out, findings = canonicalise(nb, release)
    f = only(findings, "metadata-restored")
    assert f.flag and TEST in f.message
    assert codes(findings) == ["metadata-restored"]
    assert out.cells[index(release, TEST)].metadata == release.cells[index(release, TEST)].metadata


def test_metadata_edit_on_an_answer_cell_is_restored_answer_kept(release):
    nb = submitted(release)
    cell = nb["cells"][index(nb, ANSWER)]
    cell["source"] = "answer_A = 5"
    cell["metadata"]["nbgrader"]["points"] = 50
    cell["metadata"]["nbgrader"]["grade"] = True
    out, findings = canonicalise(nb, release)
    assert only(findings, "metadata-restored").flag
    got = out.cells[index(release, ANSWER)]
    assert got.source == "answer_A = 5"
    assert got.metadata == release.cells[index(release, ANSWER)].metadata


def test_answer_cell_turned_into_markdown_is_unreadable(release):
    nb = submitted(release)
    cell = nb["cells"][index(nb, ANSWER)]
    cell.update(cell_type="markdown", source="answer_A = 42")
    cell.pop("outputs", None)
    cell.pop("execution_count", None)
    out, findings = canonicalise(nb, release)
    f = only(findings, "answer-unreadable")
    assert f.flag and ANSWER in f.message
    got = out.cells[index(release, ANSWER)]
    ref = release.cells[index(release, ANSWER)]
    assert (got.cell_type, got.source) == ("code", ref.source)  # graded as unanswered


def test_scratch_cell_stays_after_the_exercise_with_a_fresh_id(release):
    nb = submitted(release)
    release_ids = {c.get("id") for c in release.cells}
    stolen_id = release.cells[index(release, TEST)]["id"]  # pretend to be the test cell
    scratch = nbformat.v4.new_code_cell("print(SETUP_COST * 2)")
    scratch["id"] = stolen_id
    scratch["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "500\n"}]
    scratch["metadata"] = {"tags": ["mine"], "collapsed": True}
    nb["cells"].insert(index(nb, ANSWER) + 1, json.loads(json.dumps(scratch)))
    note = nbformat.v4.new_markdown_cell("my notes")
    nb["cells"].insert(0, json.loads(json.dumps(note)))
    out, findings = canonicalise(nb, release)
    assert findings == []
    assert len(out.cells) == len(release.cells) + 2
    assert out.cells[0].source == "my notes" and gid(out.cells[0]) is None
    i = index(out, ANSWER)
    kept = out.cells[i + 1]
    assert kept.cell_type == "code" and kept.source == "print(SETUP_COST * 2)"
    assert gid(kept) is None and kept.outputs == []
    assert gid(out.cells[i + 2]) == TEST
    ids = [c["id"] for c in out.cells]
    assert len(set(ids)) == len(ids)
    assert kept["id"] not in release_ids and out.cells[0]["id"] not in release_ids
    assert out.cells[i + 2]["id"] == stolen_id
    assert_instructor_cells_are_the_release(out, release)
    nbformat.validate(out)


def test_stripped_copy_of_a_locked_cell_is_dropped(release):
    nb = submitted(release)
    copy_of_test = copy.deepcopy(nb["cells"][index(nb, TEST)])
    copy_of_test["metadata"] = {}
    nb["cells"].insert(index(nb, ANSWER) + 1, copy_of_test)
    copy_of_md = copy.deepcopy(nb["cells"][index(nb, LOCKED_MD)])
    del copy_of_md["metadata"]["nbgrader"]
    nb["cells"].append(copy_of_md)
    out, _ = canonicalise(nb, release)
    assert len(out.cells) == len(release.cells)
    test_src = release.cells[index(release, TEST)].source
    assert [c.source for c in out.cells].count(test_src) == 1
    assert_instructor_cells_are_the_release(out, release)


def test_cell_with_an_unknown_grade_id_is_dropped_and_flagged(release):
    nb = submitted(release)
    forged = copy.deepcopy(nb["cells"][index(nb, TEST)])
    forged["metadata"]["nbgrader"].update(grade_id="lab1-bonus", points=50)
    forged["source"] = "import labkit"
    nb["cells"].append(forged)
    out, findings = canonicalise(nb, release)
    f = only(findings, "cell-dropped")
    assert f.flag and "lab1-bonus" in f.message
    assert "lab1-bonus" not in {gid(c) for c in out.cells}
    assert len(out.cells) == len(release.cells)


def test_duplicate_test_cell_is_dropped_and_flagged(release):
    nb = submitted(release)
    dup = copy.deepcopy(nb["cells"][index(nb, TEST)])
    nb["cells"].insert(index(nb, TEST) + 1, dup)
    out, findings = canonicalise(nb, release)
    f = only(findings, "cell-dropped")
    assert f.flag and TEST in f.message
    assert [gid(c) for c in out.cells].count(TEST) == 1
    assert len(out.cells) == len(release.cells)


def test_duplicate_answer_cell_first_copy_counts(release):
    nb = submitted(release)
    first = nb["cells"][index(nb, ANSWER)]
    first["source"] = "answer_A = 1"
    second = copy.deepcopy(first)
    second["source"] = "answer_A = 2"
    nb["cells"].insert(index(nb, ANSWER) + 1, second)
    out, findings = canonicalise(nb, release)
    assert only(findings, "cell-dropped").flag
    assert out.cells[index(release, ANSWER)].source == "answer_A = 1"
    assert len(out.cells) == len(release.cells)


def test_invalid_cells_are_dropped(release):
    nb = submitted(release)
    nb["cells"] += ["not a cell", {"cell_type": "widget", "source": "x"},
                    {"cell_type": "code", "source": 42, "metadata": {}}]
    out, findings = canonicalise(nb, release)
    assert codes(findings) == ["cell-dropped"] * 3
    assert not any(f.flag for f in findings)
    assert len(out.cells) == len(release.cells)


def test_notebook_metadata_always_comes_from_the_release(release):
    nb = submitted(release)
    nb["metadata"] = {"kernelspec": {"name": "evil", "display_name": "Evil", "language": "sh"},
                      "language_info": {"name": "bash"}, "nbgrader": {"forged": True}}
    out, findings = canonicalise(nb, release)
    assert findings == []
    assert out.metadata == release.metadata
    assert out.metadata.kernelspec.name == "python3"


def test_blank_release_when_the_submission_is_unreadable(release):
    out, findings = canonicalise(None, release)
    assert findings == []
    assert [(c.cell_type, c.source, c.metadata) for c in out.cells] == [
        (c.cell_type, c.source, c.metadata) for c in release.cells]
    assert out.metadata == release.metadata


# Any shuffle / deletion / duplication of the student's cells, any answer text: the
# instructor cells are always exactly the release's, in the release's order.
@given(data=st.data())
def test_instructor_cells_survive_any_reordering(release, data):
    nb = submitted(release)
    cells = nb["cells"]
    picks = data.draw(st.lists(st.integers(0, len(cells) - 1), max_size=len(cells) + 5))
    nb["cells"] = [copy.deepcopy(cells[i]) for i in picks]
    for cell in nb["cells"]:
        if gid(cell) == ANSWER:
            cell["source"] = data.draw(st.text(max_size=40))
    out, findings = canonicalise(nb, release)
    assert_instructor_cells_are_the_release(out, release)
    assert len(out.cells) == len(release.cells)  # nothing but release cells was submitted
    assert all(isinstance(f, Finding) for f in findings)
    ids = [c["id"] for c in out.cells]
    assert len(set(ids)) == len(ids)


# -- grader-touch -----------------------------------------------------------------------

@pytest.mark.parametrize("code", [
    "expect_number = lambda *a, **k: None",
    "expect_committed=print",
    "import labkit.grading as g\nanswer_A = 1",
    "from labkit import grading",
    "from labkit.grading import expect_number",
    "import builtins\nbuiltins.len = lambda x: 0",
    "__builtins__.print = None",
    "import sys\nsys.modules['labkit.grading'] = None",
    "AssertionError = Exception",
])
def test_answer_reaching_into_the_grader_is_flagged(release, code):
    nb = submitted(release)
    nb["cells"][index(nb, ANSWER)]["source"] = code
    out, findings = canonicalise(nb, release)
    f = only(findings, "grader-touch")
    assert f.flag and ANSWER in f.message
    assert out.cells[index(release, ANSWER)].source == code  # flagged, still graded


@pytest.mark.parametrize("code", [
    'expect_number("answer_A", 250, "A")',
    "answer_A = 250 if SETUP_COST == 250 else 0",
    "ok = expect_number == expect_number",
    "answer_A = sum(x for x in [1, 2] if x != 3)",
    "answer_A = 10  # I checked with expect_number(...) above",
])
def test_ordinary_answers_are_not_flagged(release, code):
    nb = submitted(release)
    nb["cells"][index(nb, ANSWER)]["source"] = code
    _, findings = canonicalise(nb, release)
    assert "grader-touch" not in codes(findings)


def test_grader_touch_in_a_scratch_cell_is_flagged(release):
    nb = submitted(release)
    nb["cells"].append(json.loads(json.dumps(nbformat.v4.new_code_cell(
        "import sys; sys.modules.pop('labkit.grading')"))))
    _, findings = canonicalise(nb, release)
    f = only(findings, "grader-touch")
    assert f.flag and "a cell the student added" in f.message


# -- parse_notebook ---------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "code"), [
    pytest.param(RELEASE_PATH.read_bytes()[:5000], "notebook-corrupt", id="truncated"),
    pytest.param(b'{"cells": [], "metadata": {"t": "\xff\xfe"}}', "notebook-corrupt",
                 id="not-utf8"),
    pytest.param(b"", "notebook-corrupt", id="empty"),
    pytest.param(b"[1, 2, 3]", "notebook-corrupt", id="json-list"),
    pytest.param(b'{"nbformat": 4, "metadata": {}}', "notebook-corrupt", id="no-cells"),
    pytest.param(b'{"cells": {"0": {}}}', "notebook-corrupt", id="cells-not-a-list"),
    pytest.param(b'"a string"', "notebook-corrupt", id="json-string"),
    pytest.param(b" " * (MAX_NOTEBOOK_BYTES + 1), "notebook-too-large", id="oversize"),
])
def test_unreadable_notebook_gives_a_reason(raw, code):
    data, problem = parse_notebook(raw)
    assert data is None
    assert isinstance(problem, Finding) and problem.code == code and problem.flag


def test_parse_notebook_reads_the_release():
    data, problem = parse_notebook(RELEASE_PATH.read_bytes())
    assert problem is None and isinstance(data, dict) and isinstance(data["cells"], list)


# -- prepare ----------------------------------------------------------------------------

def write_submission(folder: Path, release, answer: str | None = "answer_A = 250") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nb = copy.deepcopy(release)
    if answer is not None:
        nb.cells[index(nb, ANSWER)].source = answer
    nbformat.write(nb, folder / f"{NB_NAME}.ipynb")
    return folder


def graded(dest: Path) -> nbformat.NotebookNode:
    return nbformat.read(dest / f"{NB_NAME}.ipynb", as_version=4)


def test_prepare_keeps_notebook_answers_and_timestamp(tmp_path, release):
    sub = write_submission(tmp_path / "raw", release)
    AnswerStore(sub / ANSWERS_FILE).record("lab1", "cloud_fleet.A.prediction", "weeks")
    AnswerStore(sub / ANSWERS_FILE).record("lab1", "cloud_fleet.A.prediction", "days")
    (sub / TIMESTAMP_FILE).write_text("2025-01-31 12:00:00.000000 UTC")
    dest = tmp_path / "dest"
    findings = prepare(sub, RELEASE_DIR, dest, [NB_NAME])
    assert findings == []
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        [f"{NB_NAME}.ipynb", ANSWERS_FILE, TIMESTAMP_FILE])
    assert graded(dest).cells[index(release, ANSWER)].source == "answer_A = 250"
    assert (dest / ANSWERS_FILE).read_bytes() == (sub / ANSWERS_FILE).read_bytes()
    entry = AnswerStore(dest / ANSWERS_FILE).get("lab1", "cloud_fleet.A.prediction")
    assert (entry.first, entry.current) == ("weeks", "days")
    assert (dest / TIMESTAMP_FILE).read_text() == "2025-01-31 12:00:00.000000 UTC"


def test_prepare_rebuilds_a_tampered_notebook(tmp_path, release):
    sub = write_submission(tmp_path / "raw", release)
    nb = nbformat.read(sub / f"{NB_NAME}.ipynb", as_version=4)
    nb.cells[index(nb, TEST)].source = "pass"
    nbformat.write(nb, sub / f"{NB_NAME}.ipynb")
    dest = tmp_path / "dest"
    findings = prepare(sub, RELEASE_DIR, dest, [NB_NAME])
    assert codes(findings) == ["test-restored"]
    out = graded(dest)
    assert out.cells[index(release, TEST)].source == release.cells[index(release, TEST)].source
    assert out.cells[index(release, ANSWER)].source == "answer_A = 250"


@pytest.mark.parametrize("content", [
    pytest.param(b"{not json", id="bad-json"),
    pytest.param(b"", id="empty"),
    pytest.param(b"\xff\xfe\x00", id="not-utf8"),
    pytest.param(b'{"schema": "something-else", "version": 1, "labs": {}}', id="wrong-schema"),
    pytest.param(b'{"schema": "labkit-answers", "version": 99, "labs": {}}', id="future-version"),
    pytest.param(b'{"schema": "labkit-answers", "version": 1, "labs": []}', id="labs-not-a-map"),
    pytest.param(b'{"schema": "labkit-answers", "version": 1, "labs": {"lab1": {"q": '
                 b'{"first": [1], "first_at": "x"}}}}', id="bad-value"),
    pytest.param(b'{"schema": "labkit-answers", "version": 1, "labs": {"lab1": {"q": '
                 b'"weeks"}}}', id="entry-not-a-map"),
    pytest.param(b'{"schema": "labkit-answers", "version": 1, "labs": {"lab1": {"q": '
                 b'{"first": 1, "first_at": "x", "changes": 5}}}}', id="changes-not-a-list"),
])
def test_prepare_drops_an_unreadable_answers_file(tmp_path, release, content):
    sub = write_submission(tmp_path / "raw", release)
    (sub / ANSWERS_FILE).write_bytes(content)
    dest = tmp_path / "dest"
    findings = prepare(sub, RELEASE_DIR, dest, [NB_NAME])
    f = only(findings, "answers-unreadable")
    assert f.flag and ANSWERS_FILE in f.message
    assert str(sub) not in f.message and str(dest) not in f.message
    assert not (dest / ANSWERS_FILE).exists()
    assert (dest / f"{NB_NAME}.ipynb").is_file()


def test_prepare_ignores_other_files_and_symlinks(tmp_path, release):
    sub = write_submission(tmp_path / "raw", release)
    (sub / "labkit").mkdir()
    (sub / "labkit" / "grading.py").write_text("def expect_number(*a, **k): pass\n")
    (sub / "labkit" / "__init__.py").write_text("")
    (sub / "sitecustomize.py").write_text("import os\n")
    (sub / "data.csv").write_text("a,b\n")
    os.symlink("/etc/passwd", sub / ANSWERS_FILE)
    os.symlink("/etc", sub / "etc-link")
    dest = tmp_path / "dest"
    findings = prepare(sub, RELEASE_DIR, dest, [NB_NAME])
    f = only(findings, "file-ignored")
    for name in ("labkit/grading.py", "labkit/__init__.py", "sitecustomize.py", "data.csv",
                 f"{ANSWERS_FILE} (a symlink)", "etc-link (a symlink)"):
        assert name in f.message
    assert "passwd" not in f.message
    assert "answers-unreadable" not in codes(findings)  # never read, so never parsed
    assert sorted(p.name for p in dest.iterdir()) == [f"{NB_NAME}.ipynb"]
    assert not (dest / ANSWERS_FILE).exists() and not (dest / ANSWERS_FILE).is_symlink()


def test_prepare_does_not_follow_a_symlinked_notebook_or_timestamp(tmp_path, release):
    sub = tmp_path / "raw"
    elsewhere = write_submission(tmp_path / "elsewhere", release, answer="answer_A = 999")
    sub.mkdir()
    os.symlink(elsewhere / f"{NB_NAME}.ipynb", sub / f"{NB_NAME}.ipynb")
    os.symlink("/etc/hostname", sub / TIMESTAMP_FILE)
    dest = tmp_path / "dest"
    findings = prepare(sub, RELEASE_DIR, dest, [NB_NAME])
    assert sorted(codes(findings)) == ["file-ignored", "notebook-missing"]
    assert sorted(p.name for p in dest.iterdir()) == [f"{NB_NAME}.ipynb"]
    ref = release.cells[index(release, ANSWER)].source
    assert graded(dest).cells[index(release, ANSWER)].source == ref


def test_prepare_missing_notebook_grades_the_blank_release(tmp_path, release):
    sub = tmp_path / "raw"
    sub.mkdir()
    dest = tmp_path / "dest"
    findings = prepare(sub, RELEASE_DIR, dest, [NB_NAME])
    f = only(findings, "notebook-missing")
    assert f"{NB_NAME}.ipynb" in f.message
    assert codes(findings) == ["notebook-missing"]
    out = graded(dest)
    assert [(c.source, c.metadata) for c in out.cells] == [
        (c.source, c.metadata) for c in release.cells]


def test_prepare_corrupt_notebook_grades_the_blank_release(tmp_path, release):
    sub = tmp_path / "raw"
    sub.mkdir()
    (sub / f"{NB_NAME}.ipynb").write_bytes(RELEASE_PATH.read_bytes()[:-40])
    dest = tmp_path / "dest"
    findings = prepare(sub, RELEASE_DIR, dest, [NB_NAME])
    assert codes(findings) == ["notebook-corrupt"]
    assert [c.source for c in graded(dest).cells] == [c.source for c in release.cells]


def test_prepare_drops_an_oversize_timestamp(tmp_path, release):
    sub = write_submission(tmp_path / "raw", release)
    (sub / TIMESTAMP_FILE).write_text("2025-01-31 " * 100)
    dest = tmp_path / "dest"
    prepare(sub, RELEASE_DIR, dest, [NB_NAME])
    assert not (dest / TIMESTAMP_FILE).exists()


def test_prepare_keeps_a_real_timestamp_and_drops_a_forged_one(tmp_path):
    release = ROOT / "release" / "lab1_cloud_fleet"
    for text, kept in (("2026-11-30 12:00:00.000000 UTC", True), ("next tuesday", False),
                       ("9" * 500, False)):
        sub, dest = tmp_path / f"s{kept}{len(text)}", tmp_path / f"d{kept}{len(text)}"
        sub.mkdir()
        shutil.copy(release / "inference_economy.ipynb", sub)
        (sub / "timestamp.txt").write_text(text)
        findings = prepare(sub, release, dest, ["inference_economy"])
        assert (dest / "timestamp.txt").exists() is kept
        assert ("timestamp-unreadable" in {f.code for f in findings}) is not kept


# nbgrader submit's secret (nbgrader/exchange/default/submit.py: secrets.token_hex(64)),
# without a line end, as `nbgrader submit` writes it
NBGRADER_SECRET = "3f" * 64


@pytest.mark.parametrize("secret", [NBGRADER_SECRET.encode(), b"Abc-def_0123456789\n"])
def test_prepare_keeps_the_submission_secret_byte_for_byte(tmp_path, release, secret):
    """`nbgrader release_feedback` reads it from the feedback folder (autograde and
    generate_feedback copy it there from the submission) and hashes it as read."""
    sub = write_submission(tmp_path / "raw", release)
    (sub / SECRET_FILE).write_bytes(secret)
    (sub / TIMESTAMP_FILE).write_text("2025-01-31 12:00:00.000000 UTC")
    dest = tmp_path / "dest"
    assert prepare(sub, RELEASE_DIR, dest, [NB_NAME]) == []
    assert (dest / SECRET_FILE).read_bytes() == secret
    assert not (dest / SECRET_FILE).is_symlink()


@pytest.mark.parametrize(("content", "why"), [
    pytest.param(b"a" * (MAX_SECRET_BYTES + 1), f"over {MAX_SECRET_BYTES} bytes", id="oversize"),
    pytest.param(b"3f" * 1_000_000, f"over {MAX_SECRET_BYTES} bytes", id="2-MB"),
    pytest.param(b"short", "not a plain ASCII token", id="too-short"),
    pytest.param(b"", "not a plain ASCII token", id="empty"),
    pytest.param(b"3f" * 20 + b"\n" + b"3f" * 20, "not a plain ASCII token", id="two-lines"),
    pytest.param("caf\u00e9".encode() * 8, "not a plain ASCII token", id="not-ascii"),
    pytest.param(b"../../etc/passwd-0123456789", "not a plain ASCII token", id="a-path"),
])
def test_prepare_drops_a_secret_that_is_not_a_token(tmp_path, release, content, why):
    sub = write_submission(tmp_path / "raw", release)
    (sub / SECRET_FILE).write_bytes(content)
    dest = tmp_path / "dest"
    f = only(prepare(sub, RELEASE_DIR, dest, [NB_NAME]), "secret-unreadable")
    assert f.flag and why in f.message and SECRET_FILE in f.message
    assert "release_feedback" in f.message and str(sub) not in f.message
    assert not (dest / SECRET_FILE).exists()


def test_prepare_never_follows_a_symlinked_secret(tmp_path, release):
    sub = write_submission(tmp_path / "raw", release)
    target = tmp_path / "someone-elses-secret.txt"
    target.write_text(NBGRADER_SECRET)                 # a valid token, but not the student's
    os.symlink(target, sub / SECRET_FILE)
    dest = tmp_path / "dest"
    findings = prepare(sub, RELEASE_DIR, dest, [NB_NAME])
    assert f"{SECRET_FILE} (a symlink)" in only(findings, "file-ignored").message
    assert "secret-unreadable" not in codes(findings)
    assert not os.path.lexists(dest / SECRET_FILE)


def test_prepare_drops_a_secret_that_is_not_a_regular_file(tmp_path, release):
    sub = write_submission(tmp_path / "raw", release)
    os.mkfifo(sub / SECRET_FILE)                       # would block a plain open()
    dest = tmp_path / "dest"
    f = only(prepare(sub, RELEASE_DIR, dest, [NB_NAME]), "secret-unreadable")
    assert "not a regular file" in f.message
    assert not os.path.lexists(dest / SECRET_FILE)


def test_a_lone_surrogate_is_replaced_and_the_rest_graded(tmp_path, release):
    """Valid JSON (``\\ud83d`` escaped) that no UTF-8 file can hold: once, it made
    nbgrader fail on the whole submission."""
    sub = write_submission(tmp_path / "raw", release, answer="answer_A = 250")
    data = json.loads((sub / f"{NB_NAME}.ipynb").read_text())
    data["cells"].append({"cell_type": "code", "execution_count": None, "metadata": {},
                          "outputs": [], "source": "# half an emoji: \ud83d, and \udc00"})
    (sub / f"{NB_NAME}.ipynb").write_text(json.dumps(data, ensure_ascii=True))
    dest = tmp_path / "dest"
    findings = prepare(sub, RELEASE_DIR, dest, [NB_NAME])
    f = only(findings, "text-repaired")
    assert not f.flag and f.message.startswith("2 character(s)")
    out = graded(dest)
    assert out.cells[-1].source == "# half an emoji: \ufffd, and \ufffd"
    assert out.cells[index(release, ANSWER)].source == "answer_A = 250"
    pair, problem = parse_notebook(b'{"cells": [], "metadata": {"e": "\\ud83d\\ude00"}}')
    assert problem is None and pair["metadata"]["e"] == "\U0001f600"  # a pair is no glitch


def test_answers_that_are_not_choices_earn_nothing_and_say_so(tmp_path, release):
    sub = write_submission(tmp_path / "raw", release)
    store = AnswerStore(sub / ANSWERS_FILE)
    store.record("lab1", "cloud_fleet.A.prediction", "weeks")       # a choice
    store.record("lab1", "cloud_fleet.A.checkpoint", "")            # empty
    store.record("lab1", "cloud_fleet.B.prediction", 3)             # not even a string
    store.record("lab1", "cloud_fleet.B.checkpoint", "state")
    store.record("lab1", "cloud_fleet.B.checkpoint", "anything")    # a later non-choice
    dest = tmp_path / "dest"
    f = only(prepare(sub, RELEASE_DIR, dest, [NB_NAME]), "answers-invalid")
    assert f.flag and f.message.startswith("3 answer(s)")
    for key in ("A.checkpoint", "B.prediction", "B.checkpoint"):
        assert f"cloud_fleet.{key}" in f.message
    assert "A.prediction" not in f.message
    assert (dest / ANSWERS_FILE).exists()  # kept as submitted: the judge counts choices only


def test_a_notebook_past_the_cap_is_refused_unread(tmp_path, release):
    sub = write_submission(tmp_path / "raw", release)
    with open(sub / f"{NB_NAME}.ipynb", "r+b") as fh:
        fh.truncate(MAX_NOTEBOOK_BYTES * 50)  # a sparse gigabyte: it is never read whole
    dest = tmp_path / "dest"
    assert codes(prepare(sub, RELEASE_DIR, dest, [NB_NAME])) == ["notebook-too-large"]
    assert graded(dest).cells[index(release, ANSWER)].source == release.cells[
        index(release, ANSWER)].source
