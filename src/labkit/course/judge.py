"""Judge a notebook's test cells outside the student's kernel.

Anything that runs in the student's kernel can be rewritten by an answer cell (a check
function's code object, IPython hooks, ``sys.modules``, a float whose ``__mul__`` lies), so
no verdict is computed there. The contract:

* **The kernel runs the student's cells only.** :func:`plan_notebook` finds the test cells
  (nbgrader ``grade`` code cells that are not answers); the executor blanks them before the
  kernel starts, so hidden tests never reach the kernel, and appends one export cell.
* **Answers leave the kernel as data.** The export cell (:func:`export_source`) prints the
  graded variables as JSON between two random markers; :func:`parse_export` keeps only
  exact JSON types (``type(x) is float`` ...), bounded in size and depth. Whatever the
  kernel prints, it can only state its own answers.
* **Tests run in a trusted process** (``python -I -m labkit.course.judge --serve``, one
  per grading worker, killed and started afresh after any failure:
  :mod:`labkit.course.judge_process`), which never executes student code: each test cell's
  source (restored by nbgrader from the gradebook), in a namespace of ``labkit.grading``'s
  checks, the exercise data (the read-only cells' literals, evaluated with
  :func:`ast.literal_eval`), stand-ins for the parts whose ``predict`` / ``checkpoint``
  are committed when the submitted ``labkit_answers.json`` (read before the kernel ran)
  holds an entry, and the exported answers.
* The :class:`Verdict` of each test becomes the test cell's only output (a pass line, or
  an ``error`` with the check's message and no traceback through hidden code), so
  nbgrader's ``SaveAutoGrades``, gradebook, formgrader and feedback work unchanged.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import io
import json
import re
import signal
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labkit.core.keys import PARTS, answer_key
from labkit.grading import CHECKPOINT_CREDITS

if TYPE_CHECKING:  # the judge process never imports nbformat (1.7 s of jsonschema)
    from nbformat import NotebookNode

MAX_EXPORT_BYTES = 64 * 1024   # all answers of one notebook, as JSON (an answer that does
#                                not fit is voided alone, see export_source)
MAX_DEPTH = 6                  # nesting of lists/dicts in one answer
MAX_INT = 10**18               # larger integers are not answers to these exercises
TEST_SECONDS = 20              # one test cell in the judge
JUDGE_SECONDS = 120            # the judge process for one notebook
JUDGE_MEMORY = 2 * 1024**3     # address space of the judge process (a test fed a huge answer)
_LAB_MODULE = re.compile(r"^from labkit\.labs\.(\w+) import Lab\b", re.M)
# An answer as the judge sees it: JSON's types plus tuples and dicts with non-string keys,
# which travel wrapped (``{TUPLE: [...]}``, ``{DICT: [[key, value], ...]}``), so a test of
# ``answer == (1, 2)`` or ``answer[4096]`` sees what the student's kernel held.
JSONValue = None | bool | int | float | str | list[Any] | tuple[Any, ...] | dict[Any, Any]
TUPLE, DICT = "\u0000tuple", "\u0000dict"
GRADING_ERROR = "GradingError"  # a verdict the judge process could not give (not the student's)


# -- what a notebook asks of the judge ------------------------------------------------------
@dataclass(frozen=True)
class TestCell:
    """One autograded test cell: its index in the notebook, grade id and trusted source."""

    index: int
    grade_id: str
    source: str


@dataclass(frozen=True)
class JudgePlan:
    """Everything the judge needs from the (trusted) instructor cells of a notebook."""

    tests: tuple[TestCell, ...]
    data_sources: tuple[str, ...]        # the read-only cells of literals, in order
    data_names: tuple[str, ...]          # the names they define
    answer_names: tuple[str, ...]        # what the tests read from the student's kernel
    lab_id: str | None                   # for the answer-file keys of the parts
    track_id: str | None


def _nbgrader(cell: NotebookNode) -> Mapping[str, Any]:
    md = cell.get("metadata", {}).get("nbgrader", {})
    return md if isinstance(md, Mapping) else {}


def is_test_cell(cell: NotebookNode) -> bool:
    md = _nbgrader(cell)
    return cell.cell_type == "code" and bool(md.get("grade")) and not md.get("solution")


def literal_assignments(source: str) -> dict[str, object] | None:
    """``NAME = <literal>`` statements of a cell as values (tuples stay tuples), or None
    when the cell holds anything else (it is then instructor code the judge does not run)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    out: dict[str, object] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            return None
        try:
            out[node.targets[0].id] = ast.literal_eval(node.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return out


def free_names(source: str) -> set[str]:
    """Names a cell reads without defining them itself (imports, assignments, loops)."""
    tree = ast.parse(source)
    loads: set[str] = set()
    stores: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, ast.alias):
            stores.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stores.add(node.name)
        elif isinstance(node, ast.arg):
            stores.add(node.arg)
    return loads - stores


