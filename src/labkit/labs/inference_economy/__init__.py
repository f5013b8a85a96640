"""Lab 1, "The Inference Economy": parts A-D and the synthesis, one source for every track.

Every number comes from the plans layer (:func:`labkit.plans.economy.crossover_point`
and :func:`~labkit.plans.economy.event_cost`, :func:`labkit.plans.workload.session_point`
and :class:`~labkit.plans.workload.BatchingBench`, :func:`labkit.plans.serving.serving_plan`);
no part imports :mod:`labkit.physics`. Each part is a view (``part_x.py``) over a text
spec (``part_x_spec.py``); recovery hints are computed moves (:mod:`.hints`). Every
difference between the four tracks comes from track
data (units, hooks, defaults, limits), never from a branch on the track's id. Usage in a
notebook::

    from labkit.labs.inference_economy import Lab
    lab = Lab("cloud_fleet")
    lab.header()
    part = lab.part("A")
    part.banner(); part.predict; part.explore; part.reveal; part.math; part.checkpoint
    lab.synthesis()

Answers (predictions, checkpoints, the memo) are kept in an :class:`AnswerStore` file under
lab id ``"lab1"`` and keys ``"<track>.<part>.prediction"``, ``"<track>.<part>.checkpoint"``
and ``"<track>.memo"`` (see :func:`answer_key`), so they survive save, nbgrader collect and
autograde. Each control's callback recomputes only what depends on it (what does not is
precomputed when the part is built) and updates marks in one ``hold_sync()`` block.

Its identity (id, title, time, objectives, part titles, report files) is
:data:`~labkit.labs.inference_economy.info.INFO`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labkit.labs.inference_economy.info import (
    INFO,
    LAB_ID,
    LAB_TITLE,
    PART_TITLES,
    REPORT_JSON,
    REPORT_MD,
)
from labkit.labs.info import lazy_lab_exports

if TYPE_CHECKING:
    from labkit.labs.common import answer_key
    from labkit.labs.inference_economy.lab import Lab

__all__ = ["INFO", "LAB_ID", "LAB_TITLE", "PART_TITLES", "REPORT_JSON", "REPORT_MD", "Lab",
           "answer_key"]


__getattr__ = lazy_lab_exports(__name__)
