"""Wearable: a CNN on a microcontroller whose weights live in flash, e.g. the smart ring.

A design is a weight precision, the share of windows processed (``duty``), where the
pipeline is cut (``split``: on the device, features or raw audio to the phone) and the BLE
connection interval. labkit's reference: every precision, split, interval and duty step;
the highest duty wins, then the least energy.
"""

from __future__ import annotations

from collections.abc import Mapping

from labkit.core import validation as v
from labkit.core.format import fmt_count, fmt_energy, fmt_time, format_bytes
from labkit.physics import edge
from labkit.physics.kvcache import weight_bytes
from labkit.physics.phases import cnn_inference_time, decision_time, front_end_ops_per_s
from labkit.plans.scenarios.base import (
    Config,
    ConfigValue,
    Constraint,
    Evaluation,
    MetricValue,
    Rank,
    ReferenceDesign,
    Scenario,
)
from labkit.plans.scenarios.common import (
    DESIGN_MODE,
    active_seconds,
    allowed_precisions,
    constraint,
    duty_bucket,
    quality_check,
)
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track

INTERVALS_MS = (7.5, 15.0, 30.0, 50.0, 100.0, 150.0, 200.0, 500.0, 1000.0)
# 1-point steps up to 10% (where a battery-bound ring lands), 5-point steps above
DUTY_STEPS = (tuple(round(0.01 * k, 2) for k in range(1, 10))
              + tuple(round(0.05 * k, 2) for k in range(2, 21)))
DUTY_FREE = frozenset({"flash", "sram", "deadline", "quality"})  # checks duty cannot change
_WINDOWS: dict[tuple[str, str, int, float, float], dict[str, float]] = {}


def ring_window(tr: Track, weight_bits: int) -> dict[str, float]:
    """A wearable's per-window figures at ``weight_bits``: model time on the device and on
    the host, SRAM bytes of one window + its activations, weight bytes (achievable
    roofline). Cached per (device, model, bits, window, reserve); treat it as read-only."""
    key = (tr.hardware_id, tr.model_id, weight_bits, tr.window_bytes,
           tr.memory_reserve_fraction)
    if key in _WINDOWS:
        return _WINDOWS[key]
    hw = get_hardware(tr.hardware_id)
    prof = edge.edge_profile(hw.id)
    m = get_model(tr.model_id)
    dev = cnn_inference_time(hw, m, weight_bits, 1, DESIGN_MODE)
    decide = float(decision_time(hw, tr.window_bytes, DESIGN_MODE))  # as Lab 1 times it
    host_s = 0.0
    if prof is not None and prof.host_hardware_id is not None:
        host_s = float(cnn_inference_time(prof.host_hardware_id, m, weight_bits, 1,
                                          DESIGN_MODE).latency_s)
    act = float(dev.bytes_moved) - weight_bytes(m, weight_bits)
    out = {"model_s": float(dev.latency_s) + decide, "host_s": host_s,
           "window_bytes": tr.window_bytes, "activation_bytes": act,
           "state_bytes": tr.window_bytes + act, "weights_bytes": weight_bytes(m, weight_bits),
           "flash_bytes": float(hw.flash_bytes or 0.0),
           "sram_bytes": hw.usable_memory_bytes * (1 - tr.memory_reserve_fraction)}
    _WINDOWS[key] = out
    return out


def ring_split(tr: Track, weight_bits: int, split: str, interval_s: float,
               duty: float) -> edge.SplitCost:
    """:func:`labkit.physics.edge.wearable_split` for a wearable track at ``duty`` of its
    windows."""
    hw = get_hardware(tr.hardware_id)
    prof = edge.edge_profile(hw.id)
    if prof is None or not prof.offload_links:
        raise ValueError(f"{hw.id} has no edge profile with an offload link")
    rw = ring_window(tr, weight_bits)
    return edge.wearable_split(
        split, window_bytes=tr.window_bytes, feature_bytes=prof.feature_bytes,
        result_bytes=prof.result_bytes, front_end_ops=prof.front_end_ops,
        front_end_ops_per_s=front_end_ops_per_s(hw, DESIGN_MODE),
        model_s=rw["model_s"], device_power_w=float(hw.power_w or 0.0), host_s=rw["host_s"],
        interval_s=interval_s, inputs_per_s=duty * tr.demand_rate_per_s,
        link=prof.offload_links[0])


FALLBACK = "kept on the ring to decide alone when the phone is out of range"
"""Why a ring that sends its data to the phone still stores the model and room to run it."""


