"""nbgrader configuration for the labkit course.

Used by ``labkit course ...`` and by instructors running ``nbgrader`` from the repository
root (the root ``nbgrader_config.py`` loads this file). The course root is the repository:
``source/`` and ``release/`` sit at its top level.
"""

from pathlib import Path

from labkit.course.feedback import FEEDBACK_PREPROCESSORS

c = get_config()  # noqa: F821 -- provided by traitlets when nbgrader loads this file

c.CourseDirectory.root = str(Path(__file__).resolve().parent.parent)
c.CourseDirectory.course_id = "labkit"

# Unanswered exercises must fail only their own tests: the stub is a comment, not
# ``raise NotImplementedError()``, so a blank notebook runs top to bottom.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Files the student's widgets write beside the notebook are graded evidence: never let a
# source copy replace them during autograde.
c.Autograde.exclude_overwriting = {}

c.ExecutePreprocessor.timeout = 120
c.Execute.timeout = 120

# Feedback (``nbgrader generate_feedback``, ``labkit course report``) keeps the hidden tests
# hidden -- cleared from the test cells' sources (nbgrader's ClearHiddenTests), a test
# cell's output only the verdict (``ename: evalue``, no traceback quoting its source) --
# and never runs a student's HTML or JavaScript: the notebook is sanitised with nh3
# (labkit.course.sanitize) and the page carries a Content-Security-Policy with no script
# and no remote fetch. ``sanitize_html`` stays on for the formgrader (the feedback exporter
# skips nbconvert's slow bleach pass: its notebook is already clean).
# labkit.course.feedback.feedback_config() is the same setting in code.
c.GenerateFeedback.preprocessors = list(FEEDBACK_PREPROCESSORS)
c.GenerateFeedback.exporter_class = "labkit.course.feedback.FeedbackExporter"
c.HTMLExporter.sanitize_html = True

# ``labkit course grade`` options (labkit.course.config.LabkitGrade); a command-line flag
# wins over these. The defaults:
# c.LabkitGrade.workers = 0          # local grading processes; 0: one per core, plus one
# c.LabkitGrade.cell_timeout = 60    # seconds per cell before the kernel is interrupted
# c.LabkitGrade.job_timeout = 900    # seconds per submission before its worker is killed
# c.LabkitGrade.memory_mb = 3072     # MiB of address space per student kernel
# c.LabkitGrade.cpus = 1.0           # CPU cores each student kernel may use
# c.LabkitGrade.scheduler = None     # a Dask scheduler (tcp://host:8786); None or "": local
# c.LabkitGrade.checkpoint_credit = "correct"  # "commit": any committed answer earns it
