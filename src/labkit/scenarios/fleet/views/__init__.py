"""The fleet's Lab 2 views: Part A on the decode roofline, Part B's three-axis sizing,
Part C's parallel layouts, and the words of the header and Part D."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from labkit import ui as lw
from labkit.core.format import fmt_count, fmt_pct, fmt_time
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.part_a import PartALM
from labkit.labs.accelerators.scenario_views import ScenarioViews
from labkit.labs.common import Spec
from labkit.plans.design import DEVICE_BUCKETS, fleet_users
from labkit.plans.scenarios.common import DEVICES_ABOVE, context_tokens
from labkit.registries.hardware import get_hardware
from labkit.scenarios.fleet.views.part_b import PartBFleet
from labkit.scenarios.fleet.views.part_c import PartCFleet
from labkit.tracks import Track


class FleetViews(ScenarioViews):
    parts: ClassVar[Mapping[str, type[Part]]] = {
        "A": PartALM, "B": PartBFleet, "C": PartCFleet}
    reference_search = (
        "the fewest devices over every layout of labkit's parallelism table at every "
        "precision pair that keeps quality, each checked with prefill on its replicas, TTFT "
        "and the utilisation cap (ties: lower TPOT)")

    def question(self, track: Track) -> str:
        hw = get_hardware(track.hardware_id)
        return (f"How many {hw.name} devices do {fleet_users(track):,} live conversations "
                "need, which axis sets that number, and how should each replica be sharded?")

    def part_d_hook(self, track: Track) -> str:
        hw = get_hardware(track.hardware_id)
        ttft = ("" if track.ttft_slo_s is None
                else f", first token within {fmt_time(track.ttft_slo_s)}")
        return (f"The target: {fleet_users(track):,} concurrent conversations at "
                f"{context_tokens(track):,} tokens, TPOT within {fmt_time(track.slo_s)}{ttft}, "
                f"each request's prefill on the same replicas and every replica at most "
                f"{fmt_pct(track.max_utilisation)} busy, quality loss within "
                f"{fmt_count(track.max_quality_loss_pct)} "
                f"{'point' if track.max_quality_loss_pct == 1 else 'points'}, inside "
                f"{track.budget_text}/day. Meet it with the fewest {hw.name} devices.")

    def part_d_prediction(self, track: Track) -> Spec:
        hw = get_hardware(track.hardware_id)
        ttft = ("" if track.ttft_slo_s is None
                else f", first token within {fmt_time(track.ttft_slo_s)}")
        q = (f"{lw.esc(track.label)}: {fleet_users(track):,} users at "
             f"{context_tokens(track):,} tokens within {fmt_time(track.slo_s)} per token{ttft}, "
             f"prefill on the same replicas, replicas at most "
             f"{fmt_pct(track.max_utilisation)} busy, inside the budget, at any precision "
             f"that keeps quality. How many {lw.esc(hw.name)} devices does the smallest "
             "design need?")
        labels = [b for _, b in DEVICE_BUCKETS] + [DEVICES_ABOVE]
        return q, [(f"{lab} devices" if lab[0].isdigit() else lab.capitalize(), lab)
                   for lab in labels] + [("No design fits the budget", "none fits")]


VIEWS = FleetViews()
