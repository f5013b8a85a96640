"""What of a student's submission reaches the grader: the answers, and nothing else.

nbgrader's own sanitising (``OverwriteCells``) restores a test cell's source by grade id,
but it trusts the student's notebook for everything else: which cells exist, their
metadata and tags, which files sit beside the notebook. A cell whose grade id was edited
away, a deleted test cell, a ``labkit/grading.py`` dropped next to the notebook to shadow
the real one — each changes the score. Here the graded notebook is rebuilt from the
**release** notebook the student was given:

* every instructor cell (instructions, locked code, visible and hidden tests) comes from
  the release, source and metadata, whatever the submission did to it;
* every answer cell (nbgrader ``solution``) takes the student's source, matched by grade id;
* the student's own scratch cells (no nbgrader metadata) are kept where they were;
* cells claiming unknown or duplicate grade ids are dropped;
* of the files beside the notebook only ``labkit_answers.json`` (validated; an answer that
  is not one of its question's choices is named, and earns no completion credit in
  :func:`labkit.course.judge.committed_keys`) and nbgrader's ``timestamp.txt`` and
  ``submission_secret.txt`` (validated) are kept -- ``nbgrader release_feedback`` names a
  student's released feedback by that secret; none is read past its size cap;
* a lone surrogate (valid JSON, invalid Unicode: nbgrader could not save the notebook)
  becomes U+FFFD, and the rest is graded.

Every change is a :class:`Finding` with a message for the instructor and the student, so
a submission "gets exactly the score its honest parts earn, and a clear reason".
"""

from __future__ import annotations

import ast
import json
import os
import re
import stat
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ANSWERS_FILE = "labkit_answers.json"
TIMESTAMP_FILE = "timestamp.txt"
SECRET_FILE = "submission_secret.txt"  # written by `nbgrader submit` (secrets.token_hex(64))
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
MAX_ANSWERS_BYTES = 1024 * 1024
MAX_TIMESTAMP_BYTES = 200
MAX_SECRET_BYTES = 512
_SECRET_RE = re.compile(rb"[A-Za-z0-9_-]{16,256}\r?\n?")  # a token, maybe one line end
_SURROGATE = re.compile("[\ud800-\udfff]")  # after json.loads, only a lone one is left

# Answer code that reaches into the grader: allowed to run, but flagged for a human.
_GRADER_NAMES = re.compile(r"^(expect_[A-Za-z_]*|AssertionError|__builtins__|builtins)$")
_GRADER_MODULES = ("labkit.grading", "builtins")  # and `labkit` itself, which holds grading
_GRADER_CALLS = ("globals", "setattr", "delattr", "vars", "exec", "eval", "__import__")


@dataclass(frozen=True)
class Finding:
    """One thing the grader changed or noticed in a submission.

    ``code`` is stable (tests and the export key on it); ``message`` is for people.
    ``flag`` asks for a human look (nbgrader's *flagged* submission).
    """

    code: str
    message: str
    flag: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "flag": self.flag}


def _grade_id(cell: Mapping) -> str | None:
    meta = cell.get("metadata")
    nbg = meta.get("nbgrader") if isinstance(meta, Mapping) else None
    if not isinstance(nbg, Mapping):
        return None
    gid = nbg.get("grade_id")
    return gid if isinstance(gid, str) and gid else ""


def _source(cell: Mapping) -> str | None:
    src = cell.get("source")
    if isinstance(src, str):
        return src
    if isinstance(src, list) and all(isinstance(s, str) for s in src):
        return "".join(src)
    return None


def _is_solution(cell: Mapping) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


def _is_grade(cell: Mapping) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade"))


def _describe(cell: Mapping) -> str:
    if _is_grade(cell) and not _is_solution(cell):
        return "test cell"
    return "answer cell" if _is_solution(cell) else "instructor cell"


def parse_notebook(raw: bytes) -> tuple[dict | None, Finding | None]:
    """Parse submitted notebook bytes leniently; a reason instead of an exception."""
    if len(raw) > MAX_NOTEBOOK_BYTES:
        return None, Finding("notebook-too-large", f"the notebook is {len(raw) / 1e6:.1f} MB "
                             f"(limit {MAX_NOTEBOOK_BYTES / 1e6:.0f} MB): graded as the blank "
                             "release", flag=True)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        return None, Finding("notebook-corrupt", f"the notebook is not valid JSON ({exc}): "
                             "graded as the blank release", flag=True)
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return None, Finding("notebook-corrupt", "the file is JSON but not a notebook (no "
                             "cell list): graded as the blank release", flag=True)
    return _without_surrogates(data)


