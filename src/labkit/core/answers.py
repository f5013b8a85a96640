"""Persistent answers and the design ledger: what a student committed, kept in files.

Autograde re-executes a notebook with fresh widgets, so nothing a student clicked survives
in widget state. Everything graded therefore lives in a small JSON file next to the
notebook (``labkit_answers.json``), which is collected and submitted with it:

* :class:`AnswerStore` -- ``record(lab, key, value)`` keeps the **first** answer forever
  (``first``, ``first_at``); a later, different answer is appended to ``changes`` beside
  it, never replacing it; ``current`` is the latest value. Writes are atomic (temporary
  file in the same directory + :func:`os.replace`), a missing file is an empty store, and
  a corrupt file raises a ``ValueError`` naming its path rather than silently discarding a
  student's answers.
* :func:`record_ledger` / :func:`read_ledger` -- a design ledger shared by the labs of the
  course (``$LABKIT_LEDGER`` or ``~/.labkit/ledger.json``): each lab appends the design
  choices a student carried out of it, and later labs read them back per track.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ANSWERS_SCHEMA = "labkit-answers"
ANSWERS_VERSION = 1
LEDGER_SCHEMA = "labkit-ledger"
LEDGER_VERSION = 1
DEFAULT_ANSWERS_PATH = "labkit_answers.json"
LEDGER_ENV = "LABKIT_LEDGER"

AnswerValue = str | float | int


def now_iso() -> str:
    """Current UTC time, ISO 8601 to the second (``2025-01-31T12:00:00+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def _check_value(value: object) -> AnswerValue:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"an answer must be a str, int or float; got {type(value).__name__} "
                         f"{value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"an answer must be a finite number; got {value!r}")
    return value


def _check_name(name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string; got {value!r}")
    return value


def _same(a: AnswerValue, b: AnswerValue) -> bool:
    """Equal answers: same type family and value (``1`` == ``1.0``, ``"1"`` != ``1``)."""
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return float(a) == float(b)


# -- entries ------------------------------------------------------------------------------

@dataclass(frozen=True)
class AnswerChange:
    """A later answer, recorded beside the first one."""

    value: AnswerValue
    at: str

    def to_dict(self) -> dict[str, object]:
        return {"value": self.value, "at": self.at}


@dataclass(frozen=True)
class AnswerEntry:
    """One question's answers: the first one (kept forever) and every later change."""

    lab: str
    key: str
    first: AnswerValue
    first_at: str
    changes: tuple[AnswerChange, ...] = ()

    @property
    def current(self) -> AnswerValue:
        """The latest answer (the first one when it was never changed)."""
        return self.changes[-1].value if self.changes else self.first

    @property
    def current_at(self) -> str:
        return self.changes[-1].at if self.changes else self.first_at

    @property
    def revised(self) -> bool:
        """True when the current answer differs from the first one."""
        return not _same(self.current, self.first)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready record, including the derived ``current``."""
        return {"lab": self.lab, "key": self.key, "first": self.first,
                "first_at": self.first_at, "changes": [c.to_dict() for c in self.changes],
                "current": self.current}

    @classmethod
    def from_dict(cls, lab: str, key: str, raw: Mapping[str, object]) -> AnswerEntry:
        listed = raw.get("changes", ())
        if not isinstance(listed, list | tuple) or not all(isinstance(c, Mapping)
                                                           for c in listed):
            raise ValueError(f"changes must be a list of {{value, at}} records; got {listed!r}")
        changes = tuple(AnswerChange(_check_value(c["value"]), str(c["at"])) for c in listed)
        return cls(lab, key, _check_value(raw["first"]), str(raw["first_at"]), changes)


# -- atomic JSON files --------------------------------------------------------------------

def write_json_atomic(path: Path, payload: object, *, durable: bool = True) -> None:
    """Write JSON to a temporary file beside ``path`` and rename it over ``path``: a reader
    sees the old file or the new one, never a part. ``durable`` (answers, the ledger, the
    report) also waits for the disk before the rename, so a crash right after cannot lose
    what was written; a file that may be lost (the controls' positions) skips that wait,
    which on a network home folder costs milliseconds on every slider move."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2, sort_keys=True, ensure_ascii=False)
            fh.write("\n")
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_json(path: Path, schema: str, version: int, what: str) -> dict[str, Any] | None:
    """The parsed file, None when it does not exist; ValueError naming the path otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    if not text.strip():
        raise ValueError(f"{what} file {path} is empty; it is kept untouched -- restore it "
                         "from a backup or move it aside to start afresh")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} file {path} is corrupt (not valid JSON: {exc}); it is kept "
                         "untouched -- repair it or move it aside to start afresh") from exc
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise ValueError(f"{what} file {path} is not a {schema} file (schema "
                         f"{data.get('schema') if isinstance(data, dict) else None!r}); it "
                         "is kept untouched")
    got = data.get("version")
    if not isinstance(got, int) or got > version or got < 1:
        raise ValueError(f"{what} file {path} has schema version {got!r}; this labkit "
                         f"reads versions 1..{version} -- upgrade labkit")
    return data


# -- the answer store ---------------------------------------------------------------------

class AnswerStore:
    """Answers of every lab, in one JSON file relative to the notebook's directory.

    The path is resolved when the store is created (a notebook's kernel starts in the
    notebook's directory). Every call reads the file afresh, so several stores -- or a
    re-executed notebook -- on the same file always agree.

    File layout (schema version 1)::

        {"schema": "labkit-answers", "version": 1,
         "labs": {"lab1": {"cloud_fleet.A.prediction":
             {"first": "weeks", "first_at": "...", "changes": [{"value": ..., "at": ...}]}}}}
    """

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_ANSWERS_PATH) -> None:
        self.path = Path(path).expanduser().resolve()

    def __repr__(self) -> str:
        return f"AnswerStore({str(self.path)!r})"

    def _load(self) -> dict[str, Any]:
        data = _read_json(self.path, ANSWERS_SCHEMA, ANSWERS_VERSION, "answers")
        if data is None:
            return {"schema": ANSWERS_SCHEMA, "version": ANSWERS_VERSION, "labs": {}}
        labs = data.get("labs")
        if not isinstance(labs, dict) or not all(isinstance(v, dict) for v in labs.values()):
            raise ValueError(f"answers file {self.path} is corrupt: 'labs' must map lab ids "
                             "to {key: entry}; it is kept untouched")
        return data

    def _entry(self, data: dict[str, Any], lab: str, key: str) -> AnswerEntry | None:
        raw = data["labs"].get(lab, {}).get(key)
        if raw is None:
            return None
        try:
            return AnswerEntry.from_dict(lab, key, raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"answers file {self.path} is corrupt at {lab}/{key}: {exc}; "
                             "it is kept untouched") from exc

    def get(self, lab: str, key: str) -> AnswerEntry | None:
        """The recorded entry, or None when the question was never answered."""
        return self._entry(self._load(), _check_name("lab", lab), _check_name("key", key))

    def answered(self, lab: str, key: str) -> bool:
        return self.get(lab, key) is not None

    def record(self, lab: str, key: str, value: AnswerValue) -> AnswerEntry:
        """Record an answer. The first is kept; a different later one is appended.

        Recording the current answer again changes nothing (no new change, no write).
        """
        _check_name("lab", lab)
        _check_name("key", key)
        val = _check_value(value)
        data = self._load()
        old = self._entry(data, lab, key)
        if old is None:
            entry = AnswerEntry(lab, key, val, now_iso())
        elif _same(old.current, val):
            return old
        else:
            entry = AnswerEntry(lab, key, old.first, old.first_at,
                                (*old.changes, AnswerChange(val, now_iso())))
        raw = {"first": entry.first, "first_at": entry.first_at,
               "changes": [c.to_dict() for c in entry.changes]}
        data["labs"].setdefault(lab, {})[key] = raw
        data["version"] = ANSWERS_VERSION
        write_json_atomic(self.path, data)
        return entry

    def entries(self, lab: str | None = None) -> list[AnswerEntry]:
        """Every entry (of one lab when given), in file order."""
        data = self._load()
        labs = [lab] if lab is not None else list(data["labs"])
        return [e for name in labs for key in data["labs"].get(name, {})
                if (e := self._entry(data, name, key)) is not None]


# -- the controls' last values ---------------------------------------------------------

SETTINGS_FILE = "labkit_settings.json"
SETTINGS_SCHEMA = "labkit-settings"
SETTINGS_VERSION = 1
Setting = str | int | float | bool


def _scalar(v: object) -> bool:
    return isinstance(v, str | int | bool) or (isinstance(v, float) and math.isfinite(v))


class SettingsStore:
    """The controls' last values, per lab and scope (a track's part), in
    :data:`SETTINGS_FILE` beside the answers file: a notebook run again starts where the
    student left it. Nothing here is graded; an unreadable or foreign file reads as empty
    and is replaced on the next write, and only plain scalars are kept.

    File layout: ``{"schema": "labkit-settings", "version": 1, "labs": {"lab1":
    {"cloud_fleet.A": {"demand": 1.02, "policy": "continuous"}}}}``
    """

    def __init__(self, path: str | os.PathLike[str] = SETTINGS_FILE) -> None:
        self.path = Path(path).expanduser().resolve()

    @classmethod
    def beside(cls, answers: AnswerStore) -> SettingsStore:
        """The settings file in the answers file's folder."""
        return cls(answers.path.parent / SETTINGS_FILE)

    def _load(self) -> dict[str, Any]:
        try:
            data = _read_json(self.path, SETTINGS_SCHEMA, SETTINGS_VERSION, "settings")
        except ValueError:
            data = None
        labs = None if data is None else data.get("labs")
        if not isinstance(labs, dict):
            return {"schema": SETTINGS_SCHEMA, "version": SETTINGS_VERSION, "labs": {}}
        return {"schema": SETTINGS_SCHEMA, "version": SETTINGS_VERSION, "labs": labs}

    def get(self, lab: str, scope: str) -> dict[str, Setting]:
        """The saved values of ``scope`` (only plain scalars; {} when none)."""
        raw = self._load()["labs"].get(lab)
        raw = raw.get(scope) if isinstance(raw, dict) else None
        if not isinstance(raw, dict):
            return {}
        return {str(k): v for k, v in raw.items() if _scalar(v)}

    def put(self, lab: str, scope: str, values: Mapping[str, object]) -> None:
        """Save ``values`` of ``scope`` (non-scalars are left out)."""
        _check_name("lab", lab)
        _check_name("scope", scope)
        data = self._load()
        kept = {k: v for k, v in values.items() if _scalar(v)}
        labs = data["labs"]
        if not isinstance(labs.get(lab), dict):
            labs[lab] = {}
        if labs[lab].get(scope) == kept:
            return
        labs[lab][scope] = kept
        # not durable: a position lost to a crash is harmless, and an unreadable file reads
        # as empty; the wait for the disk would come with every slider move
        write_json_atomic(self.path, data, durable=False)


# -- the design ledger --------------------------------------------------------------------

def ledger_path(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else ``$LABKIT_LEDGER``, else ``~/.labkit/ledger.json`` (read at call time)."""
    if path is not None:
        return Path(path).expanduser()
    env = os.environ.get(LEDGER_ENV)
    return Path(env).expanduser() if env else Path.home() / ".labkit" / "ledger.json"


def _load_ledger(p: Path) -> dict[str, Any]:
    data = _read_json(p, LEDGER_SCHEMA, LEDGER_VERSION, "ledger")
    if data is None:
        return {"schema": LEDGER_SCHEMA, "version": LEDGER_VERSION, "entries": []}
    if not isinstance(data.get("entries"), list):
        raise ValueError(f"ledger file {p} is corrupt: 'entries' must be a list; it is kept "
                         "untouched")
    return data


def _plain_json(x: object) -> object:
    """Round-trip through JSON so only plain types reach the file (numpy -> Python)."""
    def default(o: object) -> object:
        if hasattr(o, "tolist"):
            return o.tolist()  # numpy scalar or array
        raise TypeError(f"{type(o).__name__} is not JSON-serialisable")

    return json.loads(json.dumps(x, default=default))


@contextlib.contextmanager
def _ledger_lock(p: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``<ledger>.lock`` beside the ledger: two notebooks recording
    at once read, append and replace in turn, and neither loses the other's entry. (The
    ledger is replaced, never rewritten, so it cannot carry the lock itself; readers need
    none.)"""
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p.with_name(p.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def record_ledger(lab: str, track: str, choices: Mapping[str, object], *,
                  path: str | os.PathLike[str] | None = None) -> dict[str, object]:
    """Append ``{"lab", "track", "choices", "at"}`` to the design ledger and return it.

    An entry identical (same choices) to the latest one for the same lab and track is not
    appended again, so re-running a notebook does not flood the ledger.
    """
    _check_name("lab", lab)
    _check_name("track", track)
    p = ledger_path(path)
    plain = _plain_json(dict(choices))
    with _ledger_lock(p):
        data = _load_ledger(p)
        same: list[dict[str, object]] = [e for e in data["entries"]
                                         if e.get("lab") == lab and e.get("track") == track]
        if same and same[-1].get("choices") == plain:
            return same[-1]
        entry: dict[str, object] = {"lab": lab, "track": track, "choices": plain,
                                    "at": now_iso()}
        data["entries"].append(entry)
        write_json_atomic(p, data)
    return entry


def read_ledger(track: str | None = None, lab: str | None = None, *,
                path: str | os.PathLike[str] | None = None) -> list[dict[str, object]]:
    """Ledger entries (oldest first), filtered by track and/or lab; [] without a ledger."""
    data = _load_ledger(ledger_path(path))
    return [e for e in data["entries"]
            if (track is None or e.get("track") == track) and (lab is None or e.get("lab") == lab)]
