"""Shared helpers for the notebook and nbgrader tests (real notebooks, real kernels)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import nbformat

from labkit.labs import LABS
from labkit.tracks import BUILTIN_TRACKS

ROOT = Path(__file__).resolve().parents[1]
TRACKS = tuple(t.id for t in BUILTIN_TRACKS)  # the committed course: the built-in tracks
BIN = Path(sys.executable).parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def notebook_path(kind: str, lab: str, track: str) -> Path:
    return ROOT / kind / LABS[lab].assignment(track) / LABS[lab].notebook


def nbgrader_meta(cell: nbformat.NotebookNode) -> dict:
    return cell.metadata.get("nbgrader", {})


def is_grade_cell(cell: nbformat.NotebookNode) -> bool:
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and cell.cell_type == "code"


def kernel_env(tmp: Path) -> dict[str, str]:
    """Environment for kernels and nbgrader: this venv first, ledger kept in ``tmp``."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "LABKIT_LEDGER": str(tmp / "ledger.json"), "PYTHONWARNINGS": "ignore"}


def run_nbgrader(root: Path, *args: str, env: dict[str, str], db: Path,
                 check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [str(BIN / "nbgrader"), *args, f"--CourseDirectory.root={root}",
           f"--CourseDirectory.db_url=sqlite:///{db}"]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def answer_like_a_student(lab: str, track: str, folder: Path) -> None:
    """Type the source's solution into every answer cell (exercises and memo) of the
    release copy in ``folder``, and commit every prediction and checkpoint through the
    widgets' answer store (what pressing Commit writes)."""
    import re

    from labkit.core.answers import AnswerStore

    path = folder / LABS[lab].notebook
    nb = nbformat.read(path, as_version=4)
    source = nbformat.read(notebook_path("source", lab, track), as_version=4)
    solutions = {nbgrader_meta(c)["grade_id"]: c.source for c in source.cells
                 if nbgrader_meta(c).get("solution")}
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id", "")
        if nbgrader_meta(cell).get("solution") and not gid.endswith(("-predict",
                                                                     "-checkpoint")):
            cell.source = re.sub(r"### (BEGIN|END) SOLUTION\n?", "", solutions[gid])
    nbformat.write(nb, path)
    answered = LABS[lab].lab(track, store=AnswerStore(folder / "labkit_answers.json"))
    for part in "ABCD":
        p = answered.part(part)
        p.predict.commit(p.predict.options[-1])
        p.checkpoint.commit(p.checkpoint_expected)  # only the right answer earns the point


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")


def _hidden_regions(nb: nbformat.NotebookNode) -> list[str]:
    return [region for c in nb.cells for region in re.findall(
        r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", c.source, re.DOTALL)]


def hidden_secrets(lab: str, track: str) -> tuple[set[str], set[str]]:
    """The hidden test lines and numeric literals a student never sees: in the source
    notebook's hidden regions and nowhere in the release notebook."""
    source = nbformat.read(notebook_path("source", lab, track), as_version=4)
    release = notebook_path("release", lab, track).read_text()
    shown = {line.strip() for c in nbformat.reads(release, as_version=4).cells
             for line in c.source.splitlines()}
    regions = _hidden_regions(source)
    lines = {line.strip() for r in regions for line in r.splitlines() if line.strip()}
    numbers = {n for r in regions for n in _NUMBER.findall(r)
               if n not in release and len(n.replace(".", "").strip("0")) >= 3}
    return lines - shown, numbers
