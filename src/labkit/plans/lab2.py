"""Lab 2's shell figures: what the "From Lab 1" box and the synthesis quote.

:func:`lab1_precision_effect` computes what a Lab 1 precision choice does to Lab 2's
roofline (B* and L* on transformers, FLOP per byte and pass latency on CNNs), each beside
its 16-bit value and with the roofline mode it is computed in. :func:`binding_constraint`
names the constraint a design is closest to (or furthest past) on the constraints' true
ratios, never the chart's capped ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from labkit.physics.phases import cnn_compute_precision, cnn_inference_time
from labkit.physics.roofline import balance_context, critical_batch
from labkit.plans.scenarios.base import OFF_SCALE, Constraint
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import Track, get_track

__all__ = ["BASE_BITS", "SHELL_MODE", "BindingConstraint", "PrecisionEffect",
           "binding_constraint", "lab1_precision_effect"]

BASE_BITS = 16        # the precision Lab 1's choice is compared with
SHELL_MODE = "peak"   # the roofline mode of the "From Lab 1" figures (Part A's first view)


@dataclass(frozen=True)
class PrecisionEffect:
    """What a weight (and KV) precision does to the track's roofline, in ``mode``
    ('peak' or 'achievable'), next to :data:`BASE_BITS`.

    Transformers: ``b_star`` / ``b_star_base`` (B*, sequences) at ``weight_bits`` / 16-bit,
    and ``l_star`` / ``l_star_base`` (L*, tokens) at ``kv_bits`` / 16-bit when ``kv_bits``
    is given. CNNs: ``flop_per_byte`` / ``flop_per_byte_base`` (one pass at batch 1,
    FLOP/B) and ``pass_s`` / ``pass_s_base`` (its latency, s), each on its own
    ``datapath`` / ``datapath_base`` (the compute and activation precision the device runs
    those weights on, e.g. ``INT8`` / ``FP16``): a CNN's bytes include its activations, so
    the two figures differ in more than the weights' width, and :attr:`label` /
    :attr:`base_label` name both precisions. Fields that do not apply are None.
    """

    mode: str
    weight_bits: int
    kv_bits: int | None
    base_bits: int
    transformer: bool
    b_star: float | None = None
    b_star_base: float | None = None
    l_star: float | None = None
    l_star_base: float | None = None
    flop_per_byte: float | None = None
    flop_per_byte_base: float | None = None
    pass_s: float | None = None
    pass_s_base: float | None = None
    datapath: str | None = None
    datapath_base: str | None = None

    @property
    def label(self) -> str:
        """The basis of the Lab 1 figures: ``8-bit weights, INT8 activations`` (a CNN's
        bytes include its activations) or ``8-bit weights``."""
        return _basis(self.weight_bits, self.datapath)

    @property
    def base_label(self) -> str:
        """The basis of the figures it is compared with, in the same words."""
        return _basis(self.base_bits, self.datapath_base)


def _basis(bits: int, datapath: str | None) -> str:
    """``{bits}-bit weights`` and, where the bytes include activations, their precision."""
    return f"{bits}-bit weights" + (f", {datapath} activations" if datapath else "")


def lab1_precision_effect(track: str | Track, weight_bits: int,
                          kv_bits: int | None = None) -> PrecisionEffect:
    """:class:`PrecisionEffect` of ``weight_bits`` (and ``kv_bits``) on the track's device
    and model, in :data:`SHELL_MODE`."""
    tr = get_track(track)
    hw, m = get_hardware(tr.hardware_id), get_model(tr.model_id)
    mode, base = SHELL_MODE, BASE_BITS
    if tr.is_transformer:
        return PrecisionEffect(
            mode, weight_bits, kv_bits, base, True,
            b_star=float(critical_batch(hw, m, weight_bits, mode=mode)),
            b_star_base=float(critical_batch(hw, m, base, mode=mode)),
            l_star=(None if kv_bits is None else
                    float(balance_context(hw, m, kv_bits, mode=mode))),
            l_star_base=(None if kv_bits is None else
                         float(balance_context(hw, m, base, mode=mode))))
    one = cnn_inference_time(hw, m, weight_bits, 1, mode)
    ref = cnn_inference_time(hw, m, base, 1, mode)
    return PrecisionEffect(
        mode, weight_bits, None, base, False,
        flop_per_byte=float(one.flops / one.bytes_moved),
        flop_per_byte_base=float(ref.flops / ref.bytes_moved),
        pass_s=float(one.latency_s), pass_s_base=float(ref.latency_s),
        datapath=cnn_compute_precision(hw, weight_bits).upper(),
        datapath_base=cnn_compute_precision(hw, base).upper())


@dataclass(frozen=True)
class BindingConstraint:
    """The constraint with the largest true ratio (``name``, ``ratio``: None when it cannot
    be evaluated, which ranks first), whether it ``fails`` and whether its chart bar is
    ``capped`` at :data:`OFF_SCALE`."""

    name: str
    ratio: float | None
    fails: bool
    capped: bool
    detail: str = ""


def binding_constraint(constraints: Mapping[str, Constraint]) -> BindingConstraint | None:
    """The constraint that binds: the largest true ratio (a constraint that cannot be
    evaluated and fails ranks above every number); None when there are none."""
    best: tuple[float, str, float | None] | None = None
    for name, c in constraints.items():
        if c.requirement and c.passed:
            continue   # a promise the design keeps, not a resource near its limit
        r = c.true_ratio
        key = math.inf if r is None and not c.passed else (r if r is not None else -1.0)
        if best is None or key > best[0]:
            best = (key, name, r)
    if best is None:
        return None
    c = constraints[best[1]]
    r = best[2]
    return BindingConstraint(best[1], r, not c.passed, r is None or r > OFF_SCALE, c.detail)
