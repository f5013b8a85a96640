"""Shared pytest configuration."""

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


def pytest_collection_modifyitems(items: list) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
