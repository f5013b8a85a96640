"""Submissions that exercise the grader: honest ones for every track, hostile ones for one.

Honest kinds, for any (lab, track):

* ``full`` — every answer cell holds the solution, every prediction and checkpoint is
  committed (through the same :class:`~labkit.core.answers.AnswerStore` the widgets use);
* ``blank`` — the release as handed out;
* ``partial`` — parts A and B answered and committed, C and D left blank.

Hostile kinds (:data:`HOSTILE`) start from ``full`` (or a wrong answer) and do one bad
thing each: corrupt JSON, an infinite loop, an infinite loop that ignores interrupts,
killing the kernel, raising, flooding output, editing / deleting a test cell, tampering
with metadata and tags, shadowing ``labkit`` with a file beside the notebook, writing
outside the submission, reading the hidden tests, using the network, patching the
grading checks. Each carries the grade cells it must lose and the finding it must raise:
:func:`expected` turns that into the exact expected score.

This module reads the **source** notebooks (solutions): instructor side only.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nbformat

from labkit.core.answers import AnswerStore
from labkit.course.report import part_of
from labkit.course.submission import ANSWERS_FILE, TIMESTAMP_FILE
from labkit.labs.registry import LABS

HONEST = ("full", "blank", "partial")
PARTIAL_PARTS = ("A", "B")
_SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION\n?", re.S)


def _meta(cell: nbformat.NotebookNode) -> dict[str, Any]:
    meta: dict[str, Any] = cell.metadata.get("nbgrader", {})
    return meta


def _solutions(source_nb: nbformat.NotebookNode) -> dict[str, str]:
    """Answer-cell source with the solution block unwrapped, by grade id."""
    return {_meta(c)["grade_id"]: _SOLUTION.sub(r"\1", c.source).rstrip("\n")
            for c in source_nb.cells if _meta(c).get("solution")}


def _commit(lab_id: str, track: str, folder: Path, parts: tuple[str, ...]) -> None:
    lab = LABS.get_lab(lab_id).lab(track, store=AnswerStore(folder / ANSWERS_FILE))
    for letter in parts:
        p = lab.part(letter)
        p.predict.commit(p.predict.options[-1])
        p.checkpoint.commit(p.checkpoint.options[0])


def write_honest(kind: str, root: Path, assignment: str, dest: Path) -> Path:
    """Write a ``full``, ``blank`` or ``partial`` submission of ``assignment`` into ``dest``."""
    if kind not in HONEST:
        raise ValueError(f"kind must be one of {HONEST}, got {kind!r}")
    lab_id, track = assignment.split("_", 1)
    release_dir = root / "release" / assignment
    nb_path = release_dir / LABS.get_lab(lab_id).notebook
    dest.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(nb_path, as_version=4)
    parts = {"full": ("A", "B", "C", "D"), "blank": (), "partial": PARTIAL_PARTS}[kind]
    if parts:
        solutions = _solutions(nbformat.read(root / "source" / assignment / nb_path.name,
                                             as_version=4))
        for cell in nb.cells:
            gid = _meta(cell).get("grade_id", "")
            if (_meta(cell).get("solution") and gid in solutions
                    and (part_of(gid) in parts or (kind == "full" and not part_of(gid)))
                    and "predict" not in gid and "checkpoint" not in gid):
                cell.source = solutions[gid]
        _commit(lab_id, track, dest, parts)
    nbformat.write(nb, dest / nb_path.name)
    (dest / TIMESTAMP_FILE).write_text(
        datetime(2026, 11, 30, 12, 0, tzinfo=UTC).strftime("%Y-%m-%d %H:%M:%S.%f %Z"))
    return dest / nb_path.name


# -- hostile submissions -----------------------------------------------------------------

def _cells(nb: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    (cell,) = [c for c in nb.cells if _meta(c).get("grade_id") == grade_id]
    found: nbformat.NotebookNode = cell
    return found


def _prefix(grade_id: str, code: str) -> Callable[[Path, Path], None]:
    """Put ``code`` before the (correct) answer in answer cell ``grade_id``."""
    def mutate(nb_path: Path, folder: Path) -> None:
        nb = nbformat.read(nb_path, as_version=4)
        cell = _cells(nb, grade_id)
        cell.source = code + "\n" + cell.source
        nbformat.write(nb, nb_path)
    return mutate


def _replace(grade_id: str, code: str) -> Callable[[Path, Path], None]:
    def mutate(nb_path: Path, folder: Path) -> None:
        nb = nbformat.read(nb_path, as_version=4)
        _cells(nb, grade_id).source = code
        nbformat.write(nb, nb_path)
    return mutate


def _chain(*steps: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def mutate(nb_path: Path, folder: Path) -> None:
        for step in steps:
            step(nb_path, folder)
    return mutate


def _corrupt(nb_path: Path, folder: Path) -> None:
    raw = nb_path.read_bytes()
    nb_path.write_bytes(raw[: len(raw) // 2])


def _delete_cell(grade_id: str) -> Callable[[Path, Path], None]:
    def mutate(nb_path: Path, folder: Path) -> None:
        nb = nbformat.read(nb_path, as_version=4)
        nb.cells = [c for c in nb.cells if _meta(c).get("grade_id") != grade_id]
        nbformat.write(nb, nb_path)
    return mutate


def _tamper_metadata(grade_id: str) -> Callable[[Path, Path], None]:
    def mutate(nb_path: Path, folder: Path) -> None:
        nb = nbformat.read(nb_path, as_version=4)
        cell = _cells(nb, grade_id)
        cell.metadata["nbgrader"]["points"] = 100
        cell.metadata["tags"] = []
        for other in nb.cells:  # and turn every other test into "not graded"
            m = _meta(other)
            if m.get("grade") and not m.get("solution") and m.get("grade_id") != grade_id:
                m["grade"] = False
        nb.metadata["kernelspec"] = {"name": "evil", "display_name": "evil", "language": "sh"}
        nbformat.write(nb, nb_path)
    return mutate


def _shadow_labkit(nb_path: Path, folder: Path) -> None:
    pkg = folder / "labkit"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "grading.py").write_text(
        "def _ok(*args, **kwargs):\n    return 1.0\n"
        "expect_committed = expect_number = expect_close = expect_true = expect_choice = _ok\n")
    (folder / "sitecustomize.py").write_text("print('sitecustomize ran')\n")


_WRITE_OUTSIDE = """\
import pathlib
for target in ("/tmp/labkit-pwned", str(pathlib.Path.home() / "labkit-pwned"),
               "../../../labkit-pwned", "/etc/labkit-pwned", {course_root!r} + "/labkit-pwned"):
    try:
        pathlib.Path(target).write_text("pwned")
        print("wrote", target)
    except OSError as exc:
        print("blocked", target, type(exc).__name__)
