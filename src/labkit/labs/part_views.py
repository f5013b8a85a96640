"""What a lab part shows, headless or not: :class:`PartViews`, the base of
:class:`~labkit.labs.common.LabPart`.

A part builds its prediction and checkpoint (graded) the same in every run. With views
it builds the reveal gate and the exploration (controls, readout, callouts, charts);
in a headless run (:mod:`labkit.core.headless`) it builds none: ``explore``, ``reveal``
and ``math`` are plain text (:class:`~labkit.ui.TextView`), and the deployment model is
computed once, the first time a reveal, a summary, the results or the report need it --
so a broken model still fails the cell that shows the part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from labkit import ui as lw
from labkit.core.answers import AnswerValue
from labkit.core.format import fmt
from labkit.core.keys import answer_key
from labkit.labs.parts import CHECKPOINT_POINTS, PREDICTION_POINTS
from labkit.ui.headless import LazyModule, callout_text

if TYPE_CHECKING:
    import ipywidgets as ipw

    from labkit.core.answers import AnswerStore
    from labkit.tracks import Track
else:
    ipw = LazyModule("ipywidgets")  # a live notebook's widgets: never imported headless

Spec = tuple[str, list[tuple[str, str]]]
CheckSpec = tuple[str, list[tuple[str, str]], str, dict[str, str]]


class LabLike(Protocol):
    """What a part needs from its lab (for type checkers only)."""

    track: Track
    store: AnswerStore
    gate_explore: bool


class PartViews:
    """The questions, the views (or their text) and the on-demand model of a part."""

    headless: bool
    letter: str
    title: str
    track: Track
    controls: dict[str, ipw.ValueWidget]
    callouts: dict[str, Any]
    readout: Any
    decision_line: Any
    details: Any
    _reveal_html: Any
    _math: Any
    _expected: str
    _results: dict[str, Any]
    _stale: bool
    _reveal_view: ipw.Widget | None
    _explore_view: ipw.Widget | None
    lab_id: ClassVar[str]

    def _build_questions(self, lab: LabLike) -> None:
        """The prediction and the checkpoint (graded: built the same headless or not)."""
        tid = self.track.id
        question, options = self._prediction_spec()
        if self._expected not in [val for _, val in options]:
            options.append((f"{self._expected} (computed by labkit)", self._expected))
        self.predict = lw.Prediction(self.lab_id, answer_key(tid, self.letter, "prediction"),
                                     question, options, lab.store, points=PREDICTION_POINTS,
                                     check=self._self_check("prediction"))
        cq, copts, cexpected, cfeedback = self._checkpoint_spec()
        self.checkpoint_expected = cexpected
        feedback: dict[AnswerValue, str] = dict(cfeedback.items())
        self.checkpoint = lw.Checkpoint(self.lab_id, answer_key(tid, self.letter, "checkpoint"),
                                        cq, copts, lab.store, feedback=feedback,
                                        points=CHECKPOINT_POINTS,
                                        check=self._self_check("checkpoint answer"))

    def _build_views(self, lab: LabLike) -> None:
        """The reveal gate and the exploration (controls, readout, callouts, charts)."""
        self._reveal_view = self.predict.reveal_gate(
            self._reveal_html, "Commit your prediction first: the comparison with the computed "
                               "answer appears here.")
        controls, charts = self._screen()
        body = ipw.VBox([self.decision_line, controls, self.readout,
                         *self.callouts.values(), charts, self.details,
                         lw.KeyGuard(scope="controls")])
        body.add_class("labkit-explore-body")
        content: ipw.Widget = body
        if lab.gate_explore:
            content = self.predict.reveal_gate(
                body, "Commit your prediction above to unlock the controls and charts.")
        self._explore_view = ipw.VBox([content])
        self._explore_view.add_class(f"labkit-explore-{self.letter}")

    def _html_box(self, css_class: str = "") -> Any:
        """An HTML widget, or a :class:`~labkit.ui.TextBox` in a headless part."""
        box = lw.TextBox() if self.headless else ipw.HTML(value="")
        if css_class:
            box.add_class(css_class)
        return box

    # -- what a cell shows ---------------------------------------------------------------------
    @property
    def results(self) -> dict[str, Any]:
        """The model's figures at the current settings (a headless part computes them on
        first use)."""
        self._ensure_model()
        return self._results

    @results.setter
    def results(self, value: dict[str, Any]) -> None:
        self._results = value

    @property
    def math(self) -> Any:
        """The math peek (headless: its formulas as text)."""
        self._ensure_model()
        return self._math

    @property
    def explore(self) -> Any:
        """The exploration widget; headless, one line of text once the model is computed.

        Headless text names no figure: a grading kernel's outputs reach the student's
        feedback, where no computed value may appear (``tests/test_course_report.py``);
        :meth:`summary` has the numbers, for whoever asks."""
        if not self.headless:
            return self._explore_view
        self._ensure_model()
        return lw.TextView(f"Part {self.letter}: {self.title}: computed at your settings; "
                           f"its controls and charts {lw.LIVE}.")

    @property
    def reveal(self) -> Any:
        """The reveal gate; headless, one line of text once the model is computed."""
        if not self.headless:
            return self._reveal_view
        self._ensure_model()
        if not self.predict.committed:
            return lw.TextView("Commit your prediction first: the comparison with the "
                               "computed answer appears here.")
        return lw.TextView(f"Part {self.letter}: your prediction is committed; its comparison "
                           f"with the computed answer {lw.LIVE}.")

    def summary(self) -> str:
        """The part in words: the decision, the settings, the readout and the active
        callouts (a headless part computes its model first and sets no callout)."""
        self._ensure_model()
        settings = "; ".join(f"{ctl.description or name}: {self._setting_text(name)}"
                             for name, ctl in self.controls.items())
        callouts = [callout_text(c) for c in self.callouts.values()]
        lines = [f"Part {self.letter}: {self.title}",
                 lw.plain_text(str(self.decision_line.value)), f"Settings: {settings}",
                 lw.plain_text(str(self.readout.value)), *callouts]
        return "\n".join(line for line in lines if line)

    def _setting_text(self, name: str) -> str:
        """A control's value as a student reads it: its option's label, a number."""
        value = self.controls[name].value
        if isinstance(value, float):
            return fmt(value)
        return self.option_label(name, value)

    def _ensure_model(self) -> None:
        """Compute a headless part's model the first time something needs it."""
        if self._stale:
            self.update()

    # -- hooks LabPart provides ------------------------------------------------------------
    def _prediction_spec(self) -> Spec:
        raise NotImplementedError

    def _checkpoint_spec(self) -> CheckSpec:
        raise NotImplementedError

    def _self_check(self, what: str) -> lw.Check:
        raise NotImplementedError

    def _screen(self) -> tuple[ipw.Widget, ipw.Widget]:
        raise NotImplementedError

    def settings(self) -> dict[str, object]:
        raise NotImplementedError

    def option_label(self, control: str, value: object) -> str:
        raise NotImplementedError

    def update(self) -> None:
        raise NotImplementedError
