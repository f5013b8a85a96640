"""The vehicle's Lab 2 views: Part A on the classic roofline, Part B's cameras on one SoC,
Part C's two-SoC layouts, and the words of the header and Part D."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from labkit import ui as lw
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.part_a_cnn import PartACNN
from labkit.labs.accelerators.scenario_views import ScenarioViews
from labkit.labs.common import Spec
from labkit.scenarios.vehicle.views.part_b import PartBVehicle
from labkit.scenarios.vehicle.views.part_c import PartCVehicle
from labkit.tracks import Track


class VehicleViews(ScenarioViews):
    parts: ClassVar[Mapping[str, type[Part]]] = {
        "A": PartACNN, "B": PartBVehicle, "C": PartCVehicle}
    # a vehicle's SoCs split cameras or the model, not tensors
    fixes: ClassVar[Mapping[str, str]] = {
        "memory": "lower the weight precision, or split the cameras over two SoCs"}

    def question(self, track: Track) -> str:
        return ("How much headroom does one SoC have for cameras, and does a second SoC "
                "help the hard deadline?")

    def part_d_hook(self, track: Track) -> str:
        return ("Never miss a frame: deadline, throughput, memory, accuracy and energy at "
                "once, with the fewest SoCs.")

    def part_d_prediction(self, track: Track) -> Spec:
        q = (f"{lw.esc(track.label)}: with any precision and layout, how many SoCs does the "
             "smallest design that meets every constraint use?")
        return q, [("One SoC", "1"), ("Two SoCs", "2"), ("None fits", "none fits")]


VIEWS = VehicleViews()
