"""Apple silicon laptops and desktops of the published decode measurements (M1 to M4).

Apple publishes unified-memory bandwidth and capacity for each chip, and a GPU throughput
only for some; where it does not, the GPU figure is an estimate and says so (as for the
A17 Pro in :mod:`labkit.registries.hardware`). Decode on these chips streams weights
through the GPU from unified memory, so bandwidth is the figure the cases test. The
sources below relay Apple's press releases (Apple's own pages named for checking).
Data only: :mod:`~labkit.registries.hardware` turns each chip into a
:class:`~labkit.registries.hardware.Hardware` of kind ``laptop-soc``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AppleChip:
    """One chip as measured: GPU FP32 FLOP/s, unified-memory bandwidth (B/s) and capacity
    (decimal GB), with the source of each."""

    id: str
    name: str
    gpu_fp32_flops: float
    bandwidth: float
    memory_gb: int
    flops_source: str
    bandwidth_source: str
    memory_source: str


_RELAY_M1 = ("MacRumors 2020-11-10 relaying Apple's M1 release (apple.com/newsroom/2020/11/"
             "apple-unleashes-m1/): 'GPU containing up to eight cores, and with 2.6 teraflops "
             "of throughput'")
_RELAY_MAX = ("MyBroadband 2021-10-18 relaying Apple's M1 Pro/Max release (apple.com/newsroom/"
              "2021/10/introducing-m1-pro-and-m1-max): 'M1 Max delivers up to 400GB/s of memory "
              "bandwidth -- twice that of M1 Pro and nearly six times that of M1 -- and support "
              "for up to 64GB of unified memory'")
_ESTIMATE = ("estimate: Apple publishes no GPU throughput for this chip; GPU cores x 128 FP32 "
             "lanes x 2 FLOP x about {ghz} GHz (a clock third parties measured)")

APPLE_CHIPS: tuple[AppleChip, ...] = (
    AppleChip("apple-m1", "Apple M1 (8-core GPU, 8 GB)", 2.6e12, 68.25e9, 8,
              _RELAY_M1,
              "derived: LPDDR4X-4266 on a 128-bit bus = 68.25 GB/s (Apple's M1 Max release: "
              "400 GB/s is 'nearly six times that of M1')",
              "the measured Mac's configuration: 8 GB"),
    AppleChip("apple-m1-max", "Apple M1 Max (32-core GPU)", 10.4e12, 400e9, 64,
              "Apple's M1 Pro/Max release: 'up to 10.4 teraflops' for the 32-core GPU (four "
              "times the M1's 2.6, as relayed by Pocketnow)",
              _RELAY_MAX, _RELAY_MAX),
    AppleChip("apple-m2-ultra", "Apple M2 Ultra (76-core GPU)", 27.2e12, 800e9, 192,
              _ESTIMATE.format(ghz="1.4") + " for 76 cores",
              "IANS relaying Apple's 2023-06-05 M2 Ultra release (apple.com/newsroom/2023/06/"
              "apple-introduces-m2-ultra/): '800GB of memory bandwidth -- twice that of the "
              "M2 Max'",
              "same release: 'supports a breakthrough 192GB memory capacity'"),
    AppleChip("apple-m3-max", "Apple M3 Max (40-core GPU)", 16.4e12, 400e9, 128,
              _ESTIMATE.format(ghz="1.6") + " for 40 cores",
              "Apple's M3 family release (apple.com/newsroom/2023/10/), the 16-CPU/40-GPU "
              "part: 400 GB/s, as relayed by The Daily Star and by an MLX maintainer in "
              "ml-explore/mlx-examples#1029 ('About 400 GB/s memory bandwidth')",
              "Apple's M3 release as relayed by The Daily Star: 'up to 128GB of memory'"),
    AppleChip("apple-m4", "Apple M4 (10-core GPU, Mac mini)", 4.3e12, 120e9, 16,
              _ESTIMATE.format(ghz="1.7") + " for 10 cores (Hugging Face's hardware page "
              "lists 4.6 TFLOPS, precision unstated)",
              "Apple's Mac mini (M4) specifications (support.apple.com/en-us/121555) as "
              "relayed by Ars Technica: 120 GB/s",
              "MacRumors 2024-10-29: the M4 Mac mini 'now starts with 16GB of unified memory'"),
)
"""Apple chips of the laptop/desktop decode cases in ``data/measurements.toml``."""
