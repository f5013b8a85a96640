"""What every lab module shares: the part skeleton and the HTML/format helpers.

A lab part is banner -> prediction (gates the reveal and, optionally, the exploration) ->
live exploration (controls, readout, callouts, figures) -> reveal -> math peek ->
checkpoint. :class:`LabPart` builds that skeleton once; a lab subclasses it per part and
fills in the hooks (``_setup``, ``_hook``, ``_prediction_spec``, ``_checkpoint_spec``,
``_reveal_body`` and the refresh steps). The prediction and checkpoint say what committing
earns (:data:`~labkit.labs.parts.PREDICTION_POINTS` /
:data:`~labkit.labs.parts.CHECKPOINT_POINTS`) and re-run the notebook's
self-check (:func:`labkit.grading.expect_committed`) on every commit; every figure is shown
under its title-and-legend header (:func:`labkit.ui.framed`).

Refresh steps: a part splits what it redraws into methods ``step(self, s)`` (``s``: the
settings) marked with :func:`depends_on`, naming the controls (settings) each one reads.
Moving a control runs only the steps that depend on it, in definition order; each step
sets its marks in one :func:`~labkit.ui.update_marks` call (one ``hold_sync`` per
widget). Values several steps share are methods marked with :func:`computed`: they are
recomputed only when one of their inputs changes (the last result is kept), and a step
may name a computed method among its dependencies to inherit its inputs. :data:`ALL`
depends on every control. A part that declares no steps refreshes with ``_refresh`` (one
step depending on every control). :meth:`LabPart.update` runs every step from scratch
(construction, tests).
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from traitlets import TraitError

from labkit import ui as lw
from labkit.core.answers import AnswerEntry, SettingsStore
from labkit.core.format import plain, plain_dict
from labkit.core.keys import answer_key as answer_key  # re-exported: the labs import it here
from labkit.grading import expect_committed
from labkit.labs.part_views import CheckSpec as CheckSpec
from labkit.labs.part_views import LabLike as LabLike
from labkit.labs.part_views import PartViews
from labkit.labs.part_views import Spec as Spec
from labkit.labs.parts import CHECKPOINT_POINTS as CHECKPOINT_POINTS
from labkit.labs.parts import PREDICTION_POINTS as PREDICTION_POINTS
from labkit.plans.deployment import GLOSSARY, Quantity
from labkit.tracks import Track
from labkit.ui.headless import LazyModule

if TYPE_CHECKING:
    import bqplot as bq
    import ipywidgets as ipw
else:
    ipw = LazyModule("ipywidgets")  # a live notebook's widgets: never imported headless


Settings = Mapping[str, Any]
"""Control name -> current (plain) value, as :meth:`LabPart.settings` returns it."""

ALL = "*"
OPEN_CONTROLS = 3
"""Controls a part shows open; the rest are one click away (:meth:`LabPart._screen`)."""
OPEN_CHARTS = 2
"""Charts a part shows open; the rest are one click away."""
"""A dependency on every control (for :func:`depends_on` / :func:`computed`)."""

VIEW_STEPS = ("_draw", "_set_callouts", "_set_paper_callouts", "_show_math")
"""Refresh steps that only draw (charts, callouts, the math peek), by name prefix: a
headless part skips them; the results come from the other steps (``_show_numbers``)."""

_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")
_DEPS_ATTR = "__labkit_depends_on__"
_COMPUTED_ATTR = "__labkit_computed__"


def depends_on(*names: str) -> Callable[[_F], _F]:
    """Mark ``method(self, s)`` as a refresh step reading the settings ``names``.

    Names are control names (a control a track does not have is simply never moved),
    :data:`ALL`, or the names of :func:`computed` methods (their inputs are inherited).
    """
    def mark(fn: _F) -> _F:
        setattr(fn, _DEPS_ATTR, tuple(names))
        return fn
    return mark


KEEP_COMPUTED = 8
"""Results each :func:`computed` value keeps (the least recently used leaves first): the
settings a student moves between (a value is a pure function of its settings)."""


def computed(*names: str) -> Callable[[_F], _F]:
    """Mark ``method(self, s) -> value`` as a value shared by steps, reading ``names``.

    The result is kept per part with the values of ``names`` it was computed from: the
    last :data:`KEEP_COMPUTED` of them, so a slider moved back to where it was, or a toggle
    flipped back, costs no recomputation (:meth:`LabPart.update` starts afresh).
    """
    def mark(fn: _F) -> _F:
        attr = fn.__name__

        def cached(self: LabPart, s: Settings) -> Any:
            key = self._computed_key(attr, s)
            kept = self._computed.setdefault(attr, [])
            for i, (k, value) in enumerate(kept):
                if k == key:
                    kept.append(kept.pop(i))  # the most recently used last
                    return value
            value = fn(self, s)
            kept.append((key, value))
            del kept[:-KEEP_COMPUTED]
            return value

        cached.__name__, cached.__qualname__, cached.__doc__ = (
            fn.__name__, fn.__qualname__, fn.__doc__)
        setattr(cached, _COMPUTED_ATTR, tuple(names))
        return cast(_F, cached)
    return mark


def _resolve(names: Sequence[str], computed_deps: Mapping[str, Sequence[str]],
             seen: frozenset[str] = frozenset()) -> frozenset[str]:
    """Setting names behind ``names``: computed methods expand to their own inputs."""
    out: set[str] = set()
    for n in names:
        if n in computed_deps:
            if n in seen:
                raise ValueError(f"computed value {n!r} depends on itself")
            out |= _resolve(computed_deps[n], computed_deps, seen | {n})
        else:
            out.add(n)
    return frozenset(out)


LEVER_ANSWERS = 4096
"""Answers of a part's checks kept for its recovery searches (:func:`remembered`)."""


