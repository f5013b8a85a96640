"""Each Lab 2 part's task judged at one setting (:class:`labkit.labs.common.Decision`),
for the parts every scenario shares (A's roofline, D's design challenge); a scenario's own
Parts B and C state theirs in their views. Each function is set on its part's class as its
``_decision`` method and reads the same model the part renders."""

from __future__ import annotations

from typing import Any

from labkit.labs.common import Decision, Settings


def part_d(part: Any, s: Settings) -> Decision:
    """Every constraint of the design check at once."""
    chk = part.check(s)
    names = ", ".join(n.replace("_", " ") for n in chk.constraints)
    standing = ("every constraint passes" if chk.feasible else
                "fails: " + ", ".join(n.replace("_", " ") for n in chk.failed))
    return Decision(f"a design that meets every constraint ({names})", chk.feasible, standing)
