"""``labkit course init`` on a copy of the committed course (a fresh clone): the gradebook
gets every assignment of ``source/`` with its points, ``release/`` stays as committed, and
``labkit course grade`` works next; before it, grade names the command that fixes it.
Grade options come from ``c.LabkitGrade`` in the course's nbgrader config; a flag wins."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from course_helpers import ROOT
from labkit import cli
from labkit.course.config import course_settings, grade_options
from labkit.course.grade import GradeOptions

COMMITTED = ("source", "release", "course")


def _clone(dest: Path) -> Path:
    """What a fresh clone holds of the course (student work is git-ignored)."""
    for name in COMMITTED:
        shutil.copytree(ROOT / name, dest / name,
                        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    shutil.copy(ROOT / "nbgrader_config.py", dest)
    return dest


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    root = _clone(tmp_path_factory.mktemp("clone"))
    release = _digest(root / "release")
    return root, release


def test_grade_before_init_names_the_command_that_fixes_it(clone, capsys):
    root, _ = clone
    if (root / "gradebook.db").exists():
        pytest.skip("the module's init ran first")
    with pytest.raises(SystemExit) as stop:
        cli.main(["course", "grade", "lab1", "--root", str(root), "--no-isolation"])
    assert stop.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "run `labkit course init" in err and "generate_assignment" not in err, err


@pytest.fixture(scope="module")
def initialised(clone):
    root, release = clone
    assert cli.main(["course", "init", "--root", str(root)]) == 0
    return root, release


def test_init_registers_every_assignment_with_its_points(initialised, capsys):
    root, release = initialised
    names = sorted(p.name for p in (root / "source").glob("*_*"))
    assert len(names) == 8
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "labkit") as gb:
        found = {a.name: a for a in gb.assignments}
        assert sorted(found) == names
        for name, a in found.items():
            assert a.max_score == 20, name           # 17 autograded + the 3-point memo
            manual = [c for nb in a.notebooks for c in nb.grade_cells
                      if c.cell_type == "markdown"]
            assert [c.max_score for c in manual] == [3], name
            assert sorted(nb.name + ".ipynb" for nb in a.notebooks) == sorted(
                p.name for p in (root / "release" / name).glob("*.ipynb"))
    assert _digest(root / "release") == release      # release/ is left as committed


def test_grade_works_after_init_and_says_why_there_is_nothing(initialised, capsys):
    root, _ = initialised
    capsys.readouterr()
    assert cli.main(["course", "grade", "lab1", "--root", str(root), "--no-isolation"]) == 0
    out = capsys.readouterr().out
    assert "nothing to grade: no submission of lab1_cloud_fleet" in out
    assert "nbgrader collect lab1_cloud_fleet" in out


def test_init_again_keeps_one_row_per_assignment(initialised):
    root, _ = initialised
    assert cli.main(["course", "init", "lab1_iphone", "--root", str(root)]) == 0
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "labkit") as gb:
        assert [a.name for a in gb.assignments].count("lab1_iphone") == 1
        assert gb.find_assignment("lab1_iphone").max_score == 20


def test_a_stale_release_is_refused_naming_build(tmp_path, capsys):
    root = _clone(tmp_path)
    nb = next((root / "release" / "lab1_iphone").glob("*.ipynb"))
    nb.write_text(nb.read_text().replace("Part A", "Part Z", 1))
    with pytest.raises(SystemExit) as stop:
        cli.main(["course", "init", "lab1_iphone", "--root", str(root)])
    assert stop.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"lab1_iphone/{nb.name}" in err and "run `labkit course build`" in err, err


def _config(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text("c = get_config()  # noqa: F821\n" + text)
    return root


def test_grade_options_come_from_nbgrader_config_and_the_flag_wins(tmp_path):
    root = _config(tmp_path, "c.LabkitGrade.workers = 5\nc.LabkitGrade.cell_timeout = 7\n"
                   "c.CourseDirectory.course_id = 'ml-sys'\n"
                   "c.CourseDirectory.db_url = 'sqlite:////srv/gb.db'\n")
    s = course_settings(root)
    assert (s.course_id, s.db_url) == ("ml-sys", "sqlite:////srv/gb.db")
    assert course_settings(root, "sqlite:////x.db").db_url == "sqlite:////x.db"
    from_file = grade_options(s.config)
    assert (from_file.workers, from_file.cell_timeout) == (5, 7)
    assert from_file.job_timeout == GradeOptions().job_timeout   # not set: the default
    flagged = grade_options(s.config, workers=2, cell_timeout=None, memory_mb=512)
    assert (flagged.workers, flagged.cell_timeout, flagged.memory_mb) == (2, 7, 512)


def test_a_bad_grade_option_in_the_config_names_it(tmp_path):
    root = _config(tmp_path, "c.LabkitGrade.job_timeout = 0\n")
    with pytest.raises(ValueError, match="job_timeout must be an integer >= 1"):
        grade_options(course_settings(root).config)
    root = _config(tmp_path / "b", "c.LabkitGrade.workers = 'many'\n")
    with pytest.raises(ValueError, match=r"c\.LabkitGrade"):
        grade_options(course_settings(root).config)
