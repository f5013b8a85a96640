"""Lab 2's identity (:class:`~labkit.labs.info.LabInfo`): id, title, time, part titles and
report files (the objectives are each scenario's) -- read by the lab's widgets and by its
nbgrader spec (``course/labs/lab2.py``). The module constants are aliases of :data:`INFO`'s
fields."""

from __future__ import annotations

from labkit.labs.info import LabInfo

INFO = LabInfo(
    id="lab2",
    number=2,
    title="Accelerators: Rooflines, Capacity and Parallelism",
    module="accelerators",
    part_titles={
        "A": "Where the workload sits on the roofline",
        "B": "Capacity planning",
        "C": "Parallelism and hand-off",
        "D": "Design challenge",
    },
    part_minutes={"A": (12, 12), "B": (12, 12), "C": (12, 14), "D": (12, 15)},
    objectives={},  # every scenario's own: labkit/scenarios/<id>/about.py
    report_md="labkit_lab2_report.md",
    report_json="labkit_lab2_report.json",
)

LAB_ID = INFO.id
LAB_TITLE = INFO.title
TIME_ESTIMATE = INFO.time_estimate
REPORT_MD = INFO.report_md
REPORT_JSON = INFO.report_json
PART_TITLES = INFO.part_titles
PART_MINUTES = INFO.part_minutes_text
