"""The software stack as a Lab 2 Part A setting: what it does to ``achievable`` and the
band real systems on it span, computed once here for every view that quotes it.

The same chip runs several-fold apart by toolchain, so ``achievable`` takes the stack
(:mod:`labkit.physics.stacks`): its kernel library's fitted multiplier on the class line,
where the published cases pin one (and on a microcontroller the core's, whatever the
stack). With no stack named the line is the class's. The band around it is the kernel
library's own where its cases pin one, else the device class's
(:mod:`labkit.registries.bands`, the shipped snapshot of :mod:`labkit.physics.band`).

* :func:`stack_choices` -- the options a device offers: no stack named, then every stack
  its device class's published cases of a workload ran.
* :func:`stack_choice` -- one option by id (:data:`NO_STACK`: none named).
* :func:`roof` -- the derating the physics is given for a roofline mode on a stack.
* :func:`stack_spread` -- the widest spread of one published configuration (one chip,
  model, precision and batch) across stacks: the checkpoint's evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from labkit.physics.derating import Derating, device_class_of, get_mode
from labkit.physics.stacks import SHIPPED, Term
from labkit.plans.equations import Equation, equation
from labkit.plans.measured import calibration_row
from labkit.registries.bands import BANDS, ClassBand, shipped_band
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.measurements import Measurement, all_measurements
from labkit.registries.models import get_model
from labkit.registries.stacks import STACKS, get_stack

NO_STACK = ""
"""The stack control's value for "no stack named": the device class's line."""


@dataclass(frozen=True)
class StackChoice:
    """One option of the stack control on a device of ``device_class``.

    ``id``: a registry stack (:data:`NO_STACK`: none named) and its ``label``; ``core``:
    the device's CPU core (a microcontroller's, else None);
    ``kernel_term``: its kernel library's fitted multiplier on the class line's time (None:
    no stack, or too few cases to pin one -- the class line); ``core_term``: the device's
    core's (a microcontroller's; it applies whatever the stack); ``band``: where real
    systems run around this achievable, held-out measured / achievable (the library's own
    band where its cases pin one, else the class's; None for a class without cases);
    ``cases``: the class's published cases of the workload that ran this stack, and
    ``ratios``: their measured / achievable range (each with its own stack's terms);
    ``kv_per_query_head``: its decode attention fetches the KV once per query head (a
    grouped-query model's KV read costs q_heads / kv_heads times its bytes).
    """

    id: str
    label: str
    kernels: str | None
    device_class: str
    core: str | None
    kernel_term: Term | None
    core_term: Term | None
    band: ClassBand | None
    cases: tuple[str, ...]
    ratios: tuple[float, float] | None
    kv_per_query_head: bool = False

    @property
    def named(self) -> bool:
        return self.id != NO_STACK

    @property
    def scale(self) -> float:
        """achievable on this stack over the class line's with no stack named, s/s (the
        core's term is in both)."""
        return self.kernel_term.scale if self.kernel_term else 1.0

    def band_equations(self, achievable: float, unit: str) -> tuple[Equation, Equation] | None:
        """The math peek's band: (fastest, slowest) = ``achievable`` (in ``unit``) x the
        band's low and high ends (None without a band)."""
        if self.band is None:
            return None
        return (equation("fastest", [achievable, self.band.low], "product", unit),
                equation("slowest", [achievable, self.band.high], "product", unit))


def _choice(c: str, core: str | None, stack: str, workload: str) -> StackChoice:
    kernels = get_stack(stack).kernels if stack else None
    label = get_stack(stack).label if stack else "none named (the class line)"
    cases = tuple(m for m in all_measurements() if m.workload == workload and m.stack == stack
                  and device_class_of(m.hardware).id == c) if stack else ()
    ratios = [calibration_row(m).ratio for m in cases]
    band = shipped_band(c, kernels) if c in BANDS else None
    return StackChoice(stack, label, kernels, c, core,
                       SHIPPED.kernels.get((c, kernels)) if kernels else None,
                       SHIPPED.cores.get((c, core)) if core else None, band,
                       tuple(m.id for m in cases),
                       (min(ratios), max(ratios)) if ratios else None,
                       bool(stack) and get_stack(stack).kv_per_query_head)


@cache
def _choices(c: str, core: str | None, hw_id: str, workload: str) -> tuple[StackChoice, ...]:
    cases = [m for m in all_measurements()
             if m.workload == workload and device_class_of(m.hardware).id == c]
    ran = {m.stack for m in cases if STACKS[m.stack].processor != "npu" or m.hardware == hw_id}
    return (_choice(c, core, NO_STACK, workload),
            *(_choice(c, core, s, workload) for s in STACKS if s in ran))


def stack_choices(hw: Hardware, workload: str) -> tuple[StackChoice, ...]:
    """No stack named, then every stack (registry order) that ran a published
    ``workload`` case on a device of ``hw``'s class -- an NPU's runtime only where it ran
    on ``hw`` itself (it is its chip vendor's: QNN runs on Hexagon, not on another NPU)."""
    return _choices(device_class_of(hw).id, hw.core, hw.id, workload)


def stack_choice(hw: Hardware, workload: str, stack: str) -> StackChoice:
    """The option ``stack`` of :func:`stack_choices` (a ``ValueError`` names ``stack``)."""
    for c in stack_choices(hw, workload):
        if c.id == stack:
            return c
    raise ValueError(f"stack {stack!r}: no published {workload} case of the "
                     f"{device_class_of(hw).label} class ran it")


def roof(mode: str, hw: Hardware, workload: str, stack: str = NO_STACK) -> Derating:
    """The derating the physics is given for roofline ``mode`` on ``hw`` running
    ``stack``: peak is the hardware's whatever the stack; achievable is the class line
    with the stack's and the core's fitted terms and the stack's attention kernel."""
    return get_mode(mode, hw, workload, stack or None)


@dataclass(frozen=True)
class StackSpread:
    """One published configuration run by several stacks: ``hardware`` and ``model``
    (names), ``weight_bits``, ``batch``, ``workload``; the ``runs`` (cases) and distinct
    ``stacks`` behind them; the fastest and slowest run (stack label, measured s) and the
    one ``peak_s`` every run shares (the chip's roofline: the same for all)."""

    hardware: str
    model: str
    weight_bits: int
    batch: int
    workload: str
    runs: int
    stacks: int
    fastest: tuple[str, float]
    slowest: tuple[str, float]
    peak_s: float

    @property
    def ratio(self) -> float:
        """Slowest over fastest run, s/s."""
        return self.slowest[1] / self.fastest[1]

    @property
    def peak_shares(self) -> tuple[float, float]:
        """The share of peak the fastest and the slowest run reach (peak / measured)."""
        return self.peak_s / self.fastest[1], self.peak_s / self.slowest[1]


def _config(m: Measurement) -> tuple[str, str, int, int, str]:
    return (m.hardware, m.model, m.weight_bits, m.batch, m.workload)


@cache
def stack_spread() -> StackSpread:
    """The published configuration whose runs on different stacks lie furthest apart
    (slowest over fastest)."""
    groups: dict[tuple[str, str, int, int, str], list[Measurement]] = {}
    for m in all_measurements():
        groups.setdefault(_config(m), []).append(m)
    many = [g for g in groups.values() if len({m.stack for m in g}) > 1]
    if not many:
        raise ValueError("measurements: no configuration was run by two stacks")
    g = max(many, key=lambda g: max(m.value for m in g) / min(m.value for m in g))
    fast, slow = min(g, key=lambda m: m.value), max(g, key=lambda m: m.value)
    return StackSpread(get_hardware(fast.hardware).name, get_model(fast.model).name,
                       fast.weight_bits, fast.batch, fast.workload, len(g),
                       len({m.stack for m in g}), (get_stack(fast.stack).label, fast.value),
                       (get_stack(slow.stack).label, slow.value),
                       calibration_row(fast).peak_s)
