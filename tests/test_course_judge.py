"""The judge: tests run outside the student's kernel, on answers exported as plain data."""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_helpers import notebook_path
from labkit.course import judge as j
from labkit.course.beliefs import questions
from labkit.labs.registry import LABS
from labkit.tracks import TRACKS

NOTEBOOKS = [(lab, t) for lab in LABS for t in TRACKS]
EXERCISE_NAMES = {"lab1": {"answer_A", "answer_B", "answer_C", "release_D"},
                  "lab2": {"answer_A", "answer_B", "answer_C", "design_D"}}


def _source(lab: str, track: str) -> nbformat.NotebookNode:
    return nbformat.read(notebook_path("source", lab, track), as_version=4)


def _solution_answers(nb: nbformat.NotebookNode, plan: j.JudgePlan) -> dict:
    """Run the instructor's data and solution cells (trusted here) for the answers."""
    ns: dict = {}
    for cell in nb.cells:
        md = cell.metadata.get("nbgrader", {})
        gid = md.get("grade_id", "")
        if cell.cell_type == "code" and (gid.endswith("-exercise-data")
                                         or gid.endswith("-exercise")):
            exec(re.sub(r"(?m)^### (BEGIN|END) SOLUTION$", "", cell.source), ns)
    return {n: json.loads(json.dumps(ns[n])) for n in plan.answer_names}