def _constraints(tr: Track, weight_bits: int, duty: float, rw: Mapping[str, float],
                 sc: edge.SplitCost, daily: float, windows_day: float,
                 offloads: bool) -> list[Constraint]:
    floor = tr.min_demand_rate_per_s / tr.demand_rate_per_s
    why = f" ({FALLBACK})" if offloads else ""
    return [
        Constraint.compare("flash", rw["weights_bytes"], rw["flash_bytes"], "bytes",
                           f"{format_bytes(rw['weights_bytes'])} weights in "
                           f"{format_bytes(rw['flash_bytes'])} flash{why}"),
        Constraint.compare("sram", rw["state_bytes"], rw["sram_bytes"], "bytes",
                           f"window {format_bytes(rw['window_bytes'])} + activations "
                           f"{format_bytes(rw['activation_bytes'])} in "
                           f"{format_bytes(rw['sram_bytes'])} SRAM{why}"),
        Constraint.compare("deadline", sc.latency_s, tr.slo_s, "s",
                           f"worst case {fmt_time(sc.latency_s)} (wait for the link "
                           f"{fmt_time(sc.wait_s)}) vs {fmt_time(tr.slo_s)}"),
        quality_check(tr, weight_bits, None),
        Constraint.compare("energy", daily, tr.daily_budget, "mWh/day",
                           f"{fmt_count(windows_day)} windows/day x {fmt_energy(sc.energy_j)} "
                           f"(front end {fmt_energy(sc.front_end_j)} + model "
                           f"{fmt_energy(sc.model_j)} + BLE {fmt_energy(sc.radio_j + sc.idle_j)})"
                           f" = {fmt_count(daily)} mWh/day vs {tr.budget_text}"),
        constraint("coverage", duty >= floor - 1e-9, duty, floor, "share of windows",
                   f"processes {duty:.0%} of windows; the product needs at least {floor:.0%}",
                   sense="min"),
        Constraint.compare("link", sc.link_utilisation, tr.max_utilisation,
                           "share of airtime", f"BLE airtime {sc.link_utilisation:.1%} of the "
                           f"link (max {tr.max_utilisation:.0%})"),
    ]


class Wearable(Scenario):
    """A microcontroller listening on a battery: the highest duty within every budget."""

    id = "wearable"
    order = 30
    label = "wearable"
    design_keys = ("weight_bits", "duty", "split", "interval_ms")
    # feasibility is an interval in duty (energy and link airtime grow with it, coverage
    # needs a floor), so each group's highest feasible duty is its first hit when duties
    # are scanned from the top
    first_feasible_is_best = True

    def applies_to(self, track: Track) -> bool:
        return (not track.is_transformer
                and get_hardware(track.hardware_id).flash_bytes is not None)

    def defaults(self, track: Track) -> Config:
        return {"weight_bits": track.weight_bits, "duty": 1.0, "split": "on_device",
                "interval_ms": 1000.0}

    def validate(self, track: Track, raw: Mapping[str, object]) -> Config:
        cfg: Config = {"weight_bits": v.precision_bits("weight_bits", raw["weight_bits"]),
                       "duty": float(v.fraction("duty", raw["duty"], allow_zero=False)),
                       "split": str(v.choice("split", raw["split"], edge.SPLITS))}
        interval = float(v.positive("interval_ms", raw["interval_ms"]))
        if not 7.5 <= interval <= 4000.0:
            raise ValueError("interval_ms must be a BLE connection interval in [7.5, 4000] ms, "
                             f"got {interval}")
        cfg["interval_ms"] = interval
        return cfg

    def evaluate(self, track: Track, config: Config) -> Evaluation:
        tr = track
        wb = int(config["weight_bits"])
        duty = float(config["duty"])
        interval = float(config["interval_ms"]) / 1e3
        rw = ring_window(tr, wb)
        sc = ring_split(tr, wb, str(config["split"]), interval, duty)
        windows_day = duty * tr.demand_rate_per_s * active_seconds(tr)
        daily = sc.energy_j * windows_day / edge.J_PER_MWH
        metrics: dict[str, MetricValue] = {
            "energy_j": sc.energy_j, "latency_s": sc.latency_s, "daily_mwh": daily,
            "daily_cost": daily, "bytes_sent": sc.bytes_sent, "windows_per_day": windows_day}
        bat = edge.edge_profile(tr.hardware_id)
        if bat is not None and bat.battery is not None:
            metrics["battery_days"] = edge.battery_life_days(bat.battery, daily)
        offloads = str(config["split"]) != "on_device"
        return Evaluation.of(_constraints(tr, wb, duty, rw, sc, daily, windows_day, offloads),
                             metrics, 1)

    def grid(self, track: Track) -> list[list[Config]]:
        """One group per precision, cut and interval, duties from the highest."""
        bits = sorted({wb for wb, _ in allowed_precisions(track)})
        return [[{"weight_bits": wb, "duty": d, "split": s, "interval_ms": iv}
                 for d in sorted(DUTY_STEPS, reverse=True)]
                for wb in bits for s in edge.SPLITS for iv in INTERVALS_MS]

    ranking = "the highest duty (the most windows heard), then the least energy"

    def precision_note(self, config: Config) -> str:
        if config.get("split", "on_device") == "on_device":
            return ""
        return ("this design sends the ring's data to the phone, which runs the model, so "
                "the weights' precision changes only what the ring stores: the model "
                f"{FALLBACK}")

    def rank(self, config: Mapping[str, ConfigValue], evaluation: Evaluation) -> Rank:
        """The highest duty, then the least energy."""
        return (-float(config["duty"]), evaluation.daily_cost)

    def exhausts_group(self, evaluation: Evaluation) -> bool:
        """A failure no duty can fix ends the group."""
        return bool(set(evaluation.failed) & DUTY_FREE)

    def answer(self, reference: ReferenceDesign | None) -> str:
        return duty_bucket(None if reference is None else float(reference.config["duty"]))


SCENARIO = Wearable()
