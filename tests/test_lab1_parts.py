"""Lab 1 parts for every track: the memory wall, gated reveals, report, ledger (no dead knobs:
tests/labs/test_no_dead_knobs.py)."""

from __future__ import annotations

import ast
import base64
import json
import re
from pathlib import Path

import bqplot as bq
import ipywidgets as ipw
import pytest

import labkit.labs.inference_economy as ie
from labkit import ui as lw
from labkit.core.answers import AnswerStore, read_ledger
from labkit.labs.inference_economy import Lab, answer_key
from labkit.labs.inference_economy.base import Part
from labkit.labs.parts import PARTS
from labkit.registries.models import get_model
from labkit.tracks import TRACKS

TRACK_IDS = list(TRACKS)
BATCHING = [t for t, tr in TRACKS.items() if not tr.speculates]  # Part C batches requests

# The computed answers at each track's defaults (a regression pin on the lesson design).
EXPECTED = {
    "cloud_fleet": {"A": "weeks", "B": "many", "C": "continuous", "D": "slo"},
    "iphone": {"A": "days", "B": "modest", "C": "tail_ok", "D": "memory"},
    # ring D: the naive FP32 pass + its MFCC front end (counted since issue #23, as in
    # Lab 2) miss the 330 ms deadline before the energy budget is reached
    "oura_ring": {"A": "days", "B": "few", "C": "none", "D": "slo"},
    # robotaxi D: the naive 16-bit engine misses the deadline when all eight cameras fire
    # at once (the naive plan no longer ships)
    "robotaxi": {"A": "never", "B": "many", "C": "dynamic", "D": "slo"},
}
# Whether Part B's controls can push weights + one session past memory.
OOM_REACHABLE = {"cloud_fleet": True, "iphone": True, "oura_ring": True, "robotaxi": False}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABKIT_LEDGER", str(tmp_path / "ledger" / "ledger.json"))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    return tmp_path


@pytest.fixture
def make_lab(workdir):
    def make(track: str, **kw: object) -> Lab:
        return Lab(track, store=AnswerStore(workdir / "labkit_answers.json"), **kw)
    return make


# -- structure ------------------------------------------------------------------------------

@pytest.mark.parametrize("track", TRACK_IDS)
def test_lab_builds_every_part_with_the_api(make_lab, track):
    lab = make_lab(track)
    header = lab.header()
    tr = TRACKS[track]
    assert isinstance(header, ipw.HTML)
    for text in (tr.label, tr.stakeholder.name, tr.stakeholder.role, "minutes"):
        assert lw.esc(text) in header.value
    for letter in PARTS:
        part = lab.part(letter)
        assert lab.part(letter.lower()) is part  # cached
        assert isinstance(part.predict, lw.Prediction)
        assert isinstance(part.checkpoint, lw.Checkpoint)
        assert isinstance(part.explore, ipw.VBox)
        assert isinstance(part.reveal, ipw.Widget) and isinstance(part.math, lw.MathPeek)
        assert part.controls and part.figures and part.callouts
        assert all(isinstance(f, bq.Figure) for f in part.figures.values())
        assert all(isinstance(c, lw.Callout) for c in part.callouts.values())
        assert all(isinstance(c, ipw.ValueWidget) for c in part.controls.values())
        banner = part.banner().value
        assert lw.esc(tr.label) in banner and lw.esc(ie.PART_TITLES[letter]) in banner
        assert lw.esc(tr.narrative.hooks[letter]) in banner
        assert part.predict.key == answer_key(track, letter, "prediction")
        assert part.math.body  # formulas with the current numbers
        for fig in part.figures.values():
            assert all(ax.label for ax in fig.axes)
    with pytest.raises(ValueError):
        lab.part("E")


