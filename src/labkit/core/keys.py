"""The part letters and answer keys every lab, the course tooling and the judge share.

A module of constants and one function, importing nothing of labkit's: the judge process
(:mod:`labkit.course.judge`) reads it without paying for the labs (0.4 s of widgets).
:data:`PARTS` are the part letters every lab uses, in order; :func:`answer_key` is the
``labkit_answers.json`` key of a part's prediction or checkpoint, or of the memo.
"""

PARTS = ("A", "B", "C", "D")
KINDS = ("prediction", "checkpoint")


def answer_key(track_id: str, part: str, kind: str) -> str:
    """AnswerStore key of a part's ``prediction`` or ``checkpoint`` (or ``memo``: part '')."""
    if kind == "memo":
        return f"{track_id}.memo"
    if part not in PARTS or kind not in KINDS:
        raise ValueError(f"part must be one of {PARTS} and kind prediction/checkpoint/memo; "
                         f"got {part!r}, {kind!r}")
    return f"{track_id}.{part}.{kind}"


CHECKPOINT_RULE = ("when your first committed answer is the one the part computes; a "
                   "course may count any committed answer instead")
"""How a checkpoint earns its point, in a student's words (the widget and the notebook;
``c.LabkitGrade.checkpoint_credit`` chooses: ``labkit.grading.expect_checkpoint``)."""