"""

_READ_HIDDEN = """\
import os, pathlib, time
found, deadline = [], time.time() + 4
skip = {"proc", "sys", "usr", "lib", "lib64", "bin", "sbin", "dev", "site-packages"}
for base in ("/", "/proc/1/root", "../../../.."):
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d not in skip]
        for name in files:
            if name in ("gradebook.db", "nbgrader_config.py") or name.endswith(".ipynb") \\
                    or folder.endswith("course/labs"):
                path = os.path.join(folder, name)
                try:
                    text = pathlib.Path(path).read_text(errors="ignore")
                except OSError:
                    continue
                if name == "gradebook.db" or "BEGIN HIDDEN TESTS" in text:
                    found.append(path)
        if time.time() > deadline:
            break
print("hidden tests found:", found if found else "none")
"""

_NETWORK = """\
import socket, urllib.request
try:
    urllib.request.urlopen("http://example.com", timeout=3)
    print("network: reachable")
except Exception as exc:
    print("network: blocked", type(exc).__name__)
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", 22))
    print("loopback: reachable")
except OSError as exc:
    print("loopback: blocked", type(exc).__name__)
"""

_PATCH_GRADER = """\
import labkit.grading as _g
_g.expect_true = lambda *args, **kwargs: None
expect_number = lambda name, value, part, **kw: 1.0
answer_A = None
"""


# Attacks on a verdict computed in the kernel (the judge computes none there).
_CODE_SWAP = """\
import labkit.grading as _g
for _name in dir(_g):
    if _name.startswith("expect_"):
        getattr(_g, _name).__code__ = (lambda *args, **kwargs: None).__code__
