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
    c.LabkitGrade.cpus = 1.0           # CPU cores per student kernel
    c.LabkitGrade.checkpoint_credit = "correct"  # or "commit": completion credit
    c.LabkitGrade.scheduler = "tcp://dask-scheduler:8786"

:class:`LabkitGrade` is the one definition of each option (name, type, default, help,
bounds): ``GradeOptions`` checks its values with :func:`check_option` and the
``labkit course grade`` flags are made from it. A flag wins over the file
(:func:`grade_options`).

The rest of the configuration reaches each grading job as JSON data in its ``job.json``
(:func:`config_to_json`, :func:`config_from_json`): the worker starts nbgrader from the
course's own settings, as stock ``nbgrader autograde`` would.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traitlets import Float, Integer, Unicode
from traitlets.config import Config, Configurable
from traitlets.config.loader import ConfigFileNotFound, LazyConfigValue, PyFileConfigLoader
from traitlets.utils.importstring import import_item

from labkit.grading import CHECKPOINT_CREDITS

CONFIG_FILE = "nbgrader_config.py"
DEFAULT_COURSE_ID = "labkit"


class LabkitGrade(Configurable):
    """Options of ``labkit course grade`` (seconds, MiB), settable as ``c.LabkitGrade.*``.

    The one definition of each option: its bounds are the ``minimum`` (inclusive) or
    ``above`` (exclusive) tag, checked by :func:`check_option`."""

    workers = Integer(0, help="local grading worker processes; 0: one per core, plus one"
                      ).tag(config=True, minimum=0)
    cell_timeout = Integer(60, help="seconds a cell may run before its kernel is "
                           "interrupted").tag(config=True, minimum=1)
    job_timeout = Integer(900, help="seconds one submission may take before its worker "
                          "is killed").tag(config=True, minimum=1)
    memory_mb = Integer(3072, help="address-space limit of each student kernel, MiB"
                        ).tag(config=True, minimum=1)
    cpus = Float(1.0, help="CPU cores each student kernel may use").tag(config=True, above=0)
    scheduler = Unicode(None, allow_none=True, help="a Dask scheduler to grade on "
                        "(tcp://host:8786); unset or empty: the local pool").tag(config=True)
    checkpoint_credit = Unicode("correct", help="how a checkpoint earns its point: "
                                "'correct' (the first committed answer is the computed one) "
                                "or 'commit' (any committed answer: completion)"
                                ).tag(config=True, choices=CHECKPOINT_CREDITS)


def option_names() -> tuple[str, ...]:
    """The names of the options :class:`LabkitGrade` defines."""
    return tuple(LabkitGrade.class_own_traits(config=True))


def _trait(name: str) -> Any:
    return LabkitGrade.class_own_traits(config=True)[name]


def option_default(name: str) -> Any:
    """The default of ``c.LabkitGrade.<name>``."""
    return _trait(name).default_value


def option_help(name: str) -> str:
    """The help of ``c.LabkitGrade.<name>``."""
    return str(_trait(name).help)


def accepted(name: str) -> str:
    """What ``c.LabkitGrade.<name>`` accepts, in words: ``an integer >= 1``."""
    trait = _trait(name)
    kind = {"Int": "an integer", "Float": "a number"}.get(type(trait).__name__, "a string")
    if "choices" in trait.metadata:
        return "one of " + ", ".join(repr(c) for c in trait.metadata["choices"])
    if "above" in trait.metadata:
        return f"{kind} > {trait.metadata['above']:g}"
    if "minimum" in trait.metadata:
        return f"{kind} >= {trait.metadata['minimum']:g}"
    return kind


def check_option(name: str, value: Any) -> Any:
    """``value`` as ``c.LabkitGrade.<name>`` holds it (an int as a float for a number);
    a ValueError naming the option and what it accepts unless it fits type and bounds."""
    trait = _trait(name)
    if value is None and trait.allow_none:
        return None
    kind = type(trait).__name__
    number = isinstance(value, int | float) and not isinstance(value, bool)
    ok = (isinstance(value, int) and number if kind == "Int"
          else number and math.isfinite(value) if kind == "Float"
          else isinstance(value, str))
    if ok and kind == "Float":
        value = float(value)
    low, above = trait.metadata.get("minimum"), trait.metadata.get("above")
    if ok and ((low is not None and value < low) or (above is not None and value <= above)):
        ok = False
    if ok and "choices" in trait.metadata and value not in trait.metadata["choices"]:
        ok = False
    if not ok:
        raise ValueError(f"{name} must be {accepted(name)}, got {value!r}")
    return value


@dataclass(frozen=True)
class GradeOptions:
    """How to grade (``labkit.course.grade.grade``): the options of :class:`LabkitGrade`,
    their defaults and bounds taken from it, and three the run decides."""

    workers: int = option_default("workers")
    cell_timeout: int = option_default("cell_timeout")
    job_timeout: int = option_default("job_timeout")
    memory_mb: int = option_default("memory_mb")
    cpus: float = option_default("cpus")
    scheduler: str | None = option_default("scheduler")
    checkpoint_credit: str = option_default("checkpoint_credit")
    isolate: bool = True        # refuse to grade when the sandbox is unavailable
    force: bool = False         # regrade even what the journal shows as done
    progress: bool = True

    def __post_init__(self) -> None:
        for name in option_names():  # a new option without its field fails here, loudly
            object.__setattr__(self, name, check_option(name, getattr(self, name)))
        if not self.scheduler:
            object.__setattr__(self, "scheduler", None)  # "" in a config: the local pool

    @property
    def pool_size(self) -> int:
        """Workers to run. By default one more than the cores: a worker waiting for its
        kernel to start leaves a core idle (measured on 2 cores, 48 submissions, two runs,
        tests in the kernel: 2 workers 1.8-2.0x, 3 workers 2.2-2.3x the throughput of serial
        nbgrader; 24 submissions, tests in the judge: 2 workers 2.09x, 3 workers 2.10x)."""
        return self.workers or (os.cpu_count() or 1) + 1


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


