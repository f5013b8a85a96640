"""What every lab part shares without widgets: its letters and what committing earns.

:data:`PARTS` are the part letters every lab uses, in order (tracks key their hooks by
them). :data:`PREDICTION_POINTS` / :data:`CHECKPOINT_POINTS` are the points of a committed
prediction (completion credit: an honest guess costs nothing) and of a checkpoint (for the
right first answer, or completion where ``c.LabkitGrade.checkpoint_credit = "commit"``):
the widgets say it (:mod:`labkit.labs.common`) and the course's ``*-predict-done`` /
``*-checkpoint-done`` cells grade it (:mod:`labkit.course.scaffold`), both from here.
"""

from labkit.core.keys import PARTS

__all__ = ["AS_RELEASED_BITS", "CHECKPOINT_POINTS", "PARTS", "PREDICTION_POINTS"]

PREDICTION_POINTS = 1
"""Points of a committed prediction (right or wrong): completion credit."""
CHECKPOINT_POINTS = 1
"""Points of a checkpoint: its first committed answer right (or committed, by the course's
``checkpoint_credit``)."""
AS_RELEASED_BITS = 16
"""Weight (and KV) precision of a model as released: where a part's controls start when the
track's plan passes its task and the released model fails it (a candidate under review)."""
