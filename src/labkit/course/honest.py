"""Honest submissions of any (lab, track), written from the source notebooks:

* ``full`` — every answer cell holds the solution, every prediction and checkpoint is
  committed (through the same :class:`~labkit.core.answers.AnswerStore` the widgets use);
* ``blank`` — the release as handed out;
* ``partial`` — parts A and B answered and committed, C and D left blank.

:func:`expected_honest` is each kind's exact score. This module reads the **source**
notebooks (solutions): instructor side only.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nbformat

from labkit.core.answers import AnswerStore
from labkit.course.report import part_of
from labkit.course.submission import ANSWERS_FILE, SECRET_FILE, TIMESTAMP_FILE
from labkit.labs.registry import LABS

HONEST = ("full", "blank", "partial")
PARTIAL_PARTS = ("A", "B")
_SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION\n?", re.S)


def _meta(cell: nbformat.NotebookNode) -> dict[str, Any]:
    meta: dict[str, Any] = cell.metadata.get("nbgrader", {})
    return meta


def _solutions(source_nb: nbformat.NotebookNode) -> dict[str, str]:
    """Answer-cell source with the solution block unwrapped, by grade id."""
    return {_meta(c)["grade_id"]: _SOLUTION.sub(r"\1", c.source).rstrip("\n")
            for c in source_nb.cells if _meta(c).get("solution")}


def _commit(lab_id: str, track: str, folder: Path, parts: tuple[str, ...]) -> None:
    lab = LABS.get_lab(lab_id).lab(track, store=AnswerStore(folder / ANSWERS_FILE))
    for letter in parts:
        p = lab.part(letter)
        p.predict.commit(p.predict.options[-1])
        p.checkpoint.commit(p.checkpoint.options[0])


def write_honest(kind: str, root: Path, assignment: str, dest: Path) -> Path:
    """Write a ``full``, ``blank`` or ``partial`` submission of ``assignment`` into ``dest``."""
    if kind not in HONEST:
        raise ValueError(f"kind must be one of {HONEST}, got {kind!r}")
    lab_id, track = assignment.split("_", 1)
    release_dir = root / "release" / assignment
    nb_path = release_dir / LABS.get_lab(lab_id).notebook
    dest.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(nb_path, as_version=4)
    parts = {"full": ("A", "B", "C", "D"), "blank": (), "partial": PARTIAL_PARTS}[kind]
    if parts:
        solutions = _solutions(nbformat.read(root / "source" / assignment / nb_path.name,
                                             as_version=4))
        for cell in nb.cells:
            gid = _meta(cell).get("grade_id", "")
            if (_meta(cell).get("solution") and gid in solutions
                    and (part_of(gid) in parts or (kind == "full" and not part_of(gid)))
                    and "predict" not in gid and "checkpoint" not in gid):
                cell.source = solutions[gid]
        _commit(lab_id, track, dest, parts)
    nbformat.write(nb, dest / nb_path.name)
    (dest / TIMESTAMP_FILE).write_text(
        datetime(2026, 11, 30, 12, 0, tzinfo=UTC).strftime("%Y-%m-%d %H:%M:%S.%f %Z"))
    # what `nbgrader submit` leaves beside a submission (release_feedback needs it); fixed
    # per student and assignment, so rewriting the fixtures changes nothing
    student = dest.parent.name
    (dest / SECRET_FILE).write_text(
        hashlib.sha256(f"labkit-demo/{student}/{assignment}".encode()).hexdigest()[:32])
    return dest / nb_path.name


def grade_cells(root: Path, assignment: str) -> dict[str, float]:
    """Autograded test cells of ``assignment`` and their points (from the release)."""
    (nb_path,) = sorted((root / "release" / assignment).glob("*.ipynb"))
    nb = nbformat.read(nb_path, as_version=4)
    return {_meta(c)["grade_id"]: float(_meta(c)["points"]) for c in nb.cells
            if _meta(c).get("grade") and not _meta(c).get("solution") and c.cell_type == "code"}


def expected_honest(kind: str, points: dict[str, float]) -> float:
    if kind == "full":
        return sum(points.values())
    if kind == "blank":
        return 0.0
    return sum(v for k, v in points.items() if part_of(k) in PARTIAL_PARTS)
