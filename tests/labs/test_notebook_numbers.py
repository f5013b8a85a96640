"""The notebooks' numbers are the track's own, and feasible.

1. Every number a notebook's markdown shows is a value the builder computed for the track:
   a number in the notebook's code cells (the exercise data), a field of the track, its
   hardware or model, a value the glossary or an exercise quotes
   (:func:`labkit.course.scaffold.glossary_values`, :attr:`Exercise.values`), the lab's
   time estimate or the cells' nbgrader points -- within the rounding it is shown with, in
   the unit written after it. The rest is a short explicit allowlist (:data:`ALLOWED`):
   lab names, ordinals, numbered lists, citations, and the names of the hardware, model,
   track and stakeholder. Code spans and math are code, not prose.
2. Every exercise's answer lies in the feasible region its part shows: a demand the
   deployment serves, a batch within memory and the latency budget, a rate below the
   device's throughput (the ring's Exercise C once asked for 26.27 windows/s from a device
   that processes at most 6.85).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from labkit import grading
from labkit.core.grids import context_options
from labkit.course.build import load_spec
from labkit.course.scaffold import glossary_values, notebook_text
from labkit.labs import LABS
from labkit.physics.batching import step_tables
from labkit.physics.roofline import decode_roofline
from labkit.plans.design import (
    cameras_and_fps,
    design_check,
    fleet_users,
    scenario,
    vehicle_frame,
)
from labkit.plans.serving import release_guardrails, serving_plan, track_capacity
from labkit.plans.speculation import speculation_of, speculation_point, start_bits
from labkit.registries.hardware import get_hardware
from labkit.registries.models import get_model
from labkit.tracks import BUILTIN_TRACKS, Track, get_track

ROOT = Path(__file__).resolve().parents[2]
TRACK_IDS = [t.id for t in BUILTIN_TRACKS]
CASES = [(lab, track) for lab in LABS for track in TRACK_IDS]

CODE_SPAN = re.compile(r"`[^`]*`")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)
# A number, and the unit written after it (if any).
QUANTITY = re.compile(
    r"(?<![\w.*^/])(\d[\d,]*(?:\.\d+)?)"
    r"(?:\s?(µs|us|ms|min|s|h|kB|MB|GB|TB|KiB|MiB|B|%|×|x|mWh|Wh|kWh|mJ|µJ|J|mW|W|MFLOP|GFLOP|MHz"
    r"|GHz|k|M|million))?(?![\w])")
SCALES: dict[str | None, tuple[float, ...]] = {
    None: (1.0,), "µs": (1e-6,), "us": (1e-6,), "ms": (1e-3,), "s": (1.0,), "min": (60.0,),
    "h": (3600.0,), "kB": (1e3,), "MB": (1e6,), "KiB": (1024.0,), "MiB": (1024.0**2,),
    "GB": (1e9,), "TB": (1e12,), "B": (1.0,),
    "%": (1e-2,), "×": (1.0,), "x": (1.0,), "mWh": (1.0, 3.6), "Wh": (1.0, 3600.0),
    "kWh": (1e3,), "mJ": (1e-3,), "µJ": (1e-6,), "J": (1.0,), "mW": (1e-3,), "W": (1.0,),
    "MFLOP": (1e6,), "GFLOP": (1e9,), "MHz": (1e6,), "GHz": (1e9,), "k": (1e3, 1024.0),
    "M": (1e6,), "million": (1e6,),
}
ALLOWED = (
    re.compile(r"\bLab [12]\b"),                       # the labs' names
    re.compile(r"\b\d+(?:st|nd|rd|th)\b"),             # ordinals
    re.compile(r"^\s*\d+\.\s", re.M),                  # a numbered list's markers
    re.compile(r"^- .*\*.*\b(?:19|20)\d\d\b.*$", re.M),  # a citation (authors, *title*, year)
    re.compile(r"\bsection \d+(?:\.\d+)*|§\s?\d+(?:\.\d+)*"),  # a section of the paper
)


@cache
def _notebook(lab: str, track: str):
    return load_spec(ROOT, LABS[lab]).build_notebook(track)


# Typed into text another module owns, with no value behind it: (track, number) -> where.
KNOWN_TYPED = {("oura_ring", "64 MHz"): "src/labkit/tracks/oura_ring.py narrative (the "
                                        "core's clock: no hardware field holds it)"}


@cache
def _exercise(lab: str, track: str, part: str):
    return load_spec(ROOT, LABS[lab]).EXERCISES[part](get_track(track))


def _constants(lab: str) -> list[float]:
    """The spec's build-time constants (``TARGET_DAY_CHOICES``, ``MEMO_WORDS``, ...)."""
    spec = load_spec(ROOT, LABS[lab])
    return [x for name, v in vars(spec).items() if name.isupper()
            for x in _numbers(v, 1 if isinstance(v, list | tuple) else 0)]