answer_A = 1.0  # wrong, but a number the hidden test can use before its check
"""

_INPUT_TRANSFORMER = """\
def _no_tests(lines):
    return ["pass\\n"] if any("expect_" in line or "assert" in line for line in lines) else lines
get_ipython().input_transformers_post.append(_no_tests)
answer_A = None
"""

_POST_RUN_HOOK = """\
def _forgive(result):
    result.error_in_exec = None
    result.error_before_exec = None
get_ipython().events.register("post_run_cell", _forgive)
get_ipython().showtraceback = lambda *args, **kwargs: None
answer_A = None
"""

_DISPLAYHOOK = """\
_ip = get_ipython()
def _plant(info):
    if "answer_A" in (info.raw_cell or "") and "expect_" in (info.raw_cell or ""):
        _ip.displayhook(1.0)  # nbgrader scores a cell from its first execute_result
_ip.events.register("pre_run_cell", _plant)
answer_A = None
"""

_FLOAT_SUBCLASS = """\
import sys
class _Liar(float):
    # float(x) answers whatever the calling check expects, read from its frame
    def __float__(self):
        frame = sys._getframe(1)
        while frame is not None:
            if isinstance(frame.f_locals.get("expected"), float):
                return frame.f_locals["expected"]
            frame = frame.f_back
        return 0.0
answer_C = _Liar(0.0)
"""

_FORGED_WIDGETS = """\
for _part in (A,):
    for _q in (type(_part.predict), type(_part.checkpoint)):
        _q.committed = property(lambda self: True)
"""

_MODULE_ALIAS = """\
import sys, types
_fake = types.ModuleType("labkit.grading")
for _n in ("expect_committed", "expect_number", "expect_close", "expect_true", "expect_choice"):
    setattr(_fake, _n, lambda *args, **kwargs: None)
sys.modules["labkit.grading"] = _fake
import labkit
labkit.grading = _fake
answer_A = 1.0  # wrong, but a number the hidden test can use before its check
"""


# The kernel's folder is copied back and chmod-ed by the grader: plant links in it that
# resolve, outside the box, to the solution, the gradebook and a classmate's work.
_PLANT_LINKS = """\
import os
targets = ["gradebook.db", "source/{assignment}/inference_economy.ipynb",
           "source/{assignment}/accelerators.ipynb", "submitted/full/{assignment}",
           "j/0000/raw/inference_economy.ipynb", "j/0001/raw/inference_economy.ipynb",
           "/etc/shadow", "/root"]
n = 0
for depth in range(0, 12):
    for target in targets:
        up = target if target.startswith("/") else "../" * depth + target
        for name in (f"link{{n}}.ipynb", f"link{{n}}"):
            try:
                os.symlink(up, name)
            except OSError:
                pass
        n += 1
for name in ("timestamp.txt", "submission_secret.txt", "labkit_answers.json"):
    try:
        os.replace(name, name + ".orig")
    except OSError:
        pass
    try:
        os.symlink("../" * 6 + "gradebook.db", name)
    except OSError:
        pass
try:
    os.mkfifo("fifo.ipynb")
except OSError:
    pass
