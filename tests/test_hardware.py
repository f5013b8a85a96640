"""Hardware registry: ids, units, dense FLOP/s and a source for every figure."""

from __future__ import annotations

import dataclasses
import math

import pytest

from labkit.core.lookup import UnknownIdError
from labkit.core.units import GB, GiB, KiB, MiB
from labkit.registries.hardware import HARDWARE, Hardware, get_hardware

REQUIRED = {"h100-sxm", "h200", "a100-80gb", "a100-40gb", "b200", "l4", "tpu-v5e", "a17-pro",
            "drive-orin", "drive-thor", "ahbm-pe", "jetson-agx-orin-gpu", "stm32l4r5-nucleo",
            "nrf5340-dk", "snapdragon-8-gen3", "jetson-orin-nano-super-gpu"}
FIGURES = ("peak_flops", "memory_bandwidth", "memory_bytes", "usable_memory_bytes",
           "interconnect_bandwidth", "domain_size", "scaleout_bandwidth", "power_w",
           "price_usd_per_hour", "interconnect_latency_s", "scaleout_latency_s")


def test_required_ids_and_a_wearable_mcu_are_registered():
    assert set(HARDWARE) >= REQUIRED
    mcus = [h for h in HARDWARE.values() if h.kind == "mcu"]
    assert mcus and all(h.sram_bytes and h.flash_bytes for h in mcus)


@pytest.mark.parametrize("hw", HARDWARE.values(), ids=lambda h: h.id)
def test_every_figure_carries_its_source(hw: Hardware):
    for name in FIGURES:
        assert hw.sources.get(name, "").strip(), f"{hw.id}.{name} has no source"
    for name in ("sram_bytes", "flash_bytes", "topology"):
        if getattr(hw, name):
            assert hw.sources.get(name, "").strip(), f"{hw.id}.{name} has no source"


@pytest.mark.parametrize("hw", HARDWARE.values(), ids=lambda h: h.id)
def test_figures_are_finite_positive_and_usable_memory_fits(hw: Hardware):
    assert hw.flops() > 0 and math.isfinite(hw.flops())
    assert hw.memory_bandwidth > 0 and hw.memory_bytes > 0
    assert 0 < hw.usable_memory_bytes <= hw.memory_bytes
    assert hw.domain_size >= 1
    assert hw.interconnect_bandwidth >= 0 and hw.scaleout_bandwidth >= 0
    assert hw.power_w is None or hw.power_w > 0
    assert hw.price_usd_per_hour is None or hw.price_usd_per_hour > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.memory_bandwidth = 1.0  # type: ignore[misc]


def test_dense_not_sparse_marketing_figures():
    """NVIDIA's headline 1,979 TFLOPS BF16 for H100 counts 2:4 sparsity; dense is half."""
    assert get_hardware("h100-sxm").flops("bf16") == pytest.approx(989.4e12)
    assert get_hardware("b200").flops("fp8") == pytest.approx(4.5e15)
    assert get_hardware("l4").flops("fp16") == pytest.approx(121e12)



def test_orin_gpu_runs_get_the_gpu_only_peak_not_gpu_plus_dla():
    """254 (DRIVE) / 275 (Jetson) INT8 TOPS count the DLAs; a GPU engine reaches 170/2 dense."""
    for hw_id in ("drive-orin", "jetson-agx-orin-gpu"):
        hw = get_hardware(hw_id)
        assert hw.flops("int8") == pytest.approx(170e12 / 2)
        assert hw.flops("int8") < 254e12 / 2
        assert hw.flops("fp16") == pytest.approx(hw.flops("int8") / 2)
        assert "DLA" in hw.sources["peak_flops"]


def test_mcu_power_is_a_measured_board_figure_not_the_core_datasheet():
    """MLPerf Tiny's reference board drew 40.8 mW running the DS-CNN at 120 MHz."""
    board = get_hardware("stm32l4r5-nucleo")
    assert board.power_w == pytest.approx(0.0408) and "measured" in board.sources["power_w"]
    assert board.flops("int8") == pytest.approx(2 * 120e6 * 2)
    ring = get_hardware("cortex-m4-ring")
    assert ring.power_w == pytest.approx(0.0408 * 64 / 120, rel=0.01)
    assert get_hardware("nrf5340-dk").flops("int8") == pytest.approx(2 * 128e6 * 2)
    assert get_hardware("a100-40gb").memory_bandwidth == pytest.approx(1.555e12)


def test_a_modified_hardware_passes_through_every_public_function():
    """``dataclasses.replace`` makes a what-if device; the physics uses it, not the table's."""
    from labkit.physics.roofline import critical_batch, decode_roofline

    h100 = get_hardware("h100-sxm")
    faster = dataclasses.replace(h100, memory_bandwidth=2 * h100.memory_bandwidth)
    assert get_hardware(faster) is faster and get_hardware(h100) is h100
    assert critical_batch(faster, "llama-3.1-70b") == pytest.approx(
        critical_batch("h100-sxm", "llama-3.1-70b") / 2)
    assert decode_roofline(faster, "llama-3-8b").weight_s == pytest.approx(
        decode_roofline(h100, "llama-3-8b").weight_s / 2)
    with pytest.raises(ValueError, match="hardware must be a registry id string or a Hardware"):
        get_hardware(3.35e12)  # type: ignore[arg-type]


def test_decimal_gb_and_binary_gib_are_kept_apart():
    assert get_hardware("h100-sxm").memory_bytes == 80 * GB == 80e9
    assert get_hardware("tpu-v5e").memory_bytes == 16 * GiB == 17_179_869_184
    ring = next(h for h in HARDWARE.values() if h.kind == "mcu")
    assert ring.sram_bytes == 256 * KiB and ring.flash_bytes == 1 * MiB
    assert "GiB" in get_hardware("tpu-v5e").memory_declared
    assert "GB" in get_hardware("h100-sxm").memory_declared


def test_paper_processing_element():
    pe = get_hardware("ahbm-pe")
    assert pe.flops() == 8e12 and pe.memory_bandwidth == 256e9
    assert pe.usable_memory_bytes == 6e9
    assert pe.topology["pes_per_cube"] == 8 and pe.topology["cubes_per_sip"] == 16


def test_unknown_id_lists_close_matches():
    with pytest.raises(UnknownIdError, match=r"hardware.*'h100-sxm'"):
        get_hardware("h100")
    with pytest.raises(ValueError, match="hardware"):
        get_hardware("quantum-tpu")


def test_unknown_precision_names_it():
    with pytest.raises(ValueError, match="precision 'fp4'"):
        get_hardware("h100-sxm").flops("fp4")
