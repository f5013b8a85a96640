"""Each Lab 2 part's task judged at one setting (:class:`labkit.labs.common.Decision`),
for the parts every scenario shares (A's roofline, D's design challenge); a scenario's own
Parts B and C state theirs in their views. Each function is set on its part's class as its
``_decision`` method and reads the same model the part renders."""

from __future__ import annotations

from typing import Any

from labkit.core.format import counted, fmt, fmt_count, fmt_time
from labkit.core.grids import PRECISIONS
from labkit.labs.accelerators.part_d_spec import constraint_label
from labkit.labs.common import Decision, Settings
from labkit.labs.parts import AS_RELEASED_BITS
from labkit.plans.cnn_roofline import cnn_view
from labkit.plans.deployment import ACHIEVABLE
from labkit.plans.design import Config, design_check
from labkit.ui.controls import control_values


def d_start(track: Any, d0: Config) -> tuple[Config, str]:
    """Where Part D's controls start, and the sentence saying so: the scenario's defaults,
    or -- where those already meet every constraint -- the same design with the weights as
    released (:data:`AS_RELEASED_BITS`) if that fails one, else with the lowest weight
    precision that fails one (a smaller engine under review)."""
    if "weight_bits" not in d0 or not design_check(track, d0).feasible:
        return dict(d0), ""
    lower = [b for b in PRECISIONS if b < int(d0["weight_bits"])]
    for bits in [AS_RELEASED_BITS, *lower]:
        if bits == d0["weight_bits"]:
            continue
        candidate = {**d0, "weight_bits": bits}
        if not design_check(track, candidate).feasible:
            what = ("the model as released" if bits == AS_RELEASED_BITS else
                    "a candidate under review, a smaller engine")
            return candidate, f"The controls start at {what} ({bits}-bit weights)."
    return dict(d0), ""


def part_d(part: Any, s: Settings) -> Decision:
    """Every constraint of the design check at once."""
    last = getattr(part, "last_check", None)   # this move's refresh has checked it already
    chk = last[1] if last is not None and last[0] == dict(s) else part.check(s)
    names = ", ".join(constraint_label(n) for n in chk.constraints)
    standing = ("every constraint passes" if chk.feasible else
                "fails: " + ", ".join(constraint_label(n) for n in chk.failed))
    return Decision(f"a design that meets every constraint ({names})", chk.feasible, standing)


def first_failing_above(part: Any, key: str, base: float) -> Any:
    """Where a part's plan passes its task: the first value above ``base`` control ``key``
    offers at which the plan fails (None where the plan fails already, or no value does)."""
    s0 = part.settings()
    if not part._decision(s0).passed:
        return None
    above = (v for v in control_values(part.controls[key]) if float(v) > base)  # type: ignore[arg-type]
    return next((v for v in above if not part._decision({**s0, key: v}).passed), None)


def longer_context_start(part: Any, ctx0: int) -> tuple[dict[str, object], str]:
    """A candidate under review where the plan passes: the shortest longer context the
    slider offers at which the plan fails, and the sentence saying so."""
    ctx = first_failing_above(part, "context", ctx0)
    if ctx is None:
        return {}, ""
    return {"context": ctx}, (
        f"The controls start at a candidate under review: a context of {fmt_count(ctx)} "
        f"tokens ({fmt(ctx / ctx0, sig=2)}x the plan's {fmt_count(ctx0)}), the shortest "
        "longer one offered at which the plan fails.")


def more_cameras_start(part: Any, n0: int) -> tuple[dict[str, object], str]:
    """A candidate under review where one SoC carries the plan's cameras: the smallest rig
    the slider offers at which it fails (the hook's question: how many can it carry?)."""
    n = first_failing_above(part, "cameras", n0)
    if n is None:
        return {}, ""
    return {"cameras": n}, (
        f"The controls start at a candidate under review: a rig of {fmt_count(n)} cameras "
        f"(the plan has {fmt_count(n0)}), the fewest offered at which this plan fails.")


def _decode_task(part: Any, v: Any) -> tuple[bool, list[str]]:
    """(passes, what fails) of a decode step: memory, and the TPOT SLO where it is one."""
    tr = part.track
    fails = (["memory"] if v.over_memory else []) + (
        ["TPOT"] if tr.slo_kind == "tpot" and v.step_s > tr.slo_s else [])
    return not fails, fails


def _achieved_step(part: Any, s: Settings) -> Any:
    """The decode step at the settings on the achievable roofline (what the device does,
    whatever roofline the charts show): the part's own view at that mode, so the one the
    charts show is reused when they show the achievable roofline."""
    return part._view({**s, "mode": ACHIEVABLE})


