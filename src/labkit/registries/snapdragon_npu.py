"""Qualcomm Hexagon NPUs of the published decode measurements (phone and laptop NPU path).

Qualcomm publishes the DRAM each Snapdragon supports, from which bandwidth follows; it
publishes an NPU throughput for the laptop chip (45 TOPS) but none for the phone chips,
whose figure here is an estimate and says so. The NPU streams a decode's weights from
the shared LPDDR5X, so bandwidth is the figure the cases test; at batch 1 the compute
term is a few percent of the step whatever the TOPS. Data only:
:mod:`~labkit.registries.hardware` turns each into a
:class:`~labkit.registries.hardware.Hardware`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HexagonNpu:
    """One NPU as measured: its SoC's ``kind`` (``phone-soc`` | ``laptop-soc``), INT8
    ops/s, the shared DRAM's bandwidth (B/s) and the device's capacity (decimal GB), with
    the source of each."""

    id: str
    name: str
    kind: str
    int8_ops: float
    bandwidth: float
    memory_gb: int
    ops_source: str
    bandwidth_source: str
    memory_source: str


_PHONE_TOPS = ("estimate: Qualcomm publishes no NPU TOPS for its phone chips; 45 TOPS INT8 "
               "for the 8 Gen 3's Hexagon is a third-party figure (runlocalai.co)")

HEXAGON_NPUS: tuple[HexagonNpu, ...] = (
    HexagonNpu("snapdragon-8-gen3-npu", "Qualcomm Snapdragon 8 Gen 3, Hexagon NPU (Galaxy S24)",
               "phone-soc", 45e12, 76.8e9, 8, _PHONE_TOPS,
               "Qualcomm Snapdragon 8 Gen 3 spec: LPDDR5X up to 4800 MHz (9,600 MT/s) on a "
               "64-bit bus = 76.8 GB/s (derived; the NPU shares the DRAM)",
               "Samsung Galaxy S24 specifications: 8 GB RAM"),
    HexagonNpu("snapdragon-8-elite-npu", "Qualcomm Snapdragon 8 Elite, Hexagon NPU (QRD)",
               "phone-soc", 65e12, 84.8e9, 12,
               _PHONE_TOPS + ", times Qualcomm's '45% faster Hexagon NPU' for the 8 Elite "
               "(launch release, 2024-10-21, as relayed by Droid Life)",
               "Qualcomm's 8 Elite launch: LPDDR5X at 5,300 MHz (10,600 MT/s), relayed by "
               "Geektopia 2024-10-22 with '84.8 GB/s' on the 64-bit bus (derived)",
               "estimate: a 12 GB reference phone (the QRD's RAM is not published)"),
    HexagonNpu("snapdragon-x-elite-npu", "Qualcomm Snapdragon X Elite, Hexagon NPU (CRD)",
               "laptop-soc", 45e12, 136e9, 32,
               "Qualcomm's X Elite launch (2023-10-24): Hexagon NPU 45 TOPS, as relayed by "
               "Android Authority",
               "Qualcomm's X Elite launch: LPDDR5X-8533, up to 136 GB/s, as relayed by "
               "TweakTown 2023-10-22 and Mashdigi",
               "estimate: a 32 GB reference laptop (the X Elite takes up to 64 GB)"),
)
"""Hexagon NPUs of the NPU decode cases in ``data/measurements.toml``."""
