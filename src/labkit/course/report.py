"""Instructor reports after autograde: grade CSVs and a class summary.

Builds on nbgrader's own pieces, never on its private files:

* feedback is :mod:`labkit.course.feedback`;
* :func:`export` reads scores from nbgrader's gradebook (:class:`nbgrader.api.Gradebook`)
  and writes one CSV per assignment: nbgrader's stock export columns (:data:`STOCK_COLUMNS`,
  those of ``nbgrader export``: timestamp, late-submission penalty, the score after it as
  nbgrader computes it), then per-part scores (the part is the letter after ``<lab>-`` in
  a grade id, e.g. ``lab1-a-exercise-check`` is Part A) and labkit's columns; plus
  ``summary.json`` and a self-contained ``summary.html`` (inline SVG charts, no scripts,
  no network) for each lab across its tracks and per track: the distribution of the
  students' total scores (memo points included), the memos waiting for a person, the
  flagged submissions and those collected but not graded, the score distribution per
  part and the most common failing checks, read from the error outputs of the grade cells
  in the autograded notebooks (the label is the ``labkit.grading`` message up to ``" -- "``);
* :class:`LabkitExportPlugin` is the same CSV through nbgrader's export plugin interface:
  ``nbgrader export --exporter=labkit.course.report.LabkitExportPlugin``;
* :func:`gradebook_status` is what the terminal summary of ``labkit course grade`` adds
  from the gradebook (points with the memo, memos waiting, flagged, not graded).
"""

from __future__ import annotations

import csv
import functools
import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import jinja2
import nbformat
from nbgrader.api import Assignment, Gradebook, MissingEntry, SubmittedAssignment
from nbgrader.plugins import ExportPlugin

from labkit.course.beliefs import Belief, class_beliefs
from labkit.course.feedback import submissions

log = logging.getLogger(__name__)

GRADING_NOTES = "labkit_grading.json"
TOP_FAILING = 10
PART_LETTERS = ("A", "B", "C", "D")
_PART_RE = re.compile(r"^[^-]+-([a-z])(?:-|$)", re.IGNORECASE)
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LABEL_CHARS = 200
#: nbgrader's own export columns (``nbgrader.plugins.export.CsvExportPlugin``), in its order.
STOCK_COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name",
                 "first_name", "email", "raw_score", "late_submission_penalty", "score",
                 "max_score")
CSV_TAIL = ("autograded", "autograded_max", "manual", "manual_max", "needs_manual_grade",
            "flagged", "grader_notes")
TOTAL_BINS = 5


# -- results ------------------------------------------------------------------------------

@dataclass(frozen=True)
class GradeRow:
    """One student's scores on one assignment, as read from the gradebook. ``total`` is
    nbgrader's raw score (every cell, the memo included), ``score`` the total after the
    late-submission penalty as nbgrader's exporter computes it: ``max(0, raw - penalty)``."""

    student_id: str
    assignment: str
    parts: Mapping[str, float]
    part_max: Mapping[str, float]
    autograded: float
    autograded_max: float
    manual: float
    manual_max: float
    total: float
    max_score: float
    needs_manual_grade: bool
    grader_notes: str = ""
    late_penalty: float = 0.0
    flagged: bool = False
    stock: Mapping[str, str] = field(default_factory=dict)
    memo_waiting: bool = False    # a manually graded cell no person has graded yet

    @property
    def score(self) -> float:
        """The score after the late penalty, never below 0 (nbgrader's export)."""
        return max(0.0, self.total - self.late_penalty)

    def csv_row(self, letters: Sequence[str]) -> dict[str, str]:
        """The CSV columns: nbgrader's stock ones, ``part_<letter>`` for each of
        ``letters``, then :data:`CSV_TAIL`."""
        row = {k: self.stock.get(k, "") for k in STOCK_COLUMNS}
        row |= {f"part_{p}": _fmt(self.parts.get(p, 0.0)) for p in letters}
        row |= {"autograded": _fmt(self.autograded),
                "autograded_max": _fmt(self.autograded_max), "manual": _fmt(self.manual),
                "manual_max": _fmt(self.manual_max),
                "needs_manual_grade": str(self.needs_manual_grade).lower(),
                "flagged": str(self.flagged).lower(), "grader_notes": self.grader_notes}
        return row