def _without_surrogates(data: dict) -> tuple[dict | None, Finding | None]:
    """``data`` with every lone surrogate (a ``\\ud800`` escape with no partner: valid
    JSON, but no UTF-8 file can hold it, so nbgrader could not save the notebook) replaced
    by U+FFFD, and a finding saying how many; the rest is graded as written."""
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (ValueError, RecursionError) as exc:
        return None, Finding("notebook-corrupt", f"the notebook cannot be read back ({exc}): "
                             "graded as the blank release", flag=True)
    fixed, n = _SURROGATE.subn("\ufffd", text)
    if not n:
        return data, None
    return json.loads(fixed), Finding(
        "text-repaired", f"{n} character(s) of the notebook were not valid Unicode (lone "
        "surrogates) and were replaced by \ufffd; everything else was graded as written")


@dataclass
class _Merge:
    """The student's cells read against the release: what :func:`canonicalise` keeps.

    ``by_id``/``index_of`` map each release grade id to its cell and position;
    ``locked_sources`` are the (stripped) sources of the release's non-answer cells.
    """

    by_id: dict[str, nbformat.NotebookNode]
    index_of: dict[str, int]
    locked_sources: set[str]
    findings: list[Finding] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)
    # release index the scratch cells follow (-1: before the first) -> cells
    extras: dict[int, list[dict]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    anchor: int = -1

    @classmethod
    def of_release(cls, rel_cells: list[nbformat.NotebookNode]) -> _Merge:
        return cls(by_id={c.metadata["nbgrader"]["grade_id"]: c for c in rel_cells
                          if _grade_id(c)},
                   index_of={gid: i for i, c in enumerate(rel_cells)
                             if (gid := _grade_id(c))},
                   locked_sources={(_source(c) or "").strip() for c in rel_cells
                                   if not _is_solution(c)})


def canonicalise(submitted: Mapping | None,
                 release: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[Finding]]:
    """Rebuild the graded notebook from ``release`` and the student's answers.

    ``submitted`` is the parsed JSON of the student's notebook (``None`` when unreadable:
    the blank release is graded). Returns the notebook to grade and what was changed.
    """
    rel_cells = list(release.cells)
    merge = _Merge.of_release(rel_cells)
    for pos, cell in enumerate(submitted.get("cells", []) if submitted else []):
        _merge_cell(merge, pos, cell)
    if submitted is not None:
        merge.findings.extend(_missing_cells(merge.by_id, merge.seen))
    out = _assemble(release, rel_cells, merge.answers, merge.extras)
    return out, [*merge.findings, *_grader_touch(out)]


def _merge_cell(merge: _Merge, pos: int, cell: object) -> None:
    """Read submitted cell number ``pos`` (0-based) into ``merge``."""
    if not isinstance(cell, Mapping) or cell.get("cell_type") not in (
            "code", "markdown", "raw"):
        merge.findings.append(Finding("cell-dropped", f"cell {pos + 1} is not a valid "
                                      "notebook cell and was not graded"))
        return
    gid = _grade_id(cell)
    src = _source(cell)
    if gid is None:  # the student's own cell
        _merge_scratch(merge, pos, cell, src)
        return
    ref = merge.by_id.get(gid)
    if ref is None:
        merge.findings.append(Finding("cell-dropped", f"cell {pos + 1} claims grade id "
                                      f"{gid!r}, which is not in the assignment: not graded",
                                      flag=True))
        return
    if gid in merge.seen:
        merge.findings.append(Finding("cell-dropped", f"a second copy of {_describe(ref)} "
                                      f"{gid!r} was not graded", flag=True))
        return
    merge.seen.add(gid)
    merge.anchor = merge.index_of[gid]
    if _is_solution(ref):
        _merge_answer(merge, gid, ref, cell, src)
    else:
        merge.findings.extend(_instructor_changes(gid, ref, cell, src))


def _merge_scratch(merge: _Merge, pos: int, cell: Mapping, src: str | None) -> None:
    """A cell without nbgrader metadata: kept after the last matched release cell."""
    if src is None:
        merge.findings.append(Finding("cell-dropped", f"cell {pos + 1} has an unreadable "
                                      "source and was not graded"))
    elif src.strip() and src.strip() in merge.locked_sources:
        pass  # a copy of an instructor cell stripped of its metadata: the original runs
    else:
        merge.extras.setdefault(merge.anchor, []).append(dict(cell))


def _merge_answer(merge: _Merge, gid: str, ref: nbformat.NotebookNode, cell: Mapping,
                  src: str | None) -> None:
    """An answer cell: its source is the student's, its metadata the release's."""
    if cell.get("cell_type") != ref.cell_type or src is None:
        merge.findings.append(Finding("answer-unreadable", f"answer cell {gid!r} was changed "
                                      f"to a {cell.get('cell_type')} cell or lost its "
                                      "source: graded as unanswered", flag=True))
    else:
        merge.answers[gid] = src
    if cell.get("metadata", {}).get("nbgrader") != ref.metadata.get("nbgrader"):
        merge.findings.append(Finding("metadata-restored", f"the grading metadata of answer "
                                      f"cell {gid!r} was edited: restored", flag=True))


def _instructor_changes(gid: str, ref: nbformat.NotebookNode, cell: Mapping,
                        src: str | None) -> list[Finding]:
    """What the student changed of an instructor cell (the release's copy is graded)."""
    if src != ref.source or cell.get("cell_type") != ref.cell_type:
        code = "test-restored" if _is_grade(ref) else "cell-restored"
        return [Finding(code, f"{_describe(ref)} {gid!r} was edited: the original was "
                        "graded", flag=_is_grade(ref))]
    if (cell.get("metadata", {}).get("nbgrader") != ref.metadata.get("nbgrader")
            or (cell.get("metadata", {}).get("tags") or []) != (ref.metadata.get("tags")
                                                                or [])):
        return [Finding("metadata-restored", f"the metadata or tags of {_describe(ref)} "
                        f"{gid!r} were edited: restored", flag=_is_grade(ref))]
    return []


def _missing_cells(by_id: Mapping[str, nbformat.NotebookNode],
                   seen: set[str]) -> list[Finding]:
    """The release cells the submission does not have (all are put back)."""
    found = []
    for gid, ref in by_id.items():
        if gid in seen:
            continue
        if _is_solution(ref):
            found.append(Finding("answer-missing", f"answer cell {gid!r} is missing: "
                                 "graded as unanswered"))
        elif _is_grade(ref):
            found.append(Finding("test-readded", f"test cell {gid!r} was deleted: the "
                                 "original was put back and graded", flag=True))
        else:
            found.append(Finding("cell-readded", f"instructor cell {gid!r} was "
                                 "deleted: put back"))
    return found


def _assemble(release: nbformat.NotebookNode, rel_cells: list[nbformat.NotebookNode],
              answers: Mapping[str, str],
              extras: Mapping[int, list[dict]]) -> nbformat.NotebookNode:
    """The graded notebook: release cells (outputs cleared, answers filled in) with the
    student's scratch cells after the release cell they followed."""
    out = nbformat.v4.new_notebook(metadata=nbformat.from_dict(dict(release.metadata)))
    used_ids = {c.get("id") for c in rel_cells}
    out.cells.extend(_scratch_cell(raw, used_ids) for raw in extras.get(-1, []))
    for i, ref in enumerate(rel_cells):
        cell = nbformat.from_dict(json.loads(json.dumps(ref)))
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        gid = _grade_id(ref)
        if gid is not None and gid in answers:
            cell.source = answers[gid]
        out.cells.append(cell)
        out.cells.extend(_scratch_cell(raw, used_ids) for raw in extras.get(i, []))
    return out


def _scratch_cell(raw: Mapping, used_ids: set[str | None]) -> nbformat.NotebookNode:
    """A fresh cell with only the source of the student's ``raw`` cell, a new unique id."""
    maker = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell,
             "raw": nbformat.v4.new_raw_cell}[raw["cell_type"]]
    new = maker(source=_source(raw) or "")
    while new.get("id") in used_ids:
        new["id"] = uuid.uuid4().hex[:8]
    used_ids.add(new.get("id"))
    return new


