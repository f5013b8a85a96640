"""Job folders and run state: a submission copied and hashed without following a link or
reading a big file, and a stale-run sweep that acts only on what this grader wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from labkit.course import jobs
from labkit.course.sandbox import KERNEL_UID_BASE, processes_of

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chown, other uids)")


def _submission(base: Path) -> Path:
    """A submission folder with one of everything nbgrader's collect passes through."""
    src = base / "src"
    (src / "sub").mkdir(parents=True)
    (src / "nb.ipynb").write_text("{}")
    (src / "sub" / "notes.txt").write_text("notes")
    os.symlink("/etc/passwd", src / "passwd")
    os.symlink("/etc", src / "etc-dir")
    os.mkfifo(src / "pipe")
    with open(os.path.join(os.fsencode(src), b"caf\xe9.txt"), "wb") as fh:
        fh.write(b"latin-1 name")
    with open(src / "sparse.bin", "wb") as fh:
        fh.truncate(2 * 1024**3)
    return src


def test_copy_takes_regular_files_and_folders_and_reports_every_other_entry(tmp_path):
    src = _submission(tmp_path)
    findings = jobs.copy_submission(src, tmp_path / "raw")
    copied = sorted(p.relative_to(tmp_path / "raw").as_posix()
                    for p in (tmp_path / "raw").rglob("*"))
    assert copied == ["nb.ipynb", "sub", "sub/notes.txt"]
    assert (tmp_path / "raw" / "sub" / "notes.txt").read_text() == "notes"
    by_entry = {f.message.split(" was not copied")[0]: f for f in findings}
    assert set(by_entry) == {"passwd", "etc-dir", "pipe", "caf\\xe9.txt", "sparse.bin"}
    assert {f.code for f in findings} == {"file-skipped"}
    assert "a link" in by_entry["passwd"].message and by_entry["passwd"].flag
    assert "a FIFO" in by_entry["pipe"].message and by_entry["pipe"].flag
    assert "MB per file" in by_entry["sparse.bin"].message and by_entry["sparse.bin"].flag
    assert "not valid UTF-8" in by_entry["caf\\xe9.txt"].message
    assert not by_entry["caf\\xe9.txt"].flag  # an old zip tool's name: not an attack