print("planted", n, "links")
"""

# A kernel that leaves a process behind: double-forked, detached, it waits for the next
# student's kernel (the same uid, if uids were reused) and would signal it.
_DAEMON = """\
import os, time
mine = os.getpid()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        spare = {mine, os.getpid()}  # its own kernel, and itself (also an ipykernel fork)
        deadline = time.time() + 300
        while time.time() < deadline:
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) in spare:
                    continue
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        if b"ipykernel" in f.read():
                            os.kill(int(entry), 9)  # another student's kernel, if it can
                except OSError:
                    pass
            time.sleep(0.05)
        os._exit(0)
    os._exit(0)
time.sleep(0.2)
"""

_DISPLAY_FLOOD = """\
from IPython.display import display, update_display
for _i in range(200):
    display("x", display_id="flood")
for _i in range(50):
    update_display("y" * 1_000_000, display_id="flood")
"""


@dataclass(frozen=True)
class Hostile:
    """A hostile submission: built from ``base``, changed by ``mutate``.

    ``loses`` are the grade ids whose points it must not get; ``findings`` the finding
    codes the grader must report; ``reason`` says what it does, for people.
    """

    name: str
    reason: str
    base: str
    mutate: Callable[[Path, Path], None]
    loses: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    flagged: bool = False
    loses_all_exercises: bool = False


def hostile_set(lab_id: str, course_root: str = "/nonexistent-course") -> tuple[Hostile, ...]:
    """The hostile fixtures for ``lab_id`` (grade ids follow the ``<lab>-<part>-`` scheme)."""
    a, b, c, d = (f"{lab_id}-{p}" for p in "abcd")
    wrong_a = _replace(f"{a}-exercise", "answer_A = None")
    return (
        Hostile("corrupt_json", "notebook cut in half: not JSON", "full", _corrupt,
                findings=("notebook-corrupt",), flagged=True, loses_all_exercises=True),
        Hostile("infinite_loop", "Part B answer loops forever before answering", "full",
                _prefix(f"{b}-exercise", "while True:\n    pass"), loses=(f"{b}-exercise-check",)),
        Hostile("uninterruptible_loop", "Part B answer ignores SIGINT and loops forever", "full",
                _prefix(f"{b}-exercise", "import signal\nsignal.signal(signal.SIGINT, "
                        "signal.SIG_IGN)\nwhile True:\n    pass"),
                loses=(f"{b}-exercise-check",), findings=("kernel-failure",), flagged=True),
        Hostile("kernel_death", "Part C answer kills its own kernel", "full",
                _prefix(f"{c}-exercise", "import os\nos._exit(1)"),
                loses=(f"{c}-exercise-check",), findings=("kernel-failure",), flagged=True),
        Hostile("exception", "Part D answer raises before answering", "full",
                _prefix(f"{d}-exercise", "raise ValueError('not today')"),
                loses=(f"{d}-exercise-check",)),
        Hostile("output_flood", "Part A answer prints 12 MB at once and 200,000 lines", "full",
                _prefix(f"{a}-exercise", "print('flood ' * 2_000_000)\n"
                        "for _i in range(200_000):\n    print(_i)")),
        Hostile("edited_test", "wrong Part A answer; its test cell replaced by `pass`", "full",
                _chain(wrong_a, _replace(f"{a}-exercise-check", "pass")),
                loses=(f"{a}-exercise-check",), findings=("test-restored",), flagged=True),
        Hostile("deleted_test", "wrong Part A answer; its test cell deleted", "full",
                _chain(wrong_a, _delete_cell(f"{a}-exercise-check")),
                loses=(f"{a}-exercise-check",), findings=("test-readded",), flagged=True),
        Hostile("metadata_tamper", "wrong Part A answer; test worth 100 points, tags stripped, "
                "other tests marked ungraded, kernelspec changed", "full",
                _chain(wrong_a, _tamper_metadata(f"{a}-exercise-check")),
                loses=(f"{a}-exercise-check",), findings=("metadata-restored",), flagged=True),
        Hostile("shadow_module", "wrong Part A answer; a fake labkit/grading.py and a "
                "sitecustomize.py beside the notebook", "full", _chain(wrong_a, _shadow_labkit),
                loses=(f"{a}-exercise-check",), findings=("file-ignored",)),
        Hostile("write_outside", "Part A answer writes files outside its folder", "full",
                _prefix(f"{a}-exercise", _WRITE_OUTSIDE.format(course_root=course_root))),
        Hostile("read_hidden", "wrong Part A answer that hunts for the hidden tests and "
                "gradebook", "full", _chain(wrong_a, _prefix(f"{a}-exercise", _READ_HIDDEN)),
                loses=(f"{a}-exercise-check",)),
        Hostile("network", "Part A answer tries the internet and the loopback", "full",
                _prefix(f"{a}-exercise", _NETWORK)),
        Hostile("patch_grader", "Part A left wrong but the grading checks monkeypatched",
                "full", _replace(f"{a}-exercise", _PATCH_GRADER),
                loses=(f"{a}-exercise-check",), findings=("grader-touch",), flagged=True),
        *_kernel_attacks(lab_id),
        Hostile("planted_links", "Part A answer plants links to the solution, the gradebook "
                "and classmates' work (and a FIFO) in its folder", "full",
                _prefix(f"{a}-exercise", _PLANT_LINKS.format(assignment=f"{lab_id}_cloud_fleet")),
                findings=("planted-links",), flagged=True),
        Hostile("daemon", "Part A answer leaves a detached process that, for five minutes, "
                "kills every other kernel it can signal", "full",
                _prefix(f"{a}-exercise", _DAEMON)),
        Hostile("display_flood", "Part A answer shows one output 200 times and updates it "
                "with 1 MB, 50 times (update_display_data)", "full",
                _prefix(f"{a}-exercise", _DISPLAY_FLOOD)),
    )


def _kernel_attacks(lab_id: str) -> tuple[Hostile, ...]:
    """Submissions that would fake a verdict computed in the kernel: each earns exactly
    what its honest parts earn, because tests run in :mod:`labkit.course.judge`."""
    a = f"{lab_id}-a"
    lose_a = (f"{a}-exercise-check",)
    return (
        Hostile("code_swap", "Part A left wrong; every check's __code__ replaced by a no-op",
                "full", _replace(f"{a}-exercise", _CODE_SWAP), loses=lose_a,
                findings=("grader-touch",), flagged=True),
        Hostile("input_transformer", "Part A left wrong; an IPython input transformer turns "
                "every test cell into `pass`", "full",
                _replace(f"{a}-exercise", _INPUT_TRANSFORMER), loses=lose_a),
        Hostile("post_run_hook", "Part A left wrong; a post-run hook clears every error and "
                "tracebacks are silenced", "full", _replace(f"{a}-exercise", _POST_RUN_HOOK),
                loses=lose_a),
        Hostile("displayhook_result", "Part A left wrong; a pre-run hook plants an "
                "execute_result of 1.0 before its test runs (nbgrader's partial credit)", "full",
                _replace(f"{a}-exercise", _DISPLAYHOOK), loses=lose_a),
        Hostile("float_subclass", "Part C's answer a float subclass whose float() returns "
                "what the calling check expects", "full",
                _replace(f"{lab_id}-c-exercise", _FLOAT_SUBCLASS),
                loses=(f"{lab_id}-c-exercise-check",)),
        Hostile("forged_widgets", "blank, but every prediction and checkpoint widget "
                "forced to say committed", "blank", _prefix(f"{a}-predict", _FORGED_WIDGETS)),
        Hostile("module_alias", "Part A left wrong; labkit.grading replaced in sys.modules",
                "full", _replace(f"{a}-exercise", _MODULE_ALIAS), loses=lose_a,
                findings=("grader-touch",), flagged=True),
    )


def write_hostile(spec: Hostile, root: Path, assignment: str, dest: Path) -> Path:
    nb_path = write_honest(spec.base, root, assignment, dest)
    spec.mutate(nb_path, dest)
    return nb_path


def grade_cells(root: Path, assignment: str) -> dict[str, float]:
    """Autograded test cells of ``assignment`` and their points (from the release)."""
    (nb_path,) = sorted((root / "release" / assignment).glob("*.ipynb"))
    nb = nbformat.read(nb_path, as_version=4)
    return {_meta(c)["grade_id"]: float(_meta(c)["points"]) for c in nb.cells
            if _meta(c).get("grade") and not _meta(c).get("solution") and c.cell_type == "code"}


def expected_honest(kind: str, points: dict[str, float]) -> float:
    if kind == "full":
        return sum(points.values())
    if kind == "blank":
        return 0.0
    return sum(v for k, v in points.items() if part_of(k) in PARTIAL_PARTS)


def expected(spec: Hostile, points: dict[str, float]) -> float:
    """The score a hostile submission's honest parts earn."""
    if spec.loses_all_exercises:  # only what labkit_answers.json proves: the commitments
        return sum(v for k, v in points.items() if k.endswith("-done"))
    if spec.base != "full":
        return expected_honest(spec.base, points)
    return sum(v for k, v in points.items() if k not in spec.loses)