def grading_names() -> tuple[str, ...]:
    """The checks a test cell may call without importing them (``labkit.grading``)."""
    import labkit.grading as g

    return tuple(n for n in dir(g) if n.startswith("expect_"))


def plan_notebook(nb: NotebookNode) -> JudgePlan:
    """Read the tests, data and lab identity from a notebook's instructor cells.

    Call it on the notebook as nbgrader's ``OverwriteCells`` left it (test and locked cells
    restored from the gradebook), before the kernel runs.
    """
    tests: list[TestCell] = []
    sources: list[str] = []
    data: dict[str, object] = {}
    lab_id = track_id = None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        md = _nbgrader(cell)
        if is_test_cell(cell):
            tests.append(TestCell(i, str(md.get("grade_id", f"cell-{i}")), cell.source))
        elif md.get("locked") and not md.get("solution"):
            values = literal_assignments(cell.source)
            if values is not None:
                data.update(values)
                sources.append(cell.source)
            elif lab_id is None and (m := _LAB_MODULE.search(cell.source)):
                lab_id, track_id = _lab_identity(m.group(1), cell.source)
    known = set(data) | set(grading_names()) | set(PARTS) | set(dir(builtins)) | {"lab"}
    wanted: set[str] = set()
    for t in tests:
        with contextlib.suppress(SyntaxError):
            wanted |= free_names(t.source) - known
    return JudgePlan(tuple(tests), tuple(sources), tuple(data), tuple(sorted(wanted)),
                     lab_id, track_id)


def _lab_identity(module: str, setup_source: str) -> tuple[str | None, str | None]:
    from labkit.labs.registry import LABS

    lab = next((lab_id for lab_id in LABS if LABS[lab_id].module == module), None)
    track = None
    with contextlib.suppress(SyntaxError):
        for node in ast.parse(setup_source).body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "TRACK"
                    and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)):
                track = node.value.value
    return lab, track


# -- answers out of the kernel ------------------------------------------------------------
_EXPORT = '''\
def __labkit_export(names, marker, limit):
    import json
    def conv(x, depth):
        if depth > {depth}:
            raise ValueError("nested too deeply")
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if type(x).__module__ == "numpy" and getattr(x, "ndim", None) == 0:
            return conv(x.item(), depth + 1)
        if isinstance(x, tuple):
            return {{{tuple_tag!r}: [conv(v, depth + 1) for v in x]}}
        if isinstance(x, list):
            return [conv(v, depth + 1) for v in x]
        if isinstance(x, dict):
            return {{{dict_tag!r}: [[conv(k, depth + 1), conv(v, depth + 1)]
                                   for k, v in x.items()]}}
        raise TypeError(type(x).__name__ + " is not a number, string, list or dict")
    out, used = {{}}, 2
    for name in names:
        if name in globals():
            try:
                item = {{"value": conv(globals()[name], 0)}}
            except Exception as exc:
                item = {{"unusable": (type(exc).__name__ + ": " + str(exc))[:200]}}
            size = len(json.dumps(item)) + len(name) + 6
            if used + size > limit:  # this answer alone is voided, the others still count
                item = {{"too_large": size}}
                size = 64 + len(name)
            out[name] = item
            used += size
    print(marker + json.dumps(out) + marker)
__labkit_export({names!r}, {marker!r}, {limit})
del __labkit_export
'''


