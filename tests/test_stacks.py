"""Software stacks and microcontroller cores as inputs of ``achievable`` (issue 25):
the registry, the fitted terms, and how a derating takes them."""

from __future__ import annotations

import dataclasses
import math
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labkit.physics import derating as dr
from labkit.physics import stacks as sk
from labkit.physics.calibration import predict
from labkit.physics.holdout import fit_terms
from labkit.physics.phases import cnn_inference_time
from labkit.registries.hardware import HARDWARE, get_hardware
from labkit.registries.mcu_boards import CORES, MCU_BOARDS
from labkit.registries.measurements import MEASUREMENTS, load_measurements
from labkit.registries.stacks import STACKS, TERMS, get_stack, load_terms

MCU = [m for m in MEASUREMENTS if get_hardware(m.hardware).kind == "mcu"]


def test_every_measured_case_names_a_registered_stack_and_an_unknown_one_is_refused():
    assert {m.stack for m in MEASUREMENTS} <= set(STACKS)
    assert all(s.source and s.kernels for s in STACKS.values())
    assert {s.processor for s in STACKS.values()} == {"cpu", "gpu", "npu"}
    text = (resources.files("labkit.registries").joinpath("data", "measurements.toml")
            .read_text("utf-8").replace('stack = "vllm"', 'stack = "vlm"', 1))
    with pytest.raises(ValueError, match="'stack'"):
        load_measurements(text)
    with pytest.raises(ValueError, match="stack"):
        get_stack("no-such-stack")


def test_an_mcu_board_s_peak_is_its_core_s_macs_per_cycle_times_its_clock():
    for b in MCU_BOARDS:
        hw = HARDWARE[b.id]
        c = CORES[b.core]
        assert hw.core == b.core and hw.kind == "mcu"
        assert hw.flops("int8") == pytest.approx(2 * c.int8_macs_per_cycle * b.clock_hz)
        assert hw.memory_bandwidth == pytest.approx(4 * b.clock_hz)   # 32-bit bus, B/s
        assert "board" in hw.sources and "MHz" in hw.sources["peak_flops"]
    assert CORES["cortex-m0plus"].int8_macs_per_cycle < CORES["cortex-m4"].int8_macs_per_cycle


def test_fitting_recovers_known_kernel_and_core_multipliers():
    """Cases built exactly as line x k[kernels] x c[core] give those multipliers back."""
    line = dr.MCU_CNN
    k = {"graph-compiler": 0.8, "cmsis-nn": 1.3, "reference": 2.1, "mvp-accelerator": 1.0}
    c = {"cortex-m7": 0.55, "cortex-m33": 0.7}
    exact = [dataclasses.replace(m, value=predict(m, line) * k[get_stack(m.stack).kernels]
                                 * c.get(get_hardware(m.hardware).core or "", 1.0))
             for m in MCU]
    t = sk.fit_class_terms("mcu", exact, lambda m: predict(m, line))
    assert set(t.kernels) == {("mcu", key) for key in k if key != "mvp-accelerator"}
    for (_, key), term in t.kernels.items():
        assert term.scale == pytest.approx(k[key], rel=1e-9), key
    for key, want in c.items():
        assert t.cores[("mcu", key)].scale == pytest.approx(want, rel=1e-9), key
    assert ("mcu", "mvp-accelerator") not in t.kernels          # one case: not fitted
    assert ("mcu", "cortex-m85") not in t.cores                 # one case: its peak only


def test_a_term_needs_two_cases_from_two_families():
    line = dr.MCU_CNN
    ref = [m for m in MCU if get_stack(m.stack).kernels == "reference"]
    assert len({m.source_family for m in ref}) == 2
    both = sk.fit_class_terms("mcu", ref, lambda m: predict(m, line))
    assert ("mcu", "reference") in both.kernels
    one_family = [dataclasses.replace(m, source_family="same") for m in ref]
    assert sk.fit_class_terms("mcu", one_family, lambda m: predict(m, line)) == sk.NO_TERMS


