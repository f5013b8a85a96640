"""The published-measurement set: every entry loads, is valid and sourced; bad entries fail."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest

from labkit.physics.derating import device_class_of
from labkit.registries.hardware import HARDWARE
from labkit.registries.measurements import (
    MEASUREMENTS,
    Measurement,
    load_measurements,
    parse_measurements,
)
from labkit.registries.models import MODELS

CLASSES = {"datacenter", "phone", "automotive", "mcu"}


def device_class(m: Measurement) -> str:
    """The case's device class: one table of kinds, physics.derating.DEVICE_CLASSES."""
    return device_class_of(m.hardware).id


def test_the_set_spans_every_device_class():
    assert len(MEASUREMENTS) >= 24
    counts = Counter(device_class(m) for m in MEASUREMENTS)
    assert set(counts) == CLASSES
    assert all(counts[c] >= 5 for c in CLASSES), counts


def test_every_entry_is_valid_sourced_and_unique():
    assert len({m.id for m in MEASUREMENTS}) == len(MEASUREMENTS)
    for m in MEASUREMENTS:
        assert m.hardware in HARDWARE and m.model in MODELS
        assert (m.workload, m.metric) in {("decode", "step_s"), ("cnn", "inference_s")}
        assert MODELS[m.model].is_transformer == (m.workload == "decode")
        assert m.value > 0 and m.batch >= 1 and m.tp >= 1
        assert m.source.startswith(("https://", "http://"))
        assert m.source_detail.strip() and m.derivation.strip() and m.system.strip()
        assert m.source_family.strip() and m.stack.strip()
        with pytest.raises(dataclasses.FrozenInstanceError):
            m.value = 1.0  # type: ignore[misc]


def test_the_issue_cases_are_present():
    """Single-GPU 8B, TP >= 4 on a 70B, a batch sweep, an MoE case, 4-bit phone decode."""
    dc = [m for m in MEASUREMENTS if device_class(m) == "datacenter"]
    assert any(m.tp == 1 and "8b" in m.model for m in dc)
    assert any(m.tp >= 4 and "70b" in m.model for m in dc)
    assert {1, 5, 25, 50} <= {m.batch for m in dc}
    assert any(MODELS[m.model].is_moe for m in dc)
    assert any(device_class(m) == "phone" and m.weight_bits == 4 for m in MEASUREMENTS)
    mcu = [m for m in MEASUREMENTS if device_class(m) == "mcu"]
    assert {m.hardware for m in mcu} >= {"stm32l4r5-nucleo", "nrf5340-dk"}
    assert all(m.model == "ds-cnn-kws" for m in mcu)


def _raw(**changes: Any) -> dict[str, Any]:
    raw = dataclasses.asdict(MEASUREMENTS[0])
    raw.update(changes)
    return raw


@pytest.mark.parametrize(("changes", "field"), [
    ({"hardware": "h100"}, "hardware"),
    ({"model": "gpt-5"}, "model"),
    ({"workload": "train"}, "workload"),
    ({"metric": "inference_s"}, "metric"),
    ({"model": "yolov8n"}, "model"),
    ({"value": 0.0}, "value"),
    ({"value": -1e-3}, "value"),
    ({"value": "18 ms"}, "value"),
    ({"batch": 0}, "batch"),
    ({"tp": 0}, "tp"),
    ({"weight_bits": 3}, "weight_bits"),
    ({"kv_bits": 0}, "kv_bits"),
    ({"context_tokens": 0}, "context_tokens"),
    ({"source": "docs.nvidia.com/nim"}, "source"),
    ({"system": ""}, "system"),
    ({"batch": 1.5}, "batch"),
    ({"source_family": " "}, "source_family"),
    ({"stack": 3}, "stack"),
    ({"fitted": "no"}, "fitted"),
    ({"fitted": 0}, "fitted"),
])
def test_a_bad_field_raises_naming_the_entry_and_field(changes: dict[str, Any], field: str):
    raw = _raw(**changes)
    with pytest.raises(ValueError, match=rf"{raw['id']}.*field '{field}'"):
        parse_measurements([raw])


def test_missing_extra_and_duplicate_entries_raise():
    raw = _raw()
    del raw["derivation"]
    with pytest.raises(ValueError, match="field 'derivation' is missing"):
        parse_measurements([raw])
    with pytest.raises(ValueError, match="field 'note' is not a Measurement field"):
        parse_measurements([_raw(note="x")])
    with pytest.raises(ValueError, match="field 'id' is not unique"):
        parse_measurements([_raw(), _raw()])
    cnn = next(m for m in MEASUREMENTS if m.workload == "cnn")
    with pytest.raises(ValueError, match="field 'kv_bits' must be 0"):
        parse_measurements([{**dataclasses.asdict(cnn), "kv_bits": 16}])


def test_the_toml_loader_round_trips_and_rejects_an_empty_file():
    m = MEASUREMENTS[0]
    lines = ["[[measurement]]"] + [
        f"{k} = {str(v).lower()}" if isinstance(v, bool) else
        f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"'
        for k, v in dataclasses.asdict(m).items()]
    assert load_measurements("\n".join(lines)) == (m,)
    with pytest.raises(ValueError, match=r"no \[\[measurement\]\]"):
        load_measurements("title = 'nothing'")
    assert isinstance(m, Measurement)


def test_issue_25_the_wider_measured_set():
    """At least 80 cases from 15 source families; every class at least 12 cases on 3
    stacks; MCUs on 3 cores and 3 toolchains; phones and laptops on CPU, GPU and NPU."""
    from labkit.registries.stacks import get_stack

    assert len(MEASUREMENTS) >= 80 and len({m.source_family for m in MEASUREMENTS}) >= 15
    for c in CLASSES:
        mine = [m for m in MEASUREMENTS if device_class(m) == c]
        assert len(mine) >= 12 and len({m.stack for m in mine}) >= 3, c
    mcu = [m for m in MEASUREMENTS if device_class(m) == "mcu"]
    assert len({HARDWARE[m.hardware].core for m in mcu}) >= 3
    assert len({get_stack(m.stack).kernels for m in mcu}) >= 3
    phone = [m for m in MEASUREMENTS if device_class(m) == "phone"]
    assert {get_stack(m.stack).processor for m in phone} == {"cpu", "gpu", "npu"}
    assert {HARDWARE[m.hardware].kind for m in phone} == {"phone-soc", "laptop-soc"}
