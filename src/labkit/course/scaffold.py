"""The cell pattern every lab part follows, shared by all lab specs.

banner -> predict (graded for completion) -> explore -> reveal -> math peek -> checkpoint
(graded for completion) -> one graded exercise with visible and hidden tests.

The notebook's header (:func:`header_cells`) is built last, from the other cells: the
points it announces are the nbgrader points of those cells, and its glossary defines
exactly the terms (:data:`GLOSSARY`) that the notebook's text -- or the widgets the spec
says it shows -- uses, each with the track's own numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from nbformat import NotebookNode

from labkit.core.format import fmt_count, fmt_num, fmt_time, format_bytes
from labkit.core.keys import CHECKPOINT_RULE
from labkit.course import cells as c
from labkit.labs.info import LabInfo
from labkit.labs.parts import CHECKPOINT_POINTS, PREDICTION_POINTS
from labkit.physics.kvcache import kv_bytes_per_token
from labkit.physics.roofline import balance_context, critical_batch
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track


@dataclass(frozen=True)
class Exercise:
    """One graded exercise: statement, read-only data cell, solution, tests, points."""

    statement: str
    data: str
    name: str
    solution: str
    visible: str
    hidden: str
    points: int
    values: tuple[float, ...] = ()
    """Computed values the statement quotes that its data cell does not hold (the notebook
    number check reads them)."""
    mistakes: tuple[str, ...] = ()
    """Code computing an answer the way a common misconception does (from the data cell);
    each must fail the visible self-check (tested), which the solution passes."""


def commit_cell(widget: str, button: str, solution: str | None = None) -> str:
    """A widget cell: students click; the source (solution) commits ``solution`` (an
    expression; default the first option) in code so it runs."""
    value = solution or f"{widget}.options[0]"
    return (f"# Choose an answer below and press \"{button}\": it is saved with your notebook.\n"
            f"### BEGIN SOLUTION\n{widget}.commit({value})\n### END SOLUTION\n"
            f"{widget}")


def exercise_cells(part: str, ids: c.CellIds, ex: Exercise) -> list[NotebookNode]:
    key = part.lower()
    return [
        c.markdown(f"### Exercise {part} (graded, {ex.points} points)\n\n{ex.statement}",
                   ids.take(f"{key}-exercise-md")),
        c.code(ex.data, ids.take(f"{key}-exercise-data")),
        c.answer(f"{ex.name} = None\n### BEGIN SOLUTION\n{ex.solution}\n### END SOLUTION",
                 ids.take(f"{key}-exercise")),
        c.tests(f"{ex.visible}\n### BEGIN HIDDEN TESTS\n{ex.hidden}\n### END HIDDEN TESTS",
                ids.take(f"{key}-exercise-check"), ex.points),
    ]


def checkpoint_answers(lab_id: str, track_id: str) -> dict[str, object]:
    """Each part's checkpoint answer as the lab computes it on the track (for the hidden
    test that grades it, :func:`part_cells`)."""
    from labkit.course.beliefs import questions

    return {q.part: q.computed for q in questions(lab_id, track_id) if q.kind == "checkpoint"}


def part_cells(part: str, title: str, hook: str, ids: c.CellIds,
               exercise: Exercise, checkpoint_answer: object = None) -> list[NotebookNode]:
    """Every cell of one part, in lesson order. ``checkpoint_answer``: the checkpoint's
    computed answer, which only the hidden test holds (``expect_checkpoint``); None: the
    checkpoint earns completion credit only."""
    hidden = ("" if checkpoint_answer is None else
              "\n### BEGIN HIDDEN TESTS\n"
              f"expect_checkpoint({part}.checkpoint, \"{part}\", correct={checkpoint_answer!r})"
              "\n### END HIDDEN TESTS")
    p, key = part, part.lower()
    return [
        c.markdown(f"## Part {p} · {title}\n\n{hook}", ids.take(f"{key}-title")),
        c.code(f"{p} = lab.part(\"{p}\")\n{p}.banner()", ids.take(f"{key}-banner")),
        c.markdown("### Predict first\nCommit your prediction before you explore "
                   f"(completion credit: {PREDICTION_POINTS} point).",
                   ids.take(f"{key}-predict-md")),
        c.answer(commit_cell(f"{p}.predict", "Commit prediction"), ids.take(f"{key}-predict")),
        c.tests(f"expect_committed({p}.predict, \"{p}\", \"prediction\")",
                ids.take(f"{key}-predict-done"), PREDICTION_POINTS),
        c.markdown("### Explore\nMove every control: each one changes a chart, a number or a "
                   "callout.", ids.take(f"{key}-explore-md")),
        c.code(f"{p}.explore", ids.take(f"{key}-explore")),
        c.markdown("### Reveal", ids.take(f"{key}-reveal-md")),
        c.code(f"{p}.reveal", ids.take(f"{key}-reveal")),
        c.code(f"{p}.math", ids.take(f"{key}-math")),
        c.markdown("### Checkpoint\nCommit an answer after the reveal "
                   f"({CHECKPOINT_POINTS} point {CHECKPOINT_RULE}; the feedback tells you "
                   "whether it was right).", ids.take(f"{key}-checkpoint-md")),
        c.answer(commit_cell(f"{p}.checkpoint", "Commit answer", f"{p}.checkpoint_expected"),
                 ids.take(f"{key}-checkpoint")),
        c.tests(f"expect_committed({p}.checkpoint, \"{p}\", \"checkpoint answer\")"
                + hidden,
                ids.take(f"{key}-checkpoint-done"), CHECKPOINT_POINTS),
        *exercise_cells(p, ids, exercise),
    ]


HOW_IT_WORKS = """**How each part works.** *Predict* with the widget first — your answer is locked
when you commit it (you may revise later; both answers are kept). Then *explore*: every slider
and menu drives the charts live. The *reveal* compares your prediction with the computed
answer, the *math peek* shows the formulas with your current numbers, and a *checkpoint*
question closes the part. Exercises marked **graded** are checked by the autograder; the cell
after each one checks only the form of your answer (a finite number, one of the allowed
choices, the keys of a dict) and says so: whether it is right is checked when your notebook
is graded. Run the cells in order (*Run → Run All
Cells* works too). Your predictions are saved in `labkit_answers.json` next to this notebook:
keep it with your submission. Each control's last value is saved in `labkit_settings.json`, so
the notebook, run again, opens where you left it.

