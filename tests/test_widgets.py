"""Widget components: commit locks, gates, revisions beside the first answer, restore-from-file;
the ``labkit.ui`` layout (one namespace over html / questions / charts / controls)."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import bqplot as bq
import ipywidgets as ipw
import numpy as np
import pytest

from labkit import ui as lw
from labkit.core import format as core_format
from labkit.core.answers import AnswerStore
from labkit.ui import (
    boxes,
    callouts,
    chart_header,
    charts,
    controls,
    headless,
    html,
    keyguard,
    questions,
)

UI_DIR = Path(lw.__file__).parent

OPTS = [("Days", "days"), ("Weeks", "weeks"), ("Months", "months")]


@pytest.fixture
def store(tmp_path):
    return AnswerStore(tmp_path / "answers.json")


def make(store, cls=lw.Prediction, **kw):
    return cls("lab1", "t.A.prediction", "When?", OPTS, store, **kw)


# -- prediction -----------------------------------------------------------------------------

def test_fresh_prediction_is_uncommitted_and_cannot_commit_without_a_choice(store):
    p = make(store)
    assert not p.committed and p.entry is None and p.value is None
    assert not p.locked and p.commit_button.disabled
    refused = p.commit()  # nothing raises: the refusal is the cell's output and on the widget
    assert isinstance(refused, lw.Refusal) and not refused and "no answer is chosen" in str(refused)
    assert "Not committed" in p.check_html.value and not p.committed
    assert not store.path.exists()


def test_commit_locks_the_choice_and_writes_the_store(store):
    p = make(store)
    p.choice.value = "weeks"
    assert not p.commit_button.disabled
    p.commit_button.click()  # the student's click
    assert p.committed and p.locked and p.choice.disabled
    assert p.value == "weeks" and p.entry.first == "weeks"
    assert p.commit_button.layout.display == "none"
    assert p.revise_button.layout.display is None
    assert "committed" in p.status.value and "Weeks" in p.status.value
    assert store.get("lab1", "t.A.prediction").current == "weeks"
    locked = p.commit("days")
    assert isinstance(locked, lw.Refusal) and "locked" in locked.message
    assert store.get("lab1", "t.A.prediction").current == "weeks"
    assert p.commit("weeks").current == "weeks"  # re-committing the same answer is a no-op


def test_gate_hides_dependent_content_before_commit_and_shows_it_after(store):
    p = make(store)
    content = ipw.HTML("the answer is weeks")
    gate = p.reveal_gate(content)
    assert not gate.revealed
    assert content not in gate.children and gate.placeholder in gate.children
    p.commit("weeks")
    assert gate.revealed and content in gate.children and gate.placeholder not in gate.children
    late = p.reveal_gate(ipw.HTML("late"))  # a gate made after the commit opens at once
    assert late.revealed


def test_revise_records_the_change_beside_the_first(store):
    p = make(store)
    p.commit("weeks")
    p.revise_button.click()
    assert not p.locked and p.commit_button.description == "Record revised answer"
    p.choice.value = "months"
    p.commit_button.click()
    e = p.entry
    assert e.first == "weeks" and e.current == "months" and len(e.changes) == 1
    assert p.locked and p.value == "months"
    assert "first:" in p.status.value and "Weeks" in p.status.value
    assert "revised:" in p.status.value and "Months" in p.status.value
    assert store.get("lab1", "t.A.prediction").first == "weeks"


def test_revise_to_the_same_answer_records_nothing(store):
    p = make(store)
    p.commit("weeks")
    p.revise()
    entry = p.commit("weeks")
    assert entry.changes == () and p.locked


def test_on_commit_callbacks_receive_the_entry(store):
    p = make(store)
    seen = []
    p.on_commit(seen.append)
    p.commit("days")
    p.revise()
    p.commit("weeks")
    assert [e.current for e in seen] == ["days", "weeks"]


def test_restore_from_store_on_construction_comes_back_committed_and_locked(store):
    p = make(store)
    p.commit("weeks")
    p.revise()
    p.commit("days")
    # autograde / re-opened notebook: fresh widgets, same file
    q = make(AnswerStore(store.path))
    assert q.committed and q.locked and q.choice.disabled
    assert q.choice.value == "days" and q.value == "days"
    assert q.entry.first == "weeks"
    assert "first:" in q.status.value and "revised:" in q.status.value
    assert q.reveal_gate(ipw.HTML("x")).revealed
    assert q.commit_button.layout.display == "none"


def test_restore_keeps_an_answer_that_is_no_longer_an_option(store):
    store.record("lab1", "t.A.prediction", "fortnights")
    p = make(store)
    assert p.committed and p.value == "fortnights" and p.choice.value is None
    assert "fortnights" in p.status.value


def test_numeric_prediction_with_bounds(store):
    p = lw.Prediction("lab1", "t.num", "How many?", None, store, bounds=(0, 100), unit="days")
    assert "outside" in str(p.commit(150)) and "not a number" in str(p.commit("many"))
    assert not p.committed
    p.commit(42)
    assert p.entry.first == 42.0 and p.label_for(42.0) == "42 days"
    with pytest.raises(ValueError):
        lw.Prediction("lab1", "t.bad", "?", None, store)


def test_bad_options_are_rejected(store):
    with pytest.raises(ValueError):
        lw.Prediction("lab1", "k", "?", ["only one"], store)
    with pytest.raises(ValueError):
        lw.Prediction("lab1", "k", "?", ["a", "a"], store)
    p = lw.Prediction("lab1", "k", "?", ["a", "b"], store)
    assert "not one of the choices (a, b)" in str(p.commit("c")) and not p.committed


def test_options_are_answer_values_and_choices_carry_labels(store):
    p = make(store)
    assert p.options == ["days", "weeks", "months"]
    assert p.choices == OPTS
    p.commit(p.options[0])  # what a notebook's solution cell does
    assert p.entry.first == "days" and p.label_for("days") == "Days"
    plain = lw.Checkpoint("lab1", "k2", "?", ["x", "y"], store)
    assert plain.options == ["x", "y"] and plain.choices == [("x", "x"), ("y", "y")]


def test_prediction_displays_itself(store):
    p = make(store)
    bundle = p._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == p.widget.model_id
    assert isinstance(p.widget, ipw.DOMWidget)


def test_checkpoint_has_the_same_mechanics_and_shows_feedback(store):
    c = lw.Checkpoint("lab1", "t.A.checkpoint", "Why?", OPTS, store,
                      feedback={"weeks": "Right!", "days": "Not quite."})
    assert not hasattr(c, "reveal_gate")
    c.commit("days")
    assert c.locked and "Not quite." in c.feedback_html.value
    c.revise()
    c.commit("weeks")
    assert c.entry.first == "days" and "Right!" in c.feedback_html.value
    again = lw.Checkpoint("lab1", "t.A.checkpoint", "Why?", OPTS, AnswerStore(store.path))
    assert again.committed and again.locked and again.value == "weeks"


# -- callouts and math peek -----------------------------------------------------------------

def test_callout_show_and_clear():
    c = lw.Callout("danger")
    assert not c.active and c.layout.display == "none" and c.value == ""
    c.show("Out of memory", "weights 141 GB > 80 GB", "lower the precision")
    assert c.active and c.layout.display is None
    assert "Out of memory" in c.value and "Recovery" in c.value and "FAILURE" in c.value
    c.clear()
    assert not c.active and c.value == "" and c.layout.display == "none"
    c.set(True, "t")
    assert c.active
    c.set(False)
    assert not c.active


def test_failure_and_boundary_callouts_look_different():
    bad, good = lw.Callout("danger"), lw.Callout("success")
    bad.show("Over budget", "x")
    good.show("Within budget", "x")
    assert "FAILURE" in bad.value and "FAILURE" not in good.value
    assert "BOUNDARY TO WATCH" in good.value
    assert "labkit-callout-danger" in bad._dom_classes
    assert "labkit-callout-success" in good._dom_classes
    with pytest.raises(ValueError):
        lw.Callout("panic")


def test_math_peek_sends_its_formulas_only_while_open():
    m = lw.MathPeek("Math peek", "$$x = 1$$")
    assert isinstance(m, ipw.Accordion) and isinstance(m.children[0], ipw.HTMLMath)
    assert not m.is_open and m.children[0].value == ""      # collapsed: nothing to typeset
    m.update("$$x = 2$$")
    assert m.body == "$$x = 2$$" and m.children[0].value == ""
    m.selected_index = 0                                      # the student opens it
    assert m.children[0].value == "$$x = 2$$"
    m.update("$$x = 3$$")                                     # open: live
    assert m.children[0].value == "$$x = 3$$"
    m.selected_index = None
    m.update("$$x = 4$$")                                     # closed again: kept, not sent
    assert m.body == "$$x = 4$$" and m.children[0].value == "$$x = 3$$"
    m.selected_index = 0
    assert m.children[0].value == "$$x = 4$$"


# -- charts ---------------------------------------------------------------------------------

def test_figure_helpers_label_axes_and_update_marks_in_one_block():
    xs, ys = lw.make_scale("log", 0.1, 365), lw.make_scale("linear", 0, 10)
    line = lw.line_mark([1, 2, 3], [1, 2, 3], xs, ys)
    v = lw.vline_mark(2.0, xs)
    h = lw.hline_mark(5.0, ys)
    bars = lw.bar_mark(["a", "b"], [1, 2], lw.make_scale("ordinal"), ys)
    fig = lw.figure([line, v, h], xs, ys, x_label="days", y_label="cost (USD)")
    assert isinstance(fig, bq.Figure)
    assert [a.label for a in fig.axes] == ["days", "cost (USD)"]
    assert (xs.min, xs.max) == (0.1, 365.0)
    lw.update_marks({line: {"y": np.array([3.0, 2.0, 1.0])}, bars: {"y": [2, 1]}})
    assert list(line.y) == [3.0, 2.0, 1.0] and list(bars.y) == [2, 1]
    lw.set_vline(v, 7.0)
    assert list(v.x) == [7.0, 7.0] and v.visible
    lw.set_vline(v, None)
    assert not v.visible
    lw.set_hline(h, 6.0)
    assert list(h.y) == [6.0, 6.0]
    lw.set_domain(ys, 0, 20)
    assert ys.max == 20.0


def test_update_marks_skips_unchanged_values():
    ys = lw.make_scale("linear", 0, 1)
    line = lw.line_mark([0, 1], [0, 1], lw.make_scale("linear"), ys)
    sent = []
    line.observe(lambda ch: sent.append(ch["name"]), names=["y", "x"])
    lw.update_marks({line: {"x": np.array([0.0, 1.0]), "y": np.array([0.0, 2.0])}})
    assert sent == ["y"]


# -- controls -------------------------------------------------------------------------------

def test_precision_control_offers_only_valid_bit_widths():
    c = lw.precision_control("Weights", 16, (4, 8, 16))
    assert [v for _, v in c.options] == [4, 8, 16] and c.value == 16
    with pytest.raises(ValueError):
        lw.precision_control("Weights", 16, (3, 16))
    with pytest.raises(ValueError):
        lw.precision_control("Weights", 32, (4, 8))


def test_devices_and_int_controls_keep_invalid_values_out():
    d = lw.devices_control(4, 8)
    assert (d.min, d.max, d.value) == (1, 8, 4)
    d.value = 0
    assert d.value == 1  # the slider clamps: zero devices are unreachable
    assert lw.devices_control(1, 0).max == 1
    assert lw.int_control("x", 99, 1, 10).value == 10


def test_context_control_stays_within_max_context():
    opts = lw.context_options(131072, 4096, 256)
    assert opts[0] == 256 and opts[-1] == 131072 and 4096 in opts
    assert lw.context_options(8192, 1280, 256).count(1280) == 1
    c = lw.context_control(1280, 8192)
    assert max(v for _, v in c.options) == 8192 and c.value == 1280
    with pytest.raises(ValueError):
        lw.context_options(4096, 8192)
    assert lw.format_tokens(4096) == "4k" and lw.format_tokens(512) == "512"


def test_log_and_choice_controls():
    c = lw.log_control("rate", 1.85, 0.185, 18.5)
    assert c.value == pytest.approx(1.85)
    assert 10 ** c.min == pytest.approx(0.185) and 10 ** c.max == pytest.approx(18.5)
    with pytest.raises(ValueError):
        lw.log_control("rate", 1, 0, 1)
    d = lw.choice_control("policy", [("None", "none"), ("Static", "static")], "static")
    t = lw.choice_control("policy", [("None", "none"), ("Static", "static")], "none", "toggle")
    assert isinstance(d, ipw.Dropdown) and isinstance(t, ipw.ToggleButtons)
    assert lw.float_control("s", 0.0, 0.0, 50.0, 5.0).max == 50.0


def test_nice_up_snaps_an_axis_end_to_few_values():
    assert lw.nice_up(7.3) == 8.0 and lw.nice_up(8.0) == 8.0 and lw.nice_up(8.01) == 10.0
    assert lw.nice_up(0.0031) == pytest.approx(0.004) and lw.nice_up(1234.0) == 1500.0
    assert lw.nice_up(0.0) == 0.0  # nothing to snap
    # a sweep of 1,000 tops in one decade lands on 9 values: axes rarely move with a slider
    tops = {lw.nice_up(x) for x in np.linspace(1.0, 10.0, 1000)}
    assert len(tops) == 9 and all(t >= 1.0 for t in tops)


def test_log_domain_and_lin_top_size_scales_from_data():
    assert lw.log_domain([1.0, 10.0], pad=2.0) == (0.5, 20.0)
    assert lw.log_domain([0.0, -1.0, float("nan")]) == (1e-3, 1.0)  # nothing positive
    assert lw.log_domain([5.0, 5.0], pad=1.0) == (0.5, 50.0)  # one value: a decade each way
    assert lw.lin_top([1.0, 8.0], pad=1.25) == 10.0 and lw.lin_top([], floor=3.0) == 3.0


# -- layout: one namespace over focused modules ---------------------------------------------

HOMES = {
    keyguard: ("KeyGuard",),
    headless: ("LIVE", "Sink", "TextBox", "TextCallout", "TextChoice", "TextMath", "TextView",
               "building",
               "plain_text"),
    html: ("esc", "PALETTE", "SERIES", "TEXT", "CALLOUT_KINDS"),
    callouts: ("callout",),
    boxes: ("Callout", "MathPeek", "RevealGate", "More"),
    chart_header: ("ChartHeader",),
    questions: ("Question", "Prediction", "Checkpoint", "Options", "Check", "Refusal",
                "credit_text"),
    charts: ("make_scale", "set_domain", "figure", "line_mark", "bar_mark", "scatter_mark",
             "vline_mark", "vlines_mark", "hline_mark", "update_marks", "set_vline",
             "set_hline", "log_domain", "lin_top", "nice_up", "framed",
             "frame_figures", "log_ticks", "tick_labels", "LOG_TICK_FORMAT", "MAX_LOG_TICKS",
             "figures_in", "figure_name", "tooltip"),
    controls: ("precision_control", "int_control", "devices_control", "float_control",
               "log_control", "selection_control", "choice_control", "context_control",
               "DESC_STYLE", "toggle_buttons", "toggle_width", "control_kind"),
}


def test_the_ui_namespace_re_exports_each_module_s_own_objects():
    exported = set(lw.__all__)
    for module, names in HOMES.items():
        for name in names:
            assert getattr(lw, name) is getattr(module, name), name
            assert name in exported, name
    homed = {n for names in HOMES.values() for n in names}
    assert exported - homed == {"PRECISIONS", "context_options", "format_tokens"}
    assert all(hasattr(lw, n) for n in exported)
    assert lw.format_tokens is core_format.fmt_tokens  # one token formatter, in core.format
    assert issubclass(lw.Prediction, lw.Question) and issubclass(lw.Checkpoint, lw.Question)
    assert not hasattr(lw, "_Question")


def test_the_old_widgets_module_is_gone_and_its_alias_reads_the_namespace(monkeypatch):
    assert not (UI_DIR / "widgets.py").exists()
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("labkit.ui.widgets")
    monkeypatch.delitem(sys.modules, "labkit.widgets", raising=False)  # import it afresh
    with pytest.warns(DeprecationWarning, match="labkit.widgets is deprecated; import labkit.ui"):
        old = importlib.import_module("labkit.widgets")  # pre-0.2 gradebooks import this
    assert old.Prediction is lw.Prediction and old.figure is lw.figure
    assert old.format_tokens(4096) == "4k"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


@pytest.mark.parametrize("path", sorted(UI_DIR.glob("*.py")), ids=lambda p: p.name)
def test_ui_modules_import_only_core_and_ui(path):
    labkit_imports = {m for m in _imports(path) if m == "labkit" or m.startswith("labkit.")}
    assert all(m.startswith(("labkit.core", "labkit.ui")) for m in labkit_imports), \
        labkit_imports


# -- feedback while working: formats, toggles ---------------------------------------------

@pytest.mark.parametrize(("spec", "x", "d3"), [
    (".3~s", 2000, "2k"), (".3~s", 0.25, "250m"), (".3~s", 12.5e9, "12.5G"), (".3~s", 0, "0"),
    (".2~e", 1500, "1.5e+3"), (".2~e", 100, "1e+2"), (".2~g", 100, "1e+2"),
    (".3~g", 1e-7, "1e-7"), (".3~g", 0.0001, "0.0001"), (".0f", 0.2, "0"), ("d", 2.5, "3"),
    (".0%", 0.25, "25%"), (",.0f", 1234567, "1,234,567"), (".2~g", -0.5, "−0.5"),
])
def test_d3_format_labels_ticks_as_the_browser_does(spec, x, d3):
    assert core_format.d3_format(spec, x) == d3  # values read off d3-format 3 in a browser
    with pytest.raises(ValueError, match="spec"):
        core_format.d3_format("$.2f", 1.0)


def test_toggle_buttons_are_as_wide_as_their_longest_label():
    labels = ["one SoC", "two SoCs: split the cameras", "two SoCs: split the model"]
    t = lw.choice_control("Layout", [(lab, i) for i, lab in enumerate(labels)], 0, "toggle")
    assert [controls.fitted_label(lab, t.style.button_width) for lab in labels] == labels
    # at ipywidgets' default 148 px the two splits read the same: the bug this prevents
    assert controls.fitted_label(labels[1], "") == controls.fitted_label(labels[2], "") \
        == "two SoCs: split…"
    assert lw.precision_control("Weights", 16).style.button_width == lw.toggle_width(["16-bit"])


def test_every_question_carries_its_keyboard_guard(tmp_path):
    """Each prediction and checkpoint box holds one KeyGuard (the browser side keeps arrow
    keys on the choice and focus in the box after Commit: tests/browser's keyboard test)."""
    from labkit.core.answers import AnswerStore
    from labkit.ui.keyguard import QUESTION_CLASS, KeyGuard

    for kind in (lw.Prediction, lw.Checkpoint):
        q = kind("lab1", "k", "Q?", [("a", "a"), ("b", "b")], AnswerStore(tmp_path / "a.json"))
        assert QUESTION_CLASS in q.widget._dom_classes
        assert sum(isinstance(c, KeyGuard) for c in q.widget.children) == 1
        assert "data-lm-suppress-shortcuts" in KeyGuard._esm and QUESTION_CLASS in KeyGuard._esm


@pytest.mark.parametrize(("lo", "hi", "labels"), [
    (0.1, 1000.0, ["0.1", "1", "10", "100", "1,000"]),
    (1.0, 1e5, ["1", "10", "100", "1,000", "10,000", "100,000"]),
    (1e7, 1e9, ["10M", "20M", "50M", "100M", "200M", "500M", "1G"]),
])
def test_a_log_axis_with_no_format_writes_plain_numbers_where_it_can(lo, hi, labels):
    """No named format: plain numbers from 0.001 to 999,999 (a ratio of 0.1 is "0.1", not
    "100m"), SI prefixes beyond (10M, 1G); never e-notation."""
    from labkit.ui.charts import default_log_format

    ys = lw.make_scale("log", lo, hi)
    fig = lw.figure([lw.line_mark([1.0, 2.0], [lo, hi], lw.make_scale("linear"), ys)],
                    lw.make_scale("linear"), ys, x_label="x", y_label="y (log)")
    axis = next(a for a in fig.axes if a.orientation == "vertical")
    assert lw.tick_labels(axis) == labels
    assert default_log_format([1e-4, 1.0]) == lw.LOG_TICK_FORMAT   # 100µ: the range needs SI
