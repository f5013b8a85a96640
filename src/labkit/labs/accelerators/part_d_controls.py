"""Lab 2 Part D's controls: one widget per design key of the track's scenario, and the
values each offers (what the recovery hints try)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from labkit import ui as lw
from labkit.core.grids import pow2
from labkit.plans.design import INTERVALS_MS, Config, fleet_users
from labkit.registries.hardware import Hardware
from labkit.registries.models import Model
from labkit.tracks import Track

if TYPE_CHECKING:
    import ipywidgets as ipw

__all__ = ["candidates", "design_control"]


def design_control(key: str, d0: Config, tr: Track, m: Model, hw: Hardware
                   ) -> ipw.ValueWidget | None:
    """The widget for one design key (None: not a choice for this model)."""
    if key == "weight_bits":
        return lw.precision_control("Weight precision", int(d0[key]))
    if key == "kv_bits":
        kb = int(d0[key])
        return lw.precision_control("KV-cache precision", kb, sorted({4, 8, 16, kb}))
    if key in ("tp", "cp", "pp", "dp", "ep"):
        opts = {"tp": pow2(min(m.q_heads, 64)),
                "cp": pow2(max(1, int(tr.context_tokens or 0) // 1024)),
                "pp": pow2(min(m.layers, 64)), "dp": pow2(min(fleet_users(tr), 256))}
        if m.is_moe:
            opts["ep"] = [e for e in pow2(m.experts_total) if m.experts_total % e == 0]
        if key not in opts:
            return None
        vals = opts[key]
        val = int(d0[key]) if int(d0[key]) in vals else 1
        return lw.selection_control(f"{key.upper()} degree", [(str(x), x) for x in vals],
                                    val)
    if key == "context_tokens":
        return lw.context_control(int(d0[key]), m.max_context, 512,
                                  "Longest conversation (tokens)")
    if key == "duty":
        return lw.float_control("Share of windows processed (duty)", float(d0[key]), 0.05,
                                1.0, 0.05, ".0%")
    if key == "split":
        return lw.choice_control("Cut the pipeline", [
            ("model on the ring", "on_device"), ("features to the phone", "features"),
            ("raw audio to the phone", "raw")], d0[key], style="toggle")
    if key == "interval_ms":
        return lw.selection_control(
            "BLE connection interval (ms)", [(f"{x:g}", x) for x in INTERVALS_MS],
            float(d0[key]))
    if key == "layout":
        layouts = [("one SoC", "single")]
        if hw.domain_size >= 2:
            layouts += [("two SoCs: split cameras", "cameras"),
                        ("two SoCs: split the model", "model")]
        return lw.choice_control("Layout", layouts, "single", style="toggle")
    raise ValueError(f"Part D has no control for design key {key!r}")


def candidates(ctl: ipw.ValueWidget) -> list[object]:
    """The values a control offers (a slider: its steps, or 9 points across it)."""
    opts = getattr(ctl, "options", None)
    if opts:
        return [o[1] if isinstance(o, tuple) else o for o in opts]
    lo, hi = float(ctl.min), float(ctl.max)
    kind = lw.control_kind(ctl)
    if kind == "log":
        return [float(ctl.base ** x) for x in np.linspace(lo, hi, 9)]
    step = float(getattr(ctl, "step", 0) or 0)
    if step and (hi - lo) / step <= 40:
        vals = np.arange(lo, hi + step / 2, step)
    else:
        vals = np.linspace(lo, hi, 9)
    return [round(float(v)) if kind == "int" else round(float(v), 6)
            for v in vals]