@pytest.mark.parametrize("track", TRACK_IDS)
def test_computed_answers_at_the_defaults(make_lab, track):
    lab = make_lab(track)
    assert {p: lab.part(p).expected for p in PARTS} == EXPECTED[track]
    for p in PARTS:
        part = lab.part(p)
        assert part.expected in part.predict.options
        assert part.checkpoint_expected in part.checkpoint.options


def test_the_lab_code_never_names_a_track_id():
    """Differences between tracks come from track data only (docstrings may give examples)."""
    for path in Path(ie.__file__).parent.glob("*.py"):
        _assert_names_no_track_id(ast.parse(path.read_text()), path.name)


def _assert_names_no_track_id(tree: ast.Module, where: str) -> None:
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef)
                  and n.body and isinstance(n.body[0], ast.Expr)
                  and isinstance(n.body[0].value, ast.Constant)}
    literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                and isinstance(n.value, str) and id(n) not in docstrings]
    for tid in TRACKS:
        assert not [t for t in literals if tid in t], f"track id {tid!r} in {where}"


@pytest.mark.parametrize("track", TRACK_IDS)
def test_controls_keep_invalid_states_unreachable(make_lab, track):
    lab = make_lab(track)
    tr = TRACKS[track]
    for letter in PARTS:
        for name, ctl in lab.part(letter).controls.items():
            if "bits" in name:
                assert {v for _, v in ctl.options} <= set(lw.PRECISIONS)
            if name == "devices":
                assert ctl.min == 1 and ctl.max > 1
            if name == "context":
                assert max(v for _, v in ctl.options) <= get_model(tr.model_id).max_context
            if name == "output_tokens":
                assert tr.prompt_tokens + ctl.max <= get_model(tr.model_id).max_context
            if name == "batch":
                cap = lab.part("B").default_cap.max_sessions
                assert ctl.min >= 1 and ctl.max <= max(cap, tr.batch_size)


@pytest.mark.parametrize("track", TRACK_IDS)
def test_charts_use_fixed_or_explicit_domains(make_lab, track):
    lab = make_lab(track)
    for letter in PARTS:
        for fig in lab.part(letter).figures.values():
            for ax in fig.axes:
                sc = ax.scale
                if isinstance(sc, bq.OrdinalScale):
                    continue
                assert sc.min is not None and sc.max is not None and sc.min < sc.max


# -- the memory wall -----------------------------------------------------------------------

def _push_memory(part: Part) -> None:
    for name, ctl in part.controls.items():
        if name == "devices":
            ctl.value = ctl.min
        elif getattr(ctl, "options", None):
            ctl.value = max(v for _, v in ctl.options)
        else:
            ctl.value = ctl.max


@pytest.mark.parametrize("track", TRACK_IDS)
def test_part_b_memory_wall_is_a_failure_callout(make_lab, track):
    part = make_lab(track).part("B")
    for name, ctl in part.controls.items():   # the track's plan, not the starting candidate
        ctl.value = part._defaults()[name]
    assert not part.callouts["oom"].active and not part.results["oom"]  # the plan fits
    _push_memory(part)
    r = part.results
    assert r["max_sessions"] >= 0
    if OOM_REACHABLE[track]:
        oom = part.callouts["oom"]
        assert r["oom"] and r["max_sessions"] == 0
        assert oom.active and oom.kind == "danger" and "FAILURE" in oom.value
        assert "Out of memory" in oom.title
        assert not part.callouts["boundary"].active
        assert "OOM" in part.readout.value
    else:  # the robotaxi's 24 GB never runs out: memory is not its wall (the deadline is)
        assert not r["oom"] and not part.callouts["oom"].active
        assert part.callouts["boundary"].active != part.callouts["deadline"].active


def test_part_b_cloud_one_gpu_at_16_bit_does_not_fit(make_lab):
    part = make_lab("cloud_fleet").part("B")
    part.controls["devices"].value = 1
    assert part.results["oom"] and part.callouts["oom"].active
    assert "weights" in part.callouts["oom"].detail
    part.controls["weight_bits"].value = 4
    assert not part.results["oom"] and not part.callouts["oom"].active


