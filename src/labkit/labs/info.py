"""Every lab's identity in one place: :class:`LabInfo` and the :data:`LABS` registry.

A lab is written once as a package ``labkit.labs.<module>`` (the widgets, reports and
synthesis students run) and once as an instructor spec ``course/labs/<id>.py`` (the
nbgrader notebook). Both read their id, title, time estimate, objectives, part titles and
report file names from the lab's :class:`LabInfo` (``labkit.labs.<module>.info.INFO``), and
every list of labs -- the command line, ``labkit course build``, the demo course and the
tests -- iterates :data:`LABS`. Adding a lab is: a package with an ``info.INFO`` and a
``lab.Lab``, its spec ``course/labs/<id>.py``, and one line in :data:`LABS`.

This module imports only the lab packages' ``info`` modules (plain data); the lab classes,
with their widget stacks, are imported on demand by :meth:`LabInfo.lab_class`.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Protocol

from labkit import scenarios as folders
from labkit.labs.parts import PARTS
from labkit.tracks import Track


class LabObject(Protocol):
    """What :meth:`LabInfo.lab` returns (a :class:`labkit.labs.session.LabBase`), named
    here as a protocol so this plain-data module imports no lab code."""

    info: ClassVar[LabInfo]

    def __init__(self, track_id: str | Track, /, *args: Any, **kwargs: Any) -> None: ...

    def part(self, letter: str) -> Any: ...

    def parts(self) -> list[Any]: ...

ANY_SCENARIO = "*"
REPORT_SCHEMA = "labkit-report"
REPORT_VERSION = 1
_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def _frozen(mapping: Mapping[str, object]) -> Mapping[str, object]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class LabInfo:
    """One lab's identity: what both its widgets and its nbgrader notebook say about it.

    ``id`` is the answer-store namespace, the design-ledger lab and the prefix of every
    assignment (``<id>_<track>``) and grade id; ``module`` names the package
    (``labkit.labs.<module>``) and the notebook file (``<module>.ipynb``).
    ``part_minutes`` are (low, high) minutes per part letter; the lab's total
    (:attr:`minutes`) is derived from them and ``synthesis_minutes``. ``objectives`` holds
    the lab's own learning objectives under the key ``"*"`` (or nothing): they serve every
    deployment scenario whose folder's ``about.OBJECTIVES`` has no entry for this lab
    (:mod:`labkit.scenarios`). ``memo_brief`` is the one memo brief the synthesis widget and
    the notebook's memo cell both print (plain text, from the track's story).
    """

    id: str
    number: int
    title: str
    module: str
    part_titles: Mapping[str, str]
    part_minutes: Mapping[str, tuple[int, int]]
    objectives: Mapping[str, tuple[str, ...]]
    report_md: str
    report_json: str
    memo_brief: Callable[[Track], str]
    synthesis_minutes: int = 5
    report_schema: str = REPORT_SCHEMA
    report_version: int = REPORT_VERSION

    def __post_init__(self) -> None:
        for name, mapping in (("part_titles", self.part_titles),
                              ("part_minutes", self.part_minutes)):
            if tuple(mapping) != PARTS:
                raise ValueError(f"{name} of {self.id} must cover parts {', '.join(PARTS)} in "
                                 f"order; got {', '.join(mapping) or 'none'}")
        for letter, (lo, hi) in self.part_minutes.items():
            if not 0 < lo <= hi:
                raise ValueError(f"part_minutes[{letter!r}] of {self.id} must be 0 < low <= "
                                 f"high; got {(lo, hi)}")
        if set(self.objectives) - {ANY_SCENARIO} or not all(self.objectives.values()):
            raise ValueError(f"objectives of {self.id} must be {{{ANY_SCENARIO!r}: (one or "
                             "more, ...)}} or empty: a scenario's own objectives are in its "
                             "folder's about.OBJECTIVES")
        object.__setattr__(self, "part_titles", _frozen(self.part_titles))
        object.__setattr__(self, "part_minutes", _frozen(self.part_minutes))
        object.__setattr__(self, "objectives",
                           _frozen({k: tuple(v) for k, v in self.objectives.items()}))

    # -- names ---------------------------------------------------------------------------
    @property
    def heading(self) -> str:
        """``"Lab 1 · The Inference Economy"``: the notebook's title and the banners' kicker."""
        return f"Lab {self.number} · {self.title}"

    @property
    def notebook(self) -> str:
        """The notebook file of every assignment of this lab (``<module>.ipynb``)."""
        return f"{self.module}.ipynb"

    def assignment(self, track_id: str) -> str:
        """The nbgrader assignment of this lab for one track: ``<id>_<track>``."""
        return f"{self.id}_{track_id}"

    # -- time ----------------------------------------------------------------------------
    @property
    def minutes(self) -> tuple[int, int]:
        """(low, high) minutes for the whole lab: its parts plus the synthesis, widened to
        multiples of five (an estimate, not a stopwatch)."""
        lo = sum(m[0] for m in self.part_minutes.values()) + self.synthesis_minutes
        hi = sum(m[1] for m in self.part_minutes.values()) + self.synthesis_minutes
        return 5 * (lo // 5), 5 * math.ceil(hi / 5)

    @property
    def minutes_text(self) -> str:
        """``"45-55 minutes"``."""
        lo, hi = self.minutes
        return f"{lo} minutes" if lo == hi else f"{lo}-{hi} minutes"

    @property
    def time_estimate(self) -> str:
        """The header banner's time line: the total (:attr:`minutes_text`, the same figure
        the notebook's header shows), then each part's minutes and the synthesis -- the
        parts' ranges plus the synthesis add up to a span inside the total."""
        lo = min(m[0] for m in self.part_minutes.values())
        hi = max(m[1] for m in self.part_minutes.values())
        each = f"{lo}" if lo == hi else f"{lo}-{hi}"
        count = _WORDS.get(len(self.part_minutes), str(len(self.part_minutes)))
        per_part = ", ".join(f"{p} {self._span(p)}" for p in self.part_minutes)
        return (f"{self.minutes_text}: {count} parts of {each} minutes ({per_part}), "
                f"then a {self.synthesis_minutes}-minute synthesis")

    def _span(self, part: str) -> str:
        lo, hi = self.part_minutes[part]
        return f"{lo}" if lo == hi else f"{lo}-{hi}"

    @property
    def part_minutes_text(self) -> Mapping[str, str]:
        """Per part letter, the banner's ``"10-12 min"``."""
        return MappingProxyType({p: f"{self._span(p)} min" for p in self.part_minutes})

    # -- objectives ----------------------------------------------------------------------
    def objectives_for(self, track: str | Track) -> tuple[str, ...]:
        """The learning objectives a student on ``track`` reads: its scenario's own for
        this lab (the scenario folder's ``about.OBJECTIVES``), else the lab's."""
        from labkit.plans.design import scenario

        own = folders.piece(scenario(track), "about").OBJECTIVES.get(self.id)
        if own:
            return tuple(own)
        if ANY_SCENARIO not in self.objectives:
            raise ValueError(f"lab {self.id} has no objectives for track {track!r}")
        return self.objectives[ANY_SCENARIO]

    # -- code ----------------------------------------------------------------------------
    def lab_class(self) -> type[LabObject]:
        """The lab's ``Lab`` class, imported on first use from ``labkit.labs.<module>``."""
        cls: type[LabObject] = importlib.import_module(f"labkit.labs.{self.module}.lab").Lab
        return cls

    def lab(self, track: str | Track, **kwargs: Any) -> LabObject:
        """``lab_class()(track, **kwargs)``."""
        return self.lab_class()(track, **kwargs)


def lazy_lab_exports(package: str) -> Callable[[str], object]:
    """A module ``__getattr__`` for a lab package: ``Lab`` (from ``<package>.lab``) and
    ``answer_key`` load the widget stack on first use, so :data:`labkit.labs.LABS` (which
    reads only the package's ``info``) imports no widgets."""
    homes = {"Lab": f"{package}.lab", "answer_key": "labkit.labs.common"}

    def module_getattr(name: str) -> object:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(homes[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return module_getattr
