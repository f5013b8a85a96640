"""Student-facing checks: every failure says what was checked, what was found, what to revisit."""

from __future__ import annotations

import math

import pytest

from labkit import grading as g


class _Widget:
    def __init__(self, committed: bool) -> None:
        self.committed = committed


def test_expect_committed():
    g.expect_committed(_Widget(True), "A")
    with pytest.raises(AssertionError, match=r"Part B: .*prediction.*Revisit: the Part B"):
        g.expect_committed(_Widget(False), "B")


@pytest.mark.parametrize("bad", [None, "3", True, math.nan, math.inf])
def test_expect_number_rejects_non_numbers(bad):
    with pytest.raises(AssertionError, match=r"^Part C: `x`"):
        g.expect_number("x", bad, "C")


def test_expect_number_sign(capsys):
    assert g.expect_number("x", 2, "A") is None
    assert g.expect_number("x", 0, "A", positive=False) is None
    with pytest.raises(AssertionError, match="positive"):
        g.expect_number("x", 0, "A")
    assert capsys.readouterr().out.count("Self-check passed") == 2


def test_every_check_returns_none_so_nbgrader_never_reads_partial_credit():
    """A test cell's last value is nbgrader's partial credit: a float above the cell's
    points crashed ``nbgrader validate`` ("partial credit cannot be greater than ...")."""
    assert g.expect_committed(_Widget(True), "A") is None
    assert g.expect_number("answer_B", 123456, "B") is None
    assert g.expect_close("x", 100.5, 100.0, "A", rel=0.01, revisit="r") is None
    assert g.expect_true(True, "D", "c", "f", "r") is None
    assert g.expect_choice("p", "none", ("none", "static"), "C") is None


def test_visible_self_checks_print_one_pass_line_without_any_expected_value(capsys):
    g.expect_number("answer_A", 2.5e9, "A")
    g.expect_number("answer_C", 0.0, "C", positive=False)
    g.expect_choice("policy", "static", ("none", "static"), "D")
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "Part A: `answer_A` is a finite positive number. Self-check passed; whether it is "
        "correct is checked when your notebook is graded.",
        "Part C: `answer_C` is a finite number. Self-check passed; whether it is correct "
        "is checked when your notebook is graded.",
        "Part D: `policy` is one of the allowed options. Self-check passed; whether it is "
        "correct is checked when your notebook is graded."]
    assert not any(v in "".join(lines) for v in ("2.5", "2500000000", "static", "none"))


def test_hidden_checks_and_failures_print_nothing(capsys):
    g.expect_committed(_Widget(True), "A")
    g.expect_close("x", 100.5, 100.0, "A", rel=0.01, revisit="r")
    g.expect_true(True, "D", "c", "f", "r")
    for bad in (lambda: g.expect_number("x", None, "A"),
                lambda: g.expect_choice("p", "turbo", ("none",), "C"),
                lambda: g.expect_close("x", 120, 100.0, "A", rel=0.01, revisit="r")):
        with pytest.raises(AssertionError):
            bad()
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(("check", "message"), [
    (lambda: g.expect_number("answer_A", None, "A"),
     "Part A: `answer_A` must hold your answer -- it is still None. "
     "Revisit: the Part A exercise cell"),
    (lambda: g.expect_number("answer_A", "3", "A"),
     "Part A: `answer_A` must be a finite number -- it is '3'. "
     "Revisit: the Part A exercise cell"),
    (lambda: g.expect_number("answer_A", -1, "A"),
     "Part A: `answer_A` must be positive -- it is -1. Revisit: the Part A exercise cell"),
    (lambda: g.expect_close("answer_C", None, 0.5, "C", rel=0.01, revisit="r"),
     "Part C: `answer_C` must hold your answer -- it is still None. "
     "Revisit: the Part C exercise cell"),
    (lambda: g.expect_close("answer_C", 0.9, 0.5, "C", rel=0.01, revisit="the formula"),
     "Part C: we recomputed `answer_C` from the track's numbers (tolerance 1%) -- yours "
     "is too high. Revisit: the formula"),
    (lambda: g.expect_choice("policy", "turbo", ("none", "static"), "D"),
     "Part D: `policy` must be one of 'none', 'static' -- it is 'turbo'. "
     "Revisit: the Part D exercise cell"),
])
def test_failure_messages_are_unchanged(check, message):
    with pytest.raises(AssertionError) as caught:
        check()
    assert str(caught.value) == message


