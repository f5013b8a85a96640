"""AnswerStore (first answer kept, changes beside it, atomic, corrupt files refused) and ledger."""

from __future__ import annotations

import json
import os

import pytest

from labkit.core import answers
from labkit.core.answers import AnswerEntry, AnswerStore, read_ledger, record_ledger


@pytest.fixture
def store(tmp_path):
    return AnswerStore(tmp_path / "labkit_answers.json")


def test_missing_file_is_an_empty_store(store):
    assert not store.path.exists()
    assert store.get("lab1", "q") is None
    assert not store.answered("lab1", "q")
    assert store.entries() == []


def test_first_answer_is_kept_and_a_change_is_recorded_beside_it(store):
    e1 = store.record("lab1", "q", "weeks")
    assert (e1.first, e1.current, e1.changes, e1.revised) == ("weeks", "weeks", (), False)
    e2 = store.record("lab1", "q", "days")
    assert e2.first == "weeks" and e2.first_at == e1.first_at
    assert e2.current == "days" and e2.revised
    assert [c.value for c in e2.changes] == ["days"]
    e3 = store.record("lab1", "q", "weeks")  # back to the first answer: still a change
    assert e3.first == "weeks" and [c.value for c in e3.changes] == ["days", "weeks"]
    assert e3.current == "weeks" and not e3.revised


def test_recording_the_current_answer_again_changes_nothing(store):
    store.record("lab1", "q", 3)
    mtime = store.path.stat().st_mtime_ns
    again = store.record("lab1", "q", 3.0)  # same number, int or float
    assert again.changes == ()
    assert store.path.stat().st_mtime_ns == mtime


def test_answers_persist_across_store_instances(tmp_path):
    path = tmp_path / "a.json"
    AnswerStore(path).record("lab1", "cloud_fleet.A.prediction", "weeks")
    AnswerStore(path).record("lab1", "cloud_fleet.A.prediction", "months")
    AnswerStore(path).record("lab2", "x", 1.5)
    fresh = AnswerStore(path)
    e = fresh.get("lab1", "cloud_fleet.A.prediction")
    assert isinstance(e, AnswerEntry)
    assert (e.first, e.current) == ("weeks", "months")
    assert fresh.get("lab2", "x").current == 1.5
    assert {(x.lab, x.key) for x in fresh.entries()} == {
        ("lab1", "cloud_fleet.A.prediction"), ("lab2", "x")}
    assert [x.key for x in fresh.entries("lab2")] == ["x"]


def test_file_schema_is_versioned_json(store):
    store.record("lab1", "q", "a")
    data = json.loads(store.path.read_text())
    assert data["schema"] == "labkit-answers" and data["version"] == 1
    raw = data["labs"]["lab1"]["q"]
    assert raw["first"] == "a" and raw["changes"] == [] and "T" in raw["first_at"]


def test_entries_are_frozen(store):
    e = store.record("lab1", "q", "a")
    with pytest.raises(AttributeError):
        e.first = "b"  # type: ignore[misc]


def test_relative_path_is_resolved_against_the_cwd_at_creation(tmp_path, monkeypatch):
    nb = tmp_path / "nb"
    nb.mkdir()
    monkeypatch.chdir(nb)
    s = AnswerStore()
    assert s.path == nb / "labkit_answers.json"
    monkeypatch.chdir(tmp_path)
    s.record("lab1", "q", "a")
    assert (nb / "labkit_answers.json").exists()


