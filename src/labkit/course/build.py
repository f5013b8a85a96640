"""``labkit course build [--check]``: regenerate ``source/`` from the lab specs and
``release/`` with the real ``nbgrader generate_assignment``; ``--check`` rebuilds in a
scratch copy and reports every file that differs from what is committed.

The labs are :data:`labkit.labs.LABS`; each has its spec ``course/labs/<id>.py``, whose
``build_notebook(track_id)`` renders the source notebook for one track. The tracks are
every registered track (:data:`labkit.tracks.TRACKS`, including any an instructor
registered) unless ``tracks`` (``--tracks``) names some; ``out`` (``--out``) builds into
another course folder instead of the repository.
"""

from __future__ import annotations

import filecmp
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import nbformat

from labkit import tracks as _tracks
from labkit.labs.info import LabInfo
from labkit.labs.registry import LABS

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

    @property
    def lab(self) -> LabInfo:
        return LABS[self.lab_id]


def find_root(start: Path | None = None) -> Path:
    """The course repository root: the nearest parent holding ``course/labs``."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / LABS_DIR).is_dir():
            return candidate
    raise ValueError(f"root: no course/labs directory at or above {here}; run from the "
                     "course repository (a clone of it) or pass --root PATH")


def load_spec(root: Path, lab: str | LabInfo) -> ModuleType:
    """Import a lab's spec ``course/labs/<id>.py`` (instructor material, not installed)."""
    info = LABS.get_lab(lab)
    path = root / LABS_DIR / f"{info.id}.py"
    if not path.is_file():
        raise ValueError(f"lab {info.id}: no spec {path}; restore it (git checkout -- "
                         f"{LABS_DIR}/{info.id}.py)")
    spec = importlib.util.spec_from_file_location(f"labkit_course_{info.id}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"lab spec {path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_labs(root: Path, labs: Sequence[str | LabInfo] | None = None
              ) -> list[tuple[LabInfo, ModuleType]]:
    """(lab, spec) for ``labs`` (default: every lab in :data:`~labkit.labs.LABS`).

    A spec ``course/labs/lab*.py`` that is not in the registry is an error, not skipped:
    its notebooks would import a lab package that does not exist.
    """
    unknown = sorted(p.stem for p in (root / LABS_DIR).glob("lab*.py") if p.stem not in LABS)
    if unknown:
        raise ValueError(f"course/labs: {', '.join(unknown)} not in labkit.labs.LABS "
                         f"(have: {', '.join(LABS)})")
    chosen = [LABS.get_lab(x) for x in labs] if labs is not None else list(LABS.values())
    return [(info, load_spec(root, info)) for info in chosen]


def track_ids(tracks: Sequence[str] | None = None) -> list[str]:
    """``tracks`` checked against the track registry, or every registered track."""
    if tracks is None:
        return list(_tracks.TRACKS)
    return [_tracks.get_track(t).id for t in tracks]


def assignments(root: Path, labs: Sequence[str | LabInfo] | None = None,
                tracks: Sequence[str] | None = None
                ) -> Iterator[tuple[Assignment, ModuleType]]:
    """Every (lab, track) assignment to build, with its lab's spec."""
    ids = track_ids(tracks)
    for info, spec in load_labs(root, labs):
        for track_id in ids:
            yield Assignment(info.id, track_id, info.module), spec


def write_source(root: Path, a: Assignment, spec: ModuleType) -> Path:
    """Write ``source/<lab>_<track>/<notebook>.ipynb`` for one assignment."""
    nb = spec.build_notebook(a.track_id)
    nbformat.validate(nb)
    folder = root / "source" / a.name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    path = folder / a.lab.notebook
    nbformat.write(nb, path)
    return path


def write_sources(root: Path, labs: Sequence[str | LabInfo] | None = None,
                  tracks: Sequence[str] | None = None) -> list[Assignment]:
    """Write the source notebook of every lab and track (or of ``labs`` x ``tracks``)."""
    written = []
    for a, spec in assignments(root, labs, tracks):
        write_source(root, a, spec)
        written.append(a)
    return written


def nbgrader(root: Path, *args: str,
             db_url: str | None = None) -> subprocess.CompletedProcess[str]:
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


def generate_assignments(root: Path, names: Sequence[str], db_url: str) -> None:
    """nbgrader's own generate_assignment for each of ``names`` (``source/`` into
    ``release/`` and the gradebook ``db_url``) with the course's nbgrader configuration,
    in this process: one nbgrader import for every assignment, where the ``nbgrader``
    command pays it (about 2 s of CPU) once each."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from labkit.course.config import course_settings
    from labkit.course.worker import ensure_bin_on_path

    ensure_bin_on_path()  # nbgrader runs `alembic` when it creates a gradebook
    settings = course_settings(root, db_url)
    coursedir = CourseDirectory(config=settings.config, root=str(settings.root),
                                course_id=settings.course_id, db_url=db_url)
    api = NbGraderAPI(coursedir=coursedir, config=settings.config)
    for name in names:
        result = api.generate_assignment(name, force=True, create=True)
        if not result.get("success"):
            raise RuntimeError(f"generate_assignment {name} failed:\n{result.get('log')}\n"
                               f"{result.get('error')}")


def generate_release(root: Path, items: list[Assignment]) -> None:
    """``nbgrader generate_assignment`` for each assignment into ``release/``."""
    release = root / "release"
    for a in items:
        if (release / a.name).exists():
            shutil.rmtree(release / a.name)
    with tempfile.TemporaryDirectory(prefix="labkit-gradebook-") as tmp:
        generate_assignments(root, [a.name for a in items],
                             f"sqlite:///{Path(tmp) / 'gradebook.db'}")


def new_course_root(repo: Path, dest: Path) -> Path:
    """A course folder at ``dest`` with the repository's ``course/`` (specs, nbgrader
    configuration) and root ``nbgrader_config.py``, ready to :func:`build` into."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(repo / "course", dest / "course", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(repo / "nbgrader_config.py", dest / "nbgrader_config.py")
    return dest


def build(root: Path, labs: Sequence[str | LabInfo] | None = None,
          tracks: Sequence[str] | None = None, out: Path | None = None) -> list[Assignment]:
    """Regenerate the source and release notebooks of ``labs`` x ``tracks`` (default: every
    lab and registered track) in place, or in the course folder ``out`` (made from
    ``root`` by :func:`new_course_root` if it is another folder)."""
    # Unknown labs or tracks fail here, before any file is written.
    labs = [LABS.get_lab(x) for x in labs] if labs is not None else None
    tracks = track_ids(tracks)
    if out is not None and out.resolve() != root.resolve():
        root = new_course_root(root, out)
    items = write_sources(root, labs, tracks)
    generate_release(root, items)
    return items


def build_lab(root: Path, lab: str | LabInfo, track: str,
              out: Path | None = None) -> Assignment:
    """Build one lab for one track: ``source/`` and ``release/`` of ``<lab>_<track>``."""
    (item,) = build(root, [lab], [track], out)
    return item


def _tree(folder: Path) -> set[Path]:
    if not folder.exists():
        return set()
    return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()}


def stale_files(root: Path) -> list[str]:
    """Rebuild in a scratch copy; return the generated files that differ from ``root``."""
    with tempfile.TemporaryDirectory(prefix="labkit-build-check-") as tmp:
        scratch = new_course_root(root, Path(tmp))
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
