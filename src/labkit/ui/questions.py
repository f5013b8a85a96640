"""Answer widgets: a choice plus "Commit", stored, locked and restored.

* :class:`Prediction` / :class:`Checkpoint` -- the committed answer is written to an
  :class:`~labkit.core.answers.AnswerStore` file, locked, and restored locked when the
  notebook is re-run, reopened or autograded (fresh widgets, same file). "Revise" records a
  changed answer *beside* the first ("first: X · revised: Y"), never over it.
* A prediction's :meth:`Prediction.reveal_gate` keeps dependent content out of the page until
  the prediction is committed.
* :class:`Question` -- their shared mechanics. What committing is worth (``points``, one
  line under the question) and a self-check re-run after every commit (``check``: a ✔ when
  it passes, its message when it fails).
* A bad answer from a student's cell (not an option, out of bounds, nothing chosen, a
  locked answer) records nothing: :meth:`Question.commit` shows why on the widget and
  returns a :class:`Refusal` (a one-line message as the cell's output), never a traceback.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labkit.core.answers import AnswerEntry, AnswerStore, AnswerValue
from labkit.core.keys import CHECKPOINT_RULE
from labkit.ui.controls import DESC_STYLE
from labkit.ui.headless import LIVE, Sink, TextBox, TextChoice, TextView, active, plain_text
from labkit.ui.html import TEXT, esc

if TYPE_CHECKING:
    import ipywidgets as ipw

    from labkit.ui.boxes import RevealGate


Options = Sequence[str] | Sequence[tuple[str, AnswerValue]]
Check = Callable[["Question"], str | None]
"""A self-check: returns what passed (or None), raises ``AssertionError(message)`` when not."""

_GREEN, _RED, _GREY = TEXT["green"], TEXT["red"], TEXT["grey"]


class _RefusedError(Exception):
    """Internal: why a commit records nothing (becomes a :class:`Refusal`)."""


@dataclass(frozen=True)
class Refusal:
    """Why a commit recorded nothing. Falsy; shows as one short line when it is a cell's
    value, and the same message is on the question's widget."""

    key: str
    message: str

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"Not committed: {self.message}"

    def _repr_html_(self) -> str:
        return (f"<div class='labkit-refusal' style='color:{_RED}'>✖ <b>Not committed:</b> "
                f"{esc(self.message)}</div>")


def credit_text(points: int | None, for_right: bool = False) -> str:
    """What committing is worth, as the widget says it (``points`` None or 0: ungraded;
    ``for_right``: a checkpoint, whose point is for the right first answer)."""
    if not points:
        return "Ungraded: committing records your answer."
    worth = "1 point" if points == 1 else f"{points} points"
    saved = "Your answer is saved in labkit_answers.json: submit that file with your notebook."
    if for_right:
        return f"Worth {worth} {CHECKPOINT_RULE}. {saved}"
    return (f"Worth {worth} for committing: any answer earns "
            f"{'it' if points == 1 else 'them'}; being right is not graded. {saved}")


