"""Unit constants. Decimal prefixes (GB, TB/s) and binary prefixes (GiB) are kept apart.

Vendors quote HBM capacity in decimal GB for GPUs (80 GB = 80e9 bytes) but Google quotes
TPU memory in GiB and microcontroller SRAM/flash in KiB/MiB. Every registry value is stored
in plain bytes, bytes/s or FLOP/s so no formula ever mixes the two conventions.
"""

from __future__ import annotations

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12

KiB = 2**10
MiB = 2**20
GiB = 2**30

GFLOPS = 1e9
TFLOPS = 1e12
PFLOPS = 1e15

MS_PER_S = 1e3
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
DAYS_PER_YEAR = 365.0
J_PER_WH = 3600.0   # 1 Wh = 1 W x 3600 s
J_PER_MWH = 3.6     # 1 mWh = 1e-3 W x 3600 s
BITS_PER_BYTE = 8


def bits_to_bytes(bits: float) -> float:
    """Bytes per element for a precision given in bits (16 -> 2.0, 4 -> 0.5)."""
    return bits / BITS_PER_BYTE
