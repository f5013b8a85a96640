"""Lab 2's identity (:class:`~labkit.labs.info.LabInfo`): id, title, time, objectives per
deployment scenario, part titles and report files -- read by the lab's widgets and by its
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
    objectives={
        "fleet": ("Place decode on the roofline: B*, L*, the knee, and why real systems sit "
                  "above the peak roofline.",
                  "Size a fleet on three axes (weights, KV headroom, TPOT throughput), name "
                  "the one that binds and the paper's first lever for it.",
                  "Choose tensor, context, pipeline and data parallelism (TP x CP x PP x "
                  "DP) from the symptom, see what each axis sends on which link, and when to "
                  "stop adding it.",
                  "Meet the target with the fewest devices, every constraint at once."),
        "handheld": ("Place on-device decode on the roofline: B*, L* and why a phone is "
                     "memory-bound.",
                     "Find what fits beside the OS and which limit a longer conversation hits "
                     "first: memory, TPOT, TTFT or the battery.",
                     "Price the cloud hand-off: bytes over the radio against energy and "
                     "latency.",
                     "Design within the memory, latency and battery budgets."),
        "wearable": ("Place the model on the classic roofline: compute-bound at a tiny "
                     "FLOP/s.",
                     "Fit weights in flash and windows in SRAM; trade duty cycle for battery "
                     "life.",
                     "Cut the pipeline between ring and phone: compute vs BLE bytes vs the "
                     "deadline.",
                     "Design within the energy, memory, deadline and coverage budgets."),
        "vehicle": ("Place the model on the classic roofline per precision and batch.",
                    "Load one SoC with cameras x fps against a hard deadline, memory and "
                    "energy.",
                    "Split cameras or the model across two SoCs: interconnect bytes vs the "
                    "deadline.",
                    "Design with the fewest SoCs that never miss a frame."),
    },
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
