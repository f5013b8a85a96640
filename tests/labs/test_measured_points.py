"""Lab 2 Part A shows where real systems sit: for each track at its defaults, the measured
points on the chart and the rows of the table are exactly the published cases that ran on
the track's device (labkit.registries.measurements), each row's peak, achievable and
measured / achievable are labkit.physics.calibration's, and a device without a case gets
no mark (no legend entry) but a sentence naming its class's cases elsewhere."""

from __future__ import annotations

import dataclasses
import html
import re

import bqplot as bq
import numpy as np
import pytest

from labkit.core.answers import AnswerStore
from labkit.labs.accelerators import Lab
from labkit.labs.accelerators.measured_points import HEADERS, device_cases
from labkit.physics.calibration import calibrate
from labkit.physics.derating import device_class_of
from labkit.physics.phases import cnn_inference_time
from labkit.registries.hardware import get_hardware
from labkit.registries.measurements import MEASUREMENTS
from labkit.registries.stacks import get_stack
from labkit.tracks import TRACKS

CHART = {"decode": "batch", "cnn": "roofline"}  # the figure a part's points go on
ROWS = {r.id: r for r in calibrate().rows}


def _part(track, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger.json"))
    return Lab(track, store=AnswerStore(tmp_path / "a.json"), gate_explore=False).part("A")


def _workload(part) -> str:
    return "decode" if part.model.is_transformer else "cnn"


def _measured_marks(fig) -> list[bq.Scatter]:
    return [m for m in fig.marks if isinstance(m, bq.Scatter)
            and any(str(lab).startswith("measured") for lab in m.labels or [])]


def _points(part) -> dict[str, tuple[float, float]]:
    """case id -> (x, y) of every measured point shown, on any chart of the part."""
    out = {}
    for fig in part.figures.values():
        for mark in _measured_marks(fig):
            if mark.visible:
                out.update({n: (float(x), float(y))
                            for n, x, y in zip(mark.names, mark.x, mark.y, strict=True)})
    return out


def _table(details: str) -> list[list[str]]:
    """The cells (tags removed) of the measured-cases table's rows, [] when there is none."""
    block = re.search(r"<div class='labkit-measured'>(.*?)</div>", details, re.S)
    if block is None:
        return []
    head, body = block.group(1).split("</thead>")
    headers = re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", head)
    assert [html.unescape(h) for h in headers] == list(HEADERS)
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
             for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.3g}"


def _check_points_and_table(part, expected) -> None:
    """Points and rows are ``expected`` (cases), each where it belongs, with calibration's
    numbers."""
    points, rows = _points(part), _table(part.details.value)
    assert sorted(points) == sorted(m.id for m in expected)
    assert [r[0] for r in rows] == [m.id for m in expected]
    per_token = part.settings().get("view") == "token"
    for m, row in zip(expected, rows, strict=True):
        cal = ROWS[m.id]
        x, y = points[m.id]
        if m.workload == "decode":  # at its batch, its measured step (per token: / batch)
            assert (x, y) == pytest.approx((m.batch, m.value * 1e3 / (m.batch if per_token
                                                                     else 1)))
        else:  # at its pass's FLOP per byte, the FLOP/s it achieved
            r = cnn_inference_time(m.hardware, m.model, m.weight_bits, m.batch, "peak")
            assert (x, y) == pytest.approx((float(r.flops / r.bytes_moved),
                                            float(r.flops) / m.value))
        assert row[1] == m.system and row[2] == get_stack(m.stack).label
        assert row[4] == f"{m.batch:,}" and row[9] == m.source
        assert row[5:8] == [_ms(cal.measured_s), _ms(cal.peak_s), _ms(cal.achievable_s)]
        assert cal.measured_s == m.value
        assert row[8] == f"{cal.ratio:.2f}" == f"{cal.measured_s / cal.achievable_s:.2f}"


def _check_no_point(part, hw) -> None:
    """No measured mark anywhere (so no legend entry); the sentence names the class's
    cases of the part's workload that ran on other devices."""
    for fig in part.figures.values():
        assert not [m for m in _measured_marks(fig) if m.visible]
        assert not [e for e in fig.labkit_header.entries() if e[0].startswith("measured")]
    details = html.unescape(part.details.value)
    assert not _table(part.details.value)
    assert f"no published measurement in labkit's set ran on the {hw.name}" in details
    cls = device_class_of(hw)
    elsewhere = [m for m in MEASUREMENTS if m.workload == _workload(part)
                 and m.hardware != hw.id and device_class_of(m.hardware).id == cls.id]
    assert elsewhere, f"the {cls.label} class has no case to name"
    for m in elsewhere:
        assert f"<code>{m.id}</code>" in details
        assert get_hardware(m.hardware).name in details
    ratios = [ROWS[m.id].ratio for m in elsewhere]
    assert f"from {min(ratios):.2f} to {max(ratios):.2f}" in details


@pytest.mark.parametrize("track", sorted(TRACKS))
def test_part_a_shows_the_measured_cases_of_the_tracks_device(track, tmp_path, monkeypatch):
    part = _part(track, tmp_path, monkeypatch)
    expected = [m for m in MEASUREMENTS if m.hardware == part.hw.id]
    assert all(m.workload == _workload(part) for m in expected)
    if expected:
        _check_points_and_table(part, expected)
        fig = part.figures[CHART[_workload(part)]]
        legend = [e[0] for e in fig.labkit_header.entries()]
        assert [lab for lab in legend if lab.startswith("measured")] == [
            str(m.labels[0]) for m in _measured_marks(fig) if m.visible]
    else:
        _check_no_point(part, part.hw)