def _numbers(x: object, depth: int = 0) -> Iterator[float]:
    """Every number in a track, hardware or model record (one level of nesting)."""
    if isinstance(x, bool):
        return
    if isinstance(x, int | float):
        yield float(x)
    elif depth < 2 and dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            yield from _numbers(getattr(x, f.name), depth + 1)
    elif depth < 2 and isinstance(x, dict):
        for v in x.values():
            yield from _numbers(v, depth + 1)
    elif depth < 2 and isinstance(x, list | tuple):
        for v in x:
            yield from _numbers(v, depth + 1)


def _points(nb) -> list[float]:
    """Every cell's points, and the sums the header announces (all, completion, autograded,
    manual)."""
    done = auto = manual = 0.0
    each = []
    for cell in nb.cells:
        meta = cell.metadata["nbgrader"]
        if not meta.get("grade"):
            continue
        pts = float(meta.get("points", 0))
        each.append(pts)
        if "expect_committed(" in cell.source:
            done += pts
        elif meta.get("solution"):
            manual += pts
        else:
            auto += pts
    return [*each, done, auto, manual, done + auto + manual]


def computed_values(lab: str, track: str) -> list[float]:
    """The values the builder computed for ``track``: what a markdown number may show."""
    t = get_track(track)
    nb = _notebook(lab, track)
    code = notebook_text(c for c in nb.cells if c.cell_type == "code")
    pool = [float(x.replace(",", "")) for x in re.findall(r"(?<![\w.])\d[\d_,]*(?:\.\d+)?"
                                                         r"(?:e[+-]?\d+)?", code)
            if x.replace(",", "").replace("_", "").replace(".", "", 1).isdigit()
            or "e" in x]
    pool += list(_numbers(t)) + list(_numbers(get_hardware(t.hardware_id)))
    pool += list(_numbers(get_model(t.model_id))) + list(glossary_values(t).values())
    pool += [t.events_per_day, *_constants(lab)]
    if scenario(t) == "vehicle":  # Lab 2's hooks quote the cameras and their frame rate
        pool += [float(x) for x in cameras_and_fps(t)]
    if scenario(t) == "fleet":  # ... and the fleet's live conversations
        pool.append(float(fleet_users(t)))
    for part in "ABCD":
        pool += list(_exercise(lab, track, part).values)
    info = LABS[lab]
    pool += [*info.minutes, *(m for pair in info.part_minutes.values() for m in pair)]
    return pool + _points(nb)


def _matches(text: str, unit: str | None, pool: list[float]) -> bool:
    decimals = len(text.split(".")[1]) if "." in text else 0
    x = float(text.replace(",", ""))
    for scale in (*SCALES[unit], 1.0):
        shown, tol = x * scale, 0.5 * 10 ** -decimals * scale * 1.0001
        if any(abs(shown - v) <= tol + 1e-12 * abs(v) for v in pool):
            return True
    return False


def unexplained_numbers(text: str, pool: list[float], names: tuple[str, ...] = ()) -> list[str]:
    """The numbers in ``text`` (markdown) that neither a computed value nor the allowlist
    explains."""
    plain = MATH.sub(" ", CODE_SPAN.sub(" ", text))
    for name in sorted(names, key=len, reverse=True):
        plain = plain.replace(name, " ")
    for pattern in ALLOWED:
        plain = pattern.sub(" ", plain)
    return [m.group(0) for m in QUANTITY.finditer(plain)
            if not _matches(m.group(1), m.group(2), pool)]


def _names(t: Track) -> tuple[str, ...]:
    return (t.label, t.stakeholder.name, get_hardware(t.hardware_id).name,
            get_model(t.model_id).name)


def test_the_check_catches_a_typed_number_and_spares_computed_ones():
    pool = [0.05, 4096.0, 0.2, 365.0]
    assert unexplained_numbers("a TPOT budget of 50 ms at 4,096 tokens, cut by 20%", pool) == []
    assert unexplained_numbers("about ~70 ms on a 10 mW MCU", pool) == ["70 ms", "10 mW"]
    assert unexplained_numbers("in exactly 30 days", pool) == ["30"]
    assert unexplained_numbers("- R. Pope, *Scaling*, MLSys 2023 (arXiv:2211.05102)", pool) == []
    assert unexplained_numbers("In Lab 1 you chose; `1 GB = 1e9 bytes`; $2N$", pool) == []
    assert unexplained_numbers("H100 SXM5 80GB runs it", pool, ("H100 SXM5 80GB",)) == []


