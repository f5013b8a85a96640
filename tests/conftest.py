"""Shared pytest configuration."""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "labkit", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("labkit")


# The slowest test files first: pytest-xdist (``--dist loadfile --no-loadscope-reorder``,
# as scripts/test runs it; by default it sorts files by their number of tests) hands files
# to the workers in collection order, so the long ones starting last would leave one core
# idle at the end. The order inside each file is kept. Durations: scripts/test prints them.
SLOW_FIRST = (
    "test_course_grade_fixtures.py", "test_course_grade.py", "test_student_session.py",
    "test_course_grade_lab2.py", "test_course_pipeline.py", "test_course_gradebook.py",
    "test_nbgrader_validate.py", "test_course_build.py", "test_course_report.py",
    "test_notebooks.py",
)


# Per-test timeouts (pytest-timeout; a module fixture's setup counts against the test that
# builds it): 300 s for every test ([tool.pytest.ini_options] timeout), more for the files
# whose one test or first test legitimately runs long. Figures: --durations on 2 cores.
LONG_TIMEOUT_S = {
    "test_course_grade_fixtures.py": 900,  # grading the Lab 1 fixture set: ~173 s quiet
    "test_course_grade.py": 900,  # the kill-and-resume test waits up to 2 x 300 s itself
    "test_course_pipeline.py": 900,  # `labkit course demo`: ~96 s
    "test_student_session.py": 900,  # a JupyterLab server and chromium for the module
    "test_hub.py": 900,  # one JupyterHub class session: ~2.5 min
    "test_course_grade_lab2.py": 600,  # the Lab 2 fixture set: ~62 s
    "test_course_gradebook.py": 600, "test_feedback_sanitized.py": 600,
    "test_nbgrader_validate.py": 600, "test_course_build.py": 600,
    "test_course_report.py": 600, "test_notebooks.py": 600,
}


def pytest_collection_modifyitems(items: list) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    for item in items:
        limit = LONG_TIMEOUT_S.get(item.path.name)
        if limit is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(limit))


@pytest.fixture(scope="session", autouse=True)
def _shared_courses(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One folder per test run, shared by its xdist workers (the parent of each worker's
    base temp), for the generated courses tests/grading_helpers.py's new_course reuses."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / "generated-courses"
    folder.mkdir(exist_ok=True)
    os.environ["LABKIT_TEST_COURSES"] = str(folder)  # grading_helpers.COURSES_ENV
