"""Shared helpers for the notebook and nbgrader tests (real notebooks, real kernels)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

from labkit.labs import LABS
from labkit.tracks import BUILTIN_TRACKS

ROOT = Path(__file__).resolve().parents[1]
TRACKS = tuple(t.id for t in BUILTIN_TRACKS)  # the committed course: the built-in tracks
BIN = Path(sys.executable).parent


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
