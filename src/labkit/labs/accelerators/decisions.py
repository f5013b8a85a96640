"""Each Lab 2 part's task judged at one setting (:class:`labkit.labs.common.Decision`),
for the parts every scenario shares (A's roofline, D's design challenge); a scenario's own
Parts B and C state theirs in their views. Each function is set on its part's class as its
``_decision`` method and reads the same model the part renders."""

from __future__ import annotations

from typing import Any

from labkit.labs.common import Decision, Settings
from labkit.labs.parts import AS_RELEASED_BITS
from labkit.plans.design import Config, design_check


def d_start(track: Any, d0: Config) -> Config:
    """Where Part D's controls start: the scenario's defaults, or -- where those already
    meet every constraint -- the same design with the weights as released
    (:data:`AS_RELEASED_BITS`), if that fails one (a candidate under review)."""
    if "weight_bits" not in d0 or not design_check(track, d0).feasible:
        return dict(d0)
    released = {**d0, "weight_bits": AS_RELEASED_BITS}
    return released if not design_check(track, released).feasible else dict(d0)


def part_d(part: Any, s: Settings) -> Decision:
    """Every constraint of the design check at once."""
    last = getattr(part, "last_check", None)   # this move's refresh has checked it already
    chk = last[1] if last is not None and last[0] == dict(s) else part.check(s)
    names = ", ".join(n.replace("_", " ") for n in chk.constraints)
    standing = ("every constraint passes" if chk.feasible else
                "fails: " + ", ".join(n.replace("_", " ") for n in chk.failed))
    start = ("" if part.start == part.defaults else
             f"The controls start at the model as released ({AS_RELEASED_BITS}-bit weights).")
    return Decision(f"a design that meets every constraint ({names})", chk.feasible, standing,
                    start)
