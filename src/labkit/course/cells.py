"""nbformat cells with nbgrader metadata (schema version 3).

Roles, as nbgrader's "Create Assignment" panel names them:

* ``markdown`` / ``code``: read-only lesson cells (locked, restored on autograde);
* ``answer``: a student's code or markdown answer (solution region, kept from submission);
* ``tests``: autograded tests worth ``points`` (restored from the source on autograde);
* ``manual``: a manually graded free-text answer worth ``points``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import nbformat
from nbformat import NotebookNode

SCHEMA_VERSION = 3


@dataclass
class CellIds:
    """Hands out unique, stable grade ids within one notebook."""

    prefix: str
    used: set[str] = field(default_factory=set)

    def take(self, name: str) -> str:
        grade_id = f"{self.prefix}-{name}"
        if grade_id in self.used:
            raise ValueError(f"duplicate grade_id {grade_id!r}")
        self.used.add(grade_id)
        return grade_id


def _nbgrader(grade_id: str, *, grade: bool, solution: bool, locked: bool,
              points: float | None = None, task: bool = False) -> dict[str, object]:
    meta: dict[str, object] = {"grade": grade, "grade_id": grade_id, "locked": locked,
                               "schema_version": SCHEMA_VERSION, "solution": solution,
                               "task": task}
    if points is not None:
        meta["points"] = points
    return meta


def markdown(text: str, grade_id: str) -> NotebookNode:
    cell = nbformat.v4.new_markdown_cell(text.strip())
    cell.metadata["nbgrader"] = _nbgrader(grade_id, grade=False, solution=False, locked=True)
    return cell


def code(source: str, grade_id: str, *, tags: tuple[str, ...] = ()) -> NotebookNode:
    cell = nbformat.v4.new_code_cell(source.strip())
    cell.metadata["nbgrader"] = _nbgrader(grade_id, grade=False, solution=False, locked=True)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def answer(source: str, grade_id: str) -> NotebookNode:
    cell = nbformat.v4.new_code_cell(source.strip())
    cell.metadata["nbgrader"] = _nbgrader(grade_id, grade=False, solution=True, locked=False)
    return cell


def tests(source: str, grade_id: str, points: float) -> NotebookNode:
    """Tagged ``raises-exception`` so JupyterLab's Run All continues past a failing check
    (an unanswered exercise fails only its own test, never the rest of the notebook)."""
    cell = nbformat.v4.new_code_cell(source.strip())
    cell.metadata["nbgrader"] = _nbgrader(grade_id, grade=True, solution=False, locked=True,
                                          points=points)
    cell.metadata["tags"] = ["raises-exception"]
    return cell


def manual(text: str, grade_id: str, points: float) -> NotebookNode:
    cell = nbformat.v4.new_markdown_cell(text.strip())
    cell.metadata["nbgrader"] = _nbgrader(grade_id, grade=True, solution=True, locked=False,
                                          points=points)
    return cell


def notebook(cells: list[NotebookNode], title: str) -> NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python",
                                 "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["title"] = title
    return nb
