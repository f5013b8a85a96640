"""Feedback while working: a commit re-runs its self-check (a green tick), a bad answer from a
student's cell is one short message (no traceback through labkit), the widget says what a
commit is worth; every chart of every part and track has its title and legend outside the
data, log axes with distinct labels clear of each other, a layout that fits a 1400 px page,
and toggle buttons whose labels are never cut."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import bqplot as bq
import ipywidgets as ipw
import numpy as np
import pytest

from labkit import ui as lw
from labkit.core.answers import AnswerStore
from labkit.core.format import d3_format
from labkit.grading import expect_committed
from labkit.labs.common import CHECKPOINT_POINTS, PREDICTION_POINTS
from labkit.ui.controls import TOGGLE_DEFAULT_PX, fitted_label

SCAFFOLD = Path(__file__).resolve().parents[2] / "src" / "labkit" / "course" / "scaffold.py"
CONTENT_PX = 1000       # a notebook cell's output at a 1400 px page (side bar and prompt off)
TICK_CHAR_PX = 6.5      # bqplot's tick labels (11 px sans-serif)
TICK_LINE_PX = 13


# -- walking a part's widgets ---------------------------------------------------------------

def _children(w: ipw.Widget) -> list[ipw.Widget]:
    if isinstance(w, lw.RevealGate):
        return [w.content]
    return list(getattr(w, "children", ()))


def _rows(part) -> list[ipw.Widget]:
    """The widgets stacked in the part's explore body (controls box, readout, ..., rows)."""
    body = _children(part.explore)[0]
    body = _children(body)[0] if isinstance(body, lw.RevealGate) else body
    out: list[ipw.Widget] = []
    for w in body.children:   # the charts box and a "More charts" disclosure hold rows
        if "labkit-charts" in w._dom_classes:
            for row in w.children:
                out += (list(row.children[0].children) if isinstance(row, lw.More)
                        else [row])
        else:
            out.append(w)
    return out


def _figures_in(w: ipw.Widget) -> list[bq.Figure]:
    if isinstance(w, bq.Figure):
        return [w]
    return [f for c in _children(w) for f in _figures_in(c)]


def _contains(w: ipw.Widget, target: ipw.Widget) -> bool:
    return w is target or any(_contains(c, target) for c in _children(w))


def _px(value: str | None, default: float = 0.0) -> float:
    return float(value[:-2]) if value and value.endswith("px") else default


# -- the checks -----------------------------------------------------------------------------

def _log_axis_problems(where: str, fig: bq.Figure, width_px: float) -> list[str]:
    out = []
    height = _px(fig.layout.height, 300.0)
    for ax in fig.axes:
        if not isinstance(ax.scale, bq.LogScale):
            continue
        lo, hi = ax.scale.min, ax.scale.max
        labels = lw.tick_labels(ax)
        ticks = np.asarray(ax.tick_values if ax.tick_values is not None else [], dtype=float)
        if lo is None or hi is None or len(labels) < 2:
            out.append(f"{where} {ax.side}: no explicit ticks/format ({lo}, {hi}, {labels})")
            continue
        if len(set(labels)) != len(labels):
            out.append(f"{where} {ax.side}: repeated labels {labels}")
        inside = ticks[(ticks >= lo * (1 - 1e-9)) & (ticks <= hi * (1 + 1e-9))]
        if inside.size < 2:
            out.append(f"{where} {ax.side}: fewer than 2 ticks in [{lo:g}, {hi:g}]: {labels}")
        # neighbouring labels must not touch where bqplot draws them (log position)
        span = math.log10(hi) - math.log10(lo)
        length = (width_px - 92) if ax.side == "bottom" else (height - 66)
        pos = [(math.log10(t) - math.log10(lo)) / span * length for t in inside]
        text = [d3_format(ax.tick_format, t) for t in inside]
        for i in range(1, len(pos)):
            room = pos[i] - pos[i - 1]
            need = ((len(text[i]) + len(text[i - 1])) / 2 * TICK_CHAR_PX + 3
                    if ax.side == "bottom" else TICK_LINE_PX)
            if room < need:
                out.append(f"{where} {ax.side}: {text[i - 1]!r} and {text[i]!r} overlap "
                           f"({room:.0f} < {need:.0f} px)")
    return out


def _chart_problems(where: str, fig: bq.Figure, in_row: int) -> list[str]:
    out = []
    if any(m.display_legend for m in fig.marks):
        out.append(f"{where}: a bqplot legend is drawn inside the data area")
    header = getattr(fig, "labkit_header", None)
    if header is None or fig.title:
        out.append(f"{where}: title not in a header above the plot ({fig.title!r})")
    else:
        shown = [label for label, _, _ in header.entries()]
        for m in header.legend_marks:
            if m.visible:
                assert all(str(lab) in shown for lab in m.labels), (where, shown)
        assert all(lw.esc(label) in header.value for label in shown), where
    lay = fig.layout
    if lay.width not in ("100%", None) or lay.max_width != "100%":
        out.append(f"{where}: layout width {lay.width!r} / max {lay.max_width!r}")
    if _px(lay.min_width) * in_row > CONTENT_PX:
        out.append(f"{where}: {in_row} x min width {lay.min_width} > {CONTENT_PX} px")
    return out + _log_axis_problems(where, fig, CONTENT_PX / in_row)


