"""The course's labs: :data:`LABS`, id -> :class:`~labkit.labs.info.LabInfo`, in teaching order.

Built from each lab package's ``info`` module (plain data, no widgets); the one list of
labs the CLI, the demo, ``course build`` and the tests read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from labkit.core.lookup import lookup
from labkit.labs.accelerators.info import INFO as LAB2
from labkit.labs.inference_economy.info import INFO as LAB1
from labkit.labs.info import LabInfo


class LabRegistry(Mapping[str, LabInfo]):
    """The course's labs in teaching order: id -> :class:`LabInfo` (read-only)."""

    def __init__(self, *infos: LabInfo) -> None:
        ids = [i.id for i in infos]
        if len(set(ids)) != len(ids):
            raise ValueError(f"lab ids must be unique; got {ids}")
        modules = [i.module for i in infos]
        if len(set(modules)) != len(modules):
            raise ValueError(f"lab modules must be unique; got {modules}")
        self._by_id = {i.id: i for i in infos}

    def __getitem__(self, lab_id: str) -> LabInfo:
        return self._by_id[lab_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def __repr__(self) -> str:
        return f"LabRegistry({', '.join(self._by_id)})"

    def get_lab(self, lab: str | LabInfo) -> LabInfo:
        """A lab by id (``"lab1"``) or module (``"inference_economy"``); a bad name raises
        ``ValueError`` with close matches."""
        if isinstance(lab, LabInfo):
            return lab
        for info in self._by_id.values():
            if lab == info.module:
                return info
        return lookup("lab", self._by_id, lab)

    def for_assignment(self, assignment: str) -> tuple[LabInfo, str]:
        """(lab, track id) of an assignment name ``<lab>_<track>``."""
        lab_id, sep, track = assignment.partition("_")
        if not sep or not track:
            raise ValueError(f"assignment must be <lab>_<track>, e.g. lab1_iphone; got "
                             f"{assignment!r}")
        return self.get_lab(lab_id), track


LABS: LabRegistry = LabRegistry(LAB1, LAB2)


def get_lab(lab: str | LabInfo) -> LabInfo:
    """:meth:`LabRegistry.get_lab` on :data:`LABS`."""
    return LABS.get_lab(lab)