class Question:
    """Shared mechanics of :class:`Prediction` and :class:`Checkpoint`."""

    kind_label = "Question"
    commit_label = "Commit"
    graded_right = False  # the point is for committing (a checkpoint's: for the right answer)
    # widgets, or a headless build's stand-ins (:meth:`_build_text`)
    choice: Any
    commit_button: Any
    revise_button: Any
    status: Any
    feedback_html: Any
    credit_html: Any
    check_html: Any

    def __init__(self, lab: str, key: str, question: str, options: Options | None = None,
                 store: AnswerStore | None = None, *,
                 bounds: tuple[float, float] | None = None, step: float | None = None,
                 unit: str = "", feedback: Mapping[AnswerValue, str] | None = None,
                 points: int | None = None, check: Check | None = None) -> None:
        self.lab, self.key, self.question = lab, key, question
        self.store = store if store is not None else AnswerStore()
        self.unit = unit
        self.feedback = dict(feedback or {})
        self.points, self.check = points, check
        self.problem: str | None = None
        self.check_passed: bool | None = None
        self._check_text = ""
        self._callbacks: list[Callable[[AnswerEntry], object]] = []
        self._entry: AnswerEntry | None = None
        self._revising = False
        if options is None:
            if bounds is None:
                raise ValueError("give options (a list of choices) or numeric bounds")
            lo, hi = float(bounds[0]), float(bounds[1])
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"bounds must be finite with low < high; got {bounds!r}")
            self.choices: list[tuple[str, AnswerValue]] | None = None
            self.options: list[AnswerValue] | None = None
            self.bounds: tuple[float, float] | None = (lo, hi)
        else:
            opts = [(o, o) if isinstance(o, str) else (str(o[0]), o[1]) for o in options]
            if len(opts) < 2 or len({v for _, v in opts}) != len(opts):
                raise ValueError("options must hold at least two distinct choices")
            self.choices, self.bounds = opts, None
            self.options = [v for _, v in opts]
        self.widget: ipw.Widget | None = None
        if active():
            self._build_text()
        else:
            _build_widgets(self, step)
        self.choice.observe(self._on_choice, names="value")
        existing = self.store.get(lab, key)
        if existing is not None:
            self._apply(existing, notify=False)
        else:
            self._render_status()

    def _build_text(self) -> None:
        """A headless build's stand-ins (:mod:`labkit.ui.headless`): the same commit,
        lock, revise and restore, no widget; the question shows as text."""
        self.choice = TextChoice(None if self.bounds is None else self.bounds[0])
        self.commit_button, self.revise_button = Sink(), Sink()
        self.status, self.feedback_html = TextBox(), TextBox()
        self.credit_html, self.check_html = TextBox(), TextBox()

    # -- display ---------------------------------------------------------------------------
    def text(self) -> str:
        """Whether the question is answered, and its self-check, in words (no option: a
        grading kernel's outputs reach the student's feedback)."""
        state = ("not committed yet" if self._entry is None else
                 "unlocked to revise" if self._revising else "committed (locked)")
        return "\n".join(t for t in (f"{self.kind_label}: {state}; the question {LIVE}.",
                                     plain_text(self.check_html.value)) if t)

    def _repr_mimebundle_(self, **kwargs: object) -> object:
        if self.widget is None:
            return {"text/plain": self.text()}
        return self.widget._repr_mimebundle_(**kwargs)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        shown = self.widget if self.widget is not None else TextView(self.text())
        display(shown)  # type: ignore[no-untyped-call, unused-ignore]  # IPython

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.lab!r}, {self.key!r}, committed="
                f"{self.committed}, value={self.value!r})")

    # -- state -----------------------------------------------------------------------------
    @property
    def committed(self) -> bool:
        return self._entry is not None

    @property
    def entry(self) -> AnswerEntry | None:
        return self._entry

    @property
    def value(self) -> AnswerValue | None:
        """The current committed answer; before commit, the selection (or None)."""
        if self._entry is not None:
            return self._entry.current
        selected: AnswerValue | None = self.choice.value
        return selected

    @property
    def locked(self) -> bool:
        return bool(self.choice.disabled)

    def label_for(self, value: AnswerValue | None) -> str:
        """The option label of ``value`` (numbers: with the unit)."""
        if value is None:
            return "—"
        for label, v in self.choices or ():
            if v == value:
                return label
        if isinstance(value, float | int) and not isinstance(value, bool):
            return f"{value:g} {self.unit}".strip()
        return str(value)

    def on_commit(self, callback: Callable[[AnswerEntry], object]) -> None:
        """Call ``callback(entry)`` after every commit or recorded revision."""
        self._callbacks.append(callback)

    # -- actions ---------------------------------------------------------------------------
    def commit(self, value: AnswerValue | None = None) -> AnswerEntry | Refusal:
        """Record the selected answer (or ``value``: an option's value or label) and lock.

        A first commit keeps the answer as ``first``; a commit after :meth:`revise` with a
        different answer appends it to ``changes`` beside the first. An answer that cannot
        be recorded returns a :class:`Refusal` (also shown on the widget); nothing raises.
        """
        try:
            entry = self._commit(value)
        except _RefusedError as why:
            self.problem = str(why)
            self._render_status()
            return Refusal(self.key, self.problem)
        return entry

    def _commit(self, value: AnswerValue | None) -> AnswerEntry:
        entry = self._entry
        if entry is not None and not self._revising:
            if value is None or self._as_value(value) == entry.current:
                return entry
            raise _RefusedError(f"your answer ({self.label_for(entry.current)}) is committed and "
                           "locked; press Revise to record a changed answer beside it")
        if value is not None:
            self._select(value)
        chosen = self.choice.value
        if chosen is None:
            raise _RefusedError("no answer is chosen yet: choose one above, then press "
                           f"{self.commit_label}")
        if self.options is None:
            chosen = float(chosen)
        entry = self.store.record(self.lab, self.key, chosen)
        self._apply(entry, notify=True)
        return entry

    def revise(self) -> None:
        """Unlock the choice so a changed answer can be recorded beside the first."""
        if not self.committed:
            return
        self._revising = True
        with self.choice.hold_sync():
            self.choice.disabled = False
        self.commit_button.description = "Record revised answer"
        self.commit_button.disabled = False
        self.commit_button.layout.display = None
        self.revise_button.layout.display = "none"
        self._render_status()

    # -- internals -------------------------------------------------------------------------
    def _as_value(self, value: AnswerValue) -> AnswerValue:
        """``value``, or the value of the option labelled ``value``."""
        if self.choices is not None and value not in (self.options or ()):
            by_label = [v for label, v in self.choices if label == value]
            if len(by_label) == 1:
                return by_label[0]
        return value

    def _select(self, value: AnswerValue) -> None:
        if self.options is not None:
            v = self._as_value(value)
            if v not in self.options:
                known = ", ".join(label for label, _ in self.choices or ())
                raise _RefusedError(f"{value!r} is not one of the choices ({known})")
            self.choice.value = v
        elif self.bounds is not None:
            lo, hi = self.bounds
            try:
                x = float(value)
            except (TypeError, ValueError):
                raise _RefusedError(f"{value!r} is not a number") from None
            if isinstance(value, bool) or not (lo <= x <= hi):
                raise _RefusedError(f"{value!r} is outside the bounds [{lo:g}, {hi:g}] "
                               f"{self.unit}".rstrip())
            self.choice.value = x

    def _on_choice(self, _change: object) -> None:
        if not self.committed or self._revising:
            self.commit_button.disabled = self.choice.value is None
        if self.problem is not None:  # a new choice answers the refusal
            self.problem = None
            self._render_status()

    def _apply(self, entry: AnswerEntry, *, notify: bool) -> None:
        self._entry = entry
        self._revising = False
        self.problem = None
        current = entry.current
        with contextlib.suppress(_RefusedError):  # an answer from an older question version
            self._select(current)
        self.choice.disabled = True
        self.commit_button.layout.display = "none"
        self.commit_button.description = self.commit_label
        self.revise_button.layout.display = None
        self._run_check()
        self._render_status()
        if notify:
            for cb in list(self._callbacks):
                cb(entry)

    def _run_check(self) -> None:
        """Re-run the self-check on the committed answer (after every commit and restore)."""
        self.check_passed, self._check_text = None, ""
        if self.check is None or self._entry is None:
            return
        try:
            passed = self.check(self)
        except AssertionError as exc:
            self.check_passed, self._check_text = False, str(exc) or "the self-check failed"
        except Exception as exc:  # a self-check never shows the student a traceback
            self.check_passed = False
            self._check_text = f"the self-check could not run ({type(exc).__name__}: {exc})"
        else:
            self.check_passed, self._check_text = True, passed or "your answer is committed"

    def _check_line(self) -> str:
        """The ✔ / ✖ line under the status: a refused commit, else the self-check."""
        if self.problem is not None:
            return (f"<div class='labkit-problem' style='color:{_RED}'>✖ <b>Not committed:</b> "
                    f"{esc(self.problem)}</div>")
        if self.check_passed is True:
            return (f"<div class='labkit-check-pass' style='color:{_GREEN}'>✔ <b>Self-check "
                    f"passed:</b> {esc(self._check_text)}</div>")
        if self.check_passed is False:
            return (f"<div class='labkit-check-fail' style='color:{_RED}'>✖ <b>Self-check "
                    f"failed:</b> {esc(self._check_text)}</div>")
        if self.check is not None:
            return (f"<div class='labkit-check-pending' style='color:{_GREY}'>Self-check: runs "
                    f"when you press <b>{esc(self.commit_label)}</b>.</div>")
        return ""

    def _render_status(self) -> None:
        check = self._check_line()
        if check != self.check_html.value:
            self.check_html.value = check
        e = self._entry
        if e is None:
            self.status.value = (f"<span style='color:{_GREY}'>Not committed yet: choose an "
                                 f"answer and press <b>{esc(self.commit_label)}</b>.</span>")
            self.feedback_html.value = ""
            return
        first = esc(self.label_for(e.first))
        if e.revised:
            n = len(e.changes)
            text = (f"<b>first:</b> {first} · <b>revised:</b> {esc(self.label_for(e.current))}"
                    + (f" <span style='color:{_GREY}'>({n} changes)</span>" if n > 1 else ""))
        else:
            text = f"<b>committed:</b> {first}"
        if self._revising:
            text += (f" <span style='color:{TEXT['amber']}'>— unlocked: choose a changed "
                     "answer and record it</span>")
        else:
            text += " (locked)"
        self.status.value = (f"<div class='labkit-answer-status'>{text} "
                             f"<span style='color:{_GREY}'>({esc(e.first_at)})</span></div>")
        fb = self.feedback.get(e.current)
        self.feedback_html.value = f"<div style='margin-top:4px'>{fb}</div>" if fb else ""


