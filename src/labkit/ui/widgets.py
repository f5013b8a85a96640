"""Reusable, kernel-side widget components for the labs (ipywidgets 8 + bqplot, no custom JS).

* :class:`Prediction` / :class:`Checkpoint` -- a choice plus "Commit"; the committed answer
  is written to an :class:`~labkit.core.answers.AnswerStore` file, locked, and restored locked
  when the notebook is re-run, reopened or autograded (fresh widgets, same file). "Revise"
  records a changed answer *beside* the first ("first: X · revised: Y"), never over it.
  A prediction's :meth:`Prediction.reveal_gate` keeps dependent content out of the page
  until the prediction is committed.
* :class:`Callout` -- an HTML status box; failures (``danger``) look nothing like the
  ``success`` "boundary to watch" state.
* :class:`MathPeek` -- an accordion with live LaTeX formulas and the current numbers.
* chart helpers -- bqplot figures with labelled axes and units, fixed-domain scales, vertical
  / horizontal marker lines, and :func:`update_marks` to change several marks' data in one
  ``hold_sync()`` block.
* control helpers -- sliders, toggles and dropdowns whose bounds make invalid states
  unreachable (precision from a fixed list, devices >= 1, context within the model's
  ``max_context``).
"""

from __future__ import annotations

import contextlib
import html
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import bqplot as bq
import ipywidgets as ipw
import numpy as np

from labkit.core.answers import AnswerEntry, AnswerStore, AnswerValue
from labkit.core.grids import PRECISIONS, context_options

PALETTE = {
    "blue": "#1f6fb2", "orange": "#d9822b", "green": "#2e8b57", "red": "#c0392b",
    "purple": "#7d3c98", "grey": "#7f8c8d", "light": "#a6acaf", "teal": "#138d90",
}
SERIES = ("#1f6fb2", "#d9822b", "#2e8b57", "#7d3c98", "#c0392b", "#138d90")

CALLOUT_KINDS = ("danger", "warn", "success", "info")
_CALLOUT_STYLE = {
    #         border     background  icon  badge
    "danger": ("#c0392b", "#fdecea", "✖", "FAILURE"),
    "warn": ("#b9770e", "#fef5e7", "⚠", "WARNING"),
    "success": ("#1e8449", "#eafaf1", "✔", "BOUNDARY TO WATCH"),
    "info": ("#2471a3", "#ebf5fb", "ℹ", "NOTE"),
}

_WIDE = ipw.Layout(width="auto")
_DESC = {"description_width": "initial"}


def esc(text: object) -> str:
    """HTML-escape any value for safe interpolation into widget HTML."""
    return html.escape(str(text), quote=True)


# -- callouts -------------------------------------------------------------------------------

class Callout(ipw.HTML):
    """A status box of one ``kind``: ``danger`` | ``warn`` | ``success`` | ``info``.

    ``show(title, detail, recovery)`` fills and displays it (``active`` True); ``clear()``
    empties and hides it. ``danger`` (OOM, SLO miss, over budget) has a red border, a ✖ and
    a FAILURE badge; ``success`` -- the boundary to watch -- a green border, ✔ and its own
    badge, so the two can never be confused. ``title``/``detail`` may contain trusted HTML.
    """

    def __init__(self, kind: str = "info", **kwargs: object) -> None:
        if kind not in _CALLOUT_STYLE:
            raise ValueError(f"kind must be one of {', '.join(CALLOUT_KINDS)}; got {kind!r}")
        super().__init__(value="", layout=ipw.Layout(display="none", width="auto"), **kwargs)
        self.kind = kind
        self.active = False
        self.title = ""
        self.detail = ""
        self.recovery: str | None = None
        self.add_class(f"labkit-callout-{kind}")

    def show(self, title: str, detail: str = "", recovery: str | None = None) -> None:
        border, bg, icon, badge = _CALLOUT_STYLE[self.kind]
        rec = (f"<div style='margin-top:4px'><b>Recovery:</b> {recovery}</div>"
               if recovery else "")
        value = (
            f"<div class='labkit-callout labkit-callout-{self.kind}' style='border-left:6px "
            f"solid {border};background:{bg};padding:8px 12px;margin:6px 0;border-radius:4px'>"
            f"<div><span style='color:{border};font-weight:700'>{icon} {badge}</span> "
            f"<b>{title}</b></div>"
            f"<div style='margin-top:4px'>{detail}</div>{rec}</div>")
        self.title, self.detail, self.recovery = title, detail, recovery
        if value != self.value or not self.active:
            with self.hold_sync():
                self.value = value
                self.layout.display = None
        self.active = True

    def clear(self) -> None:
        if self.active or self.value:
            with self.hold_sync():
                self.value = ""
                self.layout.display = "none"
        self.active = False
        self.title, self.detail, self.recovery = "", "", None

    def set(self, active: bool, title: str = "", detail: str = "",
            recovery: str | None = None) -> None:
        """``show(...)`` when ``active`` else ``clear()``."""
        if active:
            self.show(title, detail, recovery)
        else:
            self.clear()


