"""Hardware registry: accelerators from datacenter GPUs down to a ring's microcontroller.

Every figure is stored in base units (FLOP/s, bytes, bytes/s, W, USD/h) and carries its
source in ``sources``. Peak FLOP/s are **dense** figures: NVIDIA datasheets headline 2:4
structured-sparsity numbers, which are exactly twice the dense rate and never reached by
LLM decode; where only a sparse figure is published we halve it and say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from labkit.core.lookup import lookup
from labkit.core.units import GB, TFLOPS, GiB, KiB, MiB
from labkit.registries.apple_silicon import APPLE_CHIPS, AppleChip
from labkit.registries.mcu_boards import CORES, MCU_BOARDS, McuBoard
from labkit.registries.snapdragon_npu import HEXAGON_NPUS, HexagonNpu


@dataclass(frozen=True)
class Hardware:
    """One device (GPU, TPU chip, SoC, MCU or processing element).

    Attributes:
        peak_flops: dense peak per precision, FLOP/s (integer precisions: OP/s).
        memory_bandwidth: main-memory bandwidth, bytes/s.
        memory_bytes: installed main memory, bytes (``memory_declared`` keeps the vendor's
            own figure and unit, e.g. "80 GB" decimal or "16 GiB" binary).
        usable_memory_bytes: what a model may use for weights + KV/state, bytes.
        interconnect_bandwidth: per-device, per-direction bandwidth inside the fast
            domain (NVLink, ICI, NoC), bytes/s; ``domain_size`` devices share it.
        scaleout_bandwidth: per-device bandwidth to devices outside the domain, bytes/s.
        interconnect_latency_s / scaleout_latency_s: fixed cost of one message (one ring
            step of a collective) on that link, s.
        power_w: board/SoC power at load, W.  price_usd_per_hour: USD per device-hour.
        core: a microcontroller's CPU core (:data:`labkit.registries.mcu_boards.CORES`).
    """

    id: str
    name: str
    kind: str
    default_precision: str
    peak_flops: Mapping[str, float]
    memory_bandwidth: float
    memory_bytes: float
    memory_declared: str
    usable_memory_bytes: float
    interconnect_bandwidth: float
    domain_size: int
    scaleout_bandwidth: float
    power_w: float | None
    price_usd_per_hour: float | None
    sources: Mapping[str, str]
    interconnect_latency_s: float = 0.0
    scaleout_latency_s: float = 0.0
    sram_bytes: float | None = None
    flash_bytes: float | None = None
    topology: Mapping[str, int] = field(default_factory=dict)
    notes: str = ""
    core: str | None = None

    def flops(self, precision: str | None = None) -> float:
        """Dense peak FLOP/s at ``precision`` (default: the device's default precision)."""
        p = precision or self.default_precision
        if p not in self.peak_flops:
            known = ", ".join(sorted(self.peak_flops))
            raise ValueError(f"precision {p!r} is not supported on {self.id}; known: {known}")
        return self.peak_flops[p]

    @property
    def arithmetic_intensity(self) -> float:
        """Machine balance C/W at the default precision, FLOP per byte."""
        return self.flops() / self.memory_bandwidth


def _hw(**kw: Any) -> Hardware:
    kw["peak_flops"] = MappingProxyType(dict(kw["peak_flops"]))
    kw["sources"] = MappingProxyType(dict(kw["sources"]))
    kw["topology"] = MappingProxyType(dict(kw.get("topology", {})))
    return Hardware(**kw)


_NV_PRICE = "representative on-demand cloud list price per GPU-hour, 2025 (varies by provider)"
_ORIN_GPU_FLOPS = ("GPU only (no DLA): NVIDIA Jetson AGX Orin 64GB datasheet, GPU 170 sparse INT8 "
                   "TOPS = 85 dense; FP16 tensor = half of INT8 = 42.5 TFLOPS; FP32 CUDA cores "
                   "5.3 TFLOPS. The 275 (Jetson) / 254 (DRIVE) TOPS headlines add the two DLAs, "
                   "which MLPerf's Orin submission uses only in the Offline scenario")
_MCU_POWER = ("measured: MLPerf Tiny v0.5 reference, NUCLEO-L4R5ZI (Cortex-M4 at 120 MHz, 1.8 V) "
              "running the KWS DS-CNN: 40,835 uW in the energy window "
              "(tiny_results_v0.5 closed/reference/results/Nucleo-L4R5ZI/kws/energy/results.txt)")
_MLPERF_TINY = "MLPerf Tiny system description"


_OWNED_SOURCES = {
    "interconnect_bandwidth": "single device", "domain_size": "single device",
    "interconnect_latency_s": "single device: no peers",
    "scaleout_latency_s": "single device", "scaleout_bandwidth": "single device",
    "power_w": "not set: the latency cases report no power",
    "price_usd_per_hour": "owned; not rented",
}
"""The sources of an owned single device's fields that no measured case sets."""


def _owned(*, memory_gb: int, usable_share: float, memory_declared: str,
           sources: dict[str, str], **fields: Any) -> Hardware:
    """One owned device of the published latency cases: no peers, no rent, no power."""
    gb = memory_gb * GB
    return _hw(memory_bytes=gb, memory_declared=memory_declared,
               usable_memory_bytes=usable_share * gb, interconnect_bandwidth=0.0,
               domain_size=1, scaleout_bandwidth=0.0, power_w=None, price_usd_per_hour=None,
               sources={**sources, **_OWNED_SOURCES}, **fields)


def _apple(c: AppleChip) -> Hardware:
    """An Apple silicon Mac: its GPU (FP16 at the FP32 rate) on unified memory."""
    return _owned(
        id=c.id, name=c.name, kind="laptop-soc", default_precision="fp16",
        peak_flops={"fp16": c.gpu_fp32_flops, "fp32": c.gpu_fp32_flops},
        memory_bandwidth=c.bandwidth, memory_gb=c.memory_gb, usable_share=0.75,
        memory_declared=f"{c.memory_gb} GB unified memory",
        sources={
            "peak_flops": c.flops_source + "; FP16 taken at the FP32 rate (estimate: no "
                                           "published packed-FP16 rate)",
            "memory_bandwidth": c.bandwidth_source, "memory_bytes": c.memory_source,
            "usable_memory_bytes": "macOS lets the GPU wire about three quarters of unified "
                                   "memory by default (estimate)",
        },
        notes="An Apple silicon Mac of the published decode cases.",
    )


def _npu(c: HexagonNpu) -> Hardware:
    """A Hexagon NPU on its SoC's shared LPDDR5X (INT8; FP16 at half the INT8 rate)."""
    return _owned(
        id=c.id, name=c.name, kind=c.kind, default_precision="int8",
        peak_flops={"int8": c.int8_ops, "fp16": c.int8_ops / 2},
        memory_bandwidth=c.bandwidth, memory_gb=c.memory_gb, usable_share=0.5,
        memory_declared=f"{c.memory_gb} GB LPDDR5X (shared)",
        sources={
            "peak_flops": c.ops_source + "; FP16 at half the INT8 rate (estimate)",
            "memory_bandwidth": c.bandwidth_source, "memory_bytes": c.memory_source,
            "usable_memory_bytes": "estimate: about half of RAM for one app's model",
        },
        notes="A Qualcomm Hexagon NPU of the published decode cases (QNN / Genie runtime).",
    )


def _mcu(b: McuBoard) -> Hardware:
    """A benchmark board as hardware: peak from its core x clock, a 32-bit SRAM bus."""
    c = CORES[b.core]
    mhz = f"{b.clock_hz / 1e6:g} MHz"
    fp32 = {"fp32": 2 * c.fp32_fmas_per_cycle * b.clock_hz} if c.fp32_fmas_per_cycle else {}
    return _hw(
        id=b.id, name=b.name, kind="mcu", default_precision="int8", core=b.core,
        peak_flops={"int8": 2 * c.int8_macs_per_cycle * b.clock_hz, **fp32},
        memory_bandwidth=4 * b.clock_hz, memory_bytes=b.sram_kib * KiB,
        memory_declared=f"{b.sram_kib} KiB SRAM", usable_memory_bytes=b.sram_kib * KiB,
        interconnect_bandwidth=0.0, domain_size=1, scaleout_bandwidth=0.0, power_w=None,
        price_usd_per_hour=None, sram_bytes=b.sram_kib * KiB, flash_bytes=b.flash_kib * KiB,
        sources={
            "board": b.source,
            "peak_flops": f"{mhz} x {c.label}: {c.int8_macs_per_cycle:g} INT8 MAC/cycle "
                          f"(2 OP each){'' if fp32 else '; no FPU'} ({c.source})",
            "memory_bandwidth": f"32-bit SRAM bus at {mhz} (derived)",
            "memory_bytes": f"{_MLPERF_TINY}: {b.source}",
            "usable_memory_bytes": "bare-metal benchmark: the whole SRAM",
            "sram_bytes": f"{_MLPERF_TINY}: {b.source}",
            "flash_bytes": f"{_MLPERF_TINY}: {b.source}",
            "interconnect_bandwidth": "single device", "domain_size": "single device",
            "interconnect_latency_s": "single device: no peers",
            "scaleout_latency_s": "single device: no network in the benchmark",
            "scaleout_bandwidth": "no network in the benchmark",
            "power_w": "not set: the latency run reports no power",
            "price_usd_per_hour": "owned; not rented",
        },
        notes="An MLPerf Tiny benchmark board.",
    )

HARDWARE: Mapping[str, Hardware] = MappingProxyType({h.id: h for h in (
    _hw(
        id="h100-sxm", name="NVIDIA H100 SXM5 80GB", kind="datacenter-gpu",
        default_precision="bf16",
        peak_flops={"fp32": 66.9 * TFLOPS, "bf16": 989.4 * TFLOPS, "fp16": 989.4 * TFLOPS,
                    "fp8": 1978.9 * TFLOPS, "int8": 1978.9 * TFLOPS},
        memory_bandwidth=3.35e12, memory_bytes=80 * GB, memory_declared="80 GB HBM3",
        usable_memory_bytes=80 * GB, interconnect_bandwidth=450 * GB, domain_size=8,
        scaleout_bandwidth=50 * GB, power_w=700.0, price_usd_per_hour=2.99,
        interconnect_latency_s=1e-6, scaleout_latency_s=5e-6,
        sources={
            "interconnect_latency_s": "estimate: one small message, NVLink/NVSwitch",
            "scaleout_latency_s": "estimate: one small message, InfiniBand NDR",
            "peak_flops": "NVIDIA H100 datasheet: BF16 1,979 TFLOPS and FP8 3,958 TFLOPS are "
                          "with sparsity; dense = half",
            "memory_bandwidth": "NVIDIA H100 datasheet (SXM): 3.35 TB/s",
            "memory_bytes": "NVIDIA H100 datasheet (SXM): 80 GB",
            "usable_memory_bytes": "whole HBM; runtime reserve is left to the caller",
            "interconnect_bandwidth": "NVLink 4: 900 GB/s bidirectional = 450 GB/s per direction",
            "domain_size": "HGX H100: 8 GPUs per NVLink/NVSwitch domain",
            "scaleout_bandwidth": "one ConnectX-7 400 Gb/s NIC per GPU = 50 GB/s",
            "power_w": "NVIDIA H100 datasheet (SXM): up to 700 W",
            "price_usd_per_hour": _NV_PRICE,
        },
    ),
    _hw(
        id="h200", name="NVIDIA H200 SXM 141GB", kind="datacenter-gpu", default_precision="bf16",
        peak_flops={"fp32": 66.9 * TFLOPS, "bf16": 989.4 * TFLOPS, "fp16": 989.4 * TFLOPS,
                    "fp8": 1978.9 * TFLOPS, "int8": 1978.9 * TFLOPS},
        memory_bandwidth=4.8e12, memory_bytes=141 * GB, memory_declared="141 GB HBM3e",
        usable_memory_bytes=141 * GB, interconnect_bandwidth=450 * GB, domain_size=8,
        scaleout_bandwidth=50 * GB, power_w=700.0, price_usd_per_hour=3.79,
        interconnect_latency_s=1e-6, scaleout_latency_s=5e-6,
        sources={
            "interconnect_latency_s": "estimate: one small message, NVLink/NVSwitch",
            "scaleout_latency_s": "estimate: one small message, InfiniBand NDR",
            "peak_flops": "NVIDIA H200 datasheet: same Hopper tensor cores as H100 SXM; "
                          "sparse figures halved",
            "memory_bandwidth": "NVIDIA H200 datasheet: 4.8 TB/s",
            "memory_bytes": "NVIDIA H200 datasheet: 141 GB",
            "usable_memory_bytes": "whole HBM",
            "interconnect_bandwidth": "NVLink 4: 900 GB/s bidirectional = 450 GB/s per direction",
            "domain_size": "HGX H200: 8 GPUs per NVLink domain",
            "scaleout_bandwidth": "one 400 Gb/s NIC per GPU = 50 GB/s",
            "power_w": "NVIDIA H200 datasheet (SXM): up to 700 W",
            "price_usd_per_hour": _NV_PRICE,
        },
    ),
    _hw(
        id="a100-80gb", name="NVIDIA A100 SXM4 80GB", kind="datacenter-gpu",
        default_precision="bf16",
        peak_flops={"fp32": 19.5 * TFLOPS, "tf32": 156 * TFLOPS, "bf16": 312 * TFLOPS,
                    "fp16": 312 * TFLOPS, "int8": 624 * TFLOPS},
        memory_bandwidth=2.039e12, memory_bytes=80 * GB, memory_declared="80 GB HBM2e",
        usable_memory_bytes=80 * GB, interconnect_bandwidth=300 * GB, domain_size=8,
        scaleout_bandwidth=25 * GB, power_w=400.0, price_usd_per_hour=1.79,
        interconnect_latency_s=1.5e-6, scaleout_latency_s=6e-6,
        sources={
            "interconnect_latency_s": "estimate: one small message, NVLink 3/NVSwitch",
            "scaleout_latency_s": "estimate: one small message, InfiniBand HDR",
            "peak_flops": "NVIDIA A100 datasheet: dense BF16 312 TFLOPS, INT8 624 TOPS "
                          "(sparse figures are 2x)",
            "memory_bandwidth": "NVIDIA A100 80GB SXM datasheet: 2,039 GB/s",
            "memory_bytes": "NVIDIA A100 datasheet: 80 GB",
            "usable_memory_bytes": "whole HBM",
            "interconnect_bandwidth": "NVLink 3: 600 GB/s bidirectional = 300 GB/s per direction",
            "domain_size": "HGX A100: 8 GPUs per NVSwitch domain",
            "scaleout_bandwidth": "one 200 Gb/s HDR NIC per GPU = 25 GB/s",
            "power_w": "NVIDIA A100 datasheet (SXM): 400 W",
            "price_usd_per_hour": _NV_PRICE,
        },
    ),
    _hw(
        id="b200", name="NVIDIA B200 (HGX)", kind="datacenter-gpu", default_precision="bf16",
        peak_flops={"bf16": 2250 * TFLOPS, "fp16": 2250 * TFLOPS, "fp8": 4500 * TFLOPS,
                    "int8": 4500 * TFLOPS, "fp4": 9000 * TFLOPS},
        memory_bandwidth=8e12, memory_bytes=180 * GB, memory_declared="180 GB HBM3e",
        usable_memory_bytes=180 * GB, interconnect_bandwidth=900 * GB, domain_size=8,
        scaleout_bandwidth=50 * GB, power_w=1000.0, price_usd_per_hour=5.99,
        interconnect_latency_s=1e-6, scaleout_latency_s=5e-6,
        sources={
            "interconnect_latency_s": "estimate: one small message, NVLink 5/NVSwitch",
            "scaleout_latency_s": "estimate: one small message, InfiniBand NDR",
            "peak_flops": "NVIDIA HGX B200 datasheet per GPU: FP8 9 PFLOPS and FP4 18 PFLOPS "
                          "with sparsity; dense = half",
            "memory_bandwidth": "NVIDIA HGX B200: 64 TB/s for 8 GPUs = 8 TB/s per GPU",
            "memory_bytes": "NVIDIA HGX B200: 1.44 TB for 8 GPUs = 180 GB per GPU",
            "usable_memory_bytes": "whole HBM",
            "interconnect_bandwidth": "NVLink 5: 1.8 TB/s bidirectional = 900 GB/s per direction",
            "domain_size": "HGX B200: 8 GPUs per NVLink domain",
            "scaleout_bandwidth": "one 400 Gb/s NIC per GPU = 50 GB/s",
            "power_w": "NVIDIA HGX B200: about 1,000 W per GPU",
            "price_usd_per_hour": _NV_PRICE,
        },
    ),
    _hw(
        id="l4", name="NVIDIA L4 24GB", kind="datacenter-gpu", default_precision="fp16",
        peak_flops={"fp32": 30.3 * TFLOPS, "bf16": 121 * TFLOPS, "fp16": 121 * TFLOPS,
                    "fp8": 242.5 * TFLOPS, "int8": 242.5 * TFLOPS},
        memory_bandwidth=300 * GB, memory_bytes=24 * GB, memory_declared="24 GB GDDR6",
        usable_memory_bytes=24 * GB, interconnect_bandwidth=32 * GB, domain_size=1,
        scaleout_bandwidth=32 * GB, power_w=72.0, price_usd_per_hour=0.71,
        interconnect_latency_s=5e-6, scaleout_latency_s=10e-6,
        sources={
            "interconnect_latency_s": "estimate: one small message, PCIe peer-to-peer",
            "scaleout_latency_s": "estimate: one small message, PCIe + Ethernet",
            "peak_flops": "NVIDIA L4 datasheet: FP16 242 and FP8 485 TFLOPS with sparsity; "
                          "dense = half",
            "memory_bandwidth": "NVIDIA L4 datasheet: 300 GB/s",
            "memory_bytes": "NVIDIA L4 datasheet: 24 GB",
            "usable_memory_bytes": "whole GDDR6",
            "interconnect_bandwidth": "no NVLink: PCIe Gen4 x16, about 32 GB/s per direction",
            "domain_size": "no NVLink: every peer is across PCIe",
            "scaleout_bandwidth": "PCIe Gen4 x16, about 32 GB/s per direction",
            "power_w": "NVIDIA L4 datasheet: 72 W",
            "price_usd_per_hour": "representative on-demand cloud price for one L4 "
                                  "(g2-standard-4 class), 2025",
        },
    ),
    _hw(
        id="tpu-v5e", name="Google Cloud TPU v5e", kind="tpu", default_precision="bf16",
        peak_flops={"bf16": 197 * TFLOPS, "int8": 394 * TFLOPS},
        memory_bandwidth=819 * GB, memory_bytes=16 * GiB, memory_declared="16 GiB HBM2",
        usable_memory_bytes=16 * GiB, interconnect_bandwidth=200 * GB, domain_size=256,
        scaleout_bandwidth=25 * GB, power_w=None, price_usd_per_hour=1.20,
        interconnect_latency_s=2e-6, scaleout_latency_s=10e-6,
        sources={
            "interconnect_latency_s": "estimate: one small message, ICI hop",
            "scaleout_latency_s": "estimate: one small message, data-center network",
            "peak_flops": "Google Cloud TPU v5e docs: 197 TFLOPS BF16, 394 TOPS INT8 per chip",
            "memory_bandwidth": "Google Cloud TPU v5e docs: 819 GB/s",
            "memory_bytes": "Google Cloud TPU v5e docs: 16 GiB HBM2 per chip (binary GiB)",
            "usable_memory_bytes": "whole HBM",
            "interconnect_bandwidth": "Google Cloud TPU v5e docs: ICI 1,600 Gbps = 200 GB/s",
            "domain_size": "Google Cloud TPU v5e docs: 256 chips per pod (ICI domain)",
            "scaleout_bandwidth": "data-center network between pods, about 200 Gb/s per host "
                                  "(estimate)",
            "power_w": "not published by Google",
            "price_usd_per_hour": "Google Cloud list price: USD 1.20 per chip-hour (on demand)",
        },
    ),
    _hw(
        id="a17-pro", name="Apple A17 Pro (iPhone 15 Pro)", kind="phone-soc",
        default_precision="fp16",
        peak_flops={"fp16": 17.5 * TFLOPS, "int8": 35 * TFLOPS, "fp32": 2.15 * TFLOPS},
        memory_bandwidth=51.2 * GB, memory_bytes=8 * GB, memory_declared="8 GB LPDDR5",
        usable_memory_bytes=4 * GB, interconnect_bandwidth=0.0, domain_size=1,
        scaleout_bandwidth=0.0, power_w=6.0, price_usd_per_hour=None,
        sources={
            "interconnect_latency_s": "single device: no peers",
            "scaleout_latency_s": "single device: hand-off latency is the network call",
            "peak_flops": "Apple: Neural Engine up to 35 trillion ops/s (INT8); FP16 taken as "
                          "half of that (estimate); 6-core GPU about 2.15 TFLOPS FP32 (estimate)",
            "memory_bandwidth": "LPDDR5-6400 on a 64-bit bus = 51.2 GB/s (derived)",
            "memory_bytes": "iPhone 15 Pro: 8 GB RAM (teardowns)",
            "usable_memory_bytes": "estimate: about half of RAM is safely available to one app's "
                                   "model beside iOS and other apps",
            "interconnect_bandwidth": "single device: no peers",
            "domain_size": "single device",
            "scaleout_bandwidth": "single device: hand-off to the cloud is a network call",
            "power_w": "estimate: sustained SoC power under an ML load before thermal throttling",
            "price_usd_per_hour": "not rented: the user owns the device",
        },
    ),
    _hw(
        id="drive-orin", name="NVIDIA DRIVE AGX Orin SoC", kind="auto-soc",
        default_precision="int8",
        peak_flops={"int8": 85 * TFLOPS, "fp16": 42.5 * TFLOPS, "fp32": 5.3 * TFLOPS},
        memory_bandwidth=204.8 * GB, memory_bytes=32 * GB, memory_declared="32 GB LPDDR5",
        usable_memory_bytes=24 * GB, interconnect_bandwidth=10 * GB, domain_size=2,
        scaleout_bandwidth=1.25 * GB, power_w=60.0, price_usd_per_hour=None,
        interconnect_latency_s=5e-6, scaleout_latency_s=50e-6,
        sources={
            "interconnect_latency_s": "estimate: one small message, PCIe between SoCs",
            "scaleout_latency_s": "estimate: one small message, automotive Ethernet",
            "peak_flops": _ORIN_GPU_FLOPS,
            "memory_bandwidth": "NVIDIA: 256-bit LPDDR5, 204.8 GB/s",
            "memory_bytes": "NVIDIA DRIVE AGX Orin: 32 GB LPDDR5",
            "usable_memory_bytes": "estimate: 8 GB kept for OS, sensors and planning stack",
            "interconnect_bandwidth": "estimate: PCIe Gen4 x8 between two SoCs on one board",
            "domain_size": "DRIVE AGX Pegasus-class boards pair two SoCs",
            "scaleout_bandwidth": "10 Gb Ethernet to other ECUs",
            "power_w": "NVIDIA Jetson AGX Orin 64GB module: 15-60 W (upper bound used)",
            "price_usd_per_hour": "owned in the vehicle; not rented",
        },
        notes="GPU-only peak: a TensorRT engine built for the GPU cannot use the two DLAs. "
              "NVIDIA's 254 INT8 TOPS headline (sparse; 127 dense) counts GPU + both DLAs. "
              "The GPU figure is the Jetson AGX Orin's (same Orin SoC; DRIVE clocks may "
              "differ).",
    ),
    _hw(
        id="drive-thor", name="NVIDIA DRIVE AGX Thor SoC", kind="auto-soc",
        default_precision="fp8",
        peak_flops={"fp4": 1000 * TFLOPS, "fp8": 500 * TFLOPS, "int8": 500 * TFLOPS,
                    "fp16": 250 * TFLOPS},
        memory_bandwidth=273 * GB, memory_bytes=128 * GB, memory_declared="128 GB LPDDR5X",
        usable_memory_bytes=112 * GB, interconnect_bandwidth=16 * GB, domain_size=2,
        scaleout_bandwidth=3.125 * GB, power_w=130.0, price_usd_per_hour=None,
        interconnect_latency_s=5e-6, scaleout_latency_s=50e-6,
        sources={
            "interconnect_latency_s": "estimate: one small message, PCIe between SoCs",
            "scaleout_latency_s": "estimate: one small message, automotive Ethernet",
            "peak_flops": "NVIDIA: 2,000 FP4 TFLOPS / 1,000 INT8 TOPS with sparsity; dense = "
                          "half; FP16 = half of FP8 (derived)",
            "memory_bandwidth": "NVIDIA Jetson AGX Thor: 256-bit LPDDR5X, 273 GB/s",
            "memory_bytes": "NVIDIA Jetson AGX Thor: 128 GB",
            "usable_memory_bytes": "estimate: 16 GB kept for OS, sensors and planning stack",
            "interconnect_bandwidth": "estimate: PCIe Gen5 x4 between two SoCs",
            "domain_size": "dual-SoC boards",
            "scaleout_bandwidth": "25 Gb Ethernet (Jetson AGX Thor)",
            "power_w": "NVIDIA Jetson AGX Thor: 40-130 W (upper bound used)",
            "price_usd_per_hour": "owned in the vehicle; not rented",
        },
    ),
    _hw(
        id="cortex-m4-ring", name="Wearable MCU (Cortex-M4F, nRF52840 class)", kind="mcu",
        default_precision="int8", core="cortex-m4",
        peak_flops={"int8": 256e6, "fp32": 128e6},
        memory_bandwidth=256 * 1e6, memory_bytes=256 * KiB, memory_declared="256 KiB SRAM",
        usable_memory_bytes=192 * KiB, interconnect_bandwidth=0.0, domain_size=1,
        scaleout_bandwidth=125e3, power_w=0.0218, price_usd_per_hour=None,
        sram_bytes=256 * KiB, flash_bytes=1 * MiB,
        sources={
            "interconnect_latency_s": "single device: no peers",
            "scaleout_latency_s": "single device: hand-off latency is the network call",
            "peak_flops": "64 MHz Cortex-M4F: INT8 2 MAC/cycle with SMLAD (CMSIS-NN) = 256 MOP/s; "
                          "FP32 1 FMA/cycle = 128 MFLOP/s (derived)",
            "memory_bandwidth": "32-bit SRAM bus at 64 MHz = 256 MB/s (derived)",
            "memory_bytes": "Nordic nRF52840 product spec: 256 KB (KiB) RAM",
            "usable_memory_bytes": "estimate: 64 KiB kept for BLE stack, sensor buffers and RTOS",
            "sram_bytes": "Nordic nRF52840 product spec: 256 KB RAM",
            "flash_bytes": "Nordic nRF52840 product spec: 1 MB flash",
            "interconnect_bandwidth": "single device",
            "domain_size": "single device",
            "scaleout_bandwidth": "BLE 1 Mbit/s PHY = 125 kB/s raw to the phone",
            "power_w": _MCU_POWER + "; scaled by clock to 64 MHz: 40.8 mW x 64/120 = "
                       "21.8 mW (derived: dynamic power ~ f). Nordic's datasheet 52 uA/MHz "
                       "(about 10 mW) is the core alone, not a measured board running a CNN",
            "price_usd_per_hour": "owned by the wearer; not rented",
        },
        notes="Weights live in flash, activations in SRAM: a model fits only if both fit.",
    ),
    _hw(
        id="a100-40gb", name="NVIDIA A100 SXM4 40GB", kind="datacenter-gpu",
        default_precision="bf16",
        peak_flops={"fp32": 19.5 * TFLOPS, "tf32": 156 * TFLOPS, "bf16": 312 * TFLOPS,
                    "fp16": 312 * TFLOPS, "int8": 624 * TFLOPS},
        memory_bandwidth=1.555e12, memory_bytes=40 * GB, memory_declared="40 GB HBM2",
        usable_memory_bytes=40 * GB, interconnect_bandwidth=300 * GB, domain_size=8,
        scaleout_bandwidth=25 * GB, power_w=400.0, price_usd_per_hour=None,
        interconnect_latency_s=1.5e-6, scaleout_latency_s=6e-6,
        sources={
            "interconnect_latency_s": "estimate: one small message, NVLink 3/NVSwitch",
            "scaleout_latency_s": "estimate: one small message, InfiniBand HDR",
            "peak_flops": "NVIDIA A100 datasheet: dense BF16 312 TFLOPS, INT8 624 TOPS "
                          "(sparse figures are 2x); same tensor cores as the 80GB part",
            "memory_bandwidth": "NVIDIA A100 40GB SXM datasheet: 1,555 GB/s",
            "memory_bytes": "NVIDIA A100 datasheet: 40 GB HBM2",
            "usable_memory_bytes": "whole HBM",
            "interconnect_bandwidth": "NVLink 3: 600 GB/s bidirectional = 300 GB/s per direction",
            "domain_size": "HGX A100: 8 GPUs per NVSwitch domain",
            "scaleout_bandwidth": "one 200 Gb/s HDR NIC per GPU = 25 GB/s",
            "power_w": "NVIDIA A100 datasheet (SXM): 400 W",
            "price_usd_per_hour": "not set: the 40GB part is rarely listed on demand any more",
        },
    ),
    _hw(
        id="snapdragon-8-gen3", name="Qualcomm Snapdragon 8 Gen 3 (OnePlus 12), CPU",
        kind="phone-soc", default_precision="int8",
        peak_flops={"int8": 2.8 * TFLOPS, "fp16": 1.4 * TFLOPS, "fp32": 0.7 * TFLOPS},
        memory_bandwidth=76.8 * GB, memory_bytes=16 * GB, memory_declared="16 GB LPDDR5X",
        usable_memory_bytes=8 * GB, interconnect_bandwidth=0.0, domain_size=1,
        scaleout_bandwidth=0.0, power_w=None, price_usd_per_hour=None,
        sources={
            "interconnect_latency_s": "single device: no peers",
            "scaleout_latency_s": "single device: hand-off latency is the network call",
            "peak_flops": "estimate (derived) for the Arm CPU cluster the ExecuTorch/XNNPACK "
                          "runs use: 1 Cortex-X4 at 3.3 GHz (4 x 128-bit SMMLA pipes, 128 "
                          "INT8 MAC/cycle) + 5 Cortex-A720 at about 3.1 GHz (64 MAC/cycle) = "
                          "about 1.4 T MAC/s = 2.8 TOPS INT8; FP16 and FP32 halve per step",
            "memory_bandwidth": "Qualcomm Snapdragon 8 Gen 3 spec: LPDDR5X up to 4800 MHz "
                                "(9,600 MT/s) on a 64-bit bus = 76.8 GB/s (derived)",
            "memory_bytes": "OnePlus 12 (the ExecuTorch test phone): 16 GB RAM (ExecuTorch "
                            "Llama README: 'OnePlus 12 (featuring 16GB RAM)')",
            "usable_memory_bytes": "estimate: about half of RAM for one app's model",
            "interconnect_bandwidth": "single device: no peers",
            "domain_size": "single device",
            "scaleout_bandwidth": "single device: hand-off to the cloud is a network call",
            "power_w": "not set: no measured power in the sources used",
            "price_usd_per_hour": "not rented: the user owns the device",
        },
        notes="CPU figures: the measured ExecuTorch runs use XNNPACK/KleidiAI on the Arm "
              "cores, not the Hexagon NPU or the Adreno GPU.",
    ),
    _hw(
        id="jetson-agx-orin-gpu", name="NVIDIA Jetson AGX Orin 64GB (GPU only)", kind="auto-soc",
        default_precision="int8",
        peak_flops={"int8": 85 * TFLOPS, "fp16": 42.5 * TFLOPS, "fp32": 5.3 * TFLOPS},
        memory_bandwidth=204.8 * GB, memory_bytes=64 * GB, memory_declared="64 GB LPDDR5",
        usable_memory_bytes=56 * GB, interconnect_bandwidth=0.0, domain_size=1,
        scaleout_bandwidth=1.25 * GB, power_w=60.0, price_usd_per_hour=None,
        scaleout_latency_s=50e-6,
        sources={
            "interconnect_latency_s": "single module: no peers",
            "scaleout_latency_s": "estimate: one small message over Ethernet",
            "peak_flops": _ORIN_GPU_FLOPS,
            "memory_bandwidth": "NVIDIA Jetson AGX Orin 64GB datasheet: 256-bit LPDDR5, "
                                "204.8 GB/s",
            "memory_bytes": "NVIDIA Jetson AGX Orin 64GB datasheet: 64 GB LPDDR5 (MLPerf "
                            "system description: '64GB 256-bit LPDDR5')",
            "usable_memory_bytes": "estimate: 8 GB kept for the OS and the camera pipeline",
            "interconnect_bandwidth": "single module: no peers",
            "domain_size": "single module",
            "scaleout_bandwidth": "10 GbE on the developer kit = 1.25 GB/s",
            "power_w": "NVIDIA Jetson AGX Orin 64GB module: 15-60 W (upper bound used)",
            "price_usd_per_hour": "owned; not rented",
        },
        notes="The DLAs are left out on purpose: a GPU TensorRT engine cannot use them.",
    ),
    _hw(
        id="jetson-orin-nano-super-gpu", name="NVIDIA Jetson Orin Nano 8GB Super (GPU)",
        kind="auto-soc", default_precision="int8",
        peak_flops={"int8": 33.5 * TFLOPS, "fp16": 16.75 * TFLOPS, "fp32": 2.09 * TFLOPS},
        memory_bandwidth=102 * GB, memory_bytes=8 * GB, memory_declared="8 GB LPDDR5",
        usable_memory_bytes=6 * GB, interconnect_bandwidth=0.0, domain_size=1,
        scaleout_bandwidth=0.125 * GB, power_w=25.0, price_usd_per_hour=None,
        scaleout_latency_s=50e-6,
        sources={
            "interconnect_latency_s": "single module: no peers",
            "scaleout_latency_s": "estimate: one small message over Ethernet",
            "peak_flops": "NVIDIA Jetson Orin Nano Super: 67 sparse INT8 TOPS (GPU only: the "
                          "Nano has no DLA) = 33.5 dense; FP16 = half; FP32 = 1024 CUDA cores "
                          "x 2 x 1.02 GHz = 2.09 TFLOPS (derived)",
            "memory_bandwidth": "NVIDIA Jetson Orin Nano Super: 102 GB/s (MAXN SUPER)",
            "memory_bytes": "NVIDIA Jetson Orin Nano 8GB: 8 GB LPDDR5",
            "usable_memory_bytes": "estimate: 2 GB kept for the OS",
            "interconnect_bandwidth": "single module: no peers",
            "domain_size": "single module",
            "scaleout_bandwidth": "1 GbE on the developer kit = 0.125 GB/s",
            "power_w": "NVIDIA Jetson Orin Nano Super: up to 25 W (MAXN SUPER)",
            "price_usd_per_hour": "owned; not rented",
        },
    ),
    _hw(
        id="h100-pcie", name="NVIDIA H100 PCIe 80GB", kind="datacenter-gpu",
        default_precision="bf16",
        peak_flops={"fp32": 51.0 * TFLOPS, "bf16": 756.5 * TFLOPS, "fp16": 756.5 * TFLOPS,
                    "fp8": 1513.0 * TFLOPS, "int8": 1513.0 * TFLOPS},
        memory_bandwidth=2.0e12, memory_bytes=80 * GB, memory_declared="80 GB HBM2e",
        usable_memory_bytes=80 * GB, interconnect_bandwidth=0.0, domain_size=1,
        scaleout_bandwidth=64 * GB, power_w=350.0, price_usd_per_hour=None,
        scaleout_latency_s=5e-6,
        sources={
            "interconnect_latency_s": "one card: no NVLink peer in the benchmarks",
            "scaleout_latency_s": "estimate: one small message over PCIe",
            "peak_flops": "NVIDIA H100 datasheet (PCIe column, as reproduced at "
                          "archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html): BF16/FP16 "
                          "1,513 and FP8/INT8 3,026 TFLOPS 'shown with sparsity; 1/2 lower "
                          "without' = 756.5 and 1,513 dense; FP32 51 TFLOPS",
            "memory_bandwidth": "NVIDIA H100 PCIe product brief PB-11133-001_v02: 'greater "
                                "than 2,000 gigabytes per second'",
            "memory_bytes": "NVIDIA MLPerf Inference v3.1 system H100-PCIe-80GBx1_TRT.json: "
                            "'80 GB', 'HBM2e'",
            "usable_memory_bytes": "whole HBM; runtime reserve is left to the caller",
            "interconnect_bandwidth": "one card: no NVLink bridge assumed",
            "domain_size": "one card",
            "scaleout_bandwidth": "PCIe Gen5 x16: 128 GB/s bidirectional = 64 GB/s per "
                                  "direction (datasheet)",
            "power_w": "NVIDIA H100 PCIe product brief: TDP up to 350 W",
            "price_usd_per_hour": "not set: the cases rented it without a quoted price",
        },
    ),
    _hw(
        id="jetson-orin-nano-gpu", name="NVIDIA Jetson Orin Nano 8GB (GPU, original)",
        kind="auto-soc", default_precision="int8",
        peak_flops={"int8": 20.0 * TFLOPS, "fp16": 10.24 * TFLOPS, "fp32": 1.28 * TFLOPS},
        memory_bandwidth=68 * GB, memory_bytes=8 * GB, memory_declared="8 GB LPDDR5",
        usable_memory_bytes=6 * GB, interconnect_bandwidth=0.0, domain_size=1,
        scaleout_bandwidth=0.125 * GB, power_w=15.0, price_usd_per_hour=None,
        scaleout_latency_s=50e-6,
        sources={
            "interconnect_latency_s": "single module: no peers",
            "scaleout_latency_s": "estimate: one small message over Ethernet",
            "peak_flops": "NVIDIA Jetson Orin Nano Series Data Sheet (copy at scribd.com/"
                          "document/673174036): '40 (Sparse) INT8 TOPs and 20 (Dense)', 1024 "
                          "CUDA cores, 32 Tensor cores, 625 MHz; FP16 dense = half the INT8 "
                          "rate = 10.24 TFLOPS; FP32 = 1024 x 2 x 0.625 GHz (derived)",
            "memory_bandwidth": "derived: 128-bit LPDDR5 (data sheet) at 4,266 MT/s = 68 GB/s "
                                "(the rate is an assumption; secondary pages quote 68 GB/s, "
                                "the Super's 102 GB/s being its raised clock)",
            "memory_bytes": "data sheet: 'ON 8GB: 8GB 128-bit LPDDR5 DRAM'",
            "usable_memory_bytes": "estimate: 2 GB kept for the OS",
            "interconnect_bandwidth": "single module: no peers",
            "domain_size": "single module",
            "scaleout_bandwidth": "1 GbE on the developer kit = 0.125 GB/s",
            "power_w": "NVIDIA Jetson Orin Nano 8GB: 7-15 W (upper bound used)",
            "price_usd_per_hour": "owned; not rented",
        },
    ),
    _hw(
        id="stm32l4r5-nucleo", name="STM32L4R5 Nucleo (Cortex-M4F, 120 MHz)", kind="mcu",
        default_precision="int8", core="cortex-m4",
        peak_flops={"int8": 480e6, "fp32": 240e6},
        memory_bandwidth=480e6, memory_bytes=640 * KiB, memory_declared="640 KiB SRAM",
        usable_memory_bytes=640 * KiB, interconnect_bandwidth=0.0, domain_size=1,
        scaleout_bandwidth=0.0, power_w=0.0408, price_usd_per_hour=None,
        sram_bytes=640 * KiB, flash_bytes=2 * MiB,
        sources={
            "interconnect_latency_s": "single device: no peers",
            "scaleout_latency_s": "single device: no network in the benchmark",
            "peak_flops": "120 MHz Cortex-M4F (MLPerf Tiny system description: '120 MHz'): "
                          "INT8 2 MAC/cycle with SMLAD = 480 MOP/s; FP32 1 FMA/cycle = "
                          "240 MFLOP/s (derived)",
            "memory_bandwidth": "32-bit SRAM bus at 120 MHz = 480 MB/s (derived)",
            "memory_bytes": f"{_MLPERF_TINY} (reference, NUCLEO-L4R5ZI): 640KB SRAM",
            "usable_memory_bytes": "bare-metal benchmark: the whole SRAM",
            "sram_bytes": f"{_MLPERF_TINY}: 640KB SRAM",
            "flash_bytes": f"{_MLPERF_TINY}: 2MB eFlash",
            "interconnect_bandwidth": "single device",
            "domain_size": "single device",
            "scaleout_bandwidth": "no radio on the board",
            "power_w": _MCU_POWER,
            "price_usd_per_hour": "owned; not rented",
        },
        notes="The MLPerf Tiny reference board (NUCLEO-L4R5ZI).",
    ),
    _hw(
        id="nrf5340-dk", name="Nordic nRF5340 DK (Cortex-M33, 128 MHz)", kind="mcu",
        default_precision="int8", core="cortex-m33",
        peak_flops={"int8": 512e6, "fp32": 256e6},
        memory_bandwidth=512e6, memory_bytes=512 * KiB, memory_declared="512 KiB RAM",
        usable_memory_bytes=448 * KiB, interconnect_bandwidth=0.0, domain_size=1,
        scaleout_bandwidth=125e3, power_w=None, price_usd_per_hour=None,
        sram_bytes=512 * KiB, flash_bytes=1 * MiB,
        sources={
            "interconnect_latency_s": "single device: no peers",
            "scaleout_latency_s": "single device: hand-off latency is the network call",
            "peak_flops": "128 MHz Cortex-M33 with the DSP extension (MLPerf Tiny v1.1 Krai "
                          "system description: '128 MHz'): INT8 2 MAC/cycle with SMLAD = "
                          "512 MOP/s; FP32 1 FMA/cycle = 256 MFLOP/s (derived)",
            "memory_bandwidth": "32-bit SRAM bus at 128 MHz = 512 MB/s (derived)",
            "memory_bytes": f"{_MLPERF_TINY} (Krai, nRF5340 DK): 512KB RAM",
            "usable_memory_bytes": "estimate: 64 KiB kept for the BLE stack and Zephyr",
            "sram_bytes": f"{_MLPERF_TINY} (Krai): 512KB RAM",
            "flash_bytes": f"{_MLPERF_TINY} (Krai): 1MB flash",
            "interconnect_bandwidth": "single device",
            "domain_size": "single device",
            "scaleout_bandwidth": "BLE 1 Mbit/s PHY = 125 kB/s raw",
            "power_w": "not set: the MLPerf Tiny nRF5340 result reports latency only",
            "price_usd_per_hour": "owned; not rented",
        },
    ),
    _hw(
        id="ahbm-pe", name="AHBM processing element (paper)", kind="pe",
        default_precision="bf16",
        peak_flops={"bf16": 8 * TFLOPS},
        memory_bandwidth=256 * GB, memory_bytes=6 * GB, memory_declared="6 GB HBM per PE",
        usable_memory_bytes=6 * GB, interconnect_bandwidth=256 * GB, domain_size=8,
        scaleout_bandwidth=64 * GB, power_w=None, price_usd_per_hour=None,
        topology={"pes_per_cube": 8, "cubes_per_sip": 16},
        interconnect_latency_s=0.5e-6, scaleout_latency_s=2e-6,
        sources={
            "interconnect_latency_s": "estimate: one small message, intra-cube NoC (assumption)",
            "scaleout_latency_s": "estimate: one small message, UCIe between cubes (assumption)",
            "peak_flops": "paper section 5.1: C = 8 TFLOPS per PE",
            "memory_bandwidth": "paper section 5.1: W = 256 GB/s per PE",
            "memory_bytes": "paper section 5.2: 6 GB HBM budget per PE (decimal, 6e9 bytes)",
            "usable_memory_bytes": "paper section 5.2: the whole 6 GB budget",
            "interconnect_bandwidth": "assumption for teaching: the paper names the intra-cube "
                                      "NoC but gives no bandwidth",
            "domain_size": "paper: 8 PEs per cube share the NoC",
            "scaleout_bandwidth": "assumption for teaching: the paper names UCIe between cubes "
                                  "but gives no bandwidth",
            "power_w": "not given in the paper section",
            "price_usd_per_hour": "research design: no price",
            "topology": "paper: 8 PEs per cube, 16 cubes per SIP",
        },
    ),
    *(_mcu(b) for b in MCU_BOARDS),
    *(_apple(c) for c in APPLE_CHIPS),
    *(_npu(c) for c in HEXAGON_NPUS),
)})


def get_hardware(hardware: str | Hardware) -> Hardware:
    """Look up a device by id (or pass a :class:`Hardware` through)."""
    return lookup("hardware", HARDWARE, hardware)