def _touches_grader(code: str) -> str | None:
    """What in ``code`` reaches into the grading machinery, or None.

    Binding a name the checks use (``expect_*``, ``AssertionError``) in any way
    (assignment, ``def``, ``class``, import alias, walrus, loop target), importing
    ``labkit.grading`` or ``builtins``, or calling ``globals``/``setattr``/``exec``-style
    escape hatches. Code that does not parse is judged by the same rules on its text.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        if re.search(r"\bexpect_\w+\s*[:=]|labkit\.grading|builtins|sys\.modules", code):
            return "reaches into the grading checks"
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                and _GRADER_NAMES.match(node.id):
            return f"rebinds {node.id}"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and _GRADER_NAMES.match(node.name):
            return f"defines {node.name}"
        if isinstance(node, (ast.Global, ast.Nonlocal)) and any(
                _GRADER_NAMES.match(n) for n in node.names):
            return "declares a grading name global"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(_GRADER_MODULES) or alias.name == "labkit" or (
                        alias.asname and _GRADER_NAMES.match(alias.asname)):
                    return f"imports {alias.name}"
        if isinstance(node, ast.ImportFrom):
            names = {a.name for a in node.names} | {a.asname or "" for a in node.names}
            if (node.module or "").startswith(_GRADER_MODULES) or (
                    node.module == "labkit" and "grading" in names) or any(
                    a.asname and _GRADER_NAMES.match(a.asname) for a in node.names):
                return f"imports from {node.module}"
        if isinstance(node, ast.Attribute) and node.attr in ("modules", "__builtins__") \
                and isinstance(node.value, ast.Name) and node.value.id in ("sys", "builtins"):
            return f"touches {node.value.id}.{node.attr}"
        if isinstance(node, ast.Name) and node.id in ("__builtins__", "builtins"):
            return f"touches {node.id}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _GRADER_CALLS:
            return f"calls {node.func.id}()"
    return None


def _grader_touch(nb: nbformat.NotebookNode) -> list[Finding]:
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or (_grade_id(cell) and not _is_solution(cell)):
            continue
        what = _touches_grader(cell.source)
        if what:
            where = _grade_id(cell) or "a cell the student added"
            found.append(Finding("grader-touch", f"{where} {what}: flagged for a human to "
                                 "review", flag=True))
    return found


def _check_answers(path: Path) -> str | None:
    """Why the answers file at ``path`` cannot be used, or None when labkit reads it."""
    from labkit.core.answers import AnswerStore

    size = path.stat().st_size
    if size > MAX_ANSWERS_BYTES:
        return f"it is {size / 1e6:.1f} MB (limit {MAX_ANSWERS_BYTES / 1e6:.0f} MB)"
    try:
        AnswerStore(path).entries()
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError,
            RecursionError) as exc:
        return str(exc).replace(str(path), ANSWERS_FILE)
    return None


def _read_at_most(path: Path, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of the regular file at ``path`` (never through a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        return f.read(limit)


def _keep_answers(raw: bytes, dest_dir: Path, release_dir: Path,
                  names: list[str]) -> list[Finding]:
    """Write the submitted answers file into ``dest_dir`` when labkit reads it (else a
    finding, and no file); say which of its answers cannot earn completion credit."""
    (dest_dir / ANSWERS_FILE).write_bytes(raw)
    why = _check_answers(dest_dir / ANSWERS_FILE)
    if why:
        (dest_dir / ANSWERS_FILE).unlink()
        return [Finding("answers-unreadable", f"{ANSWERS_FILE} was left out: {why}; "
                        "committed predictions in it could not count", flag=True)]
    return _audit_answers(dest_dir / ANSWERS_FILE, release_dir, names)


def _audit_answers(path: Path, release_dir: Path, names: list[str]) -> list[Finding]:
    """A finding for the answers that cannot earn completion credit: a value that is not
    one of its question's options (no widget records one; the judge does not count it)."""
    from labkit.course import judge

    lab_ids = {judge.plan_notebook(nbformat.read(release_dir / n, as_version=4)).lab_id
               for n in names}
    refused: dict[str, str] = {}
    for lab_id in sorted(i for i in lab_ids if i):
        refused.update(judge.answer_audit(path, lab_id)[1])
    if not refused:
        return []
    shown = "; ".join(f"{k}: {why}" for k, why in sorted(refused.items())[:8])
    more = f" and {len(refused) - 8} more" if len(refused) > 8 else ""
    return [Finding("answers-invalid", f"{len(refused)} answer(s) in {ANSWERS_FILE} earn no "
                    f"completion credit: {shown}{more}", flag=True)]