def test_part_d_oom_candidate_fails_memory_not_a_number(make_lab):
    part = make_lab("iphone").part("D")
    part.controls["weight_bits"].value = 16
    assert part.results["binding"] == "memory" and part.callouts["memory"].active
    assert part.results["daily_cost"] is None and not part.callouts["boundary"].active
    part.controls["weight_bits"].value = 4
    assert part.results["passed"] and part.callouts["boundary"].active


def test_failure_and_boundary_callouts_differ(make_lab):
    part = make_lab("oura_ring").part("A")  # 80.7 mWh/day against an 8 mWh budget
    assert part.callouts["budget"].active and not part.callouts["boundary"].active
    part.controls["demand"].value = part.controls["demand"].base ** part.controls["demand"].min
    assert not part.callouts["budget"].active and part.callouts["boundary"].active
    assert "FAILURE" not in part.callouts["boundary"].value


# -- predictions and reveals ---------------------------------------------------------------

@pytest.mark.parametrize("letter", PARTS)
@pytest.mark.parametrize("track", TRACK_IDS)
def test_reveal_is_empty_before_commit_and_compares_after(make_lab, track, letter):
    part = make_lab(track).part(letter)
    gate = part.explore.children[0]
    assert not part.predict.committed
    assert not part.reveal.revealed and part._reveal_html.value == ""
    assert part._reveal_html not in part.reveal.children
    assert not gate.revealed  # controls and charts wait for the prediction too
    part.predict.commit(part.expected)
    assert part.reveal.revealed and gate.revealed
    html = part._reveal_html.value
    assert "You predicted" in html and "matches" in html
    assert lw.esc(part.predict.label_for(part.expected)) in html or \
        part.predict.label_for(part.expected) in html


def test_wrong_prediction_is_shown_as_differing_and_revision_beside_it(make_lab):
    part = make_lab("cloud_fleet").part("A")
    part.predict.commit("never")
    assert "differs" in part._reveal_html.value
    part.predict.revise()
    part.predict.commit("weeks")
    html = part._reveal_html.value
    assert "revised to" in html and "matches" in html
    st = part.state()
    assert st["prediction"]["first_correct"] is False
    assert st["prediction"]["current_correct"] is True


def test_reveal_updates_live_as_controls_move(make_lab):
    part = make_lab("cloud_fleet").part("A")
    part.predict.commit("weeks")
    before = part._reveal_html.value
    part.controls["demand"].value = part.controls["demand"].base ** part.controls["demand"].max
    assert part._reveal_html.value != before
    assert "days" in part._reveal_html.value


def test_explore_ungated_option(make_lab):
    part = make_lab("iphone", gate_explore=False).part("B")
    assert not part.predict.committed
    assert isinstance(part.explore.children[0], ipw.VBox)
    assert not isinstance(part.explore.children[0], lw.RevealGate)
    assert not part.reveal.revealed


@pytest.mark.parametrize("track", TRACK_IDS)
def test_reopened_lab_restores_answers_locked_and_revealed(make_lab, workdir, track):
    lab = make_lab(track)
    for letter in PARTS:
        lab.part(letter).predict.commit(lab.part(letter).expected)
        lab.part(letter).checkpoint.commit(lab.part(letter).checkpoint_expected)
    fresh = Lab(track, store=AnswerStore(workdir / "labkit_answers.json"))  # autograde
    for letter in PARTS:
        part = fresh.part(letter)
        assert part.predict.committed and part.predict.locked
        assert part.checkpoint.committed and part.checkpoint.locked
        assert part.reveal.revealed and "You predicted" in part._reveal_html.value


