"""Lab 2, "Accelerators": rooflines, capacity and parallelism -- parts A-D and the synthesis.

One source for every track. The parts teach the paper's section 5 (roofline B* and L*,
three-axis capacity planning, TP x CP x PP x DP x EP selection) on the track's own device
and model; what each part shows is chosen from the track's *data*, never its id:

* the model's architecture (``model.is_transformer``): the decode roofline (B*, L*, knee)
  or the classic roofline of a CNN pass;
* the deployment scenario (:func:`labkit.plans.design.scenario`): ``fleet``, ``handheld``,
  ``wearable`` or ``vehicle``; each has its Part B and Part C.

Usage in a notebook::

    from labkit.labs.accelerators import Lab, design_check
    lab = Lab("cloud_fleet")
    lab.header()
    part = lab.part("A")
    part.banner(); part.predict; part.explore; part.reveal; part.math; part.checkpoint
    lab.synthesis()
    design_check("cloud_fleet", {"weight_bits": 8, "kv_bits": 8, "tp": 8, "dp": 16})

Answers are kept in an :class:`~labkit.core.answers.AnswerStore` under lab id ``"lab2"`` and
keys ``"<track>.<part>.prediction"`` / ``"<track>.<part>.checkpoint"`` / ``"<track>.memo"``.
The synthesis reads the student's Lab 1 entry from the design ledger and records Lab 2's.
Part D's live check is :func:`labkit.plans.design.design_check`, the same function a grader
calls. Its identity (id, title, time, objectives per scenario, part titles, report files) is
:data:`~labkit.labs.accelerators.info.INFO`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labkit.labs.accelerators.info import (
    INFO,
    LAB_ID,
    LAB_TITLE,
    PART_TITLES,
    REPORT_JSON,
    REPORT_MD,
)
from labkit.labs.info import lazy_lab_exports
from labkit.plans.design import design_check, scenario

if TYPE_CHECKING:
    from labkit.labs.accelerators.lab import Lab
    from labkit.labs.common import answer_key

__all__ = ["INFO", "LAB_ID", "LAB_TITLE", "PART_TITLES", "REPORT_JSON", "REPORT_MD", "Lab",
           "answer_key", "design_check", "scenario"]


__getattr__ = lazy_lab_exports(__name__)
