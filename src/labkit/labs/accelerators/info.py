"""Lab 2's identity (:class:`~labkit.labs.info.LabInfo`): id, title, time, part titles and
report files (the objectives are each scenario's) -- read by the lab's widgets and by its
nbgrader spec (``course/labs/lab2.py``). The module constants are aliases of :data:`INFO`'s
fields."""

from __future__ import annotations

from labkit import scenarios as folders
from labkit.labs.info import LabInfo
from labkit.tracks import Track


def memo_brief(t: Track) -> str:
    """Lab 2's memo brief: what the track's scenario asks the memo to recommend."""
    from labkit.plans.design import scenario

    ask = folders.piece(scenario(t), "about").MEMO_ASK
    return (f"Recommend the deployment for the {t.label} track with your numbers: {ask}; "
            "how far your Part D design is from labkit's fewest-devices design; and how "
            "your Lab 1 release choice changes any of it.")


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
    memo_brief=memo_brief,
)

LAB_ID = INFO.id
LAB_TITLE = INFO.title
TIME_ESTIMATE = INFO.time_estimate
REPORT_MD = INFO.report_md
REPORT_JSON = INFO.report_json
PART_TITLES = INFO.part_titles
PART_MINUTES = INFO.part_minutes_text