@pytest.mark.parametrize("track", TRACK_IDS)
def test_state_is_json_serialisable(make_lab, track):
    lab = make_lab(track)
    for letter in PARTS:
        part = lab.part(letter)
        st = json.loads(json.dumps(part.state()))
        assert st["part"] == letter and st["settings"] == part.settings()
        assert st["prediction"]["entry"] is None and st["prediction"]["expected"] == part.expected
        part.predict.commit(part.expected)
        st = json.loads(json.dumps(part.state()))
        assert st["prediction"]["entry"]["first"] == part.expected
        assert st["results"]


# -- report, synthesis, ledger -------------------------------------------------------------

def _data_uri_text(html: str, mime: str) -> str:
    m = re.search(rf"data:{re.escape(mime)};charset=utf-8;base64,([A-Za-z0-9+/=]+)", html)
    assert m, f"no {mime} data URI"
    return base64.b64decode(m.group(1)).decode("utf-8")


@pytest.mark.parametrize("track", TRACK_IDS)
def test_report_and_synthesis_write_files_and_the_ledger(make_lab, workdir, track):
    lab = make_lab(track)
    for p in lab.parts():
        p.predict.commit(p.expected)
        p.checkpoint.commit(p.checkpoint_expected)
    md, data = lab.report()
    assert md.startswith("# Lab 1")
    for letter in PARTS:
        assert f"## Part {letter}" in md
    json.dumps(data)
    assert data["schema"] == "labkit-report" and data["track"]["id"] == track
    assert data["parts"]["B"]["prediction"]["entry"]["first"] == EXPECTED[track]["B"]
    assert len(data["takeaways"]) == 5

    box = lab.synthesis()
    html = " ".join(w.value for w in box.children if isinstance(w, ipw.HTML))
    assert "<a download=" in html
    assert _data_uri_text(html, "text/markdown").startswith("# Lab 1")
    snap = json.loads(_data_uri_text(html, "application/json"))
    assert snap["parts"]["A"]["settings"] == lab.part("A").settings()
    assert (workdir / "labkit_report.md").read_text().startswith("# Lab 1")
    assert json.loads((workdir / "labkit_report.json").read_text())["lab"] == "lab1"
    ledger = read_ledger(track)
    assert len(ledger) == 1 and ledger[0]["lab"] == "lab1"
    assert ledger[0]["choices"]["policy"] == lab.part("D").settings()["policy"]
    lab.synthesis()  # re-running the notebook does not repeat an identical entry
    assert len(read_ledger(track)) == 1
    assert (workdir / "ledger" / "ledger.json").exists()  # $LABKIT_LEDGER, not ~/.labkit


def test_memo_lives_only_in_the_graded_cell(make_lab):
    """One memo, the manually graded notebook cell: the synthesis has no second text box."""
    box = make_lab("robotaxi").synthesis()
    assert not any(isinstance(w, ipw.Textarea) for w in box.children)
    assert "graded memo cell below" in "".join(
        w.value for w in box.children if isinstance(w, ipw.HTML))


