"""Microcontroller boards of the MLPerf Tiny results, and the Cortex-M cores they run.

A board is its core, its clock, its SRAM and flash: each read from the submission's MLPerf
Tiny system description (``mlcommons/tiny_results_v*``, ``closed/<submitter>/systems/``),
the figures quoted in :attr:`McuBoard.source`. Peak and bus figures are derived from
the core's record (:data:`CORES`) and the clock, as the hand-written MCU entries of
:mod:`labkit.registries.hardware` derive theirs. Data only: :mod:`~labkit.registries.hardware`
turns each board into a :class:`~labkit.registries.hardware.Hardware`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Core:
    """A CPU core's peak arithmetic per cycle: INT8 multiply-accumulates and FP32 FMAs."""

    id: str
    label: str
    int8_macs_per_cycle: float
    fp32_fmas_per_cycle: float
    source: str


CORES: Mapping[str, Core] = MappingProxyType({c.id: c for c in (
    Core("cortex-m0plus", "Cortex-M0+", 0.5, 0.0,
         "Armv6-M: no DSP extension, no multiply-accumulate instruction and no FPU: a MAC "
         "is a MULS (one cycle with the fast multiplier) and an ADDS, at most 0.5 INT8 MAC "
         "per cycle (derived); FP32 in software only"),
    Core("cortex-m4", "Cortex-M4F", 2.0, 1.0,
         "DSP extension: SMLAD does two 16-bit MACs per cycle, the CMSIS-NN INT8 inner "
         "loop (derived); single-precision FPU, one FMA per cycle"),
    Core("cortex-m7", "Cortex-M7", 2.0, 1.0,
         "DSP extension as the M4 (SMLAD, two 16-bit MACs per instruction; the M7's dual "
         "issue can overlap loads with it, which a peak of SMLAD alone does not count); "
         "FPU, one FMA per cycle (derived)"),
    Core("cortex-m33", "Cortex-M33", 2.0, 1.0,
         "Armv8-M mainline with the DSP extension: SMLAD as the M4 (derived); FPU"),
    Core("cortex-m85", "Cortex-M85 (Helium)", 8.0, 2.0,
         "Armv8.1-M with Helium (MVE): 128-bit vectors executed two beats per cycle, a "
         "64-bit datapath: 8 INT8 MACs per cycle (VMLADAV over 16 lanes in two cycles), "
         "4 FP32 lanes in two cycles = 2 FMAs per cycle (derived from the beat structure)"),
)})

_TINY = "https://github.com/mlcommons/tiny_results_"


@dataclass(frozen=True)
class McuBoard:
    """One board: its core, clock (Hz), SRAM and flash (KiB) and where they are read."""

    id: str
    name: str
    core: str
    clock_hz: float
    sram_kib: int
    flash_kib: int
    source: str


MCU_BOARDS: tuple[McuBoard, ...] = (
    McuBoard("stm32h7a3-nucleo", "STM32H7A3 Nucleo (Cortex-M7, 280 MHz)", "cortex-m7",
             280e6, 1184, 2048,
             _TINY + "v1.1 closed/STMicroelectronics/systems/NUCLEO_H7A3ZI_Q.json: "
             "STM32H7A3ZIT6Q, '32-Bit ARM Cortex-M7', '280 MHz', '1.19MB RAM', '2MB flash'"),
    McuBoard("stm32u575-nucleo", "STM32U575 Nucleo (Cortex-M33, 160 MHz)", "cortex-m33",
             160e6, 768, 2048,
             _TINY + "v1.1 closed/STMicroelectronics/systems/NUCLEO_U575ZI_Q.json: "
             "STM32U575ZIT6Q, Cortex-M33, '160 MHz', '768KB RAM', '2MB Flash'"),
    McuBoard("stm32u385-nucleo", "STM32U385 Nucleo (Cortex-M33, 96 MHz)", "cortex-m33",
             96e6, 256, 1024,
             _TINY + "v1.3 closed/STMicroelectronics/systems/NUCLEO_U385RG_Q.json: "
             "STM32U385RGT6Q, Cortex-M33, '96 MHz', '256KB RAM', '1MB flash'"),
    McuBoard("stm32f746-disco", "STM32F746 Discovery (Cortex-M7, 216 MHz)", "cortex-m7",
             216e6, 320, 1024,
             _TINY + "v1.1 closed/bosch/systems/DISCO_F746NG.json: STM32F746NG, "
             "Cortex-M7 (DSP+FPU), '216 MHz', '320KB RAM', '1MB Flash'"),
    McuBoard("stm32g0b1-nucleo", "STM32G0B1 Nucleo (Cortex-M0+, 64 MHz)", "cortex-m0plus",
             64e6, 144, 512,
             _TINY + "v1.2 closed/bosch/systems/NUCLEO_G0B1RE_int8.json: STM32G0B1RE, "
             "Cortex-M0+, '64 MHz', '144KB RAM', '512KB flash'"),
    McuBoard("ek-ra6m4", "Renesas EK-RA6M4 (Cortex-M33, 200 MHz)", "cortex-m33",
             200e6, 256, 1024,
             _TINY + "v0.7 closed/renesas/systems/EK-RA6M4_System_Description.json: "
             "R7FA6M4AF3CFB, Cortex-M33 (DSP+FPU), '200 MHz', '256KB SRAM', '1MB Flash'"),
    McuBoard("ek-ra8d1", "Renesas EK-RA8D1 (Cortex-M85, 480 MHz)", "cortex-m85",
             480e6, 1024, 2048,
             _TINY + "v1.2 closed/Renesas/systems/EK-RA8D1.json: R7FA8D1AHECBD, "
             "Cortex-M85 (Helium), '480 MHz', '1MB SRAM', '2MB Flash'"),
    McuBoard("xg24-dk2601b", "Silicon Labs xG24 DK2601B (Cortex-M33 + MVP, 78 MHz)",
             "cortex-m33", 78e6, 256, 1536,
             _TINY + "v0.7 closed/silicon_labs/systems/silicon_labs_xG24_DK2601B.json: "
             "EFR32MG24B310F1536IM48, Cortex-M33 with the MVP matrix-vector accelerator, "
             "'78 MHz' (CPU and MVP), '256kB SRAM', '1536kB eFlash' (the peak counts the "
             "core alone)"),
    McuBoard("numaker-m467hj", "Nuvoton NuMaker-M467HJ (Cortex-M4F, 200 MHz)", "cortex-m4",
             200e6, 512, 1024,
             _TINY + "v1.1 closed/Nuvoton/systems/NUMAKER_M467HJ-zephyr.json: M467HJHAN, "
             "Cortex-M4F, '200 MHz', '512KB SRAM', '1024KB Flash'"),
    McuBoard("cy8cproto-062-4343w", "Infineon CY8CPROTO-062-4343W (PSoC 62, Cortex-M4, "
             "150 MHz)", "cortex-m4", 150e6, 1024, 2048,
             _TINY + "v1.1 closed/plumerai/systems/CY8CPROTO-062-4343W.json: PSoC 62, "
             "Cortex-M4 (DSP+FPU), '150 MHz', '1024KB RAM', '2MB flash'"),
)
"""Boards of MLPerf Tiny submissions beyond the reference NUCLEO-L4R5ZI."""
