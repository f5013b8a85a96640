"""A fifth track defined only here reaches every lab: built with ``labkit course build
--tracks ... --out ...`` and run top to bottom in a real kernel, with no library change.

The track is a :func:`labkit.tracks.custom_track` (the cloud fleet on H200s instead of
H100s) written to a tracks file; ``LABKIT_TRACKS`` names that file for the build and for
the kernels, which are separate processes.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import nbformat
import papermill
import pytest
from nbclient import NotebookClient

from course_helpers import BIN, ROOT, is_grade_cell, kernel_env, nbgrader_meta
from labkit.labs import LABS
from labkit.tracks import (
    BUILTIN_TRACKS,
    ENV_VAR,
    Track,
    custom_track,
    track_spec,
    unregister_track,
)

TRACK_ID = "cloud_fleet_h200"
LABEL = "Cloud Fleet: 70B assistant on H200s"
CELL_TIMEOUT_S = 120


def _track() -> Track:
    return custom_track("cloud_fleet", id=TRACK_ID, label=LABEL, hardware_id="h200")


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Iterator[tuple[Path, dict[str, str]]]:
    """(course folder, environment) with both labs built for the fifth track."""
    tmp = tmp_path_factory.mktemp("custom-track")
    tracks_file = tmp / "tracks.json"
    tracks_file.write_text(json.dumps([track_spec(_track())], indent=1))
    env = {**kernel_env(tmp), ENV_VAR: str(tracks_file)}
    out = tmp / "course"
    proc = subprocess.run([str(BIN / "labkit"), "course", "build", "--tracks", TRACK_ID,
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield out, env
    unregister_track(TRACK_ID)  # the test process may have loaded the file too


def test_the_track_exists_only_in_this_test():
    assert TRACK_ID not in [t.id for t in BUILTIN_TRACKS]
    assert not any((ROOT / "source" / i.assignment(TRACK_ID)).exists() for i in LABS.values())


@pytest.mark.parametrize("lab", LABS)
def test_build_writes_source_and_release_for_the_new_track_only(lab, course):
    out, _ = course
    info = LABS[lab]
    assert sorted(p.name for p in (out / "source").iterdir()) == sorted(
        i.assignment(TRACK_ID) for i in LABS.values())
    source = nbformat.read(out / "source" / info.assignment(TRACK_ID) / info.notebook,
                           as_version=4)
    release_path = out / "release" / info.assignment(TRACK_ID) / info.notebook
    release = nbformat.read(release_path, as_version=4)
    assert source.metadata["title"] == release.metadata["title"] == f"{info.heading} — {LABEL}"
    intro = source.cells[0].source
    assert LABEL in intro and "NVIDIA H200" in intro and f"about {info.minutes_text}" in intro
    assert f'TRACK = "{TRACK_ID}"' in source.cells[1].source
    for letter, title in info.part_titles.items():
        assert any(c.source.startswith(f"## Part {letter} · {title}") for c in source.cells)
    text = release_path.read_text()
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert [nbgrader_meta(c).get("grade_id") for c in source.cells] == [
        nbgrader_meta(c).get("grade_id") for c in release.cells]


@pytest.mark.parametrize("lab", LABS)
def test_source_notebook_runs_top_to_bottom_with_every_test_passing(lab, course, tmp_path,
                                                                    monkeypatch):
    out, env = course
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    info = LABS[lab]
    executed = tmp_path / "executed.ipynb"
    papermill.execute_notebook(
        str(out / "source" / info.assignment(TRACK_ID) / info.notebook), str(executed),
        cwd=str(tmp_path), kernel_name="python3", execution_timeout=CELL_TIMEOUT_S,
        progress_bar=False, log_output=False)
    nb = nbformat.read(executed, as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error" or o.get("name") == "stderr"]
    assert not errors, errors[:2]
    report = json.loads((tmp_path / info.report_json).read_text())
    assert report["lab"] == info.id and report["track"]["id"] == TRACK_ID
    assert report["track"]["label"] == LABEL and report["track"]["hardware"].startswith(
        "NVIDIA H200")


@pytest.mark.parametrize("lab", LABS)
def test_blank_release_fails_only_its_test_cells(lab, course, tmp_path):
    out, env = course
    info = LABS[lab]
    nb = nbformat.read(out / "release" / info.assignment(TRACK_ID) / info.notebook,
                       as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            allow_errors=True, resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env={**os.environ, **env})
    failed = [c for c in nb.cells if c.cell_type == "code" and any(
        o.get("output_type") == "error" for o in c.get("outputs", []))]
    assert not [c.source[:80] for c in failed if not is_grade_cell(c)]
    graded = [c for c in nb.cells if is_grade_cell(c)]
    assert graded and all(c in failed for c in graded), "an unanswered exercise passed"