def test_autograde_keeps_existing_report_and_leaves_the_ledger_alone(make_lab, workdir,
                                                                      monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    (workdir / "labkit_report.md").write_text("student's report")
    lab = make_lab("iphone")
    lab.synthesis()
    assert (workdir / "labkit_report.md").read_text() == "student's report"
    assert (workdir / "labkit_report.json").exists()  # missing file: written
    assert not (workdir / "ledger" / "ledger.json").exists()


def test_synthesis_write_false_writes_nothing(make_lab, workdir):
    make_lab("cloud_fleet").synthesis(write=False)
    assert not (workdir / "labkit_report.md").exists()
    assert not (workdir / "ledger" / "ledger.json").exists()


def test_ledger_choices_are_what_later_labs_need(make_lab):
    lab = make_lab("cloud_fleet")
    lab.part("D").controls["weight_bits"].value = 8
    lab.part("D").controls["policy"].value = "continuous"  # the review starts at the naive one
    ch = lab.ledger_choices()
    assert ch["weight_bits"] == 8 and ch["policy"] == "continuous" and ch["cost_unit"] == "USD"
    assert set(ch) >= {"kv_bits", "devices_per_replica", "passed", "binding", "daily_cost",
                       "crossover_days", "max_sessions", "batching_winner"}
    json.dumps(ch)


@pytest.mark.parametrize("track", list(TRACKS))
def test_parts_a_and_b_weigh_the_same_model_the_same(make_lab, track):
    """One resident-weight count (blocks, LM head, untied embedding) for both parts: the
    cloud model once weighed 139 GB in Part A and 141 GB in Part B."""
    from labkit.physics.memory import resident_weight_bytes

    lab = make_lab(track)
    a, b = lab.part("A"), lab.part("B")
    want = resident_weight_bytes(TRACKS[track].model_id, int(a.controls["weight_bits"].value))
    assert a.results["weight_bytes"] == pytest.approx(want)
    if int(b.controls["weight_bits"].value) == int(a.controls["weight_bits"].value):
        assert b.results["weight_bytes"] == pytest.approx(want)


@pytest.mark.parametrize("track", BATCHING)
def test_part_c_never_shows_more_delivered_than_possible(make_lab, track):
    part = make_lab(track).part("C")
    for rate in (part.controls["rate"].min, part.controls["rate"].value,
                 part.controls["rate"].max):
        part.controls["rate"].value = rate
        for p, r in part.results["policies"].items():
            assert r["throughput_tokens_per_s"] <= r["capacity_tokens_per_s"] * (1 + 1e-12), p
        shown = re.sub(r"<[^>]+>", " ", part.details.value + part.readout.value)
        assert not re.search(r"\d{3,}(?:\.\d)?%", shown), shown  # no 'utilisation 1342.8%'


def test_part_b_under_a_hard_deadline_the_time_to_clear_is_the_wall(make_lab):
    """The robotaxi's memory holds hundreds of frames in flight; what caps the scheduler's
    eight is the hard deadline. The 16-bit engine as released clears them after 39.5 ms
    (one pass of 8 + 8 output steps) against 35 ms; 8-bit weights, or a second SoC (4 each),
    pass. Tracks without a hard deadline have no such check."""
    from labkit.physics.phases import cnn_inference_time, decision_time
    from labkit.plans.workload import pass_table_s, session_point

    part = make_lab("robotaxi").part("B")
    tr = part.track
    assert tr.hard_deadline and part.settings()["weight_bits"] == 16   # the candidate
    r = part.results
    assert not r["oom"] and r["max_sessions"] > 50 * tr.batch_size
    assert r["clear_s"] > tr.slo_s and part.callouts["deadline"].active
    assert "FAILURE" in part.callouts["deadline"].value
    assert not part.callouts["boundary"].active and not part.decision().passed
    # one number: Lab 2's pass of 8 frames (its Part A) plus each frame's output step
    pass8 = cnn_inference_time(tr.hardware_id, tr.model_id, 16, 8).latency_s
    out = decision_time(tr.hardware_id, tr.window_bytes, "achievable")
    assert r["clear_s"] == pytest.approx(pass8 + 8 * out, rel=1e-12)
    part.controls["weight_bits"].value = 8
    assert part.results["clear_s"] <= tr.slo_s and part.decision().passed
    assert part.results["clear_s"] == pytest.approx(pass_table_s(tr, 8)[-1], rel=1e-12)
    part.controls["weight_bits"].value = 16
    part.controls["devices"].value = 2
    p = session_point(tr, weight_bits=16, devices_per_replica=2)
    assert p.per_device == 4 and part.results["clear_s"] == p.clear_s <= tr.slo_s
    assert part.decision().passed and part.callouts["boundary"].active
    for other in ("cloud_fleet", "iphone", "oura_ring"):
        assert not TRACKS[other].hard_deadline
        assert "deadline" not in make_lab(other).part("B").callouts