def test_cloud_points_follow_the_view_and_the_model(tmp_path, monkeypatch):
    part = _part("cloud_fleet", tmp_path, monkeypatch)
    expected = [m for m in MEASUREMENTS if m.hardware == part.hw.id]
    fig = part.figures["batch"]
    marks = {str(m.labels[0]): m for m in _measured_marks(fig)}
    same = {m.id for m in expected if m.model == part.model.id}
    assert set(marks) == {f"measured, {part.model.name}", "measured, other models"}
    assert set(marks[f"measured, {part.model.name}"].names) == same
    assert set(marks["measured, other models"].names) == {m.id for m in expected} - same
    part.controls["view"].value = "step"
    _check_points_and_table(part, expected)
    y_scale = fig.marks[0].scales["y"]
    ys = [y for _, y in _points(part).values()]
    assert y_scale.min <= min(ys) and max(ys) <= y_scale.max  # every point on the chart


def test_the_papers_pe_has_no_measured_point(tmp_path, monkeypatch):
    part = _part("cloud_fleet", tmp_path, monkeypatch)
    part.controls["device"].value = "paper"
    _check_no_point(part, get_hardware("ahbm-pe"))
    part.controls["device"].value = "track"
    _check_points_and_table(part, [m for m in MEASUREMENTS if m.hardware == part.hw.id])


def test_a_cnn_track_on_a_measured_device_gets_its_points(tmp_path, monkeypatch):
    track = dataclasses.replace(TRACKS["robotaxi"], hardware_id="jetson-agx-orin-gpu",
                                model_id="resnet-50")
    part = _part(track, tmp_path, monkeypatch)
    expected = [m for m in MEASUREMENTS if m.hardware == "jetson-agx-orin-gpu"
                and m.workload == "cnn"]                # a CNN track shows the CNN cases
    assert expected and any(m.hardware == "jetson-agx-orin-gpu" and m.workload == "decode"
                            for m in MEASUREMENTS)
    _check_points_and_table(part, expected)
    scales = part.figures["roofline"].marks[0].scales
    xy = np.asarray(list(_points(part).values()))
    assert scales["x"].min <= xy[:, 0].min() and xy[:, 0].max() <= scales["x"].max
    assert scales["y"].min <= xy[:, 1].min() and xy[:, 1].max() <= scales["y"].max


def test_a_modified_device_is_not_the_measured_one():
    h100 = get_hardware("h100-sxm")
    assert device_cases(h100, "decode")
    faster = dataclasses.replace(h100, memory_bandwidth=2 * h100.memory_bandwidth)
    assert device_cases(faster, "decode") == ()


@pytest.mark.parametrize("track", sorted(TRACKS))
def test_results_and_reveal_record_where_real_systems_sit(track, tmp_path, monkeypatch):
    """The student's report carries the cases on screen (else the class's elsewhere) and
    measured / achievable over them; the reveal's sentence says the same numbers."""
    part = _part(track, tmp_path, monkeypatch)
    r = part.results
    own = [m.id for m in MEASUREMENTS if m.hardware == part.hw.id]
    cls = device_class_of(part.hw).id
    elsewhere = [m.id for m in MEASUREMENTS if m.workload == _workload(part)
                 and m.hardware != part.hw.id and device_class_of(m.hardware).id == cls]
    assert r["measured_cases"] == own
    assert r["measured_elsewhere"] == ([] if own else elsewhere)
    ratios = [ROWS[i].ratio for i in own or elsewhere]
    assert r["measured_over_achievable"] == [min(ratios), max(ratios)]
    span = (f"{min(ratios):.2f}x" if f"{min(ratios):.2f}" == f"{max(ratios):.2f}"
            else f"{min(ratios):.2f}-{max(ratios):.2f}x")
    assert span in r["real_systems"] and part.hw.name in r["real_systems"]
    assert r["achievable_over_peak"] > 1
    part.predict.commit(part.expected)
    reveal = html.unescape(part._reveal_html.value)
    assert r["real_systems"] in reveal
    assert f"{r['achievable_over_peak']:.2g}x the peak" in reveal
    if part.model.is_transformer:  # the two largest derating terms, largest first
        from labkit.physics.roofline import derating_contributions

        s = part.settings()
        terms = derating_contributions(part.hw, part.model, int(s["batch"]),
                                       int(s["context"]), int(s["weight_bits"]),
                                       int(s["kv_bits"]), part.tp)
        top = sorted(terms, key=lambda t: -t.added_step_s)[:2]
        assert [label for label, _ in r["largest_derating_terms"]] == [t.label for t in top]
        assert all(t.label in reveal for t in top)


@pytest.mark.parametrize("scope", ["stack", "class", "all classes"])
def test_the_band_sentence_says_whose_band_it_is(scope):
    """A kernel library's own band names its kernels, a class's its class; a pooled one
    (a class of too few families) says it is every class's, and why; each states the
    percentiles, counts and coverage."""
    import dataclasses

    from labkit.labs.accelerators.stack_text import band_text
    from labkit.plans.stacks import stack_choices
    from labkit.registries.bands import ClassBand

    b = ClassBand("phone", 0.71, 1.74, (0.025, 0.975), 25, 8, 0.96, scope,
                  "llama.cpp" if scope == "stack" else None)
    choice = next(c for c in stack_choices(get_hardware("a17-pro"), "decode")
                  if c.kernels == "llama.cpp")
    said = band_text(dataclasses.replace(choice, band=b), "phone/laptop SoC")
    assert "0.71-1.74x achievable" in said and "2.5th to 97.5th percentile" in said
    assert "25 cases from 8 source families" in said and "held 96%" in said
    pooled = "every device class" in said and "too few source families" in said
    assert pooled == (scope == "all classes")
    assert ("published phone/laptop SoC systems run" in said) == (scope == "class")
    assert ("on llama.cpp kernels run" in said) == (scope == "stack")