def export_source(names: Sequence[str], marker: str) -> str:
    """The code of the export cell the executor appends to the kernel's notebook."""
    return _EXPORT.format(depth=MAX_DEPTH, names=list(names), marker=marker,
                          limit=MAX_EXPORT_BYTES, tuple_tag=TUPLE, dict_tag=DICT)


@dataclass(frozen=True)
class Unusable:
    """An answer that did not leave the kernel as plain data; a check reports ``reason``."""

    reason: str
    too_large: bool = False  # over MAX_EXPORT_BYTES: the grader reports it (a finding)

    def __repr__(self) -> str:
        return f"<unusable: {self.reason}>"


def _checked(x: object, depth: int = 0) -> JSONValue:
    """The value ``x`` encodes (tuples and dicts unwrapped) if it is made only of exact
    JSON types within the limits; else ValueError."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if x is None:
        return None
    if isinstance(x, bool | str | float | int) and type(x) in (bool, str, float, int):
        if type(x) is int and abs(x) > MAX_INT:
            raise ValueError("an integer beyond 10^18")
        return x
    if isinstance(x, list) and type(x) is list:
        return [_checked(v, depth + 1) for v in x]
    if isinstance(x, dict) and type(x) is dict and len(x) == 1:
        (tag, body), = x.items()
        if tag == TUPLE and type(body) is list:
            return tuple(_checked(v, depth + 1) for v in body)
        if tag == DICT and type(body) is list:
            out: dict[Any, Any] = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise ValueError("a malformed dict")
                key = _checked(pair[0], depth + 1)
                try:
                    hash(key)
                except TypeError:
                    raise ValueError("a dict with an unhashable key") from None
                out[key] = _checked(pair[1], depth + 1)
            return out
    raise ValueError(f"a {type(x).__name__}")


def encode(x: JSONValue) -> Any:
    """A checked value as JSON again (the inverse of :func:`_checked`), for the judge
    process."""
    if isinstance(x, tuple):
        return {TUPLE: [encode(v) for v in x]}
    if isinstance(x, list):
        return [encode(v) for v in x]
    if isinstance(x, dict):
        return {DICT: [[encode(k), encode(v)] for k, v in x.items()]}
    return x


def parse_export(outputs: Iterable[Mapping[str, Any]], marker: str,
                 names: Sequence[str]) -> dict[str, JSONValue | Unusable]:
    """The answers the export cell printed: only ``names``, only exact JSON values;
    anything else becomes an :class:`Unusable` with its reason. Missing names are absent."""
    text = "".join(str(o.get("text", "")) for o in outputs
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")
    start, end = text.find(marker), text.rfind(marker)
    if start < 0 or end <= start:
        return {}
    body = text[start + len(marker):end]
    if len(body) > MAX_EXPORT_BYTES + 96 * len(names) + 64:
        return {n: Unusable("the answers were too large to grade") for n in names}
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(raw, dict):
        return {}
    if "__too_large__" in raw:
        return {n: Unusable("the answers were too large to grade") for n in names}
    out: dict[str, JSONValue | Unusable] = {}
    for name in names:
        item = raw.get(name)
        if not isinstance(item, dict):
            continue
        if "value" in item and len(json.dumps(item["value"])) <= MAX_EXPORT_BYTES:
            try:
                out[name] = _checked(item["value"])
            except (ValueError, RecursionError) as exc:
                out[name] = Unusable(str(exc))
        elif "value" in item or "too_large" in item:
            out[name] = Unusable(f"{name} is too large to grade (over "
                                 f"{MAX_EXPORT_BYTES // 1024} KB as JSON)", too_large=True)
        else:
            out[name] = Unusable(str(item.get("unusable", "not plain data"))[:200])
    return out


def committed_keys(answers_file: Path, lab_id: str | None) -> list[str]:
    """Keys of ``lab_id`` with a recorded answer in a submitted ``labkit_answers.json``
    (already validated by :mod:`labkit.course.submission`) that may earn completion
    credit: a prediction or checkpoint counts only when every value recorded for it is
    one of its options; [] when there is none."""
    return answer_audit(answers_file, lab_id)[0]


def first_answers(answers_file: Path, lab_id: str | None) -> dict[str, JSONValue]:
    """{key: first committed value} of the answers that count (:func:`answer_audit`) in a
    submitted answers file: what a checkpoint's correctness is judged on."""
    keys = set(committed_keys(answers_file, lab_id))
    if not keys:
        return {}
    from labkit.core.answers import AnswerStore

    try:
        entries = AnswerStore(answers_file).entries(lab_id)
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError,
            RecursionError):
        return {}
    return {e.key: e.first for e in entries if e.key in keys}