@dataclass(frozen=True)
class PartStats:
    """Score distribution of one part over a group of submissions."""

    part: str
    max_points: float
    mean: float
    mean_fraction: float
    distribution: Mapping[str, int]

    def to_dict(self) -> dict[str, object]:
        return {"max_points": self.max_points, "mean": round(self.mean, 4),
                "mean_fraction": round(self.mean_fraction, 4),
                "distribution": dict(self.distribution)}


@dataclass(frozen=True)
class FailingCheck:
    """A grade cell's failure label and the number of submissions it failed."""

    grade_id: str
    label: str
    count: int

    def to_dict(self) -> dict[str, object]:
        return {"grade_id": self.grade_id, "label": self.label, "count": self.count}


@dataclass(frozen=True)
class TotalStats:
    """The students' total scores (every cell, the memo included) over a group, and what
    still waits: ``memos_waiting`` submissions whose memo no person graded yet,
    ``flagged`` and ``not_graded`` (collected, not in the gradebook) as
    ``student/assignment``."""

    max_score: float
    mean: float
    distribution: tuple[tuple[str, int], ...]
    memos_waiting: int
    flagged: tuple[str, ...] = ()
    not_graded: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"max_score": self.max_score, "mean": round(self.mean, 4),
                "distribution": dict(self.distribution), "memos_waiting": self.memos_waiting,
                "flagged": list(self.flagged), "not_graded": list(self.not_graded)}


@dataclass(frozen=True)
class GroupSummary:
    """Summary of one lab (all its tracks) or of one track (one assignment)."""

    name: str
    assignments: tuple[str, ...]
    submissions: int
    parts: tuple[PartStats, ...]
    failing_checks: tuple[FailingCheck, ...]
    totals: TotalStats = TotalStats(0.0, 0.0, (), 0)
    beliefs: tuple[Belief, ...] = ()  # one track's questions: what the class answered

    @property
    def weakest_part(self) -> PartStats | None:
        """The part with the lowest mean fraction of its points (None without data)."""
        scored = [p for p in self.parts if p.max_points > 0]
        if not self.submissions or not scored:
            return None
        return min(scored, key=lambda p: (p.mean_fraction, p.part))

    def to_dict(self) -> dict[str, object]:
        weakest = self.weakest_part
        return {"assignments": list(self.assignments), "submissions": self.submissions,
                "totals": self.totals.to_dict(),
                "parts": {p.part: p.to_dict() for p in self.parts},
                "weakest_part": weakest.part if weakest else None,
                "failing_checks": [c.to_dict() for c in self.failing_checks],
                "beliefs": [b.to_dict() for b in self.beliefs]}


@dataclass(frozen=True)
class LabSummary:
    """One lab across its tracks, and each track on its own."""

    lab: str
    overall: GroupSummary
    tracks: tuple[GroupSummary, ...]

    def to_dict(self) -> dict[str, object]:
        return self.overall.to_dict() | {"tracks": {t.name: t.to_dict() for t in self.tracks}}


@dataclass(frozen=True)
class Export:
    """What :func:`export` wrote."""

    csv_paths: tuple[Path, ...]
    summary_html: Path
    summary_json: Path
    rows: tuple[GradeRow, ...] = field(default=(), repr=False)
    labs: tuple[LabSummary, ...] = field(default=(), repr=False)


# -- gradebook -> rows --------------------------------------------------------------------

def part_of(grade_id: str) -> str | None:
    """The part letter of a grade id (``lab1-a-exercise-check`` -> ``"A"``), or None."""
    match = _PART_RE.match(grade_id)
    return match.group(1).upper() if match else None


