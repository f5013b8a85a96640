"""Checks used by the test cells of the graded notebooks.

Every failure raises :class:`SelfCheckError` (an ``AssertionError``) with a message written
for the student: what was checked, what was found, and which part of the lab to revisit.
In a notebook the failure shows as that message alone, never a traceback through labkit
(IPython's ``_render_traceback_`` hook; the cell still fails, so nbgrader and the judge
see the error). Nothing here knows an answer: expected
values are computed in the (hidden) test cells themselves.

Every check returns None. nbgrader reads the value a test cell ends with as its partial
credit (a float above the cell's points crashes ``nbgrader validate`` and the Validate
button), so a check that passes says so on stdout instead: the visible self-checks
(:func:`expect_number`, :func:`expect_choice`) print one line; the hidden ones stay silent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Real


class SelfCheckError(AssertionError):
    """A check that failed: its message says what was checked, what was found and what to
    revisit -- all a student needs, so a notebook shows it without a traceback."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it (its hook for exceptions that render themselves): the
        message alone. The cell still ends in an error output (``ename``, ``evalue``)."""
        return [f"Self-check failed. {self}"]


def _fail(part: str, checked: str, found: str, revisit: str) -> SelfCheckError:
    __tracebackhide__ = True
    return SelfCheckError(f"Part {part}: {checked} -- {found}. Revisit: {revisit}")


def expect_committed(widget: object, part: str, what: str = "prediction") -> None:
    """Completion credit: the prediction/checkpoint widget holds a committed answer.

    The answer lives in ``labkit_answers.json`` beside the notebook, so it survives
    saving, nbgrader's collect and autograde's fresh re-execution.
    """
    __tracebackhide__ = True  # pytest and the IPython debugger skip this frame
    if not getattr(widget, "committed", False):
        raise _fail(part, f"we looked for your committed {what}", "none was found in "
                    "labkit_answers.json", f"the Part {part} {what} cell: choose an answer "
                    "and press Commit, then save the notebook")


CHECKPOINT_CREDITS = ("correct", "commit")
"""How a checkpoint earns its point (``c.LabkitGrade.checkpoint_credit``): its first
committed answer is the computed one, or any committed answer (completion)."""



def expect_checkpoint(widget: object, part: str, correct: object) -> None:
    """Checkpoint credit: an answer is committed and, unless the course grades checkpoints
    for completion (the widget's ``credit`` is ``"commit"``), the first one committed -- the
    answer given before the feedback -- is ``correct``."""
    __tracebackhide__ = True
    expect_committed(widget, part, "checkpoint answer")
    if getattr(widget, "credit", "correct") == "commit":
        return
    first = getattr(widget, "first", None)
    if first is None:
        first = getattr(getattr(widget, "entry", None), "first", None)
    if first != correct:
        raise _fail(part, "we compared your first committed checkpoint answer with the one "
                    "the part computes", "they differ (a later revision does not count)",
                    f"the Part {part} reveal and the checkpoint's feedback")


def _number(name: str, value: object, part: str, *, positive: bool) -> float:
    """``value`` as a float, or the student-facing failure (None, not finite, not positive)."""
    __tracebackhide__ = True
    if value is None:
        raise _fail(part, f"`{name}` must hold your answer", "it is still None",
                    f"the Part {part} exercise cell")
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise _fail(part, f"`{name}` must be a finite number", f"it is {value!r}",
                    f"the Part {part} exercise cell")
    if positive and value <= 0:
        raise _fail(part, f"`{name}` must be positive", f"it is {value!r}",
                    f"the Part {part} exercise cell")
    return float(value)


def _passed(part: str, what: str) -> None:
    """The one line a visible self-check prints when it passes (stdout, never a value:
    nbgrader reads a test cell's value as partial credit)."""
    print(f"Part {part}: {what}. Self-check passed; whether it is correct is checked "
          "when your notebook is graded.")


def _show(x: float) -> str:
    """A bound as a student reads it: four significant figures, thousands separated, never
    e-notation (a bound of 20,871 tokens, not 2.087e+04)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    digits = max(0, 3 - math.floor(math.log10(abs(x))))
    return f"{round(x, digits):,.{digits}f}"


def expect_number(name: str, value: object, part: str, *, positive: bool = True,
                  above: float | None = None, at_least: float | None = None,
                  below: float | None = None, at_most: float | None = None,
                  why: str = "") -> None:
    """Visible self-check: ``value`` is a finite (positive) number, not None, and within
    the bounds given (``above`` / ``below`` strict, ``at_least`` / ``at_most`` not): bounds
    the part's own numbers imply (``why`` says which, in words), that a wrong answer can
    fail without the check giving the right one away."""
    __tracebackhide__ = True
    got = _number(name, value, part, positive=positive)
    tests = ((above, "above", got > (above or 0.0)), (at_least, "at least",
                                                      got >= (at_least or 0.0)),
             (below, "below", got < (below or 0.0)), (at_most, "at most",
                                                      got <= (at_most or 0.0)))
    said = [(f"{word} {_show(bound)}", ok) for bound, word, ok in tests if bound is not None]
    reason = f" ({why})" if why else ""
    for words, ok in said:
        if not ok:
            raise _fail(part, f"`{name}` must be {words}{reason}", f"yours is {_show(got)}",
                        f"the Part {part} exercise statement")
    bounds = " and ".join(words for words, _ in said)
    _passed(part, f"`{name}` is a finite {'positive ' if positive else ''}number"
            + (f" {bounds}{reason}" if bounds else ""))


def expect_close(name: str, value: object, expected: float, part: str, *, rel: float,
                 revisit: str) -> None:
    """Hidden check: ``value`` within ``rel`` (relative) of ``expected``."""
    __tracebackhide__ = True
    got = _number(name, value, part, positive=False)
    if not math.isclose(got, expected, rel_tol=rel, abs_tol=1e-12):
        direction = "too high" if got > expected else "too low"
        raise _fail(part, f"we recomputed `{name}` from the track's numbers (tolerance "
                    f"{rel:.0%})", f"yours is {direction}", revisit)


def expect_true(condition: bool, part: str, checked: str, found: str, revisit: str) -> None:
    """Hidden check of a property (e.g. a plan passes every guardrail)."""
    __tracebackhide__ = True
    if not condition:
        raise _fail(part, checked, found, revisit)


def expect_choice(name: str, value: object, options: Iterable[object], part: str) -> None:
    """Visible self-check: ``value`` is one of ``options``."""
    __tracebackhide__ = True
    allowed = tuple(options)
    if value not in allowed:
        raise _fail(part, f"`{name}` must be one of {', '.join(map(repr, allowed))}",
                    f"it is {value!r}", f"the Part {part} exercise cell")
    _passed(part, f"`{name}` is one of the allowed options")
