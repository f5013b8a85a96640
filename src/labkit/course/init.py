"""``labkit course init``: put the course's assignments into a gradebook, on a fresh clone.

``release/`` is committed (``labkit course build`` makes it), so ``nbgrader
generate_assignment NAME`` on a clone prints "Skipping existing assignment" and leaves the
gradebook empty. :func:`init_gradebook` runs nbgrader's own ``generate_assignment``
(:class:`nbgrader.apps.api.NbGraderAPI`, ``force`` and ``create``) for every assignment of
``source/`` into the gradebook, writing the student version into a scratch folder instead
of ``release/``: the gradebook gets every assignment, notebook and graded cell (with its
points) exactly as ``generate_assignment`` records them, and ``release/`` is left as
committed. The scratch copy is then compared with ``release/``: a difference means the
committed release is stale. Running it again updates the same rows (nbgrader's
``update_or_create``); a due date set with ``nbgrader db assignment add`` is kept.
"""

from __future__ import annotations

import filecmp
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from labkit.course.config import CourseSettings
from labkit.course.gradebook import GradeError, open_gradebook, parse_url, shown


@dataclass(frozen=True)
class Registered:
    """One assignment as the gradebook holds it after :func:`init_gradebook`."""

    name: str
    notebooks: tuple[str, ...]
    max_score: float          # points: autograded cells plus manually graded answers
    manual_max: float         # points graded by a person (the memo)


def source_assignments(root: Path) -> list[str]:
    """Every assignment folder of ``source/`` (``<lab>_<track>``), sorted."""
    folder = Path(root) / "source"
    return sorted(p.name for p in folder.glob("*_*") if p.is_dir()) if folder.is_dir() else []


def _differences(generated: Path, committed: Path) -> list[str]:
    """Files of one assignment that differ between the scratch release and ``release/``."""
    want = {p.relative_to(generated) for p in generated.rglob("*") if p.is_file()}
    have = {p.relative_to(committed) for p in committed.rglob("*") if p.is_file()
            and ".ipynb_checkpoints" not in p.parts} if committed.is_dir() else set()
    return [str(rel) for rel in sorted(want | have)
            if rel not in want or rel not in have
            or not filecmp.cmp(generated / rel, committed / rel, shallow=False)]


def _generate(settings: CourseSettings, names: Sequence[str], scratch: Path) -> None:
    """nbgrader's generate_assignment for ``names`` into the gradebook, release in
    ``scratch``; a GradeError with nbgrader's last log line on the first failure."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from labkit.course.worker import ensure_bin_on_path

    ensure_bin_on_path()  # nbgrader runs `alembic` when it creates a gradebook
    coursedir = CourseDirectory(config=settings.config, root=str(settings.root),
                                course_id=settings.course_id, db_url=settings.db_url,
                                release_directory=str(scratch))
    api = NbGraderAPI(coursedir=coursedir, config=settings.config)
    for name in names:
        result = api.generate_assignment(name, force=True, create=True)
        if not result.get("success"):
            lines = [line for line in str(result.get("log") or result.get("error") or "")
                     .splitlines() if line.startswith("[ERROR]")]
            detail = lines[0].removeprefix("[ERROR] ") if lines else "unknown error"
            raise GradeError(f"nbgrader generate_assignment {name} into {shown(settings.db_url)}"
                             f" failed: {detail}; rebuild source/{name} with `labkit course "
                             f"build --labs {name.split('_', 1)[0]}`, then run `labkit course "
                             "init` again")


def registered(db_url: str, course_id: str, names: Sequence[str]) -> list[Registered]:
    """The gradebook's record of ``names``: notebooks and points (total and manual)."""
    out = []
    with open_gradebook(db_url, course_id) as gb:
        for name in names:
            a = gb.find_assignment(name)
            manual = sum(cell.max_score for nb in a.notebooks for cell in nb.grade_cells
                         if cell.cell_type == "markdown")
            out.append(Registered(name, tuple(sorted(nb.name for nb in a.notebooks)),
                                  float(a.max_score), float(manual)))
    return out


def init_gradebook(settings: CourseSettings,
                   names: Sequence[str] | None = None) -> list[Registered]:
    """Register ``names`` (default: every assignment of ``source/``) in the gradebook of
    ``settings`` through nbgrader's generate_assignment, leaving ``release/`` untouched.

    Raises GradeError when nbgrader fails, and after registering when the committed
    ``release/`` differs from what ``source/`` generates (students would get notebooks
    whose cells the gradebook does not hold)."""
    parse_url(settings.db_url)
    root = settings.root
    names = list(names) if names is not None else source_assignments(root)
    if not names:
        raise GradeError(f"no assignment under {root / 'source'}: run `labkit course build` "
                         "first")
    missing = [n for n in names if not (root / "source" / n).is_dir()]
    if missing:
        raise GradeError(f"no source/{missing[0]} under {root}: run `labkit course build`")
    if parse_url(settings.db_url).get_backend_name() == "sqlite":
        Path(str(parse_url(settings.db_url).database)).parent.mkdir(parents=True,
                                                                    exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="labkit-init-") as tmp:
        _generate(settings, names, Path(tmp))
        stale = {n: d for n in names
                 if (d := _differences(Path(tmp) / n, root / "release" / n))}
    if stale:
        first, files = next(iter(stale.items()))
        raise GradeError(f"release/ is stale: {', '.join(f'{first}/{f}' for f in files[:3])} "
                         f"differ{'s' if len(files) == 1 else ''} from what source/ "
                         f"generates ({len(stale)} assignment(s)); run `labkit course build`, "
                         "commit, then `labkit course init` again")
    return registered(settings.db_url, settings.course_id, names)


def require_registered(db_url: str, course_id: str, names: Sequence[str]) -> None:
    """A GradeError naming ``labkit course init`` unless the gradebook holds ``names``."""
    from sqlalchemy import create_engine, inspect
    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.pool import NullPool

    url = parse_url(db_url)
    fix = f"run `labkit course init --db {shown(db_url)}` first"
    if url.get_backend_name() == "sqlite" and not Path(str(url.database)).exists():
        raise GradeError(f"no gradebook at {db_url}: {fix}")
    try:
        engine = create_engine(url, poolclass=NullPool)
    except ImportError:
        return  # check_gradebook names the missing driver
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
    except SQLAlchemyError:
        return  # check_gradebook says why the database does not answer
    finally:
        engine.dispose()
    if "assignment" not in tables:
        raise GradeError(f"no gradebook at {shown(db_url)} (no nbgrader tables): {fix}")
    with open_gradebook(db_url, course_id) as gb:
        known = {a.name for a in gb.assignments}
    absent = [n for n in names if n not in known]
    if absent:
        raise GradeError(f"assignment {absent[0]!r} is not in the gradebook {shown(db_url)} "
                         f"(known: {', '.join(sorted(known)) or 'none'}): {fix}")