@dataclass(frozen=True)
class Choices:
    """What a prediction or checkpoint accepts: one of ``options``, or a number within
    ``bounds`` (as its widget would record it)."""

    options: tuple[str | int | float, ...] | None
    bounds: tuple[float, float] | None = None

    def allows(self, value: object) -> bool:
        if isinstance(value, bool):
            return False
        if isinstance(value, str):
            return self.options is not None and value in self.options
        if not isinstance(value, int | float) or value != value or abs(value) == float("inf"):
            return False
        if self.options is not None:
            return any(not isinstance(o, str) and float(o) == float(value)
                       for o in self.options)
        return self.bounds is not None and self.bounds[0] <= value <= self.bounds[1]


def fresh_lab(lab_id: str, track_id: str) -> Any:
    """``lab_id`` on ``track_id`` as nobody has answered it, every part built headless
    (its questions and computed answers are the same as with views; nobody sees this lab):
    an empty answers store and no design ledger (``$LABKIT_LEDGER`` is restored after)."""
    import os
    import tempfile

    from labkit.core.answers import LEDGER_ENV, AnswerStore
    from labkit.labs.registry import LABS

    nowhere = Path(tempfile.gettempdir(), f"labkit-no-answers-{os.getpid()}", "none.json")
    saved = os.environ.get(LEDGER_ENV)
    os.environ[LEDGER_ENV] = str(nowhere)
    try:
        lab = LABS.get_lab(lab_id).lab(track_id, store=AnswerStore(nowhere), headless=True)
        lab.parts()
        return lab
    finally:
        if saved is None:
            os.environ.pop(LEDGER_ENV, None)
        else:
            os.environ[LEDGER_ENV] = saved


@functools.lru_cache(maxsize=64)
def question_choices(lab_id: str, track_id: str) -> dict[str, Choices] | None:
    """The answer-store key of every prediction and checkpoint of ``lab_id`` on
    ``track_id`` and what it accepts, read from the lab's own widgets
    (:func:`fresh_lab`); {} for an unknown track, None when the lab cannot be built (then
    no completion credit can be checked, so none is given)."""
    from labkit.labs.registry import LABS
    from labkit.tracks import get_track

    try:
        get_track(track_id)
        LABS.get_lab(lab_id)
    except (ValueError, KeyError, LookupError):
        return {}
    try:
        lab = fresh_lab(lab_id, track_id)
        out = {}
        for letter in PARTS:
            part = lab.part(letter)
            for q in (part.predict, part.checkpoint):
                out[q.key] = Choices(None if q.options is None else tuple(q.options),
                                     q.bounds)
        return out
    except Exception:  # a grader bug must not crash a job: no credit, and a finding
        return None


def answer_audit(answers_file: Path, lab_id: str | None) -> tuple[list[str], dict[str, str]]:
    """(keys that may earn completion credit, {key: why not} for the entries that may not)
    of ``lab_id`` in a submitted answers file. A value that is not one of its question's
    options (empty, another type, a label) earns nothing: only a widget's commit counts."""
    if lab_id is None or not answers_file.is_file() or answers_file.is_symlink():
        return [], {}
    from labkit.core.answers import AnswerStore

    try:
        entries = AnswerStore(answers_file).entries(lab_id)
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError,
            RecursionError):
        return [], {}
    keys: set[str] = set()
    refused: dict[str, str] = {}
    for e in entries:
        choices = question_choices(lab_id, e.key.partition(".")[0])
        if choices is None:
            refused[e.key] = "the grader could not read this lab's questions"
            continue
        allowed = choices.get(e.key)
        values = [e.first, *(c.value for c in e.changes)]
        bad = [v for v in values if allowed is not None and not allowed.allows(v)]
        if bad:
            refused[e.key] = f"{bad[0]!r} is not one of its choices"
        else:
            keys.add(e.key)  # one of its options, or not a question (a memo)
    return sorted(keys), refused