def remembered(part: LabPart, check: Callable[[Settings], _T]) -> Callable[[Settings], _T]:
    """``check`` answering each settings once per part: a recovery search asks about every
    move from here (once per failing check, again for what a move breaks), and a slider
    moved back and forth asks about the same settings again. ``check`` must be a function
    of the settings alone (its part's track and options are fixed), as a search of
    hypothetical settings needs anyway. At most :data:`LEVER_ANSWERS` are kept."""
    answers: dict[object, Any] = part.__dict__.setdefault("_lever_answers", {})
    code = getattr(getattr(check, "__func__", check), "__code__", None) or check

    def ask(t: Settings) -> _T:
        try:
            key = (code, tuple(sorted(t.items())))
            hit = answers.get(key)
        except TypeError:  # a value that cannot be a key: asked afresh
            return check(t)
        if hit is None:
            if len(answers) >= LEVER_ANSWERS:
                answers.clear()
            hit = answers[key] = check(t)
        return hit

    return ask


def metric_cards(items: Sequence[tuple[str, str, str, str]]) -> str:
    """Metric cards: (label, value, note, colour)."""
    grey = lw.TEXT["grey"]
    cells = "".join(
        f"<div class='labkit-card' style='flex:1;min-width:150px;border:1px solid #d5d8dc;"
        f"border-top:4px solid {color};border-radius:4px;padding:6px 10px'>"
        f"<div style='font-size:0.75em;color:#5d6d7e;text-transform:uppercase'>{lw.esc(label)}"
        f"</div><div class='labkit-card-value' style='font-size:1.25em;font-weight:700'>"
        f"{lw.esc(value)}</div><div style='font-size:0.8em;color:{grey}'>{lw.esc(note)}</div>"
        f"</div>" for label, value, note, color in items)
    return f"<div style='display:flex;gap:8px;flex-wrap:wrap;margin:6px 0'>{cells}</div>"


