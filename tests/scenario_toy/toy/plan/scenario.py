"""The toy scenario: the wearable's constraints, claimed for tracks labelled "Toy ..."."""

from labkit.scenarios.wearable.plan.scenario import Wearable
from labkit.tracks import Track


class Toy(Wearable):
    id = "toy"
    label = "toy ring"
    order = 0  # asked before the built-in scenarios

    def applies_to(self, track: Track) -> bool:
        return super().applies_to(track) and track.label.startswith("Toy")


SCENARIO = Toy()
