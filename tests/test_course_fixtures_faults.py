"""The grader-plumbing fixtures: what git cannot hold leaves a written fixture set for
``specials.json`` and comes back, the same, in a course the tests grade."""

from __future__ import annotations

import os
import shutil
import stat

from course_helpers import ROOT
from labkit.course.fixtures.faults import (
    HUGE_NOTEBOOK_BYTES,
    ODD_NAME,
    SPARSE_BYTES,
    SPECIALS,
    fault_attacks,
    make_specials,
    take_specials,
)
from labkit.course.fixtures.hostile import hostile_set, write_hostile


def test_every_fault_is_in_the_hostile_set_once():
    names = [s.name for s in hostile_set("lab1")]
    faults = [s.name for s in fault_attacks("lab1")]
    assert all(names.count(n) == 1 for n in faults)


def test_special_files_round_trip_through_specials_json(tmp_path):
    a = "lab1_cloud_fleet"
    specs = {s.name: s for s in fault_attacks("lab1")}
    fixtures = tmp_path / "fixtures"
    for name in ("fifo", "sparse_file", "odd_name", "huge_notebook"):
        write_hostile(specs[name], ROOT, a, fixtures / "submitted" / name / a)
    nb_size = os.path.getsize(fixtures / "submitted" / "fifo" / a / "inference_economy.ipynb")
    entries = take_specials(fixtures)
    assert len(entries) == 4 and (fixtures / SPECIALS).exists()
    for folder, _, files in os.walk(os.fsencode(fixtures)):  # what is left: git can hold it
        for name in files:
            st = os.lstat(os.path.join(folder, name))
            assert stat.S_ISREG(st.st_mode) and st.st_size < 1024**2, name
            name.decode("utf-8")
    huge = fixtures / "submitted" / "huge_notebook" / a / "inference_economy.ipynb"
    assert huge.read_text().rstrip().endswith("}")  # the notebook, its holes cut off

    course = tmp_path / "course"
    shutil.copytree(fixtures / "submitted", course / "submitted")
    shutil.rmtree(course / "submitted" / "odd_name")  # a submission a course did not copy
    assert make_specials(fixtures, course) == 3
    sub = course / "submitted"
    assert stat.S_ISFIFO(os.lstat(sub / "fifo" / a / "answers.fifo").st_mode)
    sparse = sub / "sparse_file" / a / "weights.bin"
    assert sparse.stat().st_size == SPARSE_BYTES and sparse.stat().st_blocks == 0
    big = sub / "huge_notebook" / a / "inference_economy.ipynb"
    assert big.stat().st_size == HUGE_NOTEBOOK_BYTES
    assert big.read_bytes()[:nb_size // 2] == huge.read_bytes()[:nb_size // 2]
    assert make_specials(fixtures, tmp_path / "elsewhere") == 0
    write_hostile(specs["odd_name"], ROOT, a, tmp_path / "again" / "submitted" / "o" / a)
    assert ODD_NAME in os.listdir(os.fsencode(tmp_path / "again" / "submitted" / "o" / a))
