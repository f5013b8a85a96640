"""The README's main job: ``labkit course demo`` runs the whole instructor pipeline on a
fresh course (release, demo submissions, parallel sandboxed grading, feedback, export),
and the ``feedback`` / ``export`` commands work on what it leaves behind."""

from __future__ import annotations

import csv
import os
import subprocess

from course_helpers import BIN, ROOT, TRACKS


def _labkit(*args: str, cwd=ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(BIN / "labkit"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def test_demo_pipeline_end_to_end(tmp_path):
    course = tmp_path / "demo"
    proc = _labkit("course", "demo", "--labs", "lab2", "--dir", str(course), "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "graded 12 submission(s)" in out and "0 failed" in out
    assert "sandbox: bubblewrap" in out
    for track in TRACKS:  # full 17, blank 0, partial 8 in every track
        row = next(line for line in out.splitlines() if line.startswith(f"lab2_{track} "))
        assert row.split()[1:6] == ["3", "8.33", "0.0", "17.0", "20"], row
    assert "class summary" in out and str(course / "exports" / "summary.html") in out

    assert len(list((course / "feedback").rglob("*.html"))) == 12
    for track in TRACKS:
        rows = {r["student_id"]: r for r in csv.DictReader(
            (course / "exports" / f"grades_lab2_{track}.csv").open())}
        assert set(rows) == {"demo_full", "demo_blank", "demo_partial"}
        assert float(rows["demo_full"]["autograded"]) == 17.0
        assert float(rows["demo_partial"]["part_A"]) > 0 == float(rows["demo_partial"]["part_C"])
    html = (course / "exports" / "summary.html").read_text()
    assert html.count("<svg") >= 5 and "<script" not in html

    # the instructor commands on the same course, from inside it
    again = _labkit("course", "export", "lab2", "--out", str(tmp_path / "again"), cwd=course)
    assert again.returncode == 0, again.stderr
    assert len(list((tmp_path / "again").glob("grades_lab2_*.csv"))) == 4
    fb = _labkit("course", "feedback", "lab2", "--track", "iphone", cwd=course)
    assert fb.returncode == 0 and "wrote 3 feedback file(s)" in fb.stdout, fb.stderr
    regrade = _labkit("course", "grade", "lab2", cwd=course)
    assert regrade.returncode == 0 and "12 already graded" in regrade.stdout, regrade.stdout
