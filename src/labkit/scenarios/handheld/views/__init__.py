"""The handheld's Lab 2 views: Part A on the decode roofline, Part B's walls as a
conversation grows, Part C's cloud hand-off, and the words of the header and Part D."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from labkit import ui as lw
from labkit.labs.accelerators.base import Part
from labkit.labs.accelerators.part_a import PartALM
from labkit.labs.accelerators.scenario_views import ScenarioViews
from labkit.labs.common import Spec
from labkit.plans.design import CONTEXT_BUCKETS
from labkit.plans.scenarios.common import CONTEXT_ABOVE, context_tokens
from labkit.scenarios.handheld.views.part_b import PartBHandheld
from labkit.scenarios.handheld.views.part_c import PartCHandheld
from labkit.tracks import Track

_SHRINK = "lower the weight or KV precision, or serve shorter conversations"


class HandheldViews(ScenarioViews):
    parts: ClassVar[Mapping[str, type[Part]]] = {
        "A": PartALM, "B": PartBHandheld, "C": PartCHandheld}
    # one phone has no TP, PP, CP or DP: its levers are precision and the conversation
    fixes: ClassVar[Mapping[str, str]] = {
        "memory": _SHRINK, "tpot": _SHRINK, "energy": _SHRINK}

    def question(self, track: Track) -> str:
        return ("Where does the phone's time go per token, what limits a longer "
                "conversation, and when should a request go to the cloud instead?")

    def part_d_hook(self, track: Track) -> str:
        return (f"Serve {context_tokens(track):,}-token conversations on the phone within "
                "its memory, TPOT, TTFT, quality and battery budgets, spending as little "
                "energy as possible.")

    def part_d_prediction(self, track: Track) -> Spec:
        q = (f"{lw.esc(track.label)}: at any precision that keeps quality, what is the "
             "longest conversation the phone can serve within memory, TPOT, TTFT and the "
             "battery budget?")
        return q, [(lab, lab) for lab in
                   [b for _, b in CONTEXT_BUCKETS] + [CONTEXT_ABOVE, "none fits"]]


VIEWS = HandheldViews()