# -- math peek ----------------------------------------------------------------------------

class MathPeek(ipw.Accordion):
    """A collapsed accordion titled ``title`` holding an HTMLMath body (LaTeX with $...$)."""

    def __init__(self, title: str, body: str = "", **kwargs: object) -> None:
        self.html = ipw.HTMLMath(value=body)
        super().__init__(children=[self.html], **kwargs)
        self.set_title(0, title)
        self.selected_index = None
        self.title = title

    @property
    def body(self) -> str:
        return self.html.value

    def update(self, body: str) -> None:
        if body != self.html.value:
            self.html.value = body


# -- predictions and checkpoints ------------------------------------------------------------

class RevealGate(ipw.VBox):
    """Holds ``content`` out of the page until opened; shows ``message`` meanwhile.

    The content widget is not a child until :meth:`reveal` (so nothing it shows is in the
    DOM before, and bqplot figures are laid out at full size when they appear).
    """

    def __init__(self, content: ipw.Widget, message: str = "Commit your prediction first.",
                 **kwargs: object) -> None:
        self.content = content
        self.placeholder = ipw.HTML(
            value=f"<div class='labkit-gate' style='color:#7f8c8d;font-style:italic;"
                  f"padding:6px 0'>{esc(message)}</div>")
        self.revealed = False
        super().__init__(children=[self.placeholder], **kwargs)
        self.add_class("labkit-reveal-gate")

    def reveal(self) -> None:
        """Show the content (idempotent)."""
        if not self.revealed:
            self.children = [self.content]
            self.revealed = True

    def conceal(self) -> None:
        """Show the placeholder again (idempotent)."""
        if self.revealed:
            self.children = [self.placeholder]
            self.revealed = False


Options = Sequence[str] | Sequence[tuple[str, AnswerValue]]