def _build_widgets(q: Question, step: float | None) -> None:
    """``q``'s widgets: the choice, commit and revise, status and check lines (ipywidgets
    imported here: a headless build never gets this far)."""
    import ipywidgets as ipw

    from labkit.ui.keyguard import QUESTION_CLASS, KeyGuard

    if q.bounds is not None:
        lo, hi = q.bounds
        q.choice = ipw.BoundedFloatText(
            value=lo, min=lo, max=hi, step=step or (hi - lo) / 100,
            description=q.unit, style=DESC_STYLE)
    else:
        q.choice = ipw.RadioButtons(options=q.choices, value=None, layout=ipw.Layout(width="auto"))
    q.commit_button = ipw.Button(
        description=q.commit_label, button_style="primary", icon="lock",
        disabled=q.options is not None, layout=ipw.Layout(width="auto"))
    q.revise_button = ipw.Button(description="Revise", icon="pencil",
                                 layout=ipw.Layout(display="none"))
    q.status = ipw.HTML()
    q.status.add_class("labkit-status")
    q.feedback_html = ipw.HTML()
    credit = esc(credit_text(q.points, q.graded_right))
    q.credit_html = ipw.HTML(f"<div class='labkit-credit' style='color:{_GREY};"
                             f"font-size:0.85em'>{credit}</div>")
    q.check_html = ipw.HTML()
    q.commit_button.on_click(lambda _b: q.commit())
    q.revise_button.on_click(lambda _b: q.revise())
    q.widget = ipw.VBox([
        ipw.HTML(f"<div style='font-weight:600;margin-top:6px'>{esc(q.kind_label)}: "
                 f"{q.question}</div>"),
        q.choice,
        ipw.HBox([q.commit_button, q.revise_button]),
        q.status, q.check_html, q.feedback_html, q.credit_html, KeyGuard(),
    ], layout=ipw.Layout(border="1px solid #d5d8dc", padding="6px 10px", margin="6px 0"))
    q.widget.add_class(f"labkit-{q.kind_label.lower()}")
    q.widget.add_class(QUESTION_CLASS)