@dataclass(frozen=True)
class FixturePlan:
    """Which fixtures a lab gets: honest ones for ``honest_tracks`` (None: every track),
    the hostile set (or only the ``hostile`` names) on ``hostile_track``."""

    hostile_track: str = "cloud_fleet"
    honest_tracks: tuple[str, ...] | None = None
    hostile: tuple[str, ...] | None = None


# Lab 1 gets everything; Lab 2 the attacks on the verdict and the kernel's folder (the box
# itself is the same code for both labs), on one track, to keep the suite's grading short.
FIXTURE_PLANS = {
    "lab1": FixturePlan(),
    "lab2": FixturePlan("iphone", ("iphone",), (
        "code_swap", "input_transformer", "post_run_hook", "displayhook_result",
        "float_subclass", "forged_widgets", "module_alias", "planted_links",
        "display_flood", "patch_grader", "edited_test")),
}


def write_fixture_set(root: Path, dest: Path, lab_id: str = "lab1",
                      plan: FixturePlan | None = None) -> dict[str, dict[str, Any]]:
    """Write honest submissions and hostile ones for ``lab_id`` as its plan says.

    Layout is nbgrader's ``submitted/<student>/<assignment>/``; ``expected.json`` maps
    ``<student>/<assignment>`` to the expected score, max, findings and reason.
    """
    plan = plan or FIXTURE_PLANS.get(lab_id, FixturePlan())
    if dest.exists():
        shutil.rmtree(dest)
    expectations: dict[str, dict[str, Any]] = {}
    tracks = sorted(p.name.split("_", 1)[1] for p in (root / "release").glob(f"{lab_id}_*"))
    for track in tracks if plan.honest_tracks is None else plan.honest_tracks:
        assignment = f"{lab_id}_{track}"
        points = grade_cells(root, assignment)
        for kind in HONEST:
            write_honest(kind, root, assignment, dest / "submitted" / kind / assignment)
            expectations[f"{kind}/{assignment}"] = {
                "score": expected_honest(kind, points), "max": sum(points.values()),
                "findings": [], "flagged": False, "reason": f"honest {kind} submission"}
    assignment = f"{lab_id}_{plan.hostile_track}"
    points = grade_cells(root, assignment)
    for spec in hostile_set(lab_id):
        if plan.hostile is not None and spec.name not in plan.hostile:
            continue
        write_hostile(spec, root, assignment, dest / "submitted" / spec.name / assignment)
        expectations[f"{spec.name}/{assignment}"] = {
            "score": expected(spec, points), "max": sum(points.values()),
            "findings": list(spec.findings), "flagged": spec.flagged, "reason": spec.reason}
    (dest / "expected.json").write_text(json.dumps(expectations, indent=1, sort_keys=True) + "\n")
    return expectations