def html_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """An HTML table; cells are trusted HTML built here."""
    head = "".join(f"<th style='text-align:left;padding:3px 8px;border-bottom:2px solid #aab7b8'>"
                   f"{lw.esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td style='padding:3px 8px;border-bottom:1px solid "
                                    f"#e5e8e8'>{c}</td>" for c in r) + "</tr>" for r in rows)
    return (f"<table class='labkit-table' style='border-collapse:collapse;font-size:0.9em'>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def pass_mark(flag: bool) -> str:
    """A green "pass" or red "fail" badge."""
    return (f"<span style='color:{lw.TEXT['green']};font-weight:700'>✔ pass</span>" if flag
            else f"<span style='color:{lw.TEXT['red']};font-weight:700'>✖ fail</span>")


def verdict_mark(predicted: object, actual: object) -> str:
    """A green "matches" or amber "differs" badge for a prediction against the answer."""
    return (f"<span style='color:{lw.TEXT['green']};font-weight:700'>✔ matches</span>"
            if predicted == actual
            else f"<span style='color:{lw.TEXT['amber']};font-weight:700'>✖ differs</span>")


@dataclass(frozen=True)
class Decision:
    """What a part asks the student to decide, judged at one setting of its controls.

    ``task``: the constraint the part teaches, in the track's words and with its limit
    (from model fields: "keep the inference energy within 8 mWh a day"); ``passed``: whether
    the plan at these settings meets it; ``standing``: where the plan stands, in words
    ("134 mWh a day"); ``start``: a sentence saying where the controls start when that is
    a candidate under review rather than the track's plan. At a track's defaults a part's
    plan fails its task and one control on screen, moved alone, passes it
    (``tests/labs/test_decisions.py``).
    """

    task: str
    passed: bool
    standing: str = ""
    start: str = ""

    def html(self) -> str:
        """The decision line above the part's controls (``start``: where the controls
        start, when that is not the track's plan)."""
        mark = pass_mark(self.passed)
        where = f" ({lw.esc(self.standing)})" if self.standing else ""
        todo = ("" if self.passed else
                " Move a control below until it passes.")
        start = f" {lw.esc(self.start)}" if self.start else ""
        return (f"<div class='labkit-decision' style='margin:4px 0 8px 0'><b>Your task:</b> "
                f"{lw.esc(self.task)}: {mark} at these settings{where}.{todo}{start}</div>")


def md_entry(q: lw.Question, e: AnswerEntry | None) -> str:
    """One committed answer as Markdown text (first answer, then any revision)."""
    if e is None:
        return "not committed"
    text = f"{q.label_for(e.first)} (committed {e.first_at})"
    if e.revised:
        text += f"; revised: {q.label_for(e.current)} ({e.current_at})"
    return text


def download_link(text: str, filename: str, mime: str, label: str) -> str:
    """An ``<a download>`` link carrying ``text`` as a base64 data URL."""
    b64 = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return (f"<a download='{lw.esc(filename)}' href='data:{mime};charset=utf-8;base64,{b64}' "
            f"target='_blank' class='labkit-download' style='color:#1f6fb2;"
            f"text-decoration:underline;font-weight:600'>{lw.esc(label)}</a>")


def screen(controls: Mapping[str, ipw.ValueWidget], shown: Sequence[str],
           figure_rows: Sequence[ipw.Widget]) -> tuple[ipw.Widget, ipw.Widget]:
    """(controls, charts) boxes: the ``shown`` controls open and the rest in a collapsed
    :class:`~labkit.ui.More`; figure rows open while their charts fit :data:`OPEN_CHARTS`
    (a row stays whole), the rest in a second "More"."""
    rest = [n for n in controls if n not in shown]
    boxes: list[ipw.Widget] = [controls[n] for n in shown]
    if rest:
        boxes.append(lw.More("controls", [str(controls[n].description) for n in rest],
                             [controls[n] for n in rest]))
    rows: list[ipw.Widget] = []
    more: list[ipw.Widget] = []
    names: list[str] = []
    count = 0
    for row in figure_rows:
        figs = lw.figures_in(row)
        if more or (rows and count + len(figs) > OPEN_CHARTS):
            more.append(lw.frame_figures(row))
            names += [lw.figure_name(f) for f in figs]
        else:
            rows.append(lw.frame_figures(row))
            count += len(figs)
    if more:
        rows.append(lw.More("charts", names, more))
    box, charts = ipw.VBox(boxes), ipw.VBox(rows)
    box.add_class("labkit-controls")
    charts.add_class("labkit-charts")
    return box, charts


class LabPart(PartViews):
    """One lab part. ``lab`` must provide ``track``, ``store`` and ``gate_explore``.

    Class attributes set by each lab: ``lab_id`` (answer-store namespace), ``titles`` and
    ``minutes`` (per part letter) and ``kicker`` (text before "Part X" in the banner).
    ``refresh_steps`` (derived from the :func:`depends_on` marks) maps each refresh step
    to the settings it reads; a control change runs the steps that read it.
    """

    letter = ""
    lab_id: ClassVar[str] = ""
    titles: ClassVar[Mapping[str, str]] = {}
    minutes: ClassVar[Mapping[str, str]] = {}
    kicker: ClassVar[str] = ""
    refresh_steps: ClassVar[Mapping[str, frozenset[str]]] = {"_refresh": frozenset({ALL})}
    primary: tuple[str, ...] = ()
    """The controls a part opens with (those present on the track, then the first ones
    made), at most :data:`OPEN_CONTROLS`; the rest sit in a "More controls" disclosure."""
    start: Mapping[str, object] = {}
    """The settings a candidate under review starts the controls at (:meth:`_start_at`)."""
    start_note: str = ""
    plan: Mapping[str, object] = {}
    """The track's own values of the controls :meth:`_start_at` moved."""
    shows: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(glossary name, results key) of each model quantity this part shows (:meth:`shown`)."""
    _computed_inputs: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        comp: dict[str, tuple[str, ...]] = {}
        raw: dict[str, tuple[str, ...]] = {}
        for klass in reversed(cls.__mro__):
            for name, attr in vars(klass).items():
                if hasattr(attr, _COMPUTED_ATTR):
                    comp[name] = getattr(attr, _COMPUTED_ATTR)
                if hasattr(attr, _DEPS_ATTR):
                    raw[name] = getattr(attr, _DEPS_ATTR)
        cls._computed_inputs = {k: tuple(sorted(_resolve(v, comp))) for k, v in comp.items()}
        cls.refresh_steps = ({k: _resolve(v, comp) for k, v in raw.items()} if raw
                             else {"_refresh": frozenset({ALL})})

    def __init__(self, lab: LabLike) -> None:
        self.lab = lab
        self.headless = bool(getattr(lab, "headless", False))
        """A headless part (:mod:`labkit.core.headless`) builds no views: its charts are
        :class:`~labkit.ui.Sink` s, its callouts and HTML boxes plain text holders, and its
        model is computed once, when a reveal, a summary or the report first needs it."""
        with lw.building(self.headless):
            self._build(lab)

    def _build(self, lab: LabLike) -> None:
        self.track: Track = lab.track
        self.title = self.titles[self.letter]
        self.controls: dict[str, ipw.ValueWidget] = {}
        self.figures: dict[str, bq.Figure] = {}
        self.callouts: dict[str, lw.Callout | lw.TextCallout] = {}
        self._results: dict[str, Any] = {}
        self._stale = False
        self._computed: dict[str, list[tuple[tuple[object, ...], Any]]] = {}
        self.last_steps: tuple[str, ...] = ()
        self.readout = self._html_box("labkit-readout")
        self.decision_line = self._html_box()
        self.details = self._html_box()
        self._reveal_html = self._html_box("labkit-reveal")
        self._math: lw.MathPeek | lw.TextMath = (
            lw.TextMath(f"Math peek: {self.title}") if self.headless
            else lw.MathPeek(f"Math peek: {self.title}"))
        self._expected: str = ""
        self._init_context()
        self._setup()
        self._build_questions(lab)
        self._reveal_view: ipw.Widget | None = None
        self._explore_view: ipw.Widget | None = None
        if not self.headless:
            self._build_views(lab)
        self._control_names = {id(ctl): name for name, ctl in self.controls.items()}
        self._settings = SettingsStore.beside(lab.store)
        self._restore_settings()
        for ctl in self.controls.values():
            ctl.observe(self._on_change, names="value")
        self.predict.on_commit(lambda _entry: self._render_reveal())
        if self.headless:
            self._stale = True  # computed on demand (:meth:`_ensure_model`)
        else:
            self.update()

    def open_controls(self) -> list[str]:
        """The names of the controls shown open (:attr:`primary` first, in order)."""
        names = [n for n in self.primary if n in self.controls]
        names += [n for n in self.controls if n not in names]
        return names[:OPEN_CONTROLS]

    def _screen(self) -> tuple[ipw.Widget, ipw.Widget]:
        """(controls, charts): at most :data:`OPEN_CONTROLS` controls and
        :data:`OPEN_CHARTS` charts open, the rest in a collapsed :class:`~labkit.ui.More`."""
        return screen(self.controls, self.open_controls(), self._figure_rows())

    # -- hooks -----------------------------------------------------------------------------
    def _init_context(self) -> None:
        """Attributes every part of a lab needs before ``_setup`` (default: none)."""

    def _setup(self) -> None:
        raise NotImplementedError

    def _hook(self) -> str:
        raise NotImplementedError

    def _prediction_spec(self) -> Spec:
        raise NotImplementedError

    def _checkpoint_spec(self) -> CheckSpec:
        raise NotImplementedError

    def _refresh(self, s: Settings) -> None:
        """The single refresh step of a part that declares none with :func:`depends_on`."""
        raise NotImplementedError

    def _reveal_body(self) -> str:
        raise NotImplementedError

    def _state_extra(self) -> dict[str, object]:
        return {}

    def _decision(self, s: Settings) -> Decision | None:
        """The part's task judged at settings ``s`` (None: the part states none)."""
        return None

    def _figure_rows(self) -> list[ipw.Widget]:
        return list(self.figures.values())

    def _start_at(self, start: Mapping[str, object], note: str) -> None:
        """Start the controls at a candidate under review, not the track's plan (``note``,
        the sentence saying so, joins the decision line and is the basis of what the part
        shows while the controls are still there)."""
        self.start, self.start_note = dict(start), note
        self.plan = {k: c.value for k, c in self.controls.items() if k in start}
        for name, ctl in self.controls.items():
            if name in start:
                ctl.value = start[name]

    def to_plan(self) -> None:
        """Move the controls a starting candidate set back to the track's own plan."""
        for name, value in self.plan.items():
            self.controls[name].value = value

    def shown_basis(self, name: str) -> str:
        """The words on screen that say on what basis this part shows quantity ``name``
        when it is not the deployment model's at the same settings (default: the starting
        candidate's sentence while the controls are at it)."""
        here = self.settings()
        at_start = all(here[k] == v for k, v in self.start.items() if k in here)
        return self.start_note if self.start_note and at_start else ""

    def shown(self) -> Mapping[str, Quantity]:
        """The deployment model's quantities this part shows at its current settings, by
        glossary name (:data:`labkit.plans.deployment.GLOSSARY`), read from the results it
        renders (:attr:`shows`): what the cross-lab table compares."""
        out: dict[str, Quantity] = {}
        for name, key in self.shows:
            value = self.results.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                unit = GLOSSARY[name].unit.replace("cost unit", self.track.cost_unit)
                out[name] = Quantity(name, float(value), unit, self.shown_basis(name))
        return out

    def _self_check(self, what: str) -> lw.Check:
        """The notebook's completion self-check for this part's ``what``, as the widget
        re-runs it after every commit (``expect_committed``, the check cell's own)."""
        letter = self.letter

        def check(q: lw.Question) -> str:
            expect_committed(q, letter, what)
            return (f"your {what} is committed and saved in labkit_answers.json; the Part "
                    f"{letter} check cell below passes when you run it")
        return check

    # -- public ----------------------------------------------------------------------------
    @property
    def expected(self) -> str:
        """The prediction's computed answer at the track's default settings."""
        return str(self._expected)

    def settings(self) -> dict[str, object]:
        return {name: plain(ctl.value) for name, ctl in self.controls.items()}

    def decision(self, s: Settings | None = None) -> Decision | None:
        """The part's task judged at settings ``s`` (default: the controls' values); a pure
        function of the settings, so a sweep can try a move without touching a control."""
        d = self._decision(self.settings() if s is None else s)
        return replace(d, start=self.start_note) if d and self.start_note and not d.start else d

    def update(self) -> None:
        """Recompute everything from the current control values and redraw: every refresh
        step, with no shared value or remembered check reused (construction and tests;
        controls run only the steps that depend on them)."""
        self._stale = False
        self._computed.clear()
        self.__dict__.pop("_lever_answers", None)  # what remembered() kept, too
        self._run_steps(None)

    def banner(self) -> Any:
        """The part's banner (headless: its title, as text)."""
        if self.headless:
            return lw.TextView(f"Part {self.letter}: {self.title}")
        tr = self.track
        return ipw.HTML(
            f"<div class='labkit-banner' style='border-left:6px solid #1f6fb2;padding:6px 12px;"
            f"margin:12px 0 6px 0;background:#f4f8fb'>"
            f"<div style='font-size:0.8em;color:#5d6d7e'>{lw.esc(tr.label)} · {self.kicker}Part "
            f"{self.letter} · {self.minutes[self.letter]}</div>"
            f"<div style='font-size:1.3em;font-weight:700'>Part {self.letter}: "
            f"{lw.esc(self.title)}</div>"
            f"<div style='margin-top:4px'>{lw.esc(self._hook())}</div></div>")

    def state(self) -> dict[str, object]:
        """JSON-serialisable snapshot: settings, answers, computed answer and results."""
        return part_state(self)

    # -- internals -------------------------------------------------------------------------
    def _on_change(self, change: Mapping[str, Any]) -> None:
        name = self._control_names.get(id(change["owner"]))
        if not self._stale:  # a headless part not computed yet computes on demand
            self._run_steps(None if name is None else frozenset({name}))
        with contextlib.suppress(OSError):  # a read-only folder: the lab still works
            self._settings.put(self.lab_id, self._scope, self.settings())

    @property
    def _scope(self) -> str:
        return f"{self.track.id}.{self.letter}"

    def _restore_settings(self) -> None:
        """Set each control to its saved value (``labkit_settings.json``), where that value
        is still one the control offers; anything else keeps the default."""
        for name, value in self._settings.get(self.lab_id, self._scope).items():
            ctl = self.controls.get(name)
            if ctl is None or ctl.disabled or not _offers(ctl, value):
                continue
            with contextlib.suppress(TraitError, ValueError, TypeError):
                ctl.value = value

    def _run_steps(self, changed: frozenset[str] | None) -> None:
        """Run the refresh steps reading any of ``changed`` (None: all), then the reveal."""
        s = self.settings()
        ran = []
        for step, deps in self.refresh_steps.items():
            if self.headless and step.startswith(VIEW_STEPS):
                continue  # nobody sees its charts, callouts or formulas
            if changed is None or ALL in deps or not deps.isdisjoint(changed):
                getattr(self, step)(s)
                ran.append(step)
        self.last_steps = tuple(ran)
        d = self.decision(s)
        line = "" if d is None else d.html()
        if line != self.decision_line.value:
            self.decision_line.value = line
        self._render_reveal()

    def _computed_key(self, name: str, s: Settings) -> tuple[object, ...]:
        inputs = self._computed_inputs[name]
        if ALL in inputs:
            return tuple(s.items())
        return tuple(s.get(n) for n in inputs)

    def _render_reveal(self) -> None:
        if self._stale:  # headless, not computed yet: rendered when it is
            return
        value = self._reveal_body() if self.predict.committed else ""
        if value != self._reveal_html.value:
            self._reveal_html.value = value

    def _prediction_line(self) -> str:
        return prediction_line(self.predict, self.expected)

    def _set_details(self, html: str) -> None:
        if html != self.details.value:
            self.details.value = html

    def _set_readout(self, html: str) -> None:
        if html != self.readout.value:
            self.readout.value = html

    def option_label(self, control: str, value: object) -> str:
        """What the student reads for ``value`` of a choice control (never its id)."""
        for option in getattr(self.controls[control], "options", ()):
            if isinstance(option, tuple) and option[1] == value:
                return str(option[0])
        return str(value)


def part_state(part: LabPart) -> dict[str, object]:
    """A part's JSON-serialisable snapshot: settings, answers, computed answer, results."""
    pe, ce = part.predict.entry, part.checkpoint.entry
    return plain_dict({
        "part": part.letter, "title": part.title, "track": part.track.id,
        **part._state_extra(), "settings": part.settings(),
        "prediction": {
            "key": part.predict.key, "question": part.predict.question,
            "entry": None if pe is None else pe.to_dict(), "expected": part.expected,
            "first_correct": None if pe is None else pe.first == part.expected,
            "current_correct": None if pe is None else pe.current == part.expected,
        },
        "checkpoint": {
            "key": part.checkpoint.key, "entry": None if ce is None else ce.to_dict(),
            "expected": part.checkpoint_expected,
            "current_correct": None if ce is None else ce.current == part.checkpoint_expected,
        },
        "results": part.results,
    })


def prediction_line(predict: lw.Prediction, expected: str) -> str:
    """"You predicted X ✔ matches" (and any revision) for a committed prediction."""
    e = predict.entry
    assert e is not None
    first = predict.label_for(e.first)
    line = f"You predicted <b>{lw.esc(first)}</b> {verdict_mark(e.first, expected)}"
    if e.revised:
        line += (f"; revised to <b>{lw.esc(predict.label_for(e.current))}</b> "
                 f"{verdict_mark(e.current, expected)}")
    return line


def _offers(ctl: ipw.ValueWidget, value: object) -> bool:
    """Whether ``value`` is one the control can take: one of its options, or within its
    range (a type it holds)."""
    options = getattr(ctl, "options", None)
    if options is not None:
        values = [o[1] if isinstance(o, tuple) else o for o in options]
        return any(value == v and type(value) is type(v) for v in values)
    if isinstance(value, bool | str):
        return type(ctl.value) is type(value)
    lo, hi = getattr(ctl, "min", None), getattr(ctl, "max", None)
    if lw.control_kind(ctl) == "log":  # min and max are exponents of its base
        lo, hi = ctl.base ** ctl.min, ctl.base ** ctl.max
    slack = 1e-9 * max(abs(lo or 0), abs(hi or 0))  # a log slider's ends: base ** exponent
    return (lo is not None and hi is not None and isinstance(value, int | float)
            and lo - slack <= value <= hi + slack)