class _Question:
    """Shared mechanics of :class:`Prediction` and :class:`Checkpoint`."""

    kind_label = "Question"
    commit_label = "Commit"

    def __init__(self, lab: str, key: str, question: str, options: Options | None = None,
                 store: AnswerStore | None = None, *,
                 bounds: tuple[float, float] | None = None, step: float | None = None,
                 unit: str = "", feedback: Mapping[AnswerValue, str] | None = None) -> None:
        self.lab, self.key, self.question = lab, key, question
        self.store = store if store is not None else AnswerStore()
        self.unit = unit
        self.feedback = dict(feedback or {})
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
            self.choice: ipw.ValueWidget = ipw.BoundedFloatText(
                value=lo, min=lo, max=hi, step=step or (hi - lo) / 100,
                description=unit, style=_DESC)
        else:
            opts = [(o, o) if isinstance(o, str) else (str(o[0]), o[1]) for o in options]
            if len(opts) < 2 or len({v for _, v in opts}) != len(opts):
                raise ValueError("options must hold at least two distinct choices")
            self.choices, self.bounds = opts, None
            self.options = [v for _, v in opts]
            self.choice = ipw.RadioButtons(options=opts, value=None, layout=_WIDE)
        self.commit_button = ipw.Button(description=self.commit_label, button_style="primary",
                                      icon="lock", disabled=self.options is not None,
                                      layout=ipw.Layout(width="auto"))
        self.revise_button = ipw.Button(description="Revise", icon="pencil",
                                      layout=ipw.Layout(display="none"))
        self.status = ipw.HTML()
        self.feedback_html = ipw.HTML()
        self.commit_button.on_click(lambda _b: self.commit())
        self.revise_button.on_click(lambda _b: self.revise())
        self.choice.observe(self._on_choice, names="value")
        self.widget = ipw.VBox([
            ipw.HTML(f"<div style='font-weight:600;margin-top:6px'>{esc(self.kind_label)}: "
                   f"{question}</div>"),
            self.choice,
            ipw.HBox([self.commit_button, self.revise_button]),
            self.status, self.feedback_html,
        ], layout=ipw.Layout(border="1px solid #d5d8dc", padding="6px 10px", margin="6px 0"))
        self.widget.add_class(f"labkit-{self.kind_label.lower()}")
        existing = self.store.get(lab, key)
        if existing is not None:
            self._apply(existing, notify=False)
        else:
            self._render_status()

    # -- display ---------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: object) -> object:
        return self.widget._repr_mimebundle_(**kwargs)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

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
        return self.choice.value

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
    def commit(self, value: AnswerValue | None = None) -> AnswerEntry:
        """Record the selected answer (or ``value``) and lock the choice.

        A first commit keeps the answer as ``first``; a commit after :meth:`revise` with a
        different answer appends it to ``changes`` beside the first.
        """
        if self.committed and not self._revising:
            if value is None or value == self._entry.current:  # type: ignore[union-attr]
                return self._entry  # type: ignore[return-value]
            raise ValueError(f"{self.key} is committed and locked; call revise() first")
        if value is not None:
            self._select(value)
        chosen = self.choice.value
        if chosen is None:
            raise ValueError(f"choose an answer for {self.key} before committing")
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
    def _select(self, value: AnswerValue) -> None:
        if self.options is not None:
            if value not in self.options:
                known = ", ".join(repr(v) for v in self.options)
                raise ValueError(f"{value!r} is not an option of {self.key}; options: {known}")
            self.choice.value = value
        else:
            lo, hi = self.bounds  # type: ignore[misc]
            x = float(value)  # type: ignore[arg-type]
            if not (lo <= x <= hi):
                raise ValueError(f"{x:g} is outside the bounds [{lo:g}, {hi:g}] of {self.key}")
            self.choice.value = x

    def _on_choice(self, _change: object) -> None:
        if not self.committed or self._revising:
            self.commit_button.disabled = self.choice.value is None

    def _apply(self, entry: AnswerEntry, *, notify: bool) -> None:
        self._entry = entry
        self._revising = False
        current = entry.current
        with contextlib.suppress(ValueError):  # an answer from an older question version
            self._select(current)
        self.choice.disabled = True
        self.commit_button.layout.display = "none"
        self.commit_button.description = self.commit_label
        self.revise_button.layout.display = None
        self._render_status()
        if notify:
            for cb in list(self._callbacks):
                cb(entry)

    def _render_status(self) -> None:
        e = self._entry
        if e is None:
            self.status.value = ("<span style='color:#7f8c8d'>Not committed yet: choose an "
                                 f"answer and press <b>{esc(self.commit_label)}</b>.</span>")
            self.feedback_html.value = ""
            return
        first = esc(self.label_for(e.first))
        if e.revised:
            n = len(e.changes)
            text = (f"<b>first:</b> {first} · <b>revised:</b> {esc(self.label_for(e.current))}"
                    + (f" <span style='color:#7f8c8d'>({n} changes)</span>" if n > 1 else ""))
        else:
            text = f"<b>committed:</b> {first}"
        if self._revising:
            text += " <span style='color:#b9770e'>— choose a changed answer and record it</span>"
        self.status.value = (f"<div class='labkit-answer-status'>{text} (locked) "
                             f"<span style='color:#7f8c8d'>({esc(e.first_at)})</span></div>")
        fb = self.feedback.get(e.current)
        self.feedback_html.value = f"<div style='margin-top:4px'>{fb}</div>" if fb else ""


