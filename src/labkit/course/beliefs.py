"""What the class believed: for each prediction and checkpoint of an assignment, how the
class's first committed answers split across the options, beside the answer labkit
computes -- the class summary shows it, so an instructor sees the common misconception
before the next lecture.

Answers come from the collected ``labkit_answers.json`` files, checked as the grader checks
them (:func:`labkit.course.judge.first_answers`): a value no widget records, a symlink or an
unreadable file is left out. The first answer counts (the one committed before the reveal).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from labkit.core.keys import PARTS
from labkit.course.judge import first_answers, fresh_lab


@dataclass(frozen=True)
class AnswerCount:
    """One option and how many students chose it first."""

    label: str
    count: int
    computed: bool

    def to_dict(self) -> dict[str, object]:
        return {"label": self.label, "count": self.count, "computed": self.computed}


@dataclass(frozen=True)
class Question:
    """A prediction or checkpoint as the lab asks it on one track."""

    part: str
    kind: str
    text: str
    options: tuple[tuple[str, object], ...]
    computed: object


@dataclass(frozen=True)
class Belief:
    """The class's first answers to one question (``answers``: every option, in order)."""

    part: str
    kind: str
    question: str
    computed: str
    answers: tuple[AnswerCount, ...]

    @property
    def answered(self) -> int:
        return sum(a.count for a in self.answers)

    @property
    def share_right(self) -> float | None:
        """Share of the answers that chose the computed answer (None: nobody answered)."""
        right = sum(a.count for a in self.answers if a.computed)
        return right / self.answered if self.answered else None

    @property
    def common_wrong(self) -> AnswerCount | None:
        """The other answer chosen most (None when no one chose another)."""
        wrong = [a for a in self.answers if not a.computed and a.count]
        return max(wrong, key=lambda a: a.count) if wrong else None

    def to_dict(self) -> dict[str, object]:
        return {"part": self.part, "kind": self.kind, "question": self.question,
                "computed": self.computed, "answered": self.answered,
                "share_right": self.share_right,
                "answers": [a.to_dict() for a in self.answers]}


def questions(lab_id: str, track_id: str) -> list[Question]:
    """Every prediction and checkpoint of ``lab_id`` on ``track_id`` with its options and
    computed answer, read from the lab's own widgets as the grader reads them
    (:func:`labkit.course.judge.fresh_lab`)."""
    lab = fresh_lab(lab_id, track_id)
    out = []
    for letter in PARTS:
        part = lab.part(letter)
        for kind, q, right in (("prediction", part.predict, part.expected),
                               ("checkpoint", part.checkpoint, part.checkpoint_expected)):
            opts = tuple((q.label_for(v), v) for v in (q.options or ()))
            out.append(Question(letter, kind, str(q.question), opts, right))
    return out


def class_beliefs(course_root: Path, assignment: str) -> tuple[Belief, ...]:
    """The class's first answers to every question of ``assignment`` (``<lab>_<track>``),
    from ``submitted/<student>/<assignment>/labkit_answers.json``."""
    lab_id, _, track_id = assignment.partition("_")
    files = sorted(Path(course_root, "submitted").glob(f"*/{assignment}/labkit_answers.json"))
    firsts = [first_answers(f, lab_id) for f in files]
    out = []
    for q in questions(lab_id, track_id):
        key = f"{track_id}.{q.part}.{q.kind}"
        counts = Counter(repr(a[key]) for a in firsts if key in a)
        answers = tuple(AnswerCount(label, counts.get(repr(value), 0), value == q.computed)
                        for label, value in q.options)
        computed = next((label for label, v in q.options if v == q.computed), str(q.computed))
        out.append(Belief(q.part, q.kind, q.text, computed, answers))
    return tuple(out)