**If a widget shows "Error displaying widget: model not found"** (after reopening the
notebook or restarting the kernel): the widgets live in the kernel, which has forgotten
them. Run the notebook again (*Run → Run All Cells*); nothing is lost — your answers and
settings come back from the two files above."""


def setup_cell(module: str, track_id: str, ids: c.CellIds) -> NotebookNode:
    """Imports, ``lab = Lab(TRACK)`` and the header widget of ``labkit.labs.<module>``."""
    source = f"""
from labkit.grading import expect_checkpoint, expect_choice, expect_committed, expect_number
from labkit.labs.{module} import Lab

TRACK = "{track_id}"
lab = Lab(TRACK)
lab.header()
"""
    return c.code(source, ids.take("setup"))


def notebook_title(info: LabInfo, t: Track) -> str:
    """The notebook's title (its first heading and metadata): ``Lab 1 · ... — <track>``."""
    return f"{info.heading} — {t.label}"


# -- glossary ------------------------------------------------------------------------------
Requirement = tuple[str, str, Callable[[dict[str, object]], bool]]
"""A Part D exercise's extra requirement: (text the student reads, the hidden test's
predicate over ``design_D``, the same predicate over a candidate design)."""


def literal(x: float) -> str:
    """``x`` as a Python float literal for a notebook cell (every digit kept)."""
    return repr(float(x))


def joules_per_unit(t: Track) -> float:
    """Joules in one of the track's energy units (an owned-device track)."""
    j = t.joules_per_cost_unit
    if j is None:
        raise ValueError(f"track {t.id!r}: cost_unit {t.cost_unit!r} is not an energy unit")
    return j


def unit_noun(t: Track) -> tuple[str, str]:
    """(singular, plural) of what the track processes: requests, windows, frames."""
    return t.event_nouns


def slo_text(t: Track) -> str:
    """The track's latency target in words: ``p99 time per output token <= 50 ms``."""
    ms = fmt_time(t.slo_s)
    if t.slo_kind == "tpot":
        return f"{quantile_text(t)} time per output token ≤ {ms}"
    one = unit_noun(t)[0]
    if t.slo_quantile >= 1.0:
        return f"every {one} done within {ms} (a hard deadline: the worst case, not a percentile)"
    return f"{quantile_text(t)} latency per {one} ≤ {ms}"


def quantile_text(t: Track) -> str:
    """``p99`` (or ``the maximum`` for a hard deadline)."""
    return "the maximum" if t.slo_quantile >= 1.0 else f"p{t.slo_quantile * 100:g}"


def _def_slo(t: Track) -> str:
    return ("service-level objective: the latency promise the deployment must keep; on this "
            f"track, {slo_text(t)}.")