def test_the_shipped_terms_are_the_fit_over_the_fitted_cases():
    """registries/data/stack_terms.toml is what fit_terms gives now (rewrite it with
    ``benchmarks/bench_calibration.py --write-bands``)."""
    fresh = fit_terms()
    shipped = sk.shipped_terms()
    assert set(shipped.kernels) == set(fresh.kernels)
    assert set(shipped.cores) == set(fresh.cores)
    for key, term in (*fresh.kernels.items(), *fresh.cores.items()):
        got = shipped.kernels.get(key) or shipped.cores[key]
        assert got.scale == pytest.approx(term.scale, rel=1e-12), key
        assert (got.cases, got.families) == (term.cases, term.families), key
        assert term.families >= sk.MIN_TERM_FAMILIES and term.cases >= sk.MIN_TERM_CASES


def test_achievable_takes_the_stack_and_the_core():
    """Same board, same network: the stack moves the time by its term; an unknown stack
    is the class line; a Cortex-M7 board takes the M7's term with no stack named."""
    args = ("ds-cnn-kws", 8, 1)
    base = cnn_inference_time("stm32l4r5-nucleo", *args, dr.MCU_CNN).latency_s
    for stack in ("x-cube-ai", "tflm-reference", "tflm-cmsis-nn"):
        d = dr.get_mode("achievable", "stm32l4r5-nucleo", "cnn", stack)
        scale = sk.SHIPPED.scale("mcu", stack, "cortex-m4")
        assert cnn_inference_time("stm32l4r5-nucleo", *args, d).latency_s == pytest.approx(
            base * scale, rel=1e-9), stack
    assert dr.get_mode("achievable", "stm32l4r5-nucleo", "cnn") is dr.MCU_CNN
    slow = dr.get_mode("achievable", "stm32l4r5-nucleo", "cnn", "tflm-reference")
    fast = dr.get_mode("achievable", "stm32l4r5-nucleo", "cnn", "x-cube-ai")
    assert slow.flop_efficiency < fast.flop_efficiency            # several-fold apart
    m7 = dr.get_mode("achievable", "stm32h7a3-nucleo", "cnn")
    assert m7.flop_efficiency == pytest.approx(
        dr.MCU_CNN.flop_efficiency / sk.SHIPPED.cores[("mcu", "cortex-m7")].scale)
    assert dr.get_mode("achievable", "h100-sxm", stack="llama.cpp-cuda") is (
        dr.DATACENTER_DECODE.slowed(sk.SHIPPED.scale("datacenter", "llama.cpp-cuda", None)))


@given(st.floats(0.05, 20.0))
def test_slowed_scales_every_derated_term_and_never_beats_peak(scale):
    d = dr.DATACENTER_DECODE.slowed(scale)
    assert d.bandwidth_efficiency == pytest.approx(min(1.0, 0.9 / scale))
    assert d.flop_efficiency == pytest.approx(min(1.0, 0.6 / scale))
    assert d.layer_overhead_s == pytest.approx(dr.DATACENTER_DECODE.layer_overhead_s * scale)
    assert 0 < d.bandwidth_efficiency <= 1 and 0 < d.flop_efficiency <= 1
    mcu = dr.MCU_CNN.slowed(scale)                      # compute-bound: time x scale exactly
    if dr.MCU_CNN.flop_efficiency / scale <= 1 and dr.MCU_CNN.bandwidth_efficiency / scale <= 1:
        t0 = cnn_inference_time("stm32l4r5-nucleo", "ds-cnn-kws", 8, 1, dr.MCU_CNN).latency_s
        t1 = cnn_inference_time("stm32l4r5-nucleo", "ds-cnn-kws", 8, 1, mcu).latency_s
        assert math.isclose(t1, t0 * scale, rel_tol=1e-9)
    with pytest.raises(ValueError, match="scale"):
        dr.MCU_CNN.slowed(0.0)


def test_a_bad_terms_file_names_the_term_and_field():
    with pytest.raises(ValueError, match=r"term 'mcu/x'.*'scale'"):
        load_terms('[[term]]\ndevice_class = "mcu"\naxis = "kernels"\nkey = "x"\n'
                   'cases = 2\nfamilies = 2\n')
    with pytest.raises(ValueError, match="axis"):
        load_terms('[[term]]\ndevice_class = "mcu"\naxis = "colour"\nkey = "x"\n'
                   'scale = 1.0\ncases = 2\nfamilies = 2\n')
    assert load_terms() == TERMS