def read_grader_notes(path: Path) -> str:
    """The messages of ``labkit_grading.json`` joined with ``"; "`` ("" if absent/malformed)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    findings = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(findings, list):
        return ""
    return "; ".join(f["message"] for f in findings
                     if isinstance(f, dict) and isinstance(f.get("message"), str))


def _score(auto: float | None, manual: float | None) -> float:
    """The score nbgrader shows: the manual score if a grader set one, else the auto score."""
    value = manual if manual is not None else auto
    return float(value or 0.0)


def _stock(sub: SubmittedAssignment, assignment: Assignment) -> dict[str, str]:
    """nbgrader's stock export columns of one submission, formatted as its
    ``CsvExportPlugin`` writes them (``str`` of each value, ``""`` for None)."""
    student = sub.student
    raw, penalty = float(sub.score), sub.late_submission_penalty
    values = {"assignment": assignment.name, "duedate": assignment.duedate,
              "timestamp": sub.timestamp, "student_id": student.id,
              "last_name": student.last_name, "first_name": student.first_name,
              "email": student.email, "raw_score": raw, "late_submission_penalty": penalty,
              "score": max(0.0, raw - (penalty or 0.0)), "max_score": assignment.max_score}
    return {k: "" if v is None else str(v) for k, v in values.items()}


def grade_rows(gb: Gradebook, course_root: Path, assignment: str) -> list[GradeRow]:
    """One :class:`GradeRow` per submission of ``assignment``, sorted by student id."""
    try:
        record = gb.find_assignment(assignment)
        submissions = gb.assignment_submissions(assignment)
    except MissingEntry:
        return []
    rows = []
    for sub in submissions:
        parts: defaultdict[str, float] = defaultdict(float)
        part_max: defaultdict[str, float] = defaultdict(float)
        auto = auto_max = manual = manual_max = 0.0
        waiting = False
        for notebook in sub.notebooks:
            for grade in notebook.grades:
                score, top = _score(grade.auto_score, grade.manual_score), grade.max_score or 0.0
                letter = part_of(grade.name)
                if letter:
                    parts[letter] += score
                    part_max[letter] += top
                if grade.cell_type == "code":
                    auto, auto_max = auto + score, auto_max + top
                else:
                    manual, manual_max = manual + score, manual_max + top
                    waiting = waiting or bool(grade.needs_manual_grade)
        student = sub.student.id
        notes = read_grader_notes(course_root / "autograded" / student / assignment
                                  / GRADING_NOTES)
        rows.append(GradeRow(student, assignment, dict(parts), dict(part_max), auto, auto_max,
                             manual, manual_max, float(sub.score), float(record.max_score),
                             bool(sub.needs_manual_grade), notes,
                             float(sub.late_submission_penalty or 0.0),
                             any(nb.flagged for nb in sub.notebooks), _stock(sub, record),
                             waiting))
    return sorted(rows, key=lambda r: r.student_id)


def _letters(rows: Iterable[GradeRow]) -> list[str]:
    found = {p for r in rows for p in r.part_max}
    return sorted(found | set(PART_LETTERS))


def write_rows(fh: IO[str], rows: Sequence[GradeRow]) -> None:
    """Write ``rows`` as CSV to the open text file ``fh``: nbgrader's stock columns, the
    part columns A-D (and any more), then :data:`CSV_TAIL`."""
    letters = _letters(rows)
    writer = csv.DictWriter(fh, fieldnames=[*STOCK_COLUMNS, *(f"part_{p}" for p in letters),
                                            *CSV_TAIL])
    writer.writeheader()
    writer.writerows(r.csv_row(letters) for r in rows)


def write_csv(path: Path, rows: Sequence[GradeRow]) -> Path:
    """Write ``rows`` (:func:`write_rows`) to the file ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        write_rows(fh, rows)
    return path


class LabkitExportPlugin(ExportPlugin):
    """nbgrader's export plugin for the labkit CSV: ``nbgrader export
    --exporter=labkit.course.report.LabkitExportPlugin [--to FILE] [--assignment A]
    [--student S]``. nbgrader's stock columns first (the same values as its
    ``CsvExportPlugin``), then the part scores and labkit's columns. One row per
    submission: a student takes one track of a lab, so the other tracks get no zero
    rows."""

    def export(self, gradebook: Gradebook) -> None:
        dest = Path(self.to or "grades.csv")
        coursedir = getattr(self.parent, "coursedir", None)
        root = Path(coursedir.root if coursedir is not None else ".").resolve()
        wanted = {str(a) for a in self.assignment}
        students = {str(s) for s in self.student}
        rows = [r for a in gradebook.assignments if not wanted or a.name in wanted
                for r in grade_rows(gradebook, root, a.name)
                if not students or r.student_id in students]
        self.log.info("Exporting %d submission(s) to %s", len(rows), dest)
        write_csv(dest, rows)


