"""The toy scenario's views: the wearable's parts under the toy's own words."""

from labkit.labs.accelerators.part_a_cnn import PartACNN
from labkit.labs.accelerators.scenario_views import ScenarioViews
from labkit.scenarios.wearable.views.part_b import PartBWearable
from labkit.scenarios.wearable.views.part_c import PartCWearable


class ToyViews(ScenarioViews):
    parts = {"A": PartACNN, "B": PartBWearable, "C": PartCWearable}  # noqa: RUF012

    def question(self, track):
        return "Toy question: how often can the toy listen?"

    def part_d_hook(self, track):
        return "Toy Part D: meet every toy budget."

    def part_d_prediction(self, track):
        return "Toy prediction?", [("Every window", "every window"), ("None", "none fits")]


VIEWS = ToyViews()