def a_start(part: Any) -> tuple[dict[str, object], str]:
    """Where Part A's decode controls start, and the sentence saying so: a deployment that
    batches users starts at the batch the roofline asks for (the first offered at or above
    B* (peak)) where memory or the SLO refuses it; a one-user device at the first weight
    precision above the track's, up to the model as released, that fits memory and still
    fails (else the one as released, if it fails); else at the track's operating point."""
    tr, v0 = part.track, part.default_point
    here = {"batch": part.b0, "context": part.ctx0, "weight_bits": tr.weight_bits,
            "kv_bits": tr.kv_bits}
    if tr.batch_size > 1:
        want = next((b for b in part.batch_options if b >= v0.balance.b_star), None)
        if want is not None and not _decode_task(part, _achieved_step(
                part, {**here, "batch": want}))[0]:
            return {"batch": want, "mode": ACHIEVABLE}, (
                f"The controls start at the batch the roofline asks for, the first one "
                f"offered at or above {v0.balance.b_label} = {fmt_count(v0.balance.b_star)}: "
                f"{fmt_count(want)} sequences, on the achievable roofline.")
        return {}, ""
    heavier = [b for _, b in part.controls["weight_bits"].options
               if tr.weight_bits < b <= AS_RELEASED_BITS]
    fails = {b: _decode_task(part, _achieved_step(part, {**here, "weight_bits": b}))[1]
             for b in heavier}
    pick = next((b for b in heavier if fails[b] and "memory" not in fails[b]),
                AS_RELEASED_BITS if fails.get(AS_RELEASED_BITS) else None)
    if pick is None:
        return {}, ""
    what = ("the model as released" if pick == AS_RELEASED_BITS else
            "a candidate that fits in memory")
    return {"weight_bits": pick, "mode": ACHIEVABLE}, (
        f"The controls start at {what} ({pick}-bit weights), on the achievable roofline.")


def part_a_lm(part: Any, s: Settings) -> Decision:
    """A decode step that fits memory and keeps the TPOT SLO, at the achievable rate."""
    tr = part.track
    ok, fails = _decode_task(part, _achieved_step(part, s))
    slo = (f" and keeps a TPOT of {fmt_time(tr.slo_s)} at the rate the device achieves"
           if tr.slo_kind == "tpot" else "")
    return Decision(f"a decode step that fits memory{slo}", ok,
                    "fails: " + ", ".join(fails) if fails else "it fits and keeps it")


def _achieved_pass(part: Any, s: Settings) -> Any:
    """A CNN pass at the settings' precision and batch on the achievable roofline (what the
    device does, whatever roofline the chart shows)."""
    return cnn_view(part.hw, part.model, int(s["weight_bits"]), int(s["batch"]), ACHIEVABLE,
                    part._stack(s))


def a_cnn_start(part: Any) -> tuple[dict[str, object], str]:
    """Where a CNN's Part A starts: at the batch the track's scheduler fills, where that
    pass misses the deadline at the rate the device achieves; else that batch with the model
    as released (:data:`AS_RELEASED_BITS` weights) where the controls offer it and it
    misses; else one input ("")."""
    tr = part.track
    b = int(tr.batch_size)
    if b <= 1 or b > part.bmax:
        return {}, ""
    batch = counted(b, tr.input_noun.rstrip('s'), tr.input_noun)
    s = {"weight_bits": tr.weight_bits, "batch": b}
    if _achieved_pass(part, s).latency_s > tr.slo_s:
        return {"batch": b, "mode": ACHIEVABLE}, (
            f"The controls start at the batch the scheduler fills ({batch}), on the "
            "achievable roofline.")
    offered = [bits for _, bits in part.controls["weight_bits"].options]
    naive = {**s, "weight_bits": AS_RELEASED_BITS}
    if AS_RELEASED_BITS in offered and _achieved_pass(part, naive).latency_s > tr.slo_s:
        return {"batch": b, "weight_bits": AS_RELEASED_BITS, "mode": ACHIEVABLE}, (
            f"The controls start at the batch the scheduler fills ({batch}) with the model "
            f"as released ({AS_RELEASED_BITS}-bit weights), on the achievable roofline.")
    return {}, ""


def part_a_cnn(part: Any, s: Settings) -> Decision:
    """One pass within the deadline at the rate the device achieves."""
    tr = part.track
    latency = float(_achieved_pass(part, s).latency_s)
    return Decision(f"a pass done within the {fmt_time(tr.slo_s)} deadline at the rate the "
                    "device achieves", latency <= tr.slo_s, f"it takes {fmt_time(latency)}")