# -- autograded notebooks -> failing checks -----------------------------------------------

def check_label(output: Mapping[str, object]) -> str:
    """A failing check's label: the error value before ``" -- "`` (else the error name)."""
    evalue = _ANSI_RE.sub("", str(output.get("evalue") or "")).strip()
    label = evalue.partition(" -- ")[0].strip().splitlines()
    text = label[0].strip() if label else ""
    if not text:
        text = str(output.get("ename") or "Error")
    return text if len(text) <= _LABEL_CHARS else text[:_LABEL_CHARS - 1] + "…"


def failing_checks(notebook_path: Path) -> set[tuple[str, str]]:
    """``(grade_id, label)`` of every grade cell with an error output in one notebook."""
    try:
        nb = nbformat.read(notebook_path, as_version=4)
    except Exception as exc:  # a missing or corrupt notebook: nothing to count
        log.warning("cannot read %s: %s", notebook_path, exc)
        return set()
    found = set()
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") != "code" or not meta.get("grade"):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                found.add((str(meta.get("grade_id", "?")), check_label(output)))
    return found


# -- summaries ----------------------------------------------------------------------------

def _fmt(value: float) -> str:
    return f"{round(value, 4):g}"


def part_stats(part: str, scores: Sequence[tuple[float, float]]) -> PartStats:
    """Stats of one part from ``(score, max)`` per submission."""
    if not scores:
        return PartStats(part, 0.0, 0.0, 0.0, {})
    top = max(m for _, m in scores)
    bins: dict[float, int] = {float(v): 0 for v in range(int(top) + 1)}
    for score, _ in scores:
        bins[float(score)] = bins.get(float(score), 0) + 1
    mean = sum(s for s, _ in scores) / len(scores)
    fraction = sum(s / m if m else 0.0 for s, m in scores) / len(scores)
    return PartStats(part, top, mean, fraction, {_fmt(k): bins[k] for k in sorted(bins)})