def prepare(submitted_dir: Path, release_dir: Path, dest_dir: Path,
            notebooks: Iterable[str]) -> list[Finding]:
    """Write what is graded of ``submitted_dir`` into ``dest_dir``; return the findings.

    ``notebooks`` are the assignment's notebook names (without ``.ipynb``). Nothing in
    ``submitted_dir`` is followed through a symlink or executed.
    """
    dest_dir.mkdir(parents=True, exist_ok=True)
    findings: list[Finding] = []
    names = [f"{n}.ipynb" for n in notebooks]
    wanted = {*names, ANSWERS_FILE, TIMESTAMP_FILE, SECRET_FILE}
    ignored = []
    for path in sorted(submitted_dir.rglob("*")):
        rel = path.relative_to(submitted_dir).as_posix()
        if path.is_symlink():
            ignored.append(f"{rel} (a symlink)")
        elif path.is_file() and rel not in wanted:
            ignored.append(os.fsencode(rel).decode("utf-8", "backslashreplace"))
    if ignored:
        shown = ", ".join(ignored[:8]) + (f" and {len(ignored) - 8} more" if len(ignored) > 8
                                          else "")
        findings.append(Finding("file-ignored", f"files beside the notebook are not graded "
                                f"and were left out: {shown}"))

    def read(name: str, limit: int) -> bytes | None:
        """At most ``limit + 1`` bytes (enough to tell it is too big) of a regular file."""
        path = submitted_dir / name
        if path.is_symlink() or not path.is_file():
            return None
        return _read_at_most(path, limit + 1)

    for name in names:
        release = nbformat.read(release_dir / name, as_version=4)
        raw = read(name, MAX_NOTEBOOK_BYTES)
        if raw is None:
            findings.append(Finding("notebook-missing", f"{name} was not submitted (or not "
                                    "copied for grading: see file-skipped): graded as the "
                                    "blank release"))
            data = None
        else:
            data, problem = parse_notebook(raw)
            if problem:
                findings.append(problem)
        nb, found = canonicalise(data, release)
        findings.extend(found)
        nbformat.write(nb, dest_dir / name)

    raw = read(ANSWERS_FILE, MAX_ANSWERS_BYTES)
    if raw is not None:
        findings.extend(_keep_answers(raw, dest_dir, release_dir, names))
    raw = read(TIMESTAMP_FILE, MAX_TIMESTAMP_BYTES)
    if raw is not None:
        if _timestamp_ok(raw):
            (dest_dir / TIMESTAMP_FILE).write_bytes(raw)
        else:
            findings.append(Finding("timestamp-unreadable", f"{TIMESTAMP_FILE} is not a "
                                    "submission time: left out (no late penalty computed)",
                                    flag=True))
    findings.extend(_keep_secret(submitted_dir / SECRET_FILE, dest_dir))
    return findings