# -- verdicts -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """What one test cell found: ``passed``, its printed text, or the failure shown."""

    grade_id: str
    passed: bool
    text: str = ""
    ename: str = ""
    evalue: str = ""

    def outputs(self) -> list[NotebookNode]:
        """The test cell's outputs in the autograded notebook (what nbgrader scores)."""
        from nbformat.v4 import new_output

        if self.passed:
            return [new_output("stream", name="stdout", text=self.text or "Passed.\n")]
        return [new_output("error", ename=self.ename, evalue=self.evalue,
                           traceback=[f"{self.ename}: {self.evalue}"])]


@dataclass(frozen=True)
class _Committed:
    """What a test cell sees of a widget: committed, its first committed value and how a
    checkpoint earns credit (``labkit.grading.expect_checkpoint``)."""

    committed: bool
    first: object = None
    credit: str = "correct"


@dataclass(frozen=True)
class _PartAnswers:
    predict: _Committed
    checkpoint: _Committed


def _parts(track_id: str | None, firsts: Mapping[str, Any],
           credit: str) -> dict[str, _PartAnswers]:
    def seen(key: str) -> _Committed:
        return _Committed(key in firsts, firsts.get(key), credit)

    return {p: _PartAnswers(seen(answer_key(str(track_id), p, "prediction")),
                            seen(answer_key(str(track_id), p, "checkpoint")))
            for p in PARTS}


def _fail_message(exc: BaseException, answer_names: Sequence[str]) -> tuple[str, str]:
    if isinstance(exc, MemoryError):
        return "MemoryError", "checking this answer needed too much memory"
    if isinstance(exc, AssertionError):
        return "AssertionError", str(exc) or "a check of your answer failed"
    if isinstance(exc, NameError) and getattr(exc, "name", None) in answer_names:
        return "NameError", (f"`{exc.name}` was not defined when your notebook finished "
                             "running: run the exercise cell that sets it")
    if isinstance(exc, TimeoutError):
        return "TimeoutError", "checking this answer took too long"
    return type(exc).__name__, ("the grader could not check your answer with this test "
                                f"({type(exc).__name__}); compare its type and form with "
                                "the exercise statement")


@dataclass
class _Request:
    tests: list[dict[str, Any]]
    data_sources: list[str]
    answers: dict[str, Any]
    unusable: dict[str, str] = field(default_factory=dict)
    committed: list[str] = field(default_factory=list)
    track_id: str | None = None
    answer_names: list[str] = field(default_factory=list)
    firsts: dict[str, Any] = field(default_factory=dict)
    checkpoint_credit: str = "correct"


def _alarm(_signum: int, _frame: object) -> None:
    raise TimeoutError


def _run_tests(req: _Request) -> list[Verdict]:
    """Run each test in a namespace of its own (a test cannot change another's data)."""
    import copy

    import labkit.grading as grading

    checks = {n: getattr(grading, n) for n in grading_names()}
    data: dict[str, object] = {}
    for src in req.data_sources:  # literals only: evaluated, never executed
        data.update(literal_assignments(src) or {})
    firsts = {k: req.firsts.get(k) for k in req.committed}
    credit = req.checkpoint_credit if req.checkpoint_credit in CHECKPOINT_CREDITS else "correct"
    parts = _parts(req.track_id, firsts, credit)
    answers: dict[str, Any] = dict(req.answers)
    answers.update({k: Unusable(v) for k, v in req.unusable.items()})
    names = tuple(req.answer_names)
    verdicts = []
    signal.signal(signal.SIGALRM, _alarm)
    for t in req.tests:
        ns: dict[str, Any] = {"__builtins__": builtins, "__name__": "__labkit_test__",
                              **checks, **copy.deepcopy(data), **parts,
                              **copy.deepcopy(answers)}
        out = io.StringIO()
        signal.alarm(TEST_SECONDS)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(t["source"], f"<test {t['grade_id']}>", "exec"), ns)
        except BaseException as exc:  # every failure, even SystemExit, is a verdict
            ename, evalue = _fail_message(exc, names)
            verdicts.append(Verdict(t["grade_id"], False, ename=ename, evalue=evalue))
        else:
            verdicts.append(Verdict(t["grade_id"], True, text=out.getvalue()[:4000]))
        finally:
            signal.alarm(0)
    return verdicts


