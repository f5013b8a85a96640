"""Lab 2's identity: id, title, time estimate, part titles and report files."""

from __future__ import annotations

LAB_ID = "lab2"
LAB_TITLE = "Accelerators: Rooflines, Capacity and Parallelism"
TIME_ESTIMATE = "50-60 minutes: four parts of about 10-14 minutes each, then a 5-minute synthesis"
REPORT_MD = "labkit_lab2_report.md"
REPORT_JSON = "labkit_lab2_report.json"
REPORT_SCHEMA = "labkit-report"
REPORT_VERSION = 1
PART_TITLES = {
    "A": "Where the workload sits on the roofline",
    "B": "Capacity planning",
    "C": "Parallelism and hand-off",
    "D": "Design challenge",
}
PART_MINUTES = {"A": "12 min", "B": "12 min", "C": "12-14 min", "D": "12-15 min"}
