"""Device memory: resident weights and how many live sessions fit beside them.

* :func:`resident_weight_bytes` -- weights (blocks, LM head, untied embedding) that stay
  in device memory.
* :func:`state_capacity` -- how many live sessions (KV caches, or in-flight sensor windows
  for CNNs) fit beside the weights. Out-of-memory is a flag with a reason, never a negative
  count.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from labkit.core import validation as v
from labkit.core.format import counted, format_bytes
from labkit.core.units import bits_to_bytes
from labkit.physics.kvcache import kv_bytes_per_token, kv_fraction_per_device, weight_bytes
from labkit.registries.hardware import Hardware, get_hardware
from labkit.registries.models import Model, get_model


def resident_weight_bytes(model: str | Model, weight_bits: int = 16) -> float:
    """Bytes of weights that must stay in device memory, at ``weight_bits``.

    Transformers: decoder blocks + LM head (:func:`labkit.physics.kvcache.weight_bytes` with
    ``include_lm_head``) + the input embedding table (hidden x vocab) when it is not tied
    to the LM head. CNNs: every parameter. Llama 3.1 70B at 16 bits: 68.45e9 block + 1.05e9
    head + 1.05e9 embedding parameters = 141.1 GB (decimal), matching the published 70.6B.
    """
    m = get_model(model)
    resident = weight_bytes(m, weight_bits, include_lm_head=True)
    if m.is_transformer and not m.tied_embeddings:
        resident += m.lm_head_params * bits_to_bytes(v.precision_bits("weight_bits",
                                                                       weight_bits))
    return resident


@dataclass(frozen=True)
class StateCapacity:
    """Live sessions one replica holds beside its weights. Bytes are decimal, whole replica.

    memory_bytes: usable memory for weights + state after the reserve (MCU: SRAM only).
    weight_location: "memory", or "flash" on a microcontroller (weights execute from flash).
    bytes_per_session: KV cache at ``context_tokens`` (x TP replication past the KV heads)
    or the CNN's in-flight window + activations. free_bytes: memory left for sessions.
    max_sessions: floor(free / per session), >= 0. oom: not even one session fits.
    """

    kind: str
    devices: int
    context_tokens: float | None
    memory_bytes: float
    weight_bytes: float
    weight_location: str
    weight_limit_bytes: float
    bytes_per_session: float
    free_bytes: float
    max_sessions: int
    oom: bool
    reason: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def state_capacity(hardware: str | Hardware, model: str | Model, context_tokens: object = None,
                   weight_bits: int = 16, kv_bits: int = 16, devices_per_replica: int = 1,
                   reserve_fraction: object = 0.0, *,
                   state_bytes_per_request: object = None) -> StateCapacity:
    """max_sessions = floor((devices x usable x (1 - reserve) - weights) / bytes per session).

    Transformer session = kv_bytes_per_token x context x devices x kv_fraction_per_device:
    tensor parallelism splits KV heads across devices, and past ``kv_heads`` devices each
    head is replicated, so a session costs more in total. CNN session =
    ``state_bytes_per_request`` (required). On a microcontroller (``flash_bytes`` known) the
    weights sit in flash and only sessions use SRAM; the model fits only if both fit.
    """
    hw = get_hardware(hardware)
    m = get_model(model)
    d = v.positive_int("devices_per_replica", devices_per_replica)
    reserve = float(v.fraction("reserve_fraction", reserve_fraction, allow_one=False))
    weights = resident_weight_bytes(m, weight_bits)
    memory = d * hw.usable_memory_bytes * (1.0 - reserve)
    if m.is_transformer:
        ctx = float(v.positive("context_tokens", context_tokens))
        per_session = (kv_bytes_per_token(m, kv_bits) * ctx * d
                       * kv_fraction_per_device(m, d))
        kind, ctx_out = "kv-cache", ctx
    else:
        v.precision_bits("kv_bits", kv_bits)
        if state_bytes_per_request is None:
            raise ValueError("state_bytes_per_request must be given for a CNN (sensor window "
                             "or frame + activations, bytes)")
        per_session = float(v.positive("state_bytes_per_request", state_bytes_per_request))
        kind, ctx_out = "window+activations", None
    flash = hw.flash_bytes
    on_flash = flash is not None and not m.is_transformer
    if flash is not None and on_flash:
        weight_limit = d * float(flash)
        weights_fit = weights <= weight_limit
        free = memory
        location = "flash"
    else:
        weight_limit = memory
        weights_fit = weights <= memory
        free = max(0.0, memory - weights)
        location = "memory"
    sessions = math.floor(free / per_session) if weights_fit else 0
    if not weights_fit:
        reason = (f"OOM: weights ({format_bytes(weights)}) exceed {location} "
                  f"({format_bytes(weight_limit)}) on {counted(d, 'device')}")
        free = 0.0 if location == "memory" else free
    elif sessions < 1:
        reason = (f"OOM: weights fit, but one session ({format_bytes(per_session)}) exceeds "
                  f"the {format_bytes(free)} left")
    else:
        where = "in SRAM, weights in flash" if on_flash else "beside the weights"
        reason = (f"{counted(sessions, 'session')} of {format_bytes(per_session)} fit in "
                  f"{format_bytes(free)} {where} ({format_bytes(weights)})")
    return StateCapacity(
        kind=kind, devices=d, context_tokens=ctx_out, memory_bytes=memory,
        weight_bytes=weights, weight_location=location, weight_limit_bytes=weight_limit,
        bytes_per_session=per_session, free_bytes=free, max_sessions=int(sessions),
        oom=sessions < 1, reason=reason,
    )
