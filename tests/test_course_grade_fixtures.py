"""``labkit course grade`` on the committed Lab 1 fixture set (honest and hostile
submissions, ``autograder/fixtures/lab1``): every score, reason and flag as expected, the
hostile ones contained, and honest grades equal to stock serial ``nbgrader autograde``."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from course_helpers import kernel_env, run_nbgrader
from grading_helpers import (
    EXPECTED,
    LAB1,
    check_expected,
    fixture_course,
    grade_fixture_set,
    gradebook_scores,
)
from labkit.course import demo


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every committed fixture submission graded in parallel (the expensive part: ~2 min)."""
    tmp = tmp_path_factory.mktemp("fixture-course")
    before = os.stat("/dev/null")
    db_url, report = grade_fixture_set(tmp, LAB1)
    _DEV_NULL.extend([before, os.stat("/dev/null")])
    return tmp, db_url, report


_DEV_NULL: list[os.stat_result] = []


def test_every_fixture_gets_its_expected_score_reason_and_flag(graded):
    check_expected(*graded, EXPECTED)


def test_grading_leaves_the_hosts_dev_null_as_it_was(graded):
    """Grading as root once set /dev/null to mode 0600 (a chmod through a mask's bind),
    breaking every non-root process on the server."""
    before, after = _DEV_NULL
    assert (after.st_mode, after.st_uid, after.st_gid, after.st_rdev) == (
        before.st_mode, before.st_uid, before.st_gid, before.st_rdev)
    assert after.st_mode & 0o666 == 0o666


def _autograded(root: Path, student: str) -> str:
    path = root / "autograded" / student / "lab1_cloud_fleet" / "inference_economy.ipynb"
    return path.read_text()


def test_hostile_submissions_are_contained(graded):
    root, _, _ = graded
    flood = root / "autograded" / "output_flood" / "lab1_cloud_fleet" / "inference_economy.ipynb"
    assert flood.stat().st_size < 2_000_000
    assert "output truncated by the grader" in flood.read_text()
    # nothing written outside the submission reached this machine
    for place in (Path("/tmp/labkit-pwned"), Path.home() / "labkit-pwned",
                  Path("/etc/labkit-pwned")):
        assert not place.exists(), place
    assert not list(root.rglob("labkit-pwned"))
    assert "hidden tests found: none" in _autograded(root, "read_hidden")
    net = _autograded(root, "network")
    assert "network: blocked" in net and "loopback: blocked" in net
    assert "sitecustomize ran" not in _autograded(root, "shadow_module")
    assert not (root / "autograded" / "shadow_module" / "lab1_cloud_fleet" / "labkit").exists()
    died = _autograded(root, "kernel_death")
    assert "the kernel died while this cell ran" in died
    assert "did not finish or answer an interrupt" in _autograded(root, "uninterruptible_loop")
    from labkit.course.sandbox import kernel_uids_given, processes_of

    if os.geteuid() == 0:  # this run's kernels had uids of their own: none may still run
        given = kernel_uids_given()  # (other test files grade at the same time, other uids)
        assert len(given) >= len(EXPECTED)
        left = {uid: pids for uid in given if (pids := processes_of(uid))}
        assert not left, left
        assert processes_of(os.geteuid())  # (the scan itself works)
        cages = [p for uid in given for p in Path("/sys/fs/cgroup").glob(f"*/**/labkit-{uid}")]
        assert not cages, cages  # every job's cgroup removed
    filled = re.search(r"wrote (\d+) MiB", _autograded(root, "disk_fill"))
    assert filled and int(filled[1]) <= 4 * 128  # its tmpfs mounts, full; not the disk
    forked = re.search(r"forked (\d+)", _autograded(root, "fork_fan_out"))
    assert forked and 0 < int(forked[1]) < 256  # the job's process cap
    shown = root / "autograded" / "display_flood" / "lab1_cloud_fleet" / "inference_economy.ipynb"
    assert shown.stat().st_size < 6_000_000  # 200 x 50 x 1 MB of updates would be 10 GB


def test_planted_links_are_neither_followed_nor_kept(graded):
    root, db_url, _ = graded
    folder = root / "autograded" / "planted_links" / "lab1_cloud_fleet"
    assert "planted" in (folder / "inference_economy.ipynb").read_text()
    left = [p for p in folder.iterdir() if p.is_symlink() or not (p.is_file() or p.is_dir())]
    assert not left and not list(folder.glob("link*")), left
    # what the links pointed at kept its mode and content (nbgrader chmods what it finds)
    gradebook = Path(db_url.removeprefix("sqlite:///"))
    assert gradebook.stat().st_mode & 0o777 != 0o444
    for nb in (root / "source").rglob("*.ipynb"):
        assert nb.stat().st_mode & 0o200, nb  # still writable by its owner
    honest = root / "autograded" / "full" / "lab1_cloud_fleet" / "inference_economy.ipynb"
    assert "planted" not in honest.read_text()


def test_parallel_grades_equal_serial_nbgrader_autograde(graded, tmp_path):
    """The honest set graded by stock, serial ``nbgrader autograde`` gives the same cells."""
    _, db_url, _ = graded
    # a language-model track and the microcontroller one (their hidden tests differ most);
    # every track's solution and blank are judged in tests/test_course_judge.py
    tracks = ["lab1_cloud_fleet", "lab1_oura_ring"]
    serial_db = fixture_course(tmp_path, tracks, students=list(demo.HONEST), generated=LAB1)
    env = kernel_env(tmp_path)
    for assignment in tracks:
        run_nbgrader(tmp_path, "autograde", assignment, env=env,
                     db=Path(serial_db.removeprefix("sqlite:///")))
    serial, parallel = gradebook_scores(serial_db), gradebook_scores(db_url)
    assert len(serial) == 3 * len(tracks) and set(tracks) <= set(LAB1)
    for key, want in serial.items():
        assert parallel[key]["cells"] == want["cells"], key


