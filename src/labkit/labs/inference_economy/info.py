"""Lab 1's identity (:class:`~labkit.labs.info.LabInfo`): id, title, time, objectives (``"*"``;
a scenario with its own has them in its folder's ``about.py``), part titles
and report files -- read by the lab's widgets and by its nbgrader spec
(``course/labs/lab1.py``). The module constants are aliases of :data:`INFO`'s fields."""

from __future__ import annotations

from labkit.labs.info import ANY_SCENARIO, LabInfo
from labkit.tracks import Track


def memo_brief(t: Track) -> str:
    """Lab 1's memo brief: the stakeholder's question, then what the memo names."""
    return (f"Answer {t.stakeholder.name}'s question with your numbers: "
            f"“{t.stakeholder.message}” Recommend your release for the {t.label} track: name "
            "the binding guardrail and the number that shows it, the alternative you "
            "rejected and why, the knob you would turn first if demand doubled, and one "
            "assumption in this lab you would measure before launch.")


INFO = LabInfo(
    id="lab1",
    number=1,
    title="The Inference Economy",
    module="inference_economy",
    part_titles={
        "A": "Two amounts and a crossover",
        "B": "The memory wall",
        "C": "Batching under variance",
        "D": "Release review",
    },
    part_minutes={"A": (10, 12), "B": (10, 10), "C": (10, 12), "D": (12, 15)},
    objectives={
        ANY_SCENARIO: (
            "Split a request into its one-time prompt pass (prefill) and its repeated output "
            "loop (decode), and say which one takes most of a request's time.",
            "Find when recurring serving cost overtakes a one-time setup budget, in the "
            "track's own unit (USD or mWh).",
            "Compute how many live conversations (their KV caches) fit beside the weights, "
            "and which knob frees memory first.",
            "Choose a batching policy from the spread of answer lengths and the SLO, not "
            "from habit.",
            "Defend a release plan against every guardrail -- memory, SLO, quality and cost "
            "-- and name the one that binds.",
        ),
    },
    report_md="labkit_report.md",
    report_json="labkit_report.json",
    memo_brief=memo_brief,
)

LAB_ID = INFO.id
LAB_TITLE = INFO.title
TIME_ESTIMATE = INFO.time_estimate
REPORT_MD = INFO.report_md
REPORT_JSON = INFO.report_json
PART_TITLES = INFO.part_titles
PART_MINUTES = INFO.part_minutes_text
