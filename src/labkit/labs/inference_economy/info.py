"""Lab 1's identity: id, title, time estimate, part titles and report files."""

from __future__ import annotations

LAB_ID = "lab1"
LAB_TITLE = "The Inference Economy"
TIME_ESTIMATE = "45-55 minutes: four parts of about 10-12 minutes each, then a 5-minute synthesis"
REPORT_MD = "labkit_report.md"
REPORT_JSON = "labkit_report.json"
REPORT_SCHEMA = "labkit-report"
REPORT_VERSION = 1
PART_TITLES = {
    "A": "Two amounts and a crossover",
    "B": "The state/KV wall",
    "C": "Batching under variance",
    "D": "Release review",
}
PART_MINUTES = {"A": "10-12 min", "B": "10 min", "C": "10-12 min", "D": "12-15 min"}
