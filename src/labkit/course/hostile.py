"""Hostile submissions: each starts from an honest one (``full``, or a wrong answer) and
does one bad thing — corrupt JSON, loops that ignore interrupts, killing its kernel,
flooding output, editing or deleting a test cell, tampering with metadata, shadowing
``labkit``, writing outside its folder, reading the hidden tests, the network, patching
or swapping the checks, IPython hooks, lying numbers, forged widgets, planted links, a
daemon, filling the disk, forking without end, HTML and JavaScript output. Each carries
the grade cells it must lose and the findings it must raise: :func:`expected` turns that
into the exact expected score.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from labkit.course.honest import _meta, expected_honest, write_honest


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


# Fills every writable place it finds, 1 MiB at a time (the gradebook's disk, if it could).
_DISK_FILL = """\
import os
_written = 0
for _folder in (".", "/tmp", "/dev/shm", "/run/labkit", os.path.expanduser("~"), "/var/tmp"):
    for _i in range(100_000):
        try:
            with open(os.path.join(_folder, f"fill{_i}.bin"), "wb") as _fh:
                _fh.write(b"x" * 1024**2)
            _written += 1
        except OSError:
            break
print("wrote", _written, "MiB")
"""

# Forks until fork fails; every child sleeps an hour (they die with the box).
_FORK_FAN_OUT = """\
import os, time
_children = 0
for _i in range(100_000):
    try:
        _pid = os.fork()
    except OSError:
        break
    if _pid == 0:
        time.sleep(3600)
        os._exit(0)
    _children += 1
print("forked", _children)
"""

# Markup that would run in a browser that showed it unsanitized.
_HTML_OUTPUT = """\
from IPython.display import HTML, Javascript, display
display(HTML("<script>document.title = 'labkit-pwned'; fetch('/hub/api/users')</script>"
             "<img src=x onerror=\\"document.title = 'labkit-pwned'\\">"))
display(Javascript("document.title = 'labkit-pwned'"))
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
                "and classmates' work (and a FIFO) in its folder: they land in the box's "
                "tmpfs, never in the grader's folder", "full",
                _prefix(f"{a}-exercise", _PLANT_LINKS.format(assignment=f"{lab_id}_cloud_fleet"))),
        Hostile("daemon", "Part A answer leaves a detached process that, for five minutes, "
                "kills every other kernel it can signal", "full",
                _prefix(f"{a}-exercise", _DAEMON)),
        Hostile("display_flood", "Part A answer shows one output 200 times and updates it "
                "with 1 MB, 50 times (update_display_data)", "full",
                _prefix(f"{a}-exercise", _DISPLAY_FLOOD)),
        Hostile("disk_fill", "Part A answer writes until no space is left, in its folder, "
                "/tmp, /dev/shm and every folder it can find", "full",
                _prefix(f"{a}-exercise", _DISK_FILL)),
        Hostile("fork_fan_out", "Part A answer forks until the system refuses, every child "
                "sleeping for an hour", "full", _prefix(f"{a}-exercise", _FORK_FAN_OUT)),
        Hostile("html_output", "Part A answer shows a <script>, an <img onerror> and a "
                "Javascript output (they would run in the feedback and formgrader views)",
                "full", _prefix(f"{a}-exercise", _HTML_OUTPUT)),
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


def expected(spec: Hostile, points: dict[str, float]) -> float:
    """The score a hostile submission's honest parts earn."""
    if spec.loses_all_exercises:  # only what labkit_answers.json proves: the commitments
        return sum(v for k, v in points.items() if k.endswith("-done"))
    if spec.base != "full":
        return expected_honest(spec.base, points)
    return sum(v for k, v in points.items() if k not in spec.loses)