def test_expect_close_says_direction_and_revisit():
    g.expect_close("x", 100.5, 100.0, "A", rel=0.01, revisit="r")
    with pytest.raises(AssertionError, match=r"too high.*Revisit: the formula"):
        g.expect_close("x", 120, 100.0, "A", rel=0.01, revisit="the formula")
    with pytest.raises(AssertionError, match="too low"):
        g.expect_close("x", 80, 100.0, "A", rel=0.01, revisit="the formula")


def test_expect_true_and_choice():
    g.expect_true(True, "D", "c", "f", "r")
    with pytest.raises(AssertionError, match=r"Part D: checked -- found\. Revisit: here"):
        g.expect_true(False, "D", "checked", "found", "here")
    g.expect_choice("p", "none", ("none", "static"), "C")
    with pytest.raises(AssertionError, match="must be one of 'none', 'static'"):
        g.expect_choice("p", "turbo", ("none", "static"), "C")


class _Widget:
    def __init__(self, committed: bool, first: object = None, credit: str = "correct"):
        self.committed, self.first, self.credit = committed, first, credit


def test_a_checkpoint_earns_its_point_only_when_the_first_answer_is_right():
    g.expect_checkpoint(_Widget(True, "weeks"), "A", correct="weeks")
    with pytest.raises(AssertionError, match="Part A: we compared your first committed"):
        g.expect_checkpoint(_Widget(True, "days"), "A", correct="weeks")
    with pytest.raises(AssertionError, match="committed checkpoint answer"):
        g.expect_checkpoint(_Widget(False), "A", correct="weeks")


def test_a_course_may_grade_checkpoints_for_completion():
    g.expect_checkpoint(_Widget(True, "days", credit="commit"), "B", correct="weeks")
    with pytest.raises(AssertionError):
        g.expect_checkpoint(_Widget(False, None, credit="commit"), "B", correct="weeks")
    assert g.CHECKPOINT_CREDITS == ("correct", "commit")


def test_the_failure_never_names_the_right_answer():
    with pytest.raises(AssertionError) as err:
        g.expect_checkpoint(_Widget(True, "days"), "C", correct="a-secret-answer")
    assert "a-secret-answer" not in str(err.value)


@pytest.mark.parametrize(("kw", "value", "ok"), [
    ({"above": 1.0}, 1.0, False), ({"above": 1.0}, 1.01, True),
    ({"at_least": 1.0}, 1.0, True), ({"at_least": 1.0}, 0.99, False),
    ({"below": 1.0}, 1.0, False), ({"below": 1.0}, 0.5, True),
    ({"at_most": 20871.2}, 20871.2, True), ({"at_most": 20871.2}, 20872.0, False),
    ({"above": 0.0, "below": 1.0}, 64.0, False)])
def test_expect_number_bounds_say_the_bound_and_why(kw, value, ok, capsys):
    """A bound is checked as named (strict or not) and said in plain digits, with why; the
    pass line repeats the bound, never an expected value."""
    if ok:
        g.expect_number("x", value, "B", why="a share", **kw)
        out = capsys.readouterr().out
        assert "(a share)" in out and "e+" not in out
        return
    with pytest.raises(g.SelfCheckError) as err:
        g.expect_number("x", value, "B", why="a share", **kw)
    msg = str(err.value)
    assert "(a share)" in msg and "e+" not in msg and "e-" not in msg
    assert "20,871" in msg or "at most" not in msg


def test_bounds_read_as_plain_numbers():
    assert [g._show(x) for x in (20871.2, 1.5e-5, 0.0586, 1.5e9)] == [
        "20,871", "0.00001500", "0.05860", "1,500,000,000"]