def test_write_is_atomic_and_leaves_no_temporary_files(store, monkeypatch):
    store.record("lab1", "q", "a")
    before = store.path.read_bytes()

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(answers.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        store.record("lab1", "q", "b")
    assert store.path.read_bytes() == before  # the old file is intact
    assert sorted(p.name for p in store.path.parent.iterdir()) == [store.path.name]
    monkeypatch.undo()
    assert store.get("lab1", "q").current == "a"


def test_atomic_write_goes_through_os_replace(store, monkeypatch):
    calls = []
    real = os.replace

    def spy(src, dst):
        calls.append((os.path.dirname(src), str(dst)))
        real(src, dst)

    monkeypatch.setattr(answers.os, "replace", spy)
    store.record("lab1", "q", "a")
    assert calls == [(str(store.path.parent), str(store.path))]


@pytest.mark.parametrize("content", [
    "{not json", "", "[1, 2]", '{"schema": "other", "version": 1}',
    '{"schema": "labkit-answers", "version": 99, "labs": {}}',
    '{"schema": "labkit-answers", "version": 1, "labs": []}',
    '{"schema": "labkit-answers", "version": 1, "labs": {"lab1": {"q": {"x": 1}}}}',
])
def test_corrupt_file_raises_naming_the_path_and_is_left_untouched(store, content):
    store.path.write_text(content)
    with pytest.raises(ValueError, match=str(store.path)):
        store.get("lab1", "q")
    with pytest.raises(ValueError, match=str(store.path)):
        store.record("lab1", "q", "a")
    assert store.path.read_text() == content


@pytest.mark.parametrize("bad", [True, None, float("nan"), float("inf"), [1], {"a": 1}])
def test_invalid_answers_are_rejected(store, bad):
    with pytest.raises(ValueError):
        store.record("lab1", "q", bad)
    assert not store.path.exists()


@pytest.mark.parametrize(("lab", "key"), [("", "q"), ("lab1", ""), ("lab1", None)])
def test_lab_and_key_must_be_named(store, lab, key):
    with pytest.raises(ValueError):
        store.record(lab, key, "a")


def test_string_and_number_answers_are_different(store):
    store.record("lab1", "q", "1")
    assert store.record("lab1", "q", 1).changes[-1].value == 1


def test_to_dict_includes_current(store):
    store.record("lab1", "q", "a")
    d = store.record("lab1", "q", "b").to_dict()
    assert d["first"] == "a" and d["current"] == "b" and d["changes"][0]["value"] == "b"
    json.dumps(d)


# -- ledger ---------------------------------------------------------------------------------

def test_ledger_uses_env_path_appends_and_filters(tmp_path, monkeypatch):
    path = tmp_path / "ledger" / "ledger.json"
    monkeypatch.setenv("LABKIT_LEDGER", str(path))
    assert read_ledger("cloud_fleet") == []
    e1 = record_ledger("lab1", "cloud_fleet", {"weight_bits": 8, "policy": "continuous"})
    assert path.exists() and e1["choices"] == {"weight_bits": 8, "policy": "continuous"}
    record_ledger("lab1", "iphone", {"weight_bits": 4})
    record_ledger("lab1", "cloud_fleet", {"weight_bits": 4, "policy": "continuous"})
    got = read_ledger("cloud_fleet")
    assert [e["choices"]["weight_bits"] for e in got] == [8, 4]
    assert [e["track"] for e in read_ledger(lab="lab1")] == ["cloud_fleet", "iphone",
                                                             "cloud_fleet"]
    assert read_ledger("cloud_fleet", lab="lab2") == []
    data = json.loads(path.read_text())
    assert data["schema"] == "labkit-ledger" and data["version"] == 1


def test_ledger_does_not_repeat_an_identical_latest_entry(tmp_path):
    path = tmp_path / "l.json"
    record_ledger("lab1", "robotaxi", {"a": 1}, path=path)
    record_ledger("lab1", "robotaxi", {"a": 1}, path=path)
    assert len(read_ledger("robotaxi", path=path)) == 1
    record_ledger("lab1", "robotaxi", {"a": 2}, path=path)
    record_ledger("lab1", "robotaxi", {"a": 1}, path=path)
    assert [e["choices"]["a"] for e in read_ledger("robotaxi", path=path)] == [1, 2, 1]


def test_ledger_default_path_is_in_home(tmp_path, monkeypatch):
    monkeypatch.delenv("LABKIT_LEDGER", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert answers.ledger_path() == tmp_path / ".labkit" / "ledger.json"


def test_ledger_plain_json_and_corrupt_file(tmp_path):
    import numpy as np

    path = tmp_path / "l.json"
    e = record_ledger("lab1", "iphone", {"x": np.float64(1.5), "n": np.int64(3),
                                         "arr": np.arange(2)}, path=path)
    assert e["choices"] == {"x": 1.5, "n": 3, "arr": [0, 1]}
    path.write_text("garbage")
    with pytest.raises(ValueError, match=str(path)):
        read_ledger(path=path)


def _record_many(path: str, track: str, n: int, barrier) -> None:
    barrier.wait()  # both start together: their read-modify-writes interleave
    for i in range(n):
        record_ledger("lab1", track, {"i": i}, path=path)


def test_two_notebooks_recording_at_once_keep_each_others_entries(tmp_path):
    """Two kernels (two open notebooks) appending to one ledger: without the lock one
    replaced the file with a copy read before the other's write, and lost its entries."""
    import multiprocessing

    path = tmp_path / "ledger.json"
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_record_many, args=(str(path), track, 25, barrier))
             for track in ("iphone", "cloud_fleet")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    got = sorted((e["track"], e["choices"]["i"]) for e in read_ledger(path=path))
    assert got == sorted((t, i) for t in ("iphone", "cloud_fleet") for i in range(25))


def test_answers_wait_for_the_disk_and_slider_positions_do_not(tmp_path, monkeypatch):
    """An answer is fsynced before it replaces the file (a crash cannot lose it); a
    control's position is not (it is rewritten on every slider move, and losing it is
    harmless); both replace their file whole."""
    synced: list[int] = []
    monkeypatch.setattr(answers.os, "fsync", lambda fd: synced.append(fd))
    settings = answers.SettingsStore(tmp_path / answers.SETTINGS_FILE)
    settings.put("lab1", "cloud_fleet.A", {"demand": 1.5})
    assert synced == [] and settings.get("lab1", "cloud_fleet.A") == {"demand": 1.5}
    AnswerStore(tmp_path / "labkit_answers.json").record("lab1", "k", 3)
    assert len(synced) == 1
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind
