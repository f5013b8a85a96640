"""What a deployment scenario's folder gives Lab 2's widgets (``views/__init__.py``'s
``VIEWS``, a :class:`ScenarioViews`): its Parts A-C, the stakeholder's question and Part D's
words. Part D itself is shared: its controls come from the scenario's design keys.

The lab asks :func:`views` for the track's scenario; no module outside a scenario's folder
compares against a scenario id (:mod:`labkit.scenarios`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from labkit import scenarios as folders

if TYPE_CHECKING:
    from labkit.labs.accelerators.base import Part
    from labkit.labs.common import Spec
    from labkit.tracks import Track


class ScenarioViews:
    """One scenario's views. Subclasses set :attr:`parts` (letters A-C to part classes) and
    implement the three texts; the rest has defaults."""

    parts: ClassVar[Mapping[str, type[Part]]]
    #: Part D's hint for a constraint no single control passes, where the scenario's levers
    #: differ from the generic ones (constraint name -> what to change)
    fixes: ClassVar[Mapping[str, str]] = {}
    #: how labkit's reference design is found, for Part D's math peek
    reference_search: ClassVar[str] = "an exhaustive search of the same controls"

    def question(self, track: Track) -> str:
        """The stakeholder's question the lab's header opens with."""
        raise NotImplementedError

    def part_d_hook(self, track: Track) -> str:
        """What Part D asks of the track (its numbers from the track's fields)."""
        raise NotImplementedError

    def part_d_prediction(self, track: Track) -> Spec:
        """Part D's prediction: the question and its options."""
        raise NotImplementedError


def views(scenario_id: str) -> ScenarioViews:
    """The ``VIEWS`` of scenario ``scenario_id``'s folder."""
    found = folders.piece(scenario_id, "views").VIEWS
    if not isinstance(found, ScenarioViews):
        raise ValueError(f"scenario {scenario_id!r}: views.VIEWS must be a ScenarioViews, "
                         f"got {found!r}")
    return found