def total_bins(totals: Sequence[float], max_score: float,
               bins: int = TOTAL_BINS) -> tuple[tuple[str, int], ...]:
    """Students per range of total score: ``bins`` equal ranges of ``[0, max_score]``,
    each ``[lo, hi)`` but the last, ``[lo, max]``; a total above the maximum (extra
    credit) counts in the last, below 0 in the first."""
    if max_score <= 0 or bins < 1:
        return ()
    width = max_score / bins
    counts = [0] * bins
    for total in totals:
        counts[min(bins - 1, max(0, int(total // width)))] += 1
    edges = [_fmt(k * width) for k in range(bins + 1)]
    return tuple((f"[{edges[k]}, {edges[k + 1]}{']' if k == bins - 1 else ')'}", n)
                 for k, n in enumerate(counts))


def total_stats(rows: Sequence[GradeRow], max_score: float,
                not_graded: Sequence[str] = ()) -> TotalStats:
    """:class:`TotalStats` of ``rows`` (one row per student and assignment)."""
    totals = [r.total for r in rows]
    return TotalStats(max_score, sum(totals) / len(totals) if totals else 0.0,
                      total_bins(totals, max_score),
                      sum(r.memo_waiting for r in rows),
                      tuple(f"{r.student_id}/{r.assignment}" for r in rows if r.flagged),
                      tuple(not_graded))


def summarise(name: str, assignments: Sequence[str], rows: Sequence[GradeRow],
              checks: Counter[tuple[str, str]], max_score: float = 0.0,
              not_graded: Sequence[str] = ()) -> GroupSummary:
    """A :class:`GroupSummary` of ``rows`` and the failing-check counts ``checks``;
    ``max_score`` is the assignments' total (memo included)."""
    parts = tuple(part_stats(p, [(r.parts.get(p, 0.0), r.part_max.get(p, 0.0)) for r in rows])
                  for p in _letters(rows))
    top = sorted(checks.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_FAILING]
    return GroupSummary(name, tuple(assignments), len(rows), parts,
                        tuple(FailingCheck(g, label, n) for (g, label), n in top),
                        total_stats(rows, max_score, not_graded))


def not_graded(course_root: Path, assignment: str, rows: Sequence[GradeRow]) -> list[str]:
    """``student/assignment`` collected under ``submitted/`` with no gradebook row
    (grading failed, or did not run yet)."""
    submitted = Path(course_root) / "submitted"
    have = {r.student_id for r in rows}
    if not submitted.is_dir():
        return []
    return [f"{p.name}/{assignment}" for p in sorted(submitted.iterdir())
            if (p / assignment).is_dir() and p.name not in have]


@dataclass(frozen=True)
class AssignmentStatus:
    """One assignment in the gradebook, for the terminal summary: its points (the memo
    included), each student's total, who waits for a person or was flagged."""

    max_score: float
    manual_max: float
    totals: Mapping[str, float]
    memos_waiting: tuple[str, ...]
    flagged: tuple[str, ...]


def gradebook_status(course_root: Path, db_url: str, course_id: str,
                     assignments: Sequence[str]) -> dict[str, AssignmentStatus]:
    """:class:`AssignmentStatus` of each of ``assignments`` known to the gradebook."""
    out = {}
    with Gradebook(db_url, course_id) as gb:
        for name in assignments:
            try:
                record = gb.find_assignment(name)
            except MissingEntry:
                continue
            manual = sum(c.max_score or 0.0 for nb in record.notebooks
                         for c in nb.grade_cells if c.cell_type != "code")
            rows = grade_rows(gb, Path(course_root), name)
            out[name] = AssignmentStatus(
                float(record.max_score), float(manual), {r.student_id: r.total for r in rows},
                tuple(r.student_id for r in rows if r.memo_waiting),
                tuple(r.student_id for r in rows if r.flagged))
    return out


def _lab_and_track(assignment: str) -> tuple[str, str]:
    lab, _, track = assignment.partition("_")
    return lab, track or assignment


# -- SVG and HTML -------------------------------------------------------------------------
# The markup is in templates/ (Jinja2, autoescape: a student id, a track or a check's label
# is text, never markup); the geometry and the numbers are computed here.

def _bar_model(title: str, bars: Sequence[tuple[str, int]], *, x_label: str,
               y_label: str, width: int = 260, height: int = 190) -> dict[str, Any]:
    left, right, top, bottom = 44, 10, 30, 44
    peak = max((n for _, n in bars), default=0) or 1
    plot_w = width - left - right
    return {"title": title, "bars": list(bars), "x_label": x_label, "y_label": y_label,
            "width": width, "height": height, "left": left, "top": top, "plot_w": plot_w,
            "plot_h": height - top - bottom, "peak": peak, "ticks": sorted({0, peak}),
            "step": plot_w / max(len(bars), 1)}


def _hbar_model(title: str, bars: Sequence[tuple[str, int]], *, x_label: str,
                width: int = 780) -> dict[str, Any]:
    left, right, top, row = 12, 48, 32, 38
    return {"title": title, "bars": list(bars), "x_label": x_label, "width": width,
            "height": top + row * max(len(bars), 1) + 34, "left": left, "top": top,
            "row": row, "plot_w": width - left - right,
            "peak": max((n for _, n in bars), default=0) or 1,
            "axis_y": top + row * max(len(bars), 1)}


def _lab_of(group: GroupSummary) -> str:
    return _lab_and_track(group.assignments[0])[0] if group.assignments else group.name


def _tied_with(group: GroupSummary) -> list[str]:
    """The other parts as weak as the group's weakest."""
    weakest = group.weakest_part
    if weakest is None:
        return []
    return [p.part for p in group.parts if p is not weakest and p.max_points > 0
            and abs(p.mean_fraction - weakest.mean_fraction) < 1e-9]


def _check_bars(group: GroupSummary) -> list[tuple[str, int]]:
    return [(f"{c.grade_id}: {c.label}", c.count) for c in group.failing_checks]


def _part_means(group: GroupSummary) -> dict[str, float]:
    return {p.part: p.mean for p in group.parts}


@functools.cache
def _templates() -> jinja2.Environment:
    """The report's templates (package data), escaping every value they print."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("labkit.course", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(points=_fmt, pct=lambda value: f"{value:.0%}")
    env.globals.update(bar_model=_bar_model, hbar_model=_hbar_model, lab_of=_lab_of,
                       tied_with=_tied_with, check_bars=_check_bars, part_means=_part_means)
    return env


def _chart(name: str) -> Any:
    """A chart macro of ``charts.svg.j2``."""
    return getattr(_templates().get_template("charts.svg.j2").module, name)


def bar_chart_svg(title: str, bars: Sequence[tuple[str, int]], *, x_label: str,
                  y_label: str, width: int = 260, height: int = 190) -> str:
    """A vertical bar chart (inline SVG) with a count above every bar."""
    return str(_chart("bar_chart")(_bar_model(title, bars, x_label=x_label, y_label=y_label,
                                              width=width, height=height)))


def hbar_chart_svg(title: str, bars: Sequence[tuple[str, int]], *, x_label: str,
                   width: int = 780) -> str:
    """A horizontal bar chart (inline SVG): each bar's label above it, its count after it."""
    return str(_chart("hbar_chart")(_hbar_model(title, bars, x_label=x_label, width=width)))


def render_summary_html(labs: Sequence[LabSummary], generated: str = "") -> str:
    """The instructor summary as one self-contained HTML page (inline SVG, no scripts)."""
    return _templates().get_template("summary.html.j2").render(labs=labs,
                                                               generated=generated)


# -- export -------------------------------------------------------------------------------

def export(course_root: Path, db_url: str, out_dir: Path, assignments: Sequence[str],
           course_id: str = "labkit") -> Export:
    """Grade CSVs per assignment plus ``summary.json`` and ``summary.html`` in ``out_dir``."""
    root, out_dir = Path(course_root).resolve(), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list[GradeRow]] = {}
    checks: dict[str, Counter[tuple[str, str]]] = {}
    tops: dict[str, float] = {}
    csv_paths = []
    with Gradebook(db_url, course_id) as gb:
        for assignment in assignments:
            rows[assignment] = grade_rows(gb, root, assignment)
            try:
                tops[assignment] = float(gb.find_assignment(assignment).max_score)
            except MissingEntry:
                tops[assignment] = 0.0
            counter: Counter[tuple[str, str]] = Counter()
            for student, notebooks in submissions(gb, assignment):
                for nb in notebooks:
                    counter.update(failing_checks(root / "autograded" / student / assignment
                                                  / f"{nb}.ipynb"))
            checks[assignment] = counter
            csv_paths.append(write_csv(out_dir / f"grades_{assignment}.csv", rows[assignment]))

    by_lab: dict[str, list[str]] = {}
    for assignment in assignments:
        by_lab.setdefault(_lab_and_track(assignment)[0], []).append(assignment)
    waiting = {a: not_graded(root, a, rows[a]) for a in assignments}
    labs = []
    for lab, members in by_lab.items():
        tracks = tuple(replace(summarise(_lab_and_track(a)[1], [a], rows[a], checks[a],
                                         tops[a], waiting[a]),
                               beliefs=class_beliefs(root, a)) for a in members)
        overall = summarise(lab, members, [r for a in members for r in rows[a]],
                            sum((checks[a] for a in members), Counter()),
                            max(tops[a] for a in members),
                            [x for a in members for x in waiting[a]])
        labs.append(LabSummary(lab, overall, tracks))

    generated = datetime.now(UTC).isoformat(timespec="seconds")
    summary_json = out_dir / "summary.json"
    summary_json.write_text(json.dumps(
        {"generated": generated, "assignments": list(assignments),
         "labs": {lab.lab: lab.to_dict() for lab in labs}}, indent=2) + "\n",
        encoding="utf-8")
    summary_html = out_dir / "summary.html"
    summary_html.write_text(render_summary_html(labs, generated), encoding="utf-8")
    return Export(tuple(csv_paths), summary_html, summary_json,
                  tuple(r for a in assignments for r in rows[a]), tuple(labs))