def _def_p99(t: Track) -> str:
    one, many = unit_noun(t)
    return (f"the 99th percentile: all but the slowest one in a hundred {many} are at least "
            f"this fast. A single {one} at p99 latency is not rare at scale: it happens once "
            "in a hundred.")


def _def_tpot(t: Track) -> str:
    return ("time per output token: a request's mean time per output token after the first, "
            "(end-to-end time − TTFT) / (L − 1) for L output tokens; with no prefill in the "
            "way it is one decode step. A single gap between two streamed tokens (a step "
            "stalled by a prefill) is an inter-token gap, not the TPOT. This track's budget "
            f"is {fmt_time(t.slo_s)} at {quantile_text(t)}.")


def _def_ttft(t: Track) -> str:
    tail = (f"; this track allows {fmt_time(t.ttft_slo_s)}" if t.ttft_slo_s is not None
            else "")
    return ("time to first token: from a request's arrival to its first streamed token, the "
            "prompt pass (prefill) plus any wait in the queue; where a screen counts the "
            f"prefill alone (no queueing) it says so{tail}.")


def glossary_values(t: Track) -> dict[str, float]:
    """The computed values the glossary quotes for ``t``: B* and L* (peak roofline) and the
    KV bytes one token adds (language models only)."""
    if not t.is_transformer:
        return {}
    m = get_model(t.model_id)
    return {"b_star": float(critical_batch(t.hardware_id, t.model_id, t.weight_bits)),
            "l_star": float(balance_context(t.hardware_id, t.model_id, t.kv_bits)),
            "kv_bytes_per_token": float(kv_bytes_per_token(m, t.kv_bits))}


def _def_kv(t: Track) -> str:
    m = get_model(t.model_id)
    return ("the key/value cache: every layer keeps one key and one value vector per KV head "
            f"for every token in the context. {m.name} adds "
            f"{format_bytes(glossary_values(t)['kv_bytes_per_token'])} per token at "
            f"{t.kv_bits}-bit, "
            "so a sequence's cache grows with its context.")


def _def_cv(t: Track) -> str:
    return ("coefficient of variation: standard deviation / mean of a quantity; this track's "
            f"output lengths have a CV of {fmt_num(t.output_tokens_cv)} (zero: every answer the "
            "same length).")


def _def_pareto(t: Track) -> str:
    return ("a design is on the Pareto front when no other design is better on one axis "
            "without being worse on another; the front is the set of trade-offs worth "
            "choosing between.")


def _def_bstar(t: Track) -> str:
    b = glossary_values(t)["b_star"]
    return ("the critical batch: the batch at which one decode step's compute takes as long "
            "as reading the weights once (peak roofline). Below it decode is memory-bound; "
            f"here B* ≈ {fmt_count(b)} sequences at {t.weight_bits}-bit weights.")


def _def_lstar(t: Track) -> str:
    ell = glossary_values(t)["l_star"]
    return ("the balance context: the context length at which one sequence's KV-cache read "
            "takes as long as its compute (peak roofline). Past it no batch size reaches the "
            f"compute floor; here L* ≈ {fmt_count(ell)} tokens at {t.kv_bits}-bit KV.")


@dataclass(frozen=True)
class Term:
    """A glossary term: how it is written, how to find it in text, and its definition."""

    term: str
    pattern: str
    define: Callable[[Track], str]

    def used_in(self, text: str) -> bool:
        return re.search(self.pattern, text) is not None


GLOSSARY: tuple[Term, ...] = (  # a term's definition uses only the terms before it
    Term("p99", r"\bp99\b", _def_p99),
    Term("SLO", r"\bSLOs?\b", _def_slo),
    Term("TTFT", r"\bTTFT\b", _def_ttft),
    Term("TPOT", r"\bTPOT\b", _def_tpot),
    Term("KV", r"\bKV\b", _def_kv),
    Term("CV", r"\bCV\b", _def_cv),
    Term("Pareto", r"\bPareto\b", _def_pareto),
    Term("B*", r"\bB\*", _def_bstar),
    Term("L*", r"\bL\*", _def_lstar),
)


_HIDDEN = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS).*?### END \1", re.S)


def notebook_text(cells: Iterable[NotebookNode]) -> str:
    """What a student reads in cells: markdown and code, without the solution and hidden
    test regions (nbgrader removes them from the release)."""
    return "\n".join(_HIDDEN.sub("", str(cell.source)) for cell in cells)