def test_copy_stops_at_the_total_and_the_entry_caps(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(12):
        (src / f"f{i:02d}").write_bytes(b"x" * 100)
    monkeypatch.setattr(jobs, "MAX_TOTAL_BYTES", 550)
    findings = jobs.copy_submission(src, tmp_path / "a")
    assert len(list((tmp_path / "a").iterdir())) == 5
    assert len(findings) == 7 and all("pass" in f.message and f.flag for f in findings)
    monkeypatch.setattr(jobs, "MAX_ENTRIES", 3)
    monkeypatch.setattr(jobs, "MAX_TOTAL_BYTES", 10**6)
    findings = jobs.copy_submission(src, tmp_path / "b")
    assert len(list((tmp_path / "b").iterdir())) == 3
    assert len(findings) == 1 and "more than 3 files" in findings[0].message
    assert findings[0].message.startswith("the rest of the submission was not copied")


def test_fingerprint_hashes_what_is_copied_and_never_reads_a_skipped_file(tmp_path,
                                                                          monkeypatch):
    src = _submission(tmp_path)
    streamed: list[str] = []
    real = jobs._stream
    monkeypatch.setattr(jobs, "_stream", lambda path, size: (streamed.append(path),
                                                             real(path, size))[1])
    first = jobs.fingerprint("v", src)
    assert sorted(Path(p).name for p in streamed) == ["nb.ipynb", "notes.txt"]
    with open(src / "sparse.bin", "r+b") as fh:  # a skipped file's content does not count
        fh.write(b"changed")
    assert jobs.fingerprint("v", src) == first
    (src / "sub" / "notes.txt").write_text("other notes")
    assert jobs.fingerprint("v", src) != first
    assert jobs.fingerprint("w", src) != jobs.fingerprint("v", src)


def test_the_state_folder_is_private_and_refuses_a_link(tmp_path):
    state = jobs.state_dir(tmp_path)
    assert state == tmp_path / ".labkit" / "runs"
    assert (os.stat(state).st_mode & 0o777) == 0o700
    run_dir = jobs.start_run(state)  # a kernel's uid can read no job folder in it
    assert (os.stat(run_dir).st_mode & 0o777) == 0o700
    assert json.loads((run_dir / jobs.RUN_FILE).read_text())["pid"] == os.getpid()
    os.chmod(state, 0o777)  # repaired
    jobs.state_dir(tmp_path)
    assert (os.stat(state).st_mode & 0o777) == 0o700
    shutil.rmtree(run_dir)
    os.rmdir(state)
    os.symlink(tmp_path, state)
    with pytest.raises(PermissionError, match="link"):
        jobs.state_dir(tmp_path)


@ROOT_ONLY
def test_the_state_folder_of_another_user_is_refused(tmp_path):
    state = tmp_path / ".labkit" / "runs"
    state.mkdir(parents=True, mode=0o700)
    os.chown(state, 12345, 12345)
    with pytest.raises(PermissionError, match="12345"):
        jobs.state_dir(tmp_path)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _run(state: Path, record: dict) -> Path:
    run_dir = jobs.start_run(state)
    (run_dir / jobs.RUN_FILE).write_text(json.dumps(record))
    return run_dir


@ROOT_ONLY
def test_the_sweep_ends_only_a_dead_runs_own_kernel_uids(tmp_path):
    from labkit.course import cgroups

    state = jobs.state_dir(tmp_path)
    kernel, outsider = KERNEL_UID_BASE + 4242, 4242  # a kernel uid; a uid outside the range
    victims = {uid: subprocess.Popen(["sleep", "300"], user=uid) for uid in (kernel, outsider)}
    cage = cgroups.make_cage(f"labkit-{kernel}", memory_bytes=1 << 30, processes=64)
    try:
        if cage is not None:
            cgroups.join(cage.folders, victims[kernel].pid)
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        dead = _run(state, {"pid": _dead_pid(), "start": "1", "boot": boot,
                            "uids": [kernel, outsider, "x"]})
        live = _run(state, {"pid": os.getpid(), "start": jobs._start_time(os.getpid()),
                            "boot": boot, "uids": [kernel]})
        reused = _run(state, {"pid": os.getpid(), "start": "1", "boot": boot, "uids": []})
        elsewhere = _run(state, {"pid": _dead_pid(), "host": "another-host", "uids": [kernel]})
        foreign = _run(state, {"pid": _dead_pid(), "uids": [kernel]})
        os.chown(foreign / jobs.RUN_FILE, 12345, 12345)  # not written by this grader
        assert victims[kernel].poll() is None
        removed = jobs.sweep_stale_runs(state)
        assert sorted(removed) == sorted([dead, reused])  # a reused pid is not its grader
        assert live.exists() and foreign.exists() and elsewhere.exists()
        victims[kernel].wait(timeout=10)  # killed: the dead run recorded it
        assert victims[outsider].poll() is None, "a uid outside labkit's range was killed"
        assert not processes_of(kernel)
        if cage is not None:
            assert not any(os.path.exists(f) for f in cage.folders)
    finally:
        for proc in victims.values():
            proc.kill()
            proc.wait()
        if cage is not None:
            cgroups.remove(cage)


def test_a_run_folder_not_made_by_this_grader_is_left_alone(tmp_path):
    state = jobs.state_dir(tmp_path)
    planted = state / "run-planted"
    planted.mkdir(mode=0o755)  # not 0700: not one of ours
    (planted / jobs.RUN_FILE).write_text(json.dumps({"pid": _dead_pid(), "uids": []}))
    os.chmod(planted, 0o755)
    half = state / "run-half"  # killed before it wrote its record: it started nothing
    half.mkdir(mode=0o700)
    assert jobs.sweep_stale_runs(state) == [half]
    assert planted.exists()