class Prediction(_Question):
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
                 store: AnswerStore | None = None, **kwargs: object) -> None:
        self._gates: list[RevealGate] = []
        super().__init__(lab, key, question, options, store, **kwargs)  # type: ignore[arg-type]

    def reveal_gate(self, content: ipw.Widget,
                    message: str = "Commit your prediction above to see this.") -> RevealGate:
        """A box that shows ``content`` only once this prediction is committed."""
        gate = RevealGate(content, message)
        self._gates.append(gate)
        if self.committed:
            gate.reveal()
        return gate

    def _apply(self, entry: AnswerEntry, *, notify: bool) -> None:
        for gate in getattr(self, "_gates", ()):
            gate.reveal()
        super()._apply(entry, notify=notify)


class Checkpoint(_Question):
    """The end-of-part question: same commit / lock / revise / restore, no gate.

    ``feedback`` maps an answer value to HTML shown once that answer is committed.
    """

    kind_label = "Checkpoint"
    commit_label = "Commit answer"


# -- charts ---------------------------------------------------------------------------------

def make_scale(kind: str = "linear", lo: float | None = None, hi: float | None = None,
               **kwargs: object) -> bq.Scale:
    """A bqplot scale: ``linear`` | ``log`` | ``ordinal``, with an optional fixed domain."""
    if kind == "ordinal":
        return bq.OrdinalScale(**kwargs)
    cls = {"linear": bq.LinearScale, "log": bq.LogScale}[kind]
    kw = dict(kwargs)
    if lo is not None:
        kw["min"] = float(lo)
    if hi is not None:
        kw["max"] = float(hi)
    return cls(**kw)


def set_domain(scale: bq.Scale, lo: float, hi: float) -> None:
    """Set a scale's min/max explicitly (one sync), so a change is visible on the axis."""
    lo, hi = float(lo), float(hi)
    if scale.min != lo or scale.max != hi:
        with scale.hold_sync():
            scale.min, scale.max = lo, hi


def figure(marks: Sequence[bq.Mark], x_scale: bq.Scale, y_scale: bq.Scale, *, x_label: str,
           y_label: str, title: str = "", height: int = 300, legend: bool = False,
           x_tick_format: str | None = None, y_tick_format: str | None = None,
           x_tick_values: Sequence[float] | None = None,
           legend_location: str = "top-left") -> bq.Figure:
    """A Figure with labelled axes (put units in the labels), sized for a notebook column."""
    ax_kw: dict[str, object] = {}
    if x_tick_format:
        ax_kw["tick_format"] = x_tick_format
    if x_tick_values is not None:
        ax_kw["tick_values"] = np.asarray(x_tick_values, dtype=float)
    x_axis = bq.Axis(scale=x_scale, label=x_label, side="bottom", label_offset="36px",
                     **ax_kw)
    y_kw: dict[str, object] = {"tick_format": y_tick_format} if y_tick_format else {}
    y_axis = bq.Axis(scale=y_scale, label=y_label, side="left", label_offset="52px", **y_kw)
    fig = bq.Figure(marks=list(marks), axes=[x_axis, y_axis], title=title,
                    fig_margin={"top": 40, "bottom": 50, "left": 72, "right": 20},
                    legend_location=legend_location,
                    layout=ipw.Layout(width="100%", height=f"{height}px", min_width="320px"),
                    animation_duration=0)
    return fig


def line_mark(x: object, y: object, x_scale: bq.Scale, y_scale: bq.Scale, *,
              colors: Sequence[str] = SERIES, labels: Sequence[str] | None = None,
              line_style: str = "solid", stroke_width: float = 2.5,
              legend: bool = False, **kwargs: object) -> bq.Lines:
    """Lines (one curve, or several when ``y`` is 2-D)."""
    return bq.Lines(x=x, y=y, scales={"x": x_scale, "y": y_scale}, colors=list(colors),
                    labels=list(labels or []), line_style=line_style,
                    stroke_width=stroke_width, display_legend=legend, **kwargs)


def bar_mark(x: object, y: object, x_scale: bq.Scale, y_scale: bq.Scale, *,
             colors: Sequence[str] = SERIES, labels: Sequence[str] | None = None,
             kind: str = "stacked", legend: bool = False, **kwargs: object) -> bq.Bars:
    """Bars; a 2-D ``y`` (series x categories) is stacked or grouped (``kind``)."""
    return bq.Bars(x=x, y=y, scales={"x": x_scale, "y": y_scale}, colors=list(colors),
                   labels=list(labels or []), type=kind, display_legend=legend,
                   padding=0.25, **kwargs)


def scatter_mark(x: object, y: object, x_scale: bq.Scale, y_scale: bq.Scale, *,
                 color: str = PALETTE["red"], size: int = 80, **kwargs: object) -> bq.Scatter:
    return bq.Scatter(x=x, y=y, scales={"x": x_scale, "y": y_scale}, colors=[color],
                      default_size=size, **kwargs)


def vline_mark(x: float, x_scale: bq.Scale, *, color: str = PALETTE["red"],
               line_style: str = "dashed", label: str | None = None,
               legend: bool = False) -> bq.Lines:
    """A vertical marker line at ``x`` spanning the full plot height (own 0..1 y scale)."""
    unit = bq.LinearScale(min=0.0, max=1.0)
    return bq.Lines(x=[float(x), float(x)], y=[0.0, 1.0], scales={"x": x_scale, "y": unit},
                    colors=[color], line_style=line_style, stroke_width=2,
                    labels=[label] if label else [], display_legend=legend)


def vlines_mark(xs: Sequence[float], x_scale: bq.Scale, *, color: str = PALETTE["light"],
                line_style: str = "dotted") -> bq.Lines:
    """Several fixed vertical rules (e.g. bucket boundaries) in one mark."""
    unit = bq.LinearScale(min=0.0, max=1.0)
    xv = np.asarray([[float(x), float(x)] for x in xs])
    yv = np.tile([0.0, 1.0], (len(xs), 1))
    return bq.Lines(x=xv, y=yv, scales={"x": x_scale, "y": unit}, colors=[color] * len(xs),
                    line_style=line_style, stroke_width=1.5)


def hline_mark(y: float, y_scale: bq.Scale, *, color: str = PALETTE["red"],
               line_style: str = "dashed", label: str | None = None,
               legend: bool = False) -> bq.Lines:
    """A horizontal rule at ``y`` spanning the full plot width (own 0..1 x scale)."""
    unit = bq.LinearScale(min=0.0, max=1.0)
    return bq.Lines(x=[0.0, 1.0], y=[float(y), float(y)], scales={"x": unit, "y": y_scale},
                    colors=[color], line_style=line_style, stroke_width=2,
                    labels=[label] if label else [], display_legend=legend)


def _differs(old: object, new: object) -> bool:
    if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
        a, b = np.asarray(old), np.asarray(new)
        return a.shape != b.shape or a.dtype.kind != b.dtype.kind or not np.array_equal(a, b)
    try:
        return bool(old != new)
    except ValueError:  # ambiguous comparisons: treat as changed
        return True


def update_marks(updates: Mapping[ipw.Widget, Mapping[str, object]] |
                 Iterable[tuple[ipw.Widget, Mapping[str, object]]]) -> None:
    """Set traits of several marks/scales/widgets in one ``hold_sync()`` block each.

    Unchanged values are skipped, so a callback pays only for what really moved.
    """
    items = updates.items() if isinstance(updates, Mapping) else updates
    pending = [(w, {k: v for k, v in t.items() if _differs(getattr(w, k), v)})
               for w, t in items]
    pending = [(w, t) for w, t in pending if t]
    with contextlib.ExitStack() as stack:
        for w, _ in pending:
            stack.enter_context(w.hold_sync())
        for w, traits in pending:
            for k, v in traits.items():
                setattr(w, k, v)


def set_vline(mark: bq.Lines, x: float | None) -> None:
    """Move a :func:`vline_mark` to ``x`` (None hides it)."""
    if x is None or not math.isfinite(x):
        update_marks({mark: {"visible": False}})
    else:
        update_marks({mark: {"x": [float(x), float(x)], "visible": True}})


def set_hline(mark: bq.Lines, y: float) -> None:
    update_marks({mark: {"y": [float(y), float(y)]}})


# -- controls -------------------------------------------------------------------------------

def precision_control(description: str, value: int,
                      options: Sequence[int] = PRECISIONS) -> ipw.ToggleButtons:
    """Storage precision from a fixed list of bit widths (no invalid precision reachable)."""
    opts = sorted({int(b) for b in options})
    if any(b not in PRECISIONS for b in opts):
        raise ValueError(f"precision options must be among {PRECISIONS}; got {opts}")
    if int(value) not in opts:
        raise ValueError(f"value {value} is not among the options {opts}")
    return ipw.ToggleButtons(options=[(f"{b}-bit", b) for b in opts], value=int(value),
                           description=description, style={**_DESC, "button_width": "64px"})


def int_control(description: str, value: int, lo: int, hi: int,
                step: int = 1) -> ipw.IntSlider:
    """An integer slider over [lo, hi]; ``value`` is clamped into it."""
    if lo > hi:
        raise ValueError(f"lo {lo} > hi {hi}")
    v = int(np.clip(value, lo, hi))
    return ipw.IntSlider(value=v, min=int(lo), max=int(hi), step=int(step),
                       description=description, style=_DESC, layout=ipw.Layout(width="460px"))


def devices_control(value: int, max_devices: int,
                    description: str = "Devices per replica") -> ipw.IntSlider:
    """Devices per replica: 1..max_devices (never 0, never past the fast domain)."""
    return int_control(description, value, 1, max(1, int(max_devices)))


def float_control(description: str, value: float, lo: float, hi: float,
                  step: float, readout_format: str = ".2f") -> ipw.FloatSlider:
    """A float slider over [lo, hi]; ``value`` is clamped into it."""
    v = float(np.clip(value, lo, hi))
    return ipw.FloatSlider(value=v, min=float(lo), max=float(hi), step=float(step),
                         description=description, readout_format=readout_format,
                         style=_DESC, layout=ipw.Layout(width="460px"))


def log_control(description: str, value: float, lo: float, hi: float,
                steps: int = 60, readout_format: str = ".3g") -> ipw.FloatLogSlider:
    """A base-10 log slider from ``lo`` to ``hi`` (both > 0) with ``steps`` stops."""
    if not (0 < lo < hi):
        raise ValueError(f"need 0 < lo < hi; got {lo}, {hi}")
    elo, ehi = math.log10(lo), math.log10(hi)
    v = float(np.clip(value, lo, hi))
    return ipw.FloatLogSlider(value=v, base=10, min=elo, max=ehi, step=(ehi - elo) / steps,
                            description=description, readout_format=readout_format,
                            style=_DESC, layout=ipw.Layout(width="460px"))


def selection_control(description: str, options: Sequence[tuple[str, object]],
                      value: object) -> ipw.SelectionSlider:
    return ipw.SelectionSlider(options=list(options), value=value, description=description,
                             style=_DESC, layout=ipw.Layout(width="460px"),
                             continuous_update=True)


def choice_control(description: str, options: Sequence[tuple[str, object]], value: object,
                   style: str = "dropdown") -> ipw.Dropdown | ipw.ToggleButtons:
    """A fixed set of choices as a Dropdown or ToggleButtons."""
    if style == "toggle":
        return ipw.ToggleButtons(options=list(options), value=value, description=description,
                               style=_DESC)
    return ipw.Dropdown(options=list(options), value=value, description=description,
                      style=_DESC, layout=ipw.Layout(width="460px"))


def format_tokens(n: int) -> str:
    """512 -> '512', 4096 -> '4k', 131072 -> '128k', 1280 -> '1.25k'."""
    if n < 1024:
        return str(n)
    k = n / 1024
    return f"{k:g}k" if k == int(k) else f"{k:.3g}k"


def context_control(value: int, max_context: int, min_context: int = 256,
                    description: str = "Context (tokens)") -> ipw.SelectionSlider:
    """Context length within [min_context, the model's max_context] (no overflow reachable)."""
    opts = context_options(max_context, value, min_context)
    return selection_control(description, [(format_tokens(v), v) for v in opts], value)