class Prediction(Question):
    """Commit a prediction before the evidence; :meth:`reveal_gate` hides that evidence.

    ``Prediction(lab, key, question, options, store)`` with ``options`` a list of strings or
    ``(label, value)`` pairs, or ``options=None, bounds=(lo, hi)`` for a number. Restores
    committed and locked when ``store`` already holds the answer. After construction
    ``.options`` lists the answer values (what :meth:`commit` accepts) and ``.choices`` the
    ``(label, value)`` pairs shown.
    """

    kind_label = "Prediction"
    commit_label = "Commit prediction"

    def __init__(self, lab: str, key: str, question: str, options: Options | None = None,
                 store: AnswerStore | None = None, **kwargs: Any) -> None:
        self._gates: list[RevealGate] = []
        super().__init__(lab, key, question, options, store, **kwargs)

    def reveal_gate(self, content: ipw.Widget,
                    message: str = "Commit your prediction above to see this.") -> RevealGate:
        """A box that shows ``content`` only once this prediction is committed."""
        from labkit.ui.boxes import RevealGate

        gate = RevealGate(content, message)
        self._gates.append(gate)
        if self.committed:
            gate.reveal()
        return gate

    def _apply(self, entry: AnswerEntry, *, notify: bool) -> None:
        for gate in getattr(self, "_gates", ()):
            gate.reveal()
        super()._apply(entry, notify=notify)


class Checkpoint(Question):
    """The end-of-part question: same commit / lock / revise / restore, no gate.

    ``feedback`` maps an answer value to HTML shown once that answer is committed.
    """

    kind_label = "Checkpoint"
    graded_right = True
    commit_label = "Commit answer"

