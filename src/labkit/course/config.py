"""The course's nbgrader configuration as labkit reads it, and ``c.LabkitGrade``.

nbgrader users set options in ``nbgrader_config.py``; ``labkit course`` reads the same
files nbgrader reads, in nbgrader's order (each later file wins): the Jupyter config
folders (``/etc/jupyter``, ``~/.jupyter``, ... from lowest to highest priority), then the
course root's ``nbgrader_config.py`` (which loads ``course/nbgrader_config.py``). From
them it takes ``CourseDirectory.course_id`` and ``CourseDirectory.db_url`` and the grade
options of :class:`LabkitGrade`::

    c.LabkitGrade.workers = 4          # local grading processes (0: cores + 1)
    c.LabkitGrade.cell_timeout = 60    # seconds per cell
    c.LabkitGrade.job_timeout = 900    # seconds per submission
    c.LabkitGrade.memory_mb = 3072     # MiB per student kernel
    c.LabkitGrade.scheduler = "tcp://dask-scheduler:8786"

A command-line flag wins over the file (:func:`grade_options`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traitlets import Integer, Unicode
from traitlets.config import Config, Configurable
from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

if TYPE_CHECKING:
    from labkit.course.grade import GradeOptions

CONFIG_FILE = "nbgrader_config.py"
DEFAULT_COURSE_ID = "labkit"


class LabkitGrade(Configurable):
    """Options of ``labkit course grade`` (seconds, MiB), settable as ``c.LabkitGrade.*``."""

    workers = Integer(0, help="local grading worker processes; 0: one per core, plus one"
                      ).tag(config=True)
    cell_timeout = Integer(60, help="seconds a cell may run before its kernel is "
                           "interrupted").tag(config=True)
    job_timeout = Integer(900, help="seconds one submission may take before its worker "
                          "is killed").tag(config=True)
    memory_mb = Integer(3072, help="address-space limit of each student kernel, MiB"
                        ).tag(config=True)
    scheduler = Unicode("", help="a Dask scheduler to grade on (tcp://host:8786); empty: "
                        "the local pool").tag(config=True)


@dataclass(frozen=True)
class CourseSettings:
    """What labkit takes from the course's nbgrader configuration."""

    root: Path
    course_id: str
    db_url: str
    config: Config


def config_paths(root: Path) -> list[Path]:
    """The folders nbgrader reads ``nbgrader_config.py`` from, lowest priority first."""
    from jupyter_core.paths import jupyter_config_path

    return [*(Path(p) for p in reversed(jupyter_config_path())), Path(root).resolve()]


def load_config(root: Path) -> Config:
    """The merged nbgrader configuration of the course at ``root`` (later files win)."""
    merged = Config()
    for folder in config_paths(root):
        if not (folder / CONFIG_FILE).is_file():
            continue
        try:
            merged.merge(PyFileConfigLoader(CONFIG_FILE, path=str(folder)).load_config())
        except ConfigFileNotFound:
            continue
        except Exception as exc:
            raise ValueError(f"config: {folder / CONFIG_FILE} cannot be read ({exc}); fix "
                             "it, then check it with `nbgrader --help-all`") from None
    return merged


def course_settings(root: Path, db_url: str | None = None) -> CourseSettings:
    """Course id and gradebook URL of the course at ``root``: ``db_url`` (``--db``) if
    given, else ``c.CourseDirectory.db_url``, else nbgrader's default
    ``sqlite:///ROOT/gradebook.db``."""
    root = Path(root).resolve()
    cfg = load_config(root)
    section: Any = cfg.get("CourseDirectory", {})
    course_id = str(section.get("course_id") or DEFAULT_COURSE_ID)
    url = db_url or str(section.get("db_url") or "") or f"sqlite:///{root / 'gradebook.db'}"
    return CourseSettings(root, course_id, url, cfg)


def grade_options(config: Config, **flags: Any) -> GradeOptions:
    """:class:`~labkit.course.grade.GradeOptions` from ``c.LabkitGrade`` in ``config``,
    each overridden by the flag of the same name unless that flag is None."""
    from labkit.course.grade import GradeOptions

    try:
        grade = LabkitGrade(config=config)
    except Exception as exc:  # a wrong type in the file: traitlets' TraitError
        raise ValueError(f"c.LabkitGrade: {exc}; fix nbgrader_config.py") from None
    values: dict[str, Any] = {name: getattr(grade, name) for name in
                              ("workers", "cell_timeout", "job_timeout", "memory_mb")}
    values["scheduler"] = grade.scheduler or None
    values |= {k: v for k, v in flags.items() if v is not None}
    try:
        return GradeOptions(**values)
    except ValueError as exc:
        raise ValueError(f"{exc} (from c.LabkitGrade in nbgrader_config.py or the "
                         "command line)") from None
