"""``labkit course grade`` on the committed Lab 2 fixture set (``autograder/fixtures/lab2``:
the attacks on the verdict and the kernel's folder, and honest work, on one track)."""

from __future__ import annotations

import pytest

from grading_helpers import EXPECTED2, FIXTURES2, LAB2, check_expected, grade_fixture_set


@pytest.fixture(scope="module")
def graded2(tmp_path_factory):
    """The Lab 2 fixtures (attacks on the verdict, on one track) graded in parallel."""
    tmp = tmp_path_factory.mktemp("fixture-course-lab2")
    db_url, report = grade_fixture_set(tmp, LAB2, fixtures=FIXTURES2)
    return tmp, db_url, report


def test_every_lab2_fixture_gets_its_expected_score_reason_and_flag(graded2):
    check_expected(*graded2, EXPECTED2)