def parse_option(name: str, text: str) -> Any:
    """``c.LabkitGrade.<name>`` from command-line text; a ValueError unless it fits."""
    kind = type(_trait(name)).__name__
    try:
        value = int(text) if kind == "Int" else float(text) if kind == "Float" else text
    except ValueError:
        raise ValueError(f"{name} must be {accepted(name)}, got {text!r}") from None
    return check_option(name, value)


def grade_options(config: Config, **flags: Any) -> GradeOptions:
    """:class:`GradeOptions` from ``c.LabkitGrade`` in ``config``, each overridden by the
    flag of the same name unless that flag is None."""
    try:
        grade = LabkitGrade(config=config)
    except Exception as exc:  # a wrong type in the file: traitlets' TraitError
        raise ValueError(f"c.LabkitGrade: {exc}; fix nbgrader_config.py") from None
    values: dict[str, Any] = {name: getattr(grade, name) for name in option_names()}
    values |= {k: v for k, v in flags.items() if v is not None}
    try:
        return GradeOptions(**values)
    except ValueError as exc:
        raise ValueError(f"{exc} (from c.LabkitGrade in nbgrader_config.py or the "
                         "command line)") from None


# -- the course's configuration, sent to each grading job ---------------------------------

JOB_CONFIG = "nbgrader_config"  # the key of job.json that holds it
_TAG = "__labkit_config__"      # marks a value JSON has no type for
# Never sent: the worker grades into its own snapshot, and a database URL may hold a password.
_NOT_SENT = ("CourseDirectory", "db_url")


def job_config(root: Path) -> dict[str, Any]:
    """The nbgrader configuration of the course at ``root`` as JSON data for a grading
    job (:func:`config_to_json`)."""
    return config_to_json(load_config(root))


def config_to_json(config: Config) -> dict[str, Any]:
    """``config`` as JSON data, for a worker that may run on another host (Dask): classes
    and functions travel as their import names (checked importable here), tuples, sets
    and ``c.X.y.append(...)`` values are tagged. A value that cannot travel is a
    ValueError naming the setting; ``c.CourseDirectory.db_url`` never travels."""
    data = _encode(config, "c")
    data.get(_NOT_SENT[0], {}).pop(_NOT_SENT[1], None)
    return data


def config_from_json(data: Mapping[str, Any]) -> Config:
    """The :class:`~traitlets.config.Config` that :func:`config_to_json` wrote."""
    return Config(_decode(dict(data)))


def _encode(value: Any, where: str) -> Any:
    if isinstance(value, LazyConfigValue):
        return {_TAG: "lazy", "extend": _encode(value._extend, where),
                "prepend": _encode(value._prepend, where),
                "inserts": _encode(value._inserts, where),
                "update": _encode(value._update, where)}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ValueError(f"config: {where} has keys that are not strings; a grading "
                             "worker cannot receive it")
        return {key: _encode(item, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [_encode(item, where) for item in value]
    if isinstance(value, tuple | set | frozenset):
        kind = ("tuple" if isinstance(value, tuple) else
                "frozenset" if isinstance(value, frozenset) else "set")
        return {_TAG: kind, "items": [_encode(v, where) for v in value]}
    if value is None or isinstance(value, str | int | float):
        return value
    return {_TAG: "import", "name": _import_name(value, where)}


def _import_name(value: Any, where: str) -> str:
    """The name a worker imports ``value`` (a class or function) by."""
    name = f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"
    try:
        same = import_item(name) is value
    except Exception:
        same = False
    if not same:
        raise ValueError(f"config: {where} = {value!r} cannot reach the grading workers: "
                         "they receive JSON and import classes and functions by name; "
                         "define it in a module they can import (installed, or on "
                         "PYTHONPATH), not in nbgrader_config.py, or give its import name "
                         "as a string")
    return name


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    tag = value.get(_TAG)
    if tag is None:
        return {key: _decode(item) for key, item in value.items()}
    if tag == "import":
        try:
            return import_item(value["name"])
        except Exception:  # left as its name: what nbgrader's settings accept, and a
            return value["name"]  # setting the job never uses costs it nothing
    if tag == "lazy":
        lazy = LazyConfigValue()
        lazy.extend(_decode(value["extend"]))
        lazy.prepend(_decode(value["prepend"]))
        for index, item in _decode(value["inserts"]):
            lazy.insert(index, item)
        if value["update"] is not None:
            lazy.update(_decode(value["update"]))
        return lazy
    kinds: dict[str, Callable[[list[Any]], Any]] = {"tuple": tuple, "set": set,
                                                   "frozenset": frozenset}
    return kinds[tag](_decode(value["items"]))