def _hidden_lines(nb: nbformat.NotebookNode) -> list[str]:
    out = []
    for cell in nb.cells:
        m = re.search(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", cell.source, re.S)
        if m:
            out += [ln.strip() for ln in m.group(1).splitlines() if len(ln.strip()) > 12]
    return out


@pytest.mark.parametrize(("lab", "track"), NOTEBOOKS)
def test_plan_finds_every_test_the_data_and_exactly_the_answers(lab, track):
    plan = j.plan_notebook(_source(lab, track))
    assert (plan.lab_id, plan.track_id) == (lab, track)
    assert len(plan.tests) == 12  # per part: prediction, checkpoint, exercise
    assert set(plan.answer_names) == EXERCISE_NAMES[lab]  # nothing else left unresolved
    assert plan.data_names and all(k.isupper() for k in plan.data_names)


def _right_firsts(lab: str, track: str) -> dict:
    """The first answers of a student who committed every prediction (any option) and every
    checkpoint's computed answer."""
    return {f"{track}.{q.part}.{q.kind}": (q.computed if q.kind == "checkpoint"
                                            else q.options[0][1])
            for q in questions(lab, track)}


@pytest.mark.parametrize(("lab", "track"), NOTEBOOKS)
def test_solution_passes_blank_fails_and_no_verdict_quotes_a_hidden_line(lab, track):
    nb = _source(lab, track)
    plan = j.plan_notebook(nb)
    firsts = _right_firsts(lab, track)
    good = j.judge(plan, _solution_answers(nb, plan), list(firsts), firsts=firsts)
    assert [v.passed for v in good] == [True] * 12, [v.evalue for v in good if not v.passed]
    blank = j.judge(plan, {n: None for n in plan.answer_names}, [])
    assert not any(v.passed for v in blank)
    shown = " ".join(v.text + v.evalue for v in good + blank)
    for line in _hidden_lines(nb):
        assert line not in shown


@pytest.mark.parametrize("credit", ["correct", "commit"])
def test_a_wrong_first_checkpoint_answer_earns_its_point_only_for_completion(credit):
    plan = j.plan_notebook(_source("lab1", "cloud_fleet"))
    firsts = _right_firsts("lab1", "cloud_fleet")
    q = next(q for q in questions("lab1", "cloud_fleet") if (q.part, q.kind) == ("B",
                                                                               "checkpoint"))
    wrong = next(v for _, v in q.options if v != q.computed)
    firsts["cloud_fleet.B.checkpoint"] = wrong
    verdicts = {v.grade_id: v for v in j.judge(plan, {}, list(firsts), firsts=firsts,
                                               checkpoint_credit=credit)}
    assert verdicts["lab1-a-checkpoint-done"].passed
    assert verdicts["lab1-b-checkpoint-done"].passed == (credit == "commit")
    assert verdicts["lab1-b-predict-done"].passed
    if credit == "correct":
        assert repr(q.computed) not in verdicts["lab1-b-checkpoint-done"].evalue


def test_completion_credit_counts_only_the_parts_in_the_answers_file():
    plan = j.plan_notebook(_source("lab1", "cloud_fleet"))
    verdicts = {v.grade_id: v for v in j.judge(plan, {}, ["cloud_fleet.B.prediction"])}
    assert verdicts["lab1-b-predict-done"].passed
    assert not verdicts["lab1-a-predict-done"].passed
    assert not verdicts["lab1-b-checkpoint-done"].passed
    missing = verdicts["lab1-a-exercise-check"]
    assert missing.ename == "NameError" and "answer_A" in missing.evalue


class _Liar(float):
    def __mul__(self, other):
        return 0.0

    def __float__(self):
        return 42.0


def _export(ns: dict, names: list[str]) -> dict:
    """Run the export cell's code in ``ns`` (standing in for the kernel), parse its text."""
    import contextlib
    import io

    marker = "@@m@@"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(j.export_source(names, marker), ns)
    return j.parse_export([{"output_type": "stream", "name": "stdout",
                            "text": out.getvalue()}], marker, names)


def test_answers_leave_the_kernel_as_exact_plain_values():
    import numpy as np

    got = _export({"a": _Liar(3.5), "b": np.float64(2.0), "c": (1, "x"), "d": {"k": True},
                   "e": object()}, ["a", "b", "c", "d", "e", "f"])
    assert got["a"] == 3.5 and type(got["a"]) is float  # the subclass's methods stay behind
    assert type(got["b"]) is float and got["d"] == {"k": True}
    assert got["c"] == (1, "x") and type(got["c"]) is tuple  # a tuple stays a tuple
    assert isinstance(got["e"], j.Unusable) and "f" not in got


_LEAF = st.none() | st.booleans() | st.integers(-10**18, 10**18) | st.text(max_size=5) \
    | st.floats(allow_nan=False)
_KEY = st.none() | st.booleans() | st.integers(-99, 99) | st.text(max_size=3)
_VALUE = st.recursive(_LEAF, lambda inner: st.lists(inner, max_size=3)
                      | st.lists(inner, max_size=3).map(tuple)
                      | st.dictionaries(_KEY, inner, max_size=3), max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(_VALUE)
def test_an_answer_crosses_both_hops_unchanged(value):
    """Kernel -> grader (the export cell) and grader -> judge process (encode): tuples,
    int keys and nesting arrive as the student's kernel held them, types included."""
    got = _export({"x": value}, ["x"])["x"]
    again = j._checked(json.loads(json.dumps(j.encode(got))))
    for out in (got, again):
        assert out == value and repr(out) == repr(value)


def test_a_test_sees_the_tuple_the_student_wrote():
    plan = j.JudgePlan(tests=(j.TestCell(0, "t-check", "assert answer == (2, 'ok')\n"),),
                       data_sources=(), data_names=(), answer_names=("answer",),
                       lab_id=None, track_id=None)
    (verdict,) = j.judge(plan, {"answer": (2, "ok")}, [])
    assert verdict.passed, verdict


def test_parse_export_refuses_what_is_not_plain_data():
    def parse(text: str) -> dict:
        return j.parse_export([{"output_type": "stream", "name": "stdout", "text": text}],
                              "@@", ["x"])

    assert parse("no markers") == {}
    assert parse('@@{"x": {"value": 10000000000000000000000}}@@')["x"].reason
    assert parse('@@{"x": {"value": [[[[[[[[1]]]]]]]]}}@@')["x"].reason == "nested too deeply"
    assert parse('@@{"x": {"value": 1.5}}@@') == {"x": 1.5}
    assert parse('@@{"x": {"value": 1.5}}@@ forged later @@{"x": {"value": 9}}@@') == {}
    too_big = '@@{"x": {"value": "' + "a" * (j.MAX_EXPORT_BYTES + 100) + '"}}@@'
    assert isinstance(parse(too_big)["x"], j.Unusable)


def test_the_judge_knows_the_labs_part_letters():
    from labkit.labs.parts import PARTS

    assert j.PARTS is PARTS  # one definition (labkit.core.keys)


def test_literal_assignments_accept_only_literals():
    assert j.literal_assignments("A = 1  # c\nB = (1, 'x')\n") == {"A": 1, "B": (1, "x")}
    assert j.literal_assignments("A = f()") is None
    assert j.literal_assignments("import os") is None


def test_a_judge_that_cannot_run_says_so_and_blames_no_student():
    plan = j.JudgePlan(tests=(j.TestCell(0, "t-check", "assert True\n"),), data_sources=(),
                       data_names=(), answer_names=(), lab_id=None, track_id=None)
    from labkit.course.judge_process import JUDGE

    JUDGE.close()
    (verdict,) = j.judge(plan, {}, [], timeout=0.001)  # the process cannot even start
    assert not verdict.passed and verdict.ename == j.GRADING_ERROR
    assert "re-grade" in verdict.evalue


def _plan(*sources: str) -> j.JudgePlan:
    return j.JudgePlan(tests=tuple(j.TestCell(i, f"t-{i}", src) for i, src in
                                   enumerate(sources)),
                       data_sources=(), data_names=(), answer_names=("x",), lab_id=None,
                       track_id=None)


def test_one_judge_process_serves_a_worker_s_notebooks_and_a_failed_one_is_replaced():
    """The worker's judge answers notebook after notebook; a notebook whose tests do not
    answer in time costs its own tests (the grader's failure, not the student's) and the
    process: the next notebook gets a fresh one, and is judged as if nothing happened."""
    from labkit.course.judge_process import JUDGE

    ok = _plan("assert x == 2\n", "assert x == 3\n")
    first = j.judge(ok, {"x": 2}, [])
    pid = JUDGE._proc.pid
    assert [v.passed for v in first] == [True, False]
    assert [v.passed for v in j.judge(ok, {"x": 3}, [])] == [False, True]
    assert JUDGE._proc.pid == pid                                   # the same process
    hung = j.judge(_plan("while True:\n    pass\n"), {"x": 1}, [], timeout=1.0)
    assert [v.ename for v in hung] == [j.GRADING_ERROR]
    assert JUDGE._proc is None                                     # killed with its request
    assert [v.passed for v in j.judge(ok, {"x": 2}, [])] == [True, False]
    assert JUDGE._proc.pid != pid
    JUDGE._proc.kill()                                             # died between notebooks
    JUDGE._proc.wait()
    assert [v.passed for v in j.judge(ok, {"x": 3}, [])] == [False, True]


def test_a_notebook_whose_test_ran_out_of_memory_leaves_the_next_a_fresh_judge():
    from labkit.course.judge_process import JUDGE

    assert [v.passed for v in j.judge(_plan("assert x == 1\n"), {"x": 1}, [])] == [True]
    pid = JUDGE._proc.pid
    (spent,) = j.judge(_plan("big = bytearray(4 * 1024**3)\n"), {"x": 1}, [])
    assert spent.ename == "MemoryError" and not spent.passed
    assert JUDGE._proc is None                      # not kept for the next notebook
    assert [v.passed for v in j.judge(_plan("assert x == 1\n"), {"x": 1}, [])] == [True]
    assert JUDGE._proc.pid != pid


def test_a_test_s_writes_to_the_protocol_stream_cannot_forge_verdicts():
    forged = '[{"grade_id": "t-0", "passed": true}]\n'
    src = f"import os\nos.write(1, {forged!r}.encode())\nassert x == 5\n"
    (verdict,) = j.judge(_plan(src), {"x": 1}, [])
    assert not verdict.passed and verdict.ename == "AssertionError"


def test_one_answer_too_large_voids_only_itself():
    got = _export({"answer_A": list(range(20_000)), "answer_B": 1.5, "answer_C": "x" * 1000},
                  ["answer_A", "answer_B", "answer_C"])
    assert isinstance(got["answer_A"], j.Unusable) and "too large" in got["answer_A"].reason
    assert got["answer_B"] == 1.5 and got["answer_C"] == "x" * 1000
    assert got["answer_A"].too_large  # the grader's answer-too-large finding reads this


def _answers(tmp_path, values: dict) -> object:
    from labkit.core.answers import AnswerStore

    path = tmp_path / "labkit_answers.json"
    store = AnswerStore(path)
    for key, vals in values.items():
        for v in vals:
            store.record("lab1", key, v)
    return path


def test_completion_credit_only_for_a_committed_choice(tmp_path):
    path = _answers(tmp_path, {
        "cloud_fleet.A.prediction": ["weeks"], "cloud_fleet.A.checkpoint": ["prefill", "decode"],
        "cloud_fleet.B.prediction": [""], "cloud_fleet.B.checkpoint": [1],
        "cloud_fleet.C.prediction": ["Weeks: between two and ten weeks"],  # a label
        "cloud_fleet.C.checkpoint": ["never", "nope"], "cloud_fleet.memo": ["my memo"]})
    keys = j.committed_keys(path, "lab1")
    assert keys == ["cloud_fleet.A.checkpoint", "cloud_fleet.A.prediction", "cloud_fleet.memo"]
    _, refused = j.answer_audit(path, "lab1")
    assert sorted(refused) == ["cloud_fleet.B.checkpoint", "cloud_fleet.B.prediction",
                               "cloud_fleet.C.checkpoint", "cloud_fleet.C.prediction"]
    assert j.committed_keys(tmp_path / "missing.json", "lab1") == []
    (tmp_path / "bad.json").write_text('{"schema": "labkit-answers", "version": 1, "labs": {')
    assert j.answer_audit(tmp_path / "bad.json", "lab1") == ([], {})


def test_every_question_of_every_lab_has_its_choices():
    for lab in LABS:
        choices = j.question_choices(lab, "cloud_fleet")
        assert choices is not None and len(choices) == 8, lab
        assert all(c.options and len(c.options) >= 2 for c in choices.values())
    assert j.question_choices("lab1", "no_such_track") == {}