def glossary_terms(text: str, shown: Iterable[str] = (),
                   track: Track | None = None) -> list[Term]:
    """The glossary terms ``text`` uses, or that the widgets show (``shown``), in order;
    with ``track``, also the terms its definitions use."""
    extra = set(shown)
    unknown = extra - {t.term for t in GLOSSARY}
    if unknown:
        raise ValueError(f"shown: no glossary entry for {', '.join(sorted(unknown))}")
    terms = [t for t in GLOSSARY if t.term in extra or t.used_in(text)]
    if track is not None:
        defs = "\n".join(t.define(track) for t in terms)
        more = [t for t in GLOSSARY if t not in terms and t.used_in(defs)]
        if more:
            return glossary_terms(text + "\n" + defs, extra, track)
    return terms


def glossary_md(t: Track, terms: Sequence[Term]) -> str:
    """The glossary as a Markdown list (empty when no term is used)."""
    if not terms:
        return ""
    items = "\n".join(f"- **{term.term}**: {term.define(t)}" for term in terms)
    return f"**Terms used in this notebook.**\n\n{items}"


def points_md(cells: Sequence[NotebookNode]) -> str:
    """What the graded cells are worth, from their nbgrader points."""
    auto = manual = done = checked = 0.0
    for cell in cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("grade"):
            continue
        pts = float(meta.get("points", 0))
        if "expect_checkpoint(" in str(cell.source):
            checked += pts
        elif "expect_committed(" in str(cell.source):
            done += pts
        elif meta.get("solution"):
            manual += pts
        else:
            auto += pts
    total = auto + manual + done + checked
    return (f"**Points.** {fmt_count(total)} in all: {fmt_count(done)} for committing your "
            "prediction in every part (completion credit — an honest guess earns its point "
            f"whether or not it was right), {fmt_count(checked)} for the checkpoints (each "
            f"{CHECKPOINT_RULE}), {fmt_count(auto)} for the graded exercises (autograded) "
            f"and {fmt_count(manual)} for the memo (graded by hand).")


def bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {x}" for x in items)


def header_cells(info: LabInfo, t: Track, ids: c.CellIds, *, intro: str,
                 later: Sequence[NotebookNode], prerequisites: Sequence[str],
                 reading: Sequence[str], shown_terms: Iterable[str] = (),
                 rows: Sequence[tuple[str, str]] = ()) -> list[NotebookNode]:
    """The opening markdown and the setup cell, built from the ``later`` cells.

    Title, ``intro``, the glossary of the terms the notebook uses (before anything else
    uses them), the track table (``rows`` added before the time), prerequisites, reading
    list, the lab's objectives for this track, the points of the graded cells and how a
    part works. Title, time and objectives come from the lab's
    :class:`~labkit.labs.info.LabInfo`.
    """
    hw, m = get_hardware(t.hardware_id), get_model(t.model_id)
    objectives = "\n".join(f"{i}. {o}" for i, o in enumerate(info.objectives_for(t), 1))
    table = [("Track", t.label), ("Hardware", hw.name), ("Model", m.name),
             ("Stakeholder", f"{t.stakeholder.name}, {t.stakeholder.role}"), *rows,
             ("Time", f"about {info.minutes_text}")]
    table_md = "\n".join(f"| **{k}** | {v} |" for k, v in table)
    own = "\n".join([intro, table_md, *prerequisites, *reading, objectives])
    terms = glossary_terms(own + "\n" + notebook_text(later), shown_terms, t)
    glossary = glossary_md(t, terms)
    text = f"""
# {notebook_title(info, t)}

{intro}

{glossary}

| | |
|---|---|
{table_md}

**Before you start.**

{bullets(prerequisites)}

**Reading.**

{bullets(reading)}

**You will be able to:**

{objectives}

{points_md(later)}

{HOW_IT_WORKS}
"""
    return [c.markdown(text, ids.take("intro")), setup_cell(info.module, t.id, ids)]


def finish(cells: list[NotebookNode], title: str) -> NotebookNode:
    """Stable cell ids (the grade ids) so rebuilding is byte-for-byte reproducible."""
    for cell in cells:
        cell["id"] = cell.metadata["nbgrader"]["grade_id"]
    return c.notebook(cells, title)


def synthesis_cells(intro: str, memo: str, ids: c.CellIds, points: int) -> list[NotebookNode]:
    """The closing section: intro, the computed synthesis widget, the manually graded memo."""
    return [
        c.markdown(intro, ids.take("synthesis-md")),
        c.code("lab.synthesis()", ids.take("synthesis")),
        c.manual(memo, ids.take("memo"), points),
    ]
