"""The wearable's Lab 2 views: Part A on the classic roofline, Part B's flash, SRAM and
battery, Part C's pipeline cut between ring and phone, and the words of the header and
Part D."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from labkit import ui as lw
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.part_a_cnn import PartACNN
from labkit.labs.accelerators.scenario_views import ScenarioViews
from labkit.labs.common import Spec
from labkit.plans.design import DUTY_BUCKETS
from labkit.scenarios.wearable.views.part_b import PartBWearable
from labkit.scenarios.wearable.views.part_c import PartCWearable
from labkit.tracks import Track


class WearableViews(ScenarioViews):
    parts: ClassVar[Mapping[str, type[Part]]] = {
        "A": PartACNN, "B": PartBWearable, "C": PartCWearable}

    def question(self, track: Track) -> str:
        return ("Is the spotter compute- or memory-bound, how often can it listen on this "
                "battery, and should the ring hand work to the phone?")

    def part_d_hook(self, track: Track) -> str:
        return ("Listen as often as the ring can afford: every constraint (flash, SRAM, "
                "deadline, accuracy, energy, coverage, link) at once, with the highest duty.")

    def part_d_prediction(self, track: Track) -> Spec:
        q = (f"{lw.esc(track.label)}: using any precision, cut point and BLE interval, what "
             "share of the windows can the ring afford to process within every constraint?")
        return q, [(lab, lab) for lab in
                   ["every window", *[b for _, b in reversed(DUTY_BUCKETS)], "none fits"]]


VIEWS = WearableViews()