def new_course(repo: Path, dest: Path, assignments: list[str]) -> str:
    """A course folder at ``dest`` with ``assignments`` generated into its own gradebook.

    Copies the nbgrader configuration and the source notebooks from the course
    repository ``repo`` and runs the real ``nbgrader generate_assignment``. Returns the
    gradebook URL.
    """
    from labkit.course.build import nbgrader, new_course_root

    new_course_root(repo, dest)
    db_url = f"sqlite:///{dest / 'gradebook.db'}"
    for name in assignments:
        shutil.copytree(repo / "source" / name, dest / "source" / name, dirs_exist_ok=True)
        nbgrader(dest, "generate_assignment", name, "--force", db_url=db_url)
    return db_url


def lab_assignments(root: Path, lab: str, tracks: list[str] | None = None) -> list[str]:
    """Assignment names for ``lab`` (``lab1``) or one assignment (``lab1_iphone``)."""
    names = sorted(p.name for p in (root / "source").glob("*_*") if p.is_dir())
    chosen = [lab] if lab in names else [n for n in names if n.split("_", 1)[0] == lab]
    if tracks:
        chosen = [n for n in chosen if n.split("_", 1)[1] in tracks]
    if not chosen:
        raise ValueError(f"lab: no assignment matches {lab!r}"
                         f"{' with tracks ' + ', '.join(tracks) if tracks else ''} under "
                         f"{root / 'source'} (have: {', '.join(names) or 'none'})")
    return chosen


