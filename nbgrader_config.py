"""nbgrader reads this when run from the repository root; the course config lives in course/."""

from pathlib import Path

load_subconfig(str(Path(__file__).resolve().parent / "course" / "nbgrader_config.py"))  # noqa: F821
