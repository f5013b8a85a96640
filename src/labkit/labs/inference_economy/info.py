"""Lab 1's identity (:class:`~labkit.labs.info.LabInfo`): id, title, time, objectives (the
language-model tracks share ``"*"``; the ring and the robotaxi have their own), part titles
and report files -- read by the lab's widgets and by its nbgrader spec
(``course/labs/lab1.py``). The module constants are aliases of :data:`INFO`'s fields."""

from __future__ import annotations

from labkit.labs.info import ANY_SCENARIO, LabInfo

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
        "wearable": (
            "Split one audio window's work into the input pass through the model and the "
            "short pass that slides the window buffer and writes the decision, and say "
            "which one takes most of the window's time.",
            "Find when the energy of listening all day overtakes the one-time energy of "
            "personalising the model, in mWh.",
            "Compute how many audio windows fit in SRAM while the weights stay in flash.",
            "Decide whether batching windows that arrive on a fixed clock can ever meet the "
            "detection deadline.",
            "Defend a listening plan against every guardrail -- memory, deadline, accuracy "
            "and energy -- and name the one that binds.",
        ),
        "vehicle": (
            "Measure one camera frame's input pass through the model on the SoC, and how "
            "much of the hard deadline it uses.",
            "Compare a year of perception energy with the one-time energy of validating a "
            "release, in Wh.",
            "Compute how many camera frames fit in flight in the SoC's memory beside the "
            "weights.",
            "Find the largest batch of frames from unsynchronised cameras that still meets "
            "the hard deadline.",
            "Defend a perception plan against every guardrail -- memory, deadline, accuracy "
            "and energy -- and name the one that binds.",
        ),
    },
    report_md="labkit_report.md",
    report_json="labkit_report.json",
)

LAB_ID = INFO.id
LAB_TITLE = INFO.title
TIME_ESTIMATE = INFO.time_estimate
REPORT_MD = INFO.report_md
REPORT_JSON = INFO.report_json
PART_TITLES = INFO.part_titles
PART_MINUTES = INFO.part_minutes_text