def judge(plan: JudgePlan, answers: Mapping[str, JSONValue | Unusable],
          committed: Sequence[str], *, timeout: float = JUDGE_SECONDS,
          firsts: Mapping[str, JSONValue] | None = None,
          checkpoint_credit: str = "correct") -> list[Verdict]:
    """Run ``plan``'s tests in this process's judge (``python -I -m labkit.course.judge
    --serve``, :mod:`labkit.course.judge_process`: one per grading worker, fresh after any
    failure).
    ``committed``: the answer keys that count (:func:`committed_keys`); ``firsts``: their
    first committed values (:func:`first_answers`); ``checkpoint_credit``: the course's
    ``c.LabkitGrade.checkpoint_credit``."""
    if not plan.tests:
        return []
    req = {
        "tests": [{"grade_id": t.grade_id, "source": t.source} for t in plan.tests],
        "data_sources": list(plan.data_sources),
        "answers": {k: encode(v) for k, v in answers.items() if not isinstance(v, Unusable)},
        "unusable": {k: v.reason for k, v in answers.items() if isinstance(v, Unusable)},
        "committed": list(committed), "track_id": plan.track_id,
        "answer_names": list(plan.answer_names),
        "firsts": {k: encode(v) for k, v in (firsts or {}).items() if k in committed},
        "checkpoint_credit": checkpoint_credit,
    }
    from labkit.course.judge_process import JUDGE

    reply = JUDGE.ask(json.dumps(req), timeout)
    try:
        rows = json.loads(reply) if reply is not None else None
    except ValueError:
        rows = None
    if not isinstance(rows, list):
        why = "the grader's test process failed; ask your instructor to re-grade"
        return [Verdict(t.grade_id, False, ename=GRADING_ERROR, evalue=why)
                for t in plan.tests]
    verdicts = [Verdict(**r) for r in rows]
    if any(v.ename in _SPENT for v in verdicts):
        JUDGE.close()  # a test ran out of memory or time: the next notebook gets a new one
    return verdicts


# Verdicts after which the judge process may hold what a test left (a heap grown to the
# memory limit, a test interrupted mid-way): the next notebook is judged in a fresh one.
_SPENT = frozenset({"MemoryError", "TimeoutError"})


def _answer(text: str) -> str:
    """The verdicts (one line of JSON) of one request (JSON text)."""
    raw = json.loads(text)
    # the parent sent only checked values; refuse anything else, and unwrap them
    raw["answers"] = {str(k): _checked(v) for k, v in dict(raw["answers"]).items()}
    raw["firsts"] = {str(k): _checked(v) for k, v in dict(raw.get("firsts", {})).items()}
    return json.dumps([asdict(v) for v in _run_tests(_Request(**raw))])


def _serve() -> None:
    """Answer one request per stdin line, one line each, each with :data:`JUDGE_SECONDS`
    more of CPU (past it the kernel ends the process: the client sees no answer)."""
    import ctypes
    import os
    import resource

    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a test's stray write to fd 1 cannot forge the protocol
    for line in sys.stdin:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(usage.ru_utime + usage.ru_stime) + 1 + JUDGE_SECONDS
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        proto.write(_answer(line) + "\n")


def main() -> None:
    """``python -I -m labkit.course.judge [--serve]``: a request on stdin, verdicts on
    stdout (``--serve``: one per line, until stdin closes)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (JUDGE_MEMORY, JUDGE_MEMORY))
    if sys.argv[1:] == ["--serve"]:
        _serve()
        return
    resource.setrlimit(resource.RLIMIT_CPU, (JUDGE_SECONDS, JUDGE_SECONDS))
    sys.stdout.write(_answer(sys.stdin.read()))


if __name__ == "__main__":
    main()
