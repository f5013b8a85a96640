"""The toy scenario's Lab 2 instructor module (hidden tests)."""

from labkit.course.scaffold import Exercise, literal
from labkit.plans.design import DUTY_STEPS
from labkit.registries.models import get_model


def _exercise(letter: str, t, points: int) -> Exercise:
    flops = get_model(t.model_id).flops_per_inference
    hidden = (f'from labkit.grading import expect_close\n'
              f'expect_close("answer_{letter}", answer_{letter}, {literal(flops)}, "{letter}", '
              f'rel=0.01, revisit="the model card")\n')
    return Exercise(f"Toy exercise {letter}: the FLOP of one window.",
                    f"FLOP = {literal(flops)}\n", f"answer_{letter}", f"answer_{letter} = FLOP",
                    f'expect_number("answer_{letter}", answer_{letter}, "{letter}")', hidden,
                    points)


def exercise_b(t, points):
    return _exercise("B", t, points)


def exercise_c(t, points):
    return _exercise("C", t, points)


EXTRA = (("the toy decides on its own (`split = 'on_device'`)",
          'design_D.get("split") == "on_device"', lambda cfg: cfg["split"] == "on_device"),)


def grid(t):
    return [dict(weight_bits=w, duty=d, split="on_device", interval_ms=1000.0)
            for w in (8, 16) for d in DUTY_STEPS]


MEMO_KEY = "A strong toy memo names the toy's limit."