def _part_chart_problems(part) -> list[str]:
    out, seen = [], set()
    for row in _rows(part):
        figs = _figures_in(row)
        for fig in figs:
            seen.add(id(fig))
            if not _contains(row, lw.framed(fig)):
                out.append(f"{part.letter}: a figure is laid out without its header")
            out += _chart_problems(f"{part.track.id}/{part.letter}", fig, len(figs))
    missing = [n for n, f in part.figures.items() if id(f) not in seen]
    return out + [f"{part.letter}/{n}: not laid out in the body" for n in missing]


def _toggle_problems(part) -> list[str]:
    out = []
    for name, ctl in part.controls.items():
        if not isinstance(ctl, ipw.ToggleButtons):
            continue
        width = ctl.style.button_width  # "" is ipywidgets' default width, not "auto"
        labels = [str(lab) for lab in ctl._options_labels]
        shown = [fitted_label(lab, width) for lab in labels]
        if shown != labels or len(set(shown)) != len(shown):
            out.append(f"{part.letter}/{name}: {labels} shown as {shown} at {width}")
        if _px(width, TOGGLE_DEFAULT_PX) * len(labels) > CONTENT_PX:
            out.append(f"{part.letter}/{name}: {len(labels)} x {width} wider than the page")
    return out


def test_every_chart_and_toggle_reads_cleanly_at_a_1400px_page(any_lab):
    problems = []
    for part in any_lab.parts():
        problems += _part_chart_problems(part) + _toggle_problems(part)
    assert not problems, problems


def test_log_ticks_follow_their_scale_across_a_grid_of_domains():
    xs, ys = lw.make_scale("log", 1.0, 10.0), lw.make_scale("log", 0.1, 1.0)
    fig = lw.figure([lw.line_mark([1, 10], [0.1, 1], xs, ys)], xs, ys, x_label="x (s)",
                    y_label="y (USD)", x_tick_format=".2~g", y_tick_format=".0f")
    x_axis, y_axis = fig.axes
    assert y_axis.tick_format == lw.LOG_TICK_FORMAT  # ".0f" would print 0, 0, 1
    for lo_exp in range(-9, 13, 3):
        for span in (0.3, 1.0, 2.5, 6.0, 15.0):
            lo, hi = 10.0 ** lo_exp, 10.0 ** (lo_exp + span)
            lw.set_domain(xs, *lw.log_domain([lo, hi], pad=1.0))
            labels = lw.tick_labels(x_axis)
            assert 2 <= len(labels) <= lw.MAX_LOG_TICKS, (lo, hi, labels)
            assert len(set(labels)) == len(labels), (lo, hi, labels)
            ticks = np.asarray(x_axis.tick_values)
            assert ticks.min() >= xs.min * (1 - 1e-9) and ticks.max() <= xs.max * (1 + 1e-9)
    lw.set_domain(xs, 1.0, 1000.0)
    assert lw.tick_labels(x_axis) == ["1", "3", "10", "30", "100", "300", "1000"]  # no 1e+2


def test_a_bqplot_legend_becomes_a_header_entry_outside_the_plot():
    xs, ys = lw.make_scale("linear", 0, 1), lw.make_scale("linear", 0, 1)
    a = lw.line_mark([0, 1], [0, 1], xs, ys, labels=["your settings"], legend=True)
    v = lw.vline_mark(0.5, xs, label="budget", legend=True)
    fig = lw.figure([a, v], xs, ys, x_label="x", y_label="y", title="A & B")
    header = fig.labkit_header
    assert not a.display_legend and not v.display_legend and fig.title == ""
    assert "A &amp; B" in header.value and "your settings" in header.value
    lw.set_vline(v, None)  # a hidden mark leaves the legend
    assert "budget" not in header.value and "your settings" in header.value
    lw.update_marks({a: {"labels": ["new label"]}})
    assert "new label" in header.value
    row = lw.frame_figures(ipw.HBox([fig]))
    assert row.children[0] is lw.framed(fig) and lw.framed(fig).children == (header, fig)


# -- commits ----------------------------------------------------------------------------------

@pytest.fixture
def lab1(tmp_path, monkeypatch):
    from labkit.labs.registry import LABS

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    return LABS["lab1"].lab("iphone", store=AnswerStore(tmp_path / "answers.json"))


def test_a_committed_prediction_re_runs_its_self_check_and_shows_a_tick(lab1):
    part = lab1.part("A")
    for q, what in ((part.predict, "prediction"), (part.checkpoint, "checkpoint answer")):
        assert "Self-check: runs when you press" in q.check_html.value and "✔" not in \
            q.check_html.value
        with pytest.raises(AssertionError):
            expect_committed(q, "A", what)  # the notebook's check cell fails before
        wrong = next(v for v in q.options if v not in (part.expected, part.checkpoint_expected))
        q.choice.value = wrong  # a wrong answer earns the completion point all the same
        q.commit_button.click()
        assert q.committed and q.check_passed is True
        assert "✔" in q.check_html.value and "Self-check passed" in q.check_html.value
        expect_committed(q, "A", what)  # ... and passes after, as the tick says
    again = type(lab1)("iphone", store=AnswerStore(lab1.store.path)).part("A")
    assert "✔" in again.predict.check_html.value  # restored from the file: green at once


