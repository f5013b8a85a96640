"""``labkit course build [--check]``: regenerate ``source/`` from the lab specs and
``release/`` with the real ``nbgrader generate_assignment``; ``--check`` rebuilds in a
scratch copy and reports every file that differs from what is committed.
"""

from __future__ import annotations

import filecmp
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import nbformat

LABS_DIR = Path("course") / "labs"
GENERATED = ("source", "release")


@dataclass(frozen=True)
class Assignment:
    """One (lab, track) nbgrader assignment and the notebook it holds."""

    lab_id: str
    track_id: str
    notebook: str

    @property
    def name(self) -> str:
        return f"{self.lab_id}_{self.track_id}"


def find_root(start: Path | None = None) -> Path:
    """The course repository root: the nearest parent holding ``course/labs``."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / LABS_DIR).is_dir():
            return candidate
    raise ValueError(f"root: no course/labs directory at or above {here}")


def load_labs(root: Path) -> list[ModuleType]:
    """Import every lab spec ``course/labs/lab*.py`` (instructor material, not installed)."""
    specs = []
    for path in sorted((root / LABS_DIR).glob("lab*.py")):
        spec = importlib.util.spec_from_file_location(f"labkit_course_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ValueError(f"lab spec {path} cannot be imported")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        specs.append(module)
    return specs


def assignments(root: Path) -> Iterator[tuple[Assignment, ModuleType]]:
    for lab in load_labs(root):
        for track_id in lab.TRACKS:
            yield Assignment(lab.LAB_ID, track_id, lab.NOTEBOOK), lab


def write_sources(root: Path) -> list[Assignment]:
    """Write ``source/<lab>_<track>/<notebook>.ipynb`` for every lab and track."""
    written = []
    for a, lab in assignments(root):
        nb = lab.build_notebook(a.track_id)
        nbformat.validate(nb)
        folder = root / "source" / a.name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{a.notebook}.ipynb")
        written.append(a)
    return written


def nbgrader(root: Path, *args: str, db_url: str | None = None) -> subprocess.CompletedProcess:
    """Run the real ``nbgrader`` executable from this environment with the course config."""
    exe = Path(sys.executable).parent / "nbgrader"
    env = {**os.environ, "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = [str(exe), *args, f"--CourseDirectory.root={root}"]
    if db_url:
        cmd.append(f"--CourseDirectory.db_url={db_url}")
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def generate_release(root: Path, items: list[Assignment]) -> None:
    """``nbgrader generate_assignment`` for each assignment into ``release/``."""
    release = root / "release"
    for a in items:
        if (release / a.name).exists():
            shutil.rmtree(release / a.name)
    with tempfile.TemporaryDirectory(prefix="labkit-gradebook-") as tmp:
        db = f"sqlite:///{Path(tmp) / 'gradebook.db'}"
        for a in items:
            nbgrader(root, "generate_assignment", a.name, "--force", db_url=db)


def build(root: Path) -> list[Assignment]:
    """Regenerate every source and release notebook in place."""
    items = write_sources(root)
    generate_release(root, items)
    return items


def _tree(folder: Path) -> set[Path]:
    if not folder.exists():
        return set()
    return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()}


def stale_files(root: Path) -> list[str]:
    """Rebuild in a scratch copy; return the generated files that differ from ``root``."""
    with tempfile.TemporaryDirectory(prefix="labkit-build-check-") as tmp:
        scratch = Path(tmp)
        shutil.copytree(root / "course", scratch / "course")
        shutil.copy(root / "nbgrader_config.py", scratch / "nbgrader_config.py")
        for name in GENERATED:
            (scratch / name).mkdir()
            readme = root / name / "README.md"
            if readme.exists():
                shutil.copy(readme, scratch / name / "README.md")
        build(scratch)
        problems = []
        for name in GENERATED:
            want, have = _tree(scratch / name), _tree(root / name)
            for rel in sorted(want | have):
                label = f"{name}/{rel}"
                if rel not in have:
                    problems.append(f"missing: {label}")
                elif rel not in want:
                    problems.append(f"not generated (remove it): {label}")
                elif not filecmp.cmp(scratch / name / rel, root / name / rel, shallow=False):
                    problems.append(f"stale: {label}")
        return problems
