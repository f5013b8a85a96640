"""The cell pattern every lab part follows, shared by all lab specs.

banner -> predict (graded for completion) -> explore -> reveal -> math peek -> checkpoint
(graded for completion) -> one graded exercise with visible and hidden tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nbformat import NotebookNode

from labkit.course import cells as c
from labkit.labs.info import LabInfo
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track

PREDICTION_POINTS = 1
CHECKPOINT_POINTS = 1


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


def commit_cell(widget: str, button: str) -> str:
    """A widget cell: students click; the source (solution) commits in code so it runs."""
    return (f"# Choose an answer below and press \"{button}\": it is saved with your notebook.\n"
            f"### BEGIN SOLUTION\n{widget}.commit({widget}.options[0])\n### END SOLUTION\n"
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


def part_cells(part: str, title: str, hook: str, ids: c.CellIds,
               exercise: Exercise) -> list[NotebookNode]:
    """Every cell of one part, in lesson order."""
    p, key = part, part.lower()
    return [
        c.markdown(f"## Part {p} · {title}\n\n{hook}", ids.take(f"{key}-title")),
        c.code(f"{p} = lab.part(\"{p}\")\n{p}.banner()", ids.take(f"{key}-banner")),
        c.markdown("### Predict first\nCommit your prediction before you explore.",
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
        c.markdown("### Checkpoint", ids.take(f"{key}-checkpoint-md")),
        c.answer(commit_cell(f"{p}.checkpoint", "Commit answer"),
                 ids.take(f"{key}-checkpoint")),
        c.tests(f"expect_committed({p}.checkpoint, \"{p}\", \"checkpoint answer\")",
                ids.take(f"{key}-checkpoint-done"), CHECKPOINT_POINTS),
        *exercise_cells(p, ids, exercise),
    ]


HOW_IT_WORKS = """**How each part works.** *Predict* with the widget first — your answer is locked
when you commit it (you may revise later; both answers are kept). Then *explore*: every slider
and menu drives the charts live. The *reveal* compares your prediction with the computed
answer, the *math peek* shows the formulas with your current numbers, and a *checkpoint*
question closes the part. Exercises marked **graded** are checked by the autograder; the cells
after them let you self-check before you submit. Run the cells in order (*Run → Run All
Cells* works too). Your predictions are saved in `labkit_answers.json` next to this notebook:
keep it with your submission."""


def setup_cell(module: str, track_id: str, ids: c.CellIds) -> NotebookNode:
    """Imports, ``lab = Lab(TRACK)`` and the header widget of ``labkit.labs.<module>``."""
    source = f"""
from labkit.grading import expect_choice, expect_committed, expect_number
from labkit.labs.{module} import Lab

TRACK = "{track_id}"
lab = Lab(TRACK)
lab.header()
"""
    return c.code(source, ids.take("setup"))


def notebook_title(info: LabInfo, t: Track) -> str:
    """The notebook's title (its first heading and metadata): ``Lab 1 · ... — <track>``."""
    return f"{info.heading} — {t.label}"


def header_cells(info: LabInfo, t: Track, ids: c.CellIds, *, intro: str,
                 rows: Sequence[tuple[str, str]] = ()) -> list[NotebookNode]:
    """The opening markdown (title, ``intro``, the track table with ``rows`` added before
    the time, the lab's objectives for this track, how a part works) and the setup cell.

    Title, time and objectives come from the lab's :class:`~labkit.labs.info.LabInfo`.
    """
    hw, m = get_hardware(t.hardware_id), get_model(t.model_id)
    objectives = "\n".join(f"{i}. {o}" for i, o in enumerate(info.objectives_for(t), 1))
    table = [("Track", t.label), ("Hardware", hw.name), ("Model", m.name),
             ("Stakeholder", f"{t.stakeholder.name}, {t.stakeholder.role}"), *rows,
             ("Time", f"about {info.minutes_text}")]
    table_md = "\n".join(f"| **{k}** | {v} |" for k, v in table)
    text = f"""
# {notebook_title(info, t)}

{intro}

| | |
|---|---|
{table_md}

**You will be able to:**

{objectives}

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