def run_pipeline(repo: Path, dest: Path, labs: list[str], workers: int = 0,
                 log: Callable[[str], None] = print) -> int:
    """The main job: release, demo submissions, grade, feedback, export. Returns 0 if clean.

    Builds a fresh course in ``dest`` from the course repository ``repo``: generates every
    assignment of ``labs`` into a new SQLite gradebook, writes a full, a blank and a
    partial submission per track, grades them in parallel in the sandbox, writes
    per-student feedback, the CSV export and the instructor summary.
    """
    from labkit.course.grade import GradeOptions, grade
    from labkit.course.report import export, write_feedback

    if dest.exists():
        shutil.rmtree(dest)
    assignments = [a for lab in labs for a in lab_assignments(repo, lab)]
    log(f"1/5 release: nbgrader generate_assignment for {len(assignments)} assignments "
        f"into {dest}")
    db_url = new_course(repo, dest, assignments)
    log("2/5 demo submissions: full, blank and partial per track")
    for name in assignments:
        for kind in HONEST:
            write_honest(kind, dest, name, dest / "submitted" / f"demo_{kind}" / name)
    from labkit.course.sandbox import probe

    isolated, why = probe()
    if not isolated:  # the demo's own submissions are trusted; students' never are
        log(f"note: student kernels cannot be sandboxed on this machine ({why}); the demo "
            "grades its own trusted submissions without the sandbox. `labkit course grade` "
            "refuses to do that with real submissions unless given --no-isolation.")
    log("3/5 grade (parallel" + (", sandboxed)" if isolated else ")"))
    report = grade(dest, assignments, db_url=db_url,
                   options=GradeOptions(workers=workers, isolate=isolated), log=log)
    log(report.summary())
    log("4/5 feedback")
    html = write_feedback(dest, db_url, assignments)
    log("5/5 export")
    out = export(dest, db_url, dest / "exports", assignments)
    log("")
    log(f"course folder     {dest}")
    log(f"gradebook         {db_url}")
    log(f"feedback          {len(html)} HTML files under {dest / 'feedback'}")
    log(f"grade CSVs        {', '.join(str(p) for p in out.csv_paths)}")
    log(f"class summary     {out.summary_html}  (open in a browser)")
    return 1 if report.errors else 0