def test_the_widget_says_what_a_commit_is_worth_from_the_scaffold_s_points(lab1):
    part = lab1.part("B")
    assert part.predict.credit_html.value.count(lw.esc(lw.credit_text(PREDICTION_POINTS))) == 1
    assert lw.esc(lw.credit_text(CHECKPOINT_POINTS, True)) in part.checkpoint.credit_html.value
    assert "first committed answer" in lw.credit_text(1, True)  # a checkpoint: for being right
    assert "1 point for committing" in lw.credit_text(1)
    assert lw.credit_text(None).startswith("Ungraded")
    # the course's graded completion cells use the same numbers (read without importing it)
    found = {}
    for node in ast.parse(SCAFFOLD.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = ast.literal_eval(node.value) \
                if isinstance(node.value, ast.Constant) else None
        elif isinstance(node, ast.ImportFrom) and node.module in ("labkit.labs.common",
                                                                   "labkit.labs.parts"):
            found.update({a.name: globals()[a.name] for a in node.names})
    assert found["PREDICTION_POINTS"] == PREDICTION_POINTS
    assert found["CHECKPOINT_POINTS"] == CHECKPOINT_POINTS


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    yield sh
    InteractiveShell.clear_instance()


BAD_CELLS = [
    'A.predict.commit("no such answer")',
    "A.predict.commit(42)",
    "A.predict.commit([1, 2])",
    'A.checkpoint.commit(None)',
]


@pytest.mark.parametrize("cell", BAD_CELLS)
def test_a_bad_committed_value_is_a_short_message_not_a_traceback(lab1, shell, cell):
    from IPython.utils.capture import capture_output

    part = lab1.part("A")
    shell.user_ns["A"] = part
    with capture_output() as cap:
        result = shell.run_cell(f"{cell}\n")
    text = cap.stdout + cap.stderr + "".join(str(o.data) for o in cap.outputs)
    assert result.error_in_exec is None, text
    assert "Not committed" in text and "Traceback" not in text and "labkit/" not in text
    q = part.checkpoint if "checkpoint" in cell else part.predict
    assert not q.committed and "Not committed" in q.check_html.value
    q.choice.value = q.options[0]  # a new choice answers the message
    assert "Not committed" not in q.check_html.value


def test_a_locked_answer_refuses_a_different_one_with_a_message(lab1, shell):
    from IPython.utils.capture import capture_output

    part = lab1.part("A")
    part.predict.commit(part.predict.options[0])
    shell.user_ns["A"] = part
    with capture_output() as cap:
        shell.run_cell(f"A.predict.commit({part.predict.options[1]!r})\nA.predict\n")
    assert "Traceback" not in cap.stdout + cap.stderr
    assert "press Revise" in part.predict.check_html.value
    assert part.predict.entry.current == part.predict.options[0]
    label = part.predict.choices[1][0]
    part.predict.revise()
    assert part.predict.commit(label).current == part.predict.options[1]  # a label works too


def test_a_failing_self_check_shows_its_message_and_never_a_traceback(tmp_path):
    store = AnswerStore(tmp_path / "a.json")

    def strict(_q):
        raise AssertionError("Part A: we wanted weeks -- you said days")

    def broken(_q):
        raise RuntimeError("boom")

    for check, message in ((strict, "we wanted weeks"), (broken, "could not run")):
        q = lw.Checkpoint("lab1", f"k.{message}", "When?", ["days", "weeks"], store,
                          check=check)
        q.commit("days")
        assert q.committed and q.check_passed is False
        assert message in q.check_html.value and "Self-check failed" in q.check_html.value
        assert "Traceback" not in q.widget.children[3].value


@pytest.mark.parametrize("cell", [
    'expect_number("answer_A", None, "A")',
    'expect_number("answer_B", float("nan"), "B")',
    'expect_choice("answer_C", 3, (0, 2, 4), "C")',
])
def test_a_failing_notebook_self_check_is_its_message_alone(shell, cell):
    """Run All on a blank notebook: each self-check cell fails (the error output nbgrader
    and the judge read) and shows only the message, not grading.py's frames."""
    from IPython.utils.capture import capture_output

    shell.run_cell("from labkit.grading import expect_choice, expect_number\n")
    with capture_output() as cap:
        result = shell.run_cell(f"{cell}\n")
    text = cap.stdout + cap.stderr + "".join(str(o.data) for o in cap.outputs)
    assert isinstance(result.error_in_exec, AssertionError)     # still a failed cell
    assert f"Part {cell.split(', ')[-1][1]}: `answer_" in text and "Revisit:" in text
    assert "Traceback" not in text and "grading.py" not in text
    assert "__tracebackhide__" not in text and "_fail(" not in text