@pytest.mark.parametrize(("lab", "track"), CASES)
def test_every_markdown_number_is_a_computed_value(lab, track):
    t = get_track(track)
    pool = computed_values(lab, track)
    found = {}
    for cell in _notebook(lab, track).cells:
        if cell.cell_type != "markdown":
            continue
        bad = [n for n in unexplained_numbers(notebook_text([cell]), pool, _names(t))
               if (track, n) not in KNOWN_TYPED]
        if bad:
            found[cell.metadata["nbgrader"]["grade_id"]] = bad
    assert not found, found


# -- feasibility ---------------------------------------------------------------------------

def _solve(lab: str, track: str, part: str) -> dict[str, object]:
    """The exercise's data cell and the instructor's solution, run."""
    ex = _exercise(lab, track, part)
    ns: dict[str, object] = {k: getattr(grading, k) for k in dir(grading)
                             if k.startswith("expect_")}
    exec(ex.data, ns)  # type: ignore[attr-defined]
    exec(ex.solution, ns)  # type: ignore[attr-defined]
    return ns


def _step_s(t: Track, batch: float, context: float, mode: str, tp: int | None = None) -> float:
    return float(decode_roofline(t.hardware_id, t.model_id, batch, context, t.weight_bits,
                                 t.kv_bits, tp=t.devices_per_replica if tp is None else tp,
                                 mode=mode).step_s)


def _batch_s(t: Track, n: int) -> list[float]:
    step, _ = step_tables(t.hardware_id, t.model_id, n, weight_bits=t.weight_bits,
                          kv_bits=t.kv_bits, window_bytes=t.window_bytes)
    return [float(x) for x in step]


def _lab1_a(t: Track, ns: dict[str, object]) -> None:
    """A demand Part A's control reaches, served by the devices the track may use."""
    rate = float(ns["answer_A"]) / (t.active_hours_per_day * 3600)  # type: ignore[arg-type]
    assert min(t.demand_rate_per_s / 10, t.min_demand_rate_per_s) <= rate
    assert rate <= 10 * t.demand_rate_per_s
    plan = serving_plan(t, demand_rate_per_s=rate, with_baseline=False)
    assert plan.feasible and not plan.exceeds_max_replicas, plan.reason


def _lab1_b(t: Track, ns: dict[str, object]) -> None:
    """The target fits memory at the answer, and (a language model) its step meets TPOT;
    (a CNN) a batch of the target finishes within the deadline."""
    if t.is_transformer:
        n, ctx = int(ns["TARGET_SESSIONS"]), float(ns["answer_B"])  # type: ignore[arg-type]
        shown = context_options(get_model(t.model_id).max_context, int(t.context_tokens or 0))
        assert shown[0] <= ctx <= shown[-1]  # Part B's context control reaches it
        assert track_capacity(t, context_tokens=ctx).max_sessions >= n
        assert _step_s(t, n, ctx, "achievable") <= t.slo_s
    else:
        n, state = int(ns["TARGET_IN_FLIGHT"]), float(ns["answer_B"])  # type: ignore[arg-type]
        assert _batch_s(t, n)[n - 1] <= t.slo_s
        assert n * state <= track_capacity(t).memory_bytes