def _keep_secret(path: Path, dest_dir: Path) -> list[Finding]:
    """Copy nbgrader's ``submission_secret.txt`` byte for byte (``release_feedback`` hashes
    it as read) when it is a small regular file holding one ASCII token; else a finding.

    Absent: nothing to say (not every submission comes through the exchange). A symlink
    is never opened: it is already reported with the ignored files.
    """
    if path.is_symlink() or not os.path.lexists(path):
        return []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return [_secret_finding(f"it cannot be read ({exc.strerror})")]
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        raw = os.read(fd, MAX_SECRET_BYTES + 1) if regular else b""
    finally:
        os.close(fd)
    if not regular:
        return [_secret_finding("it is not a regular file")]
    if len(raw) > MAX_SECRET_BYTES:
        return [_secret_finding(f"it is over {MAX_SECRET_BYTES} bytes")]
    if not _SECRET_RE.fullmatch(raw):
        return [_secret_finding("it is not a plain ASCII token of 16 to 256 characters")]
    (dest_dir / SECRET_FILE).write_bytes(raw)
    return []


def _secret_finding(why: str) -> Finding:
    return Finding("secret-unreadable", f"{SECRET_FILE} was left out: {why}; `nbgrader "
                   "release_feedback` cannot release this submission's feedback", flag=True)


def _timestamp_ok(raw: bytes) -> bool:
    """nbgrader can read it as a submission time (it is written by ``nbgrader submit``)."""
    from nbgrader.utils import parse_utc

    if len(raw) > MAX_TIMESTAMP_BYTES:
        return False
    try:
        parse_utc(raw.decode("utf-8").strip())
    except (ValueError, TypeError, OverflowError, UnicodeDecodeError):
        return False
    return True
