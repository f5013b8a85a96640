"""The coordinator's side of ``labkit.course.dask_pool`` without a cluster: a finished
task's answer lands in its job folder, and a task or folder that fails costs that job
alone (the cluster itself is exercised in test_course_grade.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from labkit.course.dask_pool import pack_answer, receive
from labkit.course.worker import RESULT


def _job(folder, student="alice"):
    folder.mkdir(parents=True)
    (folder / "job.json").write_text(json.dumps({"assignment": "lab1_iphone",
                                                 "student": student}))
    return folder


def test_an_answer_is_unpacked_into_its_job_folder(tmp_path):
    worker = _job(tmp_path / "worker")
    (worker / RESULT).write_text(json.dumps({"status": "graded", "student": "alice"}))
    (worker / "inference_economy.ipynb").write_text("{}")
    coordinator = _job(tmp_path / "coordinator")
    receive(lambda: pack_answer(worker), coordinator)
    assert json.loads((coordinator / RESULT).read_text())["status"] == "graded"


def test_a_task_that_raised_gets_an_error_result_naming_why(tmp_path):
    folder = _job(tmp_path / "j")

    def died() -> bytes:
        raise RuntimeError("worker lost")

    receive(died, folder)
    result = json.loads((folder / RESULT).read_text())
    assert result["status"] == "error" and "RuntimeError: worker lost" in result["error"]
    assert result["student"] == "alice"


@pytest.mark.parametrize("answer", ["raises", "garbage"])
def test_a_job_folder_removed_under_the_run_fails_that_job_alone(tmp_path, answer):
    """Found with the Dask benchmark: deleting a job folder mid-run stopped the whole
    grade with FileNotFoundError instead of failing one job."""
    folder = _job(tmp_path / "j")
    shutil.rmtree(folder)

    def died() -> bytes:
        raise OSError("connection reset")

    receive(died if answer == "raises" else (lambda: b"not an archive"), folder)
    assert not (folder / RESULT).exists()
