"""``nbgrader validate`` -- the check behind JupyterLab's Validate button -- on every
assignment, with the real CLI and no course configuration (the command runs in a
temporary folder, as a student's would).

Per lab one ``nbgrader validate`` run checks these copies:

* ``solved/``, every track: the release notebook answered like a student (solutions typed
  in, every prediction committed through the widget's store) passes -- this is the case
  that crashed with "partial credit cannot be greater than maximum points" while the
  visible checks returned a float;
* ``solution/``, one track per lab: the instructor's source notebook (hidden tests
  included) passes;
* ``blank/``, the same track: the blank release fails every grade cell, and nothing
  crashes. (Every track's source runs under papermill and every blank release fails only
  its own test cells in tests/test_notebooks.py; here it is what the Validate button says.)
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from course_helpers import (
    BIN,
    LABS,
    TRACKS,
    answer_like_a_student,
    kernel_env,
    nbgrader_meta,
    notebook_path,
)

# nbgrader 0.9.6's own words (nbgrader/validator.py: _print_num_failed, failed_warning and
# the log line of Validator.validate)
SUCCESS = "Success! Your notebook passes all the tests."
FAILED = re.compile(r"VALIDATION FAILED ON (\d+) CELL\(S\)!")
VALIDATING = re.compile(r"^\[ValidateApp \| INFO\] Validating '(.+)'$", re.MULTILINE)
CRASH_SIGNS = ("partial credit", "fatal error", "[ValidateApp | ERROR]",
               "[ValidateApp | CRITICAL]", "THE CONTENTS OF")
KINDS = ("solution", "solved", "blank")
# The track whose solution and blank copies are validated too: a language-model track in
# one lab, a CNN track in the other.
BOTH_WAYS = {"lab1": "oura_ring", "lab2": "cloud_fleet"}


def _validate(cwd: Path, notebooks: list[Path]) -> dict[Path, str]:
    """Run ``nbgrader validate`` on ``notebooks`` from ``cwd``; its output per notebook."""
    env = kernel_env(cwd) | {"PYTHONUNBUFFERED": "1"}  # keep stdout and the log in order
    proc = subprocess.run([str(BIN / "nbgrader"), "validate", *map(str, notebooks)],
                          cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    marks = list(VALIDATING.finditer(proc.stdout))
    assert len(marks) == len(notebooks), proc.stdout[-3000:]
    ends = [m.start() for m in marks[1:]] + [len(proc.stdout)]
    return {Path(m.group(1)).resolve(): proc.stdout[m.end():end]
            for m, end in zip(marks, ends, strict=True)}


def _repo_state(lab: str, track: str) -> list[tuple[str, bytes]]:
    return [(str(p), p.read_bytes()) for kind in ("source", "release")
            for p in sorted(notebook_path(kind, lab, track).parent.iterdir())]


@pytest.mark.parametrize("lab", LABS)
def test_validate_passes_solutions_and_fails_the_blank_release(lab, tmp_path):
    """One ``nbgrader validate`` run per lab over its four tracks' three copies."""
    before = {t: _repo_state(lab, t) for t in TRACKS}
    name = LABS[lab].notebook
    copies = {(t, kind): tmp_path / t / kind / name for t in TRACKS for kind in KINDS
              if kind == "solved" or t == BOTH_WAYS[lab]}
    for (track, kind), path in copies.items():
        path.parent.mkdir(parents=True)
        shutil.copy(notebook_path("source" if kind == "solution" else "release", lab, track),
                    path)
        if kind == "solved":
            answer_like_a_student(lab, track, path.parent)

    out = _validate(tmp_path, list(copies.values()))
    report = {key: out[path.resolve()] for key, path in copies.items()}

    for key, text in report.items():
        assert not [s for s in CRASH_SIGNS if s in text], f"{key}:\n{text[-3000:]}"
        if key[1] != "blank":
            assert SUCCESS in text and not FAILED.search(text), f"{key}:\n{text[-3000:]}"
    for track in (BOTH_WAYS[lab],):
        blank = copies[(track, "blank")]
        graded = [c for c in nbformat.read(blank, as_version=4).cells
                  if nbgrader_meta(c).get("grade")]
        failed = FAILED.search(report[(track, "blank")])
        assert failed and int(failed.group(1)) == len(graded), report[(track, "blank")][:2000]
        assert SUCCESS not in report[(track, "blank")]
        assert (copies[(track, "solution")].parent / "labkit_answers.json").is_file()
    for track in TRACKS:
        assert _repo_state(lab, track) == before[track]
