"""One identity per lab: :class:`labkit.labs.info.LabInfo` and the :data:`LABS` registry,
read alike by the widgets (header, banners, report) and the nbgrader spec."""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from labkit import scenarios as folders
from labkit import ui as lw
from labkit.course.build import load_labs, load_spec
from labkit.labs import LABS, LabInfo, get_lab
from labkit.labs.session import LabBase
from labkit.plans.design import scenario
from labkit.tracks import BUILTIN_TRACKS, get_track

ROOT = Path(__file__).resolve().parents[2]
TRACK_IDS = [t.id for t in BUILTIN_TRACKS]


def test_registry_order_ids_and_modules():
    assert list(LABS) == ["lab1", "lab2"]
    assert [i.module for i in LABS.values()] == ["inference_economy", "accelerators"]
    assert [i.number for i in LABS.values()] == [1, 2]
    for info in LABS.values():
        assert info.notebook == f"{info.module}.ipynb"
        assert info.assignment("iphone") == f"{info.id}_iphone"
        assert LABS.for_assignment(f"{info.id}_oura_ring") == (info, "oura_ring")


def test_lookup_by_id_or_module_and_close_matches():
    assert get_lab("lab2") is get_lab("accelerators") is LABS["lab2"]
    assert get_lab(LABS["lab1"]) is LABS["lab1"]
    with pytest.raises(ValueError, match="lab1"):
        get_lab("lab_1x")
    with pytest.raises(ValueError, match="<lab>_<track>"):
        LABS.for_assignment("lab1")


@pytest.mark.parametrize("lab", LABS)
def test_each_package_info_is_the_registry_entry_and_the_constants_are_aliases(lab):
    info = LABS[lab]
    pkg = importlib.import_module(f"labkit.labs.{info.module}.info")
    assert pkg.INFO is info
    assert info.id == pkg.LAB_ID and info.title == pkg.LAB_TITLE
    assert info.time_estimate == pkg.TIME_ESTIMATE
    assert info.report_md == pkg.REPORT_MD and info.report_json == pkg.REPORT_JSON
    assert dict(pkg.PART_TITLES) == dict(info.part_titles)
    assert dict(pkg.PART_MINUTES) == dict(info.part_minutes_text)


@pytest.mark.parametrize("lab", LABS)
def test_lab_class_is_a_lab_base_bound_to_its_info(lab):
    cls = LABS[lab].lab_class()
    assert issubclass(cls, LabBase) and cls.info is LABS[lab]
    assert cls is importlib.import_module(f"labkit.labs.{LABS[lab].module}").Lab


def test_minutes_are_derived_from_the_parts():
    lab1, lab2 = LABS["lab1"], LABS["lab2"]
    assert lab1.minutes == (45, 55) and lab2.minutes == (50, 60)
    assert lab1.minutes_text == "45-55 minutes"
    assert lab1.time_estimate.startswith("45-55 minutes: four parts of 10-15 minutes")
    assert dict(lab1.part_minutes_text) == {"A": "10-12 min", "B": "10 min", "C": "10-12 min",
                                            "D": "12-15 min"}
    for info in LABS.values():
        lo = sum(m[0] for m in info.part_minutes.values()) + info.synthesis_minutes
        hi = sum(m[1] for m in info.part_minutes.values()) + info.synthesis_minutes
        assert info.minutes[0] <= lo <= hi <= info.minutes[1]


@pytest.mark.parametrize("track", TRACK_IDS)
def test_objectives_per_scenario(track):
    """A scenario's own objectives for a lab (its folder's about.py), else the lab's."""
    own = folders.piece(scenario(track), "about").OBJECTIVES
    lab1 = LABS["lab1"]
    assert lab1.objectives_for(track) == own.get("lab1", lab1.objectives["*"])
    assert LABS["lab2"].objectives_for(track) == own["lab2"]
    assert not LABS["lab2"].objectives  # Lab 2's objectives are every scenario's own


def test_info_is_checked_and_frozen():
    base = LABS["lab1"]
    with pytest.raises(ValueError, match="part_titles"):
        dataclasses.replace(base, part_titles={"A": "x"})
    with pytest.raises(ValueError, match="part_minutes"):
        dataclasses.replace(base, part_minutes={**base.part_minutes, "B": (12, 10)})
    with pytest.raises(ValueError, match="objectives"):
        dataclasses.replace(base, objectives={"fleet": ("x",)})  # a scenario's: its folder
    with pytest.raises(ValueError, match="objectives"):
        dataclasses.replace(base, objectives={"*": ()})
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.title = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        base.part_titles["A"] = "x"  # type: ignore[index]
    assert isinstance(base, LabInfo)


def test_every_spec_is_a_registered_lab():
    assert [info.id for info, _ in load_labs(ROOT)] == list(LABS)
    assert sorted(p.stem for p in (ROOT / "course" / "labs").glob("lab*.py")) == sorted(LABS)


@pytest.mark.parametrize("track", TRACK_IDS)
@pytest.mark.parametrize("lab", LABS)
def test_notebook_and_widgets_say_the_same(lab, track):
    """Title, time, objectives and part titles: one source for the spec and the widgets."""
    info = LABS[lab]
    nb = load_spec(ROOT, info).build_notebook(track)
    intro = nb.cells[0].source
    assert intro.startswith(f"# {info.heading} — ") and nb.metadata["title"].startswith(
        info.heading)
    assert f"| **Time** | about {info.minutes_text} |" in intro
    for i, objective in enumerate(info.objectives_for(track), 1):
        assert f"{i}. {objective}" in intro
    for letter, title in info.part_titles.items():
        assert any(c.source.startswith(f"## Part {letter} · {title}\n") for c in nb.cells)
    lab = info.lab(track)
    header = lab.header().value
    assert lw.esc(info.heading) in header and lw.esc(info.time_estimate) in header
    # one memo brief: the notebook's memo cell and the synthesis widget print the same
    brief = info.memo_brief(get_track(track))
    assert sum(brief in c.source for c in nb.cells) == 1
    shown = [getattr(w, "value", "") for w in lab.synthesis(write=False).children]
    assert sum(lw.esc(brief) in v for v in shown) == 1
    for objective in info.objectives_for(track):
        assert lw.esc(objective) in header


def test_importing_the_registry_loads_no_widgets():
    code = ("import sys, labkit.labs as L; L.LABS['lab2'].objectives_for('iphone'); "
            "print(sorted(m for m in ('ipywidgets', 'bqplot') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "[]"
