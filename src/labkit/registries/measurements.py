"""Published latency measurements: where real systems sit beside the roofline.

Each :class:`Measurement` is one case read from a public source (vendor benchmark pages,
MLPerf result logs, framework READMEs, CI dashboards) and recorded in
``data/measurements.toml`` with the configuration it ran, the quoted numbers and how the
value in seconds was derived. Two metrics:

* ``step_s`` (``workload = "decode"``): time between two tokens of one sequence at that
  batch (TPOT / ITL), i.e. batch / (total output tokens/s);
* ``inference_s`` (``workload = "cnn"``): latency of one CNN inference of the whole batch.

Entries are validated on load: known hardware and model ids, a known workload and metric,
positive values and sizes; anything else raises a ValueError naming the entry and field.
This module is data only: it imports registries, never physics.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from importlib import resources
from typing import Any

from labkit.registries.hardware import HARDWARE
from labkit.registries.models import MODELS
from labkit.registries.stacks import STACKS

WORKLOAD_METRIC: Mapping[str, str] = {"decode": "step_s", "cnn": "inference_s"}
BITS = (4, 8, 16, 32)
_DATA = "measurements.toml"


@dataclass(frozen=True)
class Measurement:
    """One published measurement and the configuration it ran.

    Attributes:
        id: unique case id.  hardware / model: registry ids.
        workload: "decode" (LLM token generation) or "cnn" (one CNN inference).
        metric: "step_s" (decode) or "inference_s" (cnn).
        value: the measured metric, s.
        batch: sequences per decode step, or inputs per CNN inference (>= 1).
        context_tokens: decode: prompt + about half the output, tokens (0 for CNNs).
        weight_bits / kv_bits: stored precision of weights / KV cache, bits (kv 0 for CNNs).
        tp: devices one model replica is split over (tensor parallel).
        system: software and version.  source: http(s) URL.  source_detail: the table,
        row and quoted numbers.  derivation: how ``value`` was computed from them.
        year: year of publication.
        batching: how the decode steps were timed -- "decode-only" (the metric excludes
        prefill), "static" (a fixed batch timed end to end: one prefill of every prompt is
        spread over ``output_tokens`` steps) or "concurrent" (a closed loop of ``batch``
        requests: the other requests' prefills interleave with this one's steps).
        prompt_tokens / output_tokens: per request (0 when not needed: decode-only, CNNs).
        source_family: who published it (one publisher's pages, CI or result logs are one
        family): validation holds whole families out, never single cases.
        stack: the software that ran it (``vllm``, ``tensorrt-llm``, ``x-cube-ai``, ...).
        fitted: whether its device class's fitted terms were chosen with it (False: a check
        case, recorded after the fit and never used by it: out of sample for the shipped
        derating).
    """

    id: str
    hardware: str
    model: str
    workload: str
    metric: str
    value: float
    batch: int
    context_tokens: int
    weight_bits: int
    kv_bits: int
    tp: int
    system: str
    source: str
    source_detail: str
    derivation: str
    year: int
    source_family: str
    stack: str
    batching: str = "decode-only"
    prompt_tokens: int = 0
    output_tokens: int = 0
    fitted: bool = True


_FIELDS = tuple(f.name for f in fields(Measurement))
_OPTIONAL = ("batching", "prompt_tokens", "output_tokens", "fitted")
_INTS = ("batch", "context_tokens", "weight_bits", "kv_bits", "tp", "year", "prompt_tokens",
         "output_tokens")
_TEXTS = ("id", "hardware", "model", "workload", "metric", "system", "source",
          "source_detail", "derivation", "batching", "source_family", "stack")
BATCHING = ("decode-only", "static", "concurrent")


def _fail(entry: str, name: str, why: str) -> ValueError:
    return ValueError(f"measurement {entry!r}: field {name!r} {why}")


def _check_types(entry: str, raw: Mapping[str, Any]) -> None:
    missing = [n for n in _FIELDS if n not in raw and n not in _OPTIONAL]
    if missing:
        raise _fail(entry, missing[0], "is missing")
    extra = sorted(set(raw) - set(_FIELDS))
    if extra:
        raise _fail(entry, extra[0], "is not a Measurement field")
    for name in _TEXTS:
        if name not in raw:
            continue
        if not isinstance(raw[name], str) or not raw[name].strip():
            raise _fail(entry, name, f"must be a non-empty string, got {raw[name]!r}")
    for name in _INTS:
        if name not in raw:
            continue
        if isinstance(raw[name], bool) or not isinstance(raw[name], int):
            raise _fail(entry, name, f"must be an integer, got {raw[name]!r}")
    if "fitted" in raw and not isinstance(raw["fitted"], bool):
        raise _fail(entry, "fitted", f"must be true or false, got {raw['fitted']!r}")
    if isinstance(raw["value"], bool) or not isinstance(raw["value"], int | float):
        raise _fail(entry, "value", f"must be a number of seconds, got {raw['value']!r}")


def _check_values(m: Measurement) -> None:
    if m.hardware not in HARDWARE:
        raise _fail(m.id, "hardware", f"is not a registry id: {m.hardware!r}")
    if m.model not in MODELS:
        raise _fail(m.id, "model", f"is not a registry id: {m.model!r}")
    if m.stack not in STACKS:
        raise _fail(m.id, "stack", f"is not a registry id (registries/stacks.py): {m.stack!r}")
    if m.workload not in WORKLOAD_METRIC:
        raise _fail(m.id, "workload", f"must be one of {sorted(WORKLOAD_METRIC)}")
    if m.metric != WORKLOAD_METRIC[m.workload]:
        raise _fail(m.id, "metric", f"must be {WORKLOAD_METRIC[m.workload]!r} for "
                                    f"workload {m.workload!r}, got {m.metric!r}")
    if MODELS[m.model].is_transformer != (m.workload == "decode"):
        raise _fail(m.id, "model", f"{m.model!r} does not run workload {m.workload!r}")
    if not 0.0 < m.value < 1e4:
        raise _fail(m.id, "value", f"must be a positive time in seconds, got {m.value!r}")
    for name in ("batch", "tp", "year"):
        if getattr(m, name) < 1:
            raise _fail(m.id, name, f"must be >= 1, got {getattr(m, name)!r}")
    if m.weight_bits not in BITS:
        raise _fail(m.id, "weight_bits", f"must be one of {BITS}, got {m.weight_bits!r}")
    decode = m.workload == "decode"
    if decode and (m.kv_bits not in BITS or m.context_tokens < 1):
        name = "kv_bits" if m.kv_bits not in BITS else "context_tokens"
        raise _fail(m.id, name, f"is not valid for a decode case: {getattr(m, name)!r}")
    if not decode and (m.kv_bits != 0 or m.context_tokens != 0):
        name = "kv_bits" if m.kv_bits != 0 else "context_tokens"
        raise _fail(m.id, name, "must be 0 for a CNN case")
    if m.batching not in BATCHING:
        raise _fail(m.id, "batching", f"must be one of {BATCHING}, got {m.batching!r}")
    if m.batching != "decode-only" and (m.prompt_tokens < 1 or m.output_tokens < 1):
        name = "prompt_tokens" if m.prompt_tokens < 1 else "output_tokens"
        raise _fail(m.id, name, f"must be >= 1 for batching {m.batching!r}")
    if not m.source.startswith(("https://", "http://")):
        raise _fail(m.id, "source", f"must be an http(s) URL, got {m.source!r}")


def parse_measurements(entries: Sequence[Mapping[str, Any]]) -> tuple[Measurement, ...]:
    """Validate raw TOML tables into :class:`Measurement` objects (ids must be unique)."""
    out: list[Measurement] = []
    seen: set[str] = set()
    for index, raw in enumerate(entries):
        entry = str(raw.get("id", f"#{index}"))
        _check_types(entry, raw)
        m = Measurement(**{**raw, "value": float(raw["value"])})
        _check_values(m)
        if m.id in seen:
            raise _fail(m.id, "id", "is not unique")
        seen.add(m.id)
        out.append(m)
    return tuple(out)


def load_measurements(text: str | None = None) -> tuple[Measurement, ...]:
    """Parse ``text`` (TOML with ``[[measurement]]`` tables), default: the package data."""
    if text is None:
        text = resources.files("labkit.registries").joinpath("data", _DATA).read_text("utf-8")
    data = tomllib.loads(text)
    entries = data.get("measurement")
    if not isinstance(entries, list):
        raise ValueError("measurements: the file has no [[measurement]] tables")
    return parse_measurements(entries)


@functools.cache
def all_measurements() -> tuple[Measurement, ...]:
    """Every measurement of the package data (:func:`load_measurements`), parsed on first
    use: parsing and checking the file costs about 35 ms of CPU, which a process that never
    reads a measurement (a Lab 1 kernel, most ``labkit`` commands) does not pay."""
    return load_measurements()


def __getattr__(name: str) -> Any:
    """``MEASUREMENTS``: :func:`all_measurements` (a module attribute read on first use)."""
    if name == "MEASUREMENTS":
        return all_measurements()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