def _lab1_c(t: Track, ns: dict[str, object]) -> None:
    """The batch fits memory (and, for a language model, the TPOT budget); a rate is below
    what the device processes with a batch that fits. A model checking its own guesses:
    the exercise's pass times and tail are Part C's at its starting weights, and the answer
    is that point's tail TPOT."""
    if t.speculates:
        k = int(ns["K"])  # type: ignore[call-overload]
        point = speculation_point(t, k=k, weight_bits=start_bits(t))
        assert 0 < k <= speculation_of(t).max_tokens
        assert float(ns["PASS_MS"][k]) == pytest.approx(point.check.pass_s * 1e3)  # type: ignore[index]
        assert float(ns["answer_C"]) == pytest.approx(point.tpot_tail_s * 1e3, rel=1e-3)  # type: ignore[arg-type]
        return
    cap = track_capacity(t).max_sessions
    if t.is_transformer:
        lengths = list(ns["OUTPUT_TOKENS"])  # type: ignore[call-overload]
        ctx = float(t.prompt_tokens or 0) + max(lengths)
        assert track_capacity(t, context_tokens=ctx).max_sessions >= len(lengths)
        assert _step_s(t, len(lengths), ctx, "achievable") <= t.slo_s
        return
    table = list(ns["BATCH_MS"])  # type: ignore[call-overload]
    assert len(table) <= cap
    answer = ns["answer_C"]
    throughput = max(b / _batch_s(t, len(table))[b - 1] for b in range(1, len(table) + 1))
    if isinstance(answer, int):  # a batch size, at the track's rate
        assert 1 <= answer <= cap
        assert t.demand_rate_per_s <= answer / _batch_s(t, answer)[answer - 1]
    else:  # an arrival rate
        assert 0 < float(answer) <= throughput * 1.0001


def _lab1_d(t: Track, ns: dict[str, object]) -> None:
    r = dict(ns["release_D"])  # type: ignore[call-overload]
    g = release_guardrails(t.id, weight_bits=r["weight_bits"],
                           kv_bits=r.get("kv_bits", t.kv_bits), policy=r["policy"],
                           devices_per_replica=r["devices_per_replica"],
                           demand_rate_per_s=r["rate_per_s"])
    assert g.passed, g.reason


def _lab2_a(t: Track, ns: dict[str, object]) -> None:
    """The batch fits memory and the TPOT budget on Part A's peak roofline; a busy share
    is below one."""
    if t.is_transformer:
        b = int(ns["MAX_BATCH"])  # type: ignore[arg-type]
        assert b <= track_capacity(t).max_sessions
        assert _step_s(t, b, float(t.context_tokens or 0), "peak") <= t.slo_s
        assert float(ns["answer_A"]) >= 1  # type: ignore[arg-type]
    else:
        assert 0 < float(ns["answer_A"]) < 1  # type: ignore[arg-type]


def _lab2_b(t: Track, ns: dict[str, object]) -> None:
    """The context fits the batch in memory and its step in the TPOT budget; a duty is a
    share; a frame rate is below what one SoC processes."""
    answer = float(ns["answer_B"])  # type: ignore[arg-type]
    if t.is_transformer:
        b, d = int(ns["BATCH"]), int(ns["DEVICES"])  # type: ignore[arg-type]
        assert track_capacity(t, context_tokens=answer).max_sessions >= b
        r = decode_roofline(t.hardware_id, t.model_id, b, answer, t.weight_bits, t.kv_bits,
                            tp=1, mode="achievable")
        step = (r.weight_step_s + r.compute_step_s + r.kv_step_s) / d + r.overhead_step_s
        assert float(step) <= t.slo_s * 1.01
    elif "ACTIVE_J_PER_WINDOW" in ns:
        assert 0 < answer <= 1
    else:
        frame_s, _ = vehicle_frame(t, t.weight_bits)
        assert 0 < answer <= 1 / frame_s


def _lab2_c(t: Track, ns: dict[str, object]) -> None:
    assert float(ns["answer_C"]) > 0  # type: ignore[arg-type]


def _lab2_d(t: Track, ns: dict[str, object]) -> None:
    assert design_check(t.id, dict(ns["design_D"])).feasible  # type: ignore[call-overload]


FEASIBLE = {("lab1", "A"): _lab1_a, ("lab1", "B"): _lab1_b, ("lab1", "C"): _lab1_c,
            ("lab1", "D"): _lab1_d, ("lab2", "A"): _lab2_a, ("lab2", "B"): _lab2_b,
            ("lab2", "C"): _lab2_c, ("lab2", "D"): _lab2_d}


@pytest.mark.parametrize(("lab", "track", "part"),
                         [(lab, track, p) for lab, track in CASES for p in "ABCD"])
def test_every_exercise_answer_is_feasible_on_its_track(lab, track, part):
    FEASIBLE[(lab, part)](get_track(track), _solve(lab, track, part))


def test_the_ring_is_not_asked_for_a_rate_it_cannot_process():
    t = get_track("oura_ring")
    ns = _solve("lab1", "oura_ring", "C")
    most = max(b / s for b, s in enumerate(_batch_s(t, 16), 1))
    assert float(ns["answer_C"]) <= most * 1.0001  # type: ignore[arg-type]
    assert not math.isclose(float(ns["answer_C"]), 26.27, rel_tol=0.01)  # type: ignore[arg-type]
