"""The ``labkit`` command line through a real subprocess: JSON contract and error lines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LABKIT = shutil.which("labkit", path=str(Path(sys.executable).parent)) or "labkit"


def band_of(device_class: str, stack: str | None = None):
    """The shipped band the CLI prints (tests/test_band.py: it is the computation's)."""
    from labkit.registries.bands import shipped_band
    from labkit.registries.stacks import get_stack

    return shipped_band(device_class, get_stack(stack).kernels if stack else None)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "error::DeprecationWarning:labkit"}
    return subprocess.run([LABKIT, *args], capture_output=True, text=True, timeout=60, env=env)


def run_json(*args: str) -> object:
    proc = run(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_roofline_prints_the_paper_figures():
    out = run_json("roofline", "--hardware", "ahbm-pe", "--model", "llama-3.1-70b",
                   "--context", "8192", "--batch", "1")
    assert out["critical_batch"] == pytest.approx(31.25)
    assert round(out["balance_context_tokens"] / 1e3, 1) == 13.4
    assert round(out["per_token_ms"]["total"]) == 562
    assert set(out["per_token_ms"]) >= {"weight", "compute", "kv", "total"}
    assert out["step_ms"] == pytest.approx(out["per_token_ms"]["total"])
    assert out["regime"] == "memory-bound"
    assert out["ai_flop_per_byte"] == pytest.approx(31.25)


def test_roofline_batch_256_and_options():
    out = run_json("roofline", "--hardware", "ahbm-pe", "--model", "llama-3.1-70b",
                   "--context", "8192", "--batch", "256")
    assert round(out["per_token_ms"]["total"], 1) == 29.7
    assert out["step_ms"] == pytest.approx(256 * out["per_token_ms"]["total"])
    out = run_json("roofline", "--hardware", "h100-sxm", "--model", "llama-3.1-70b",
                   "--tp", "8", "--weight-bits", "8", "--kv-bits", "8", "--mode", "achievable")
    assert out["per_token_ms"]["overhead"] == pytest.approx(0.3 + 80 * 0.070)  # + per layer
    assert out["per_token_ms"]["tp_comm"] > 0                       # 8-way all-reduce, NVLink
    assert out["fits_in_memory"] is True


def test_roofline_explain_lists_each_derating_term_and_they_add_up():
    out = run_json("roofline", "--hardware", "h100-sxm", "--model", "llama-3.1-70b",
                   "--tp", "4", "--batch", "8", "--context", "96", "--weight-bits", "8",
                   "--mode", "achievable", "--explain")
    ex = out["explain"]
    assert ex["device_class"] == "datacenter GPU"
    terms = ex["terms_ms"]
    assert {"bandwidth_efficiency", "bits_bandwidth", "layer_overhead_s",
            "tp_allreduce"} <= set(terms)
    assert all(v > 0 for v in terms.values()) and set(ex["sources"]) == set(terms)
    assert ex["peak_step_ms"] + sum(terms.values()) == pytest.approx(ex["achievable_step_ms"])
    assert ex["achievable_step_ms"] == pytest.approx(out["step_ms"])
    assert terms["layer_overhead_s"] == pytest.approx(80 * 0.070)       # 80 layers x 70 us
    phone = run_json("roofline", "--hardware", "snapdragon-8-gen3", "--model", "llama-3.2-1b",
                     "--weight-bits", "4", "--context", "128", "--explain")
    assert phone["explain"]["device_class"] == "phone/laptop SoC"
    assert "tp_allreduce" not in phone["explain"]["terms_ms"]          # one device, no TP


def test_roofline_explain_prints_the_band_around_achievable():
    from labkit.physics.stacks import SHIPPED

    args = ("roofline", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--batch", "8",
            "--mode", "achievable", "--explain")
    ex = run_json(*args)["explain"]
    band = band_of("datacenter")
    fast, slow = ex["band_step_ms"]
    assert fast == pytest.approx(ex["achievable_step_ms"] * band.low)
    assert slow == pytest.approx(ex["achievable_step_ms"] * band.high)
    assert "any stack" in ex["band_basis"] and f"{band.cases} cases" in ex["band_basis"]
    assert ex["stack"] is None and ex["stack_scale"] == 1.0
    own = run_json(*args, "--stack", "vllm")["explain"]           # vLLM's fitted term
    assert own["stack_scale"] == pytest.approx(SHIPPED.kernels[("datacenter", "vllm")].scale)
    assert own["stack_scale"] != 1.0
    assert own["achievable_step_ms"] > ex["achievable_step_ms"]  # the term slows vLLM here
    assert own["band_step_ms"][0] == pytest.approx(
        own["achievable_step_ms"] * band_of("datacenter", "vllm").low)
    ring = run_json("roofline", "--hardware", "stm32l4r5-nucleo", "--model", "llama-3.2-1b",
                    "--weight-bits", "4", "--context", "64", "--explain", "--stack",
                    "tflm-cmsis-nn")["explain"]                  # CMSIS-NN: its own band
    assert "tflm-cmsis-nn's kernels" in ring["band_basis"]
    m7 = run_json("roofline", "--hardware", "stm32h7a3-nucleo", "--model", "llama-3.2-1b",
                  "--weight-bits", "4", "--context", "64", "--explain")["explain"]
    core = SHIPPED.cores[("mcu", "cortex-m7")].scale       # a core's term, no stack named
    assert m7["stack_scale"] == pytest.approx(core) and core < 1.0
    assert m7["terms_ms"]["stack_terms"] < 0                # an M7 retires MACs faster
    assert m7["peak_step_ms"] + sum(m7["terms_ms"].values()) == pytest.approx(
        m7["achievable_step_ms"])


def test_roofline_explains_a_cnn_pass_on_its_stack_and_core():
    """A CNN has no decode loop: one pass, its terms switched on from peak, the stack's
    and core's fitted terms on top (they sum to achievable), and the kernels' band."""
    from labkit.physics.derating import get_mode
    from labkit.physics.phases import cnn_inference_time
    from labkit.physics.stacks import SHIPPED

    hw, model = "stm32l4r5-nucleo", "ds-cnn-kws"
    out = run_json("roofline", "--hardware", hw, "--model", model, "--weight-bits", "8",
                   "--explain", "--stack", "tflm-reference")
    assert {"flops", "bytes_moved", "pass_ms", "per_inference_ms", "regime"} <= set(out)
    assert "critical_batch" not in out and "balance_context_tokens" not in out
    assert out["pass_ms"]["total"] == pytest.approx(
        cnn_inference_time(hw, model, 8, 1, "peak").latency_s * 1e3)
    ex = out["explain"]
    scale = SHIPPED.scale("mcu", "tflm-reference", "cortex-m4")
    assert ex["core"] == "cortex-m4" and ex["stack_scale"] == pytest.approx(scale) != 1.0
    want = cnn_inference_time(hw, model, 8, 1, get_mode("achievable", hw, "cnn",
                                                        "tflm-reference")).latency_s
    assert ex["achievable_pass_ms"] == pytest.approx(want * 1e3)
    assert ex["peak_pass_ms"] + sum(ex["terms_ms"].values()) == pytest.approx(
        ex["achievable_pass_ms"])
    assert ex["terms_ms"]["stack_terms"] > 0            # reference kernels: slower
    assert set(ex["sources"]) == set(ex["terms_ms"])
    band = band_of("mcu", "tflm-reference")
    assert ex["band_pass_ms"] == pytest.approx(
        [ex["achievable_pass_ms"] * band.low, ex["achievable_pass_ms"] * band.high])
    fast = run_json("roofline", "--hardware", hw, "--model", model, "--weight-bits", "8",
                    "--explain", "--stack", "x-cube-ai")["explain"]
    assert fast["terms_ms"]["stack_terms"] < 0          # a graph compiler: faster
    assert fast["achievable_pass_ms"] < ex["achievable_pass_ms"]


def test_size_contract():
    out = run_json("size", "--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--users",
                   "256", "--context", "8192", "--tpot-ms", "50")
    assert {"devices_per_replica", "replicas", "total_devices", "binding_axis"} <= set(out)
    assert out["total_devices"] == out["devices_per_replica"] * out["replicas"]
    assert out["binding_axis"] in ("weights", "kv", "slo")


ECONOMY_KEYS = {
    "track": {"id", "label", "hardware_id", "model_id", "cost_unit", "setup_cost",
              "cost_per_event", "daily_budget", "demand_rate_per_s", "slo_kind", "slo_s"},
    "crossover": {"crossover_days", "daily_cost", "daily_basis", "cost_parts",
                  "events_per_day", "horizon_days", "annual_recurring_cost"},
    "phases": {"binding_phase", "latency_s", "prefill_s", "decode_s", "ttft_s", "tpot_s",
               "energy_per_request_j"},
    "capacity": {"max_sessions", "oom", "bytes_per_session", "weight_bytes", "memory_bytes",
                 "free_bytes", "devices", "reason"},
    "plan": {"policy", "batch_size", "replicas", "total_devices", "daily_cost", "daily_basis",
             "slo_met", "slo_value_s", "utilisation"},
    "guardrails": {"passed", "binding", "reason", "checks"},
}
"""The ``labkit economy --json`` contract: each section and the keys tools read."""


def _check_economy(out: dict, track: str) -> None:
    from labkit.tracks import TRACKS

    assert set(out) == set(ECONOMY_KEYS)
    for section, keys in ECONOMY_KEYS.items():
        assert keys <= set(out[section]), (section, keys - set(out[section]))
    t = TRACKS[track]
    assert out["track"]["id"] == track and out["track"]["cost_unit"] == t.cost_unit
    assert out["track"]["slo_s"] == t.slo_s and out["track"]["daily_budget"] == t.daily_budget
    cross = out["crossover"]
    assert cross["daily_cost"] > 0 and cross["events_per_day"] == pytest.approx(t.events_per_day)
    assert cross["crossover_days"] is None or cross["crossover_days"] > 0
    assert isinstance(out["capacity"]["max_sessions"], int) and out["capacity"]["max_sessions"] >= 0
    assert out["plan"]["total_devices"] >= out["plan"]["replicas"] >= 1
    g = out["guardrails"]
    assert isinstance(g["passed"], bool) and g["checks"]
    assert g["passed"] == all(c["passed"] for c in g["checks"])


@pytest.mark.parametrize("track", ["cloud_fleet", "iphone", "oura_ring", "robotaxi"])
def test_economy_contract_for_every_track(track):
    _check_economy(run_json("economy", "--track", track), track)


def test_summary_prints_every_track_and_its_json_keeps_the_contracts():
    from labkit.physics.roofline import REGIMES
    from labkit.tracks import TRACKS

    text = run("summary")
    assert text.returncode == 0, text.stderr
    for t in TRACKS.values():
        assert f"{t.label} ({t.id})" in text.stdout
    out = run_json("summary")
    assert set(out) == {"tracks", "paper_roofline"}
    assert [s["track"]["id"] for s in out["tracks"]] == list(TRACKS)
    for section in out["tracks"]:
        _check_economy(section, section["track"]["id"])
    assert out["paper_roofline"], "the paper's roofline figures"
    for row in out["paper_roofline"]:
        assert {"hardware", "model", "critical_batch", "balance_context_tokens",
                "step_ms", "regime"} <= set(row)
        assert row["step_ms"] > 0 and row["regime"] in REGIMES


def test_parallelism_contract():
    out = run_json("parallelism", "--hardware", "h100-sxm", "--model", "llama-3.1-70b",
                   "--context", "8192", "--batch", "8")
    assert {"tp", "cp", "pp", "dp", "ep", "devices"} <= set(out["chosen"])
    assert out["frontier"]


def test_list_and_readable_tables():
    hardware = run("list", "hardware").stdout.splitlines()
    assert hardware[0].split()[:2] == ["id", "name"]
    assert "peak TFLOP/s" in hardware[0] and "memory GB/s" in hardware[0]
    assert any(line.startswith("ahbm-pe ") for line in hardware)
    models = run("list", "models").stdout.splitlines()
    assert "params (total)" in models[0]
    row = next(line for line in models if line.startswith("llama-3.1-70b "))
    assert "70.6 B" in row
    assert "oura_ring" in run("list", "tracks").stdout


def test_a_closed_pipe_is_not_an_error():
    proc = subprocess.run(f"{LABKIT} list hardware | head -1", shell=True, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    table = run("roofline", "--hardware", "h100-sxm", "--model", "llama-3-8b").stdout
    assert "critical_batch" in table and "{" not in table


@pytest.mark.parametrize(("args", "needle"), [
    (["roofline", "--hardware", "ahbm-pe", "--model", "llama-3.1-70b", "--batch", "0"],
     "--batch: must be an integer >= 1"),
    (["roofline", "--hardware", "ahbm-pe", "--model", "llama-3.1-70b", "--context", "nan"],
     "--context: must be an integer >= 1"),
    (["roofline", "--hardware", "h100", "--model", "llama-3.1-70b"], "unknown hardware id"),
    (["roofline", "--hardware", "h100-sxm", "--model", "gpt-5"], "unknown model id"),
    (["roofline", "--hardware", "h100-sxm", "--model", "llama-3-8b", "--weight-bits", "3"],
     "--weight-bits: invalid choice"),
    (["roofline", "--hardware", "h100-sxm", "--model", "llama-3-8b", "--mode", "turbo"],
     "--mode: invalid choice"),
    (["size", "--hardware", "h100-sxm", "--model", "llama-3-8b", "--users", "4", "--context",
      "100", "--tpot-ms", "-5"], "--tpot-ms: must be a number > 0"),
    (["size", "--hardware", "h100-sxm", "--model", "yolov8n", "--users", "4", "--context",
      "100", "--tpot-ms", "5"], "model must be a transformer"),
    (["roofline", "--hardware", "h100-sxm", "--model", "yolov8n", "--explain", "--stack",
      "vlm"], "unknown stack id 'vlm'"),
    (["economy", "--track", "moon_base"], "unknown track id"),
    (["list", "gpus"], "invalid choice"),
    ([], "required: {roofline,size,economy,parallelism,list,course,summary}"),
    (["course"], "required: {build,init,grade,feedback,export,demo,fixtures}"),
    (["course", "grade", "lab1", "--workers", "-1"], "--workers: must be an integer >= 0"),
    (["course", "grade", "lab1", "--cell-timeout", "0"],
     "--cell-timeout: must be an integer >= 1"),
    (["course", "grade", "lab1", "--cpus", "0"], "--cpus: must be a number > 0"),
    (["course", "grade", "lab1", "--cpus", "nan"], "--cpus: must be a number > 0"),
    (["course", "demo", "--workers", "-1"], "--workers: must be an integer >= 0"),
    (["course", "grade", "lab1", "--track", "iphon", "--root", "."],
     "Did you mean 'iphone'?"),
])
def test_bad_argument_exits_nonzero_with_one_line(args, needle):
    proc = run(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0]
    assert proc.stdout == ""


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("args", "needle"), [
    (["build", "--tracks", "moon_base"], "unknown track id 'moon_base'"),
    (["build", "--labs", "lab9"], "unknown lab id 'lab9'"),
    (["build", "--check", "--tracks", "iphone"], "--check compares the whole committed course"),
    (["demo", "--labs", "lab9", "--dir", "/nonexistent/labkit-demo"], "unknown lab id 'lab9'"),
])
def test_course_commands_check_labs_and_tracks_before_writing(args, needle):
    """Labs and tracks are checked against ``labkit.labs.LABS`` and the track registry."""
    before = sorted(p.name for p in (ROOT / "source").iterdir())
    proc = run("course", args[0], "--root", str(ROOT), *args[1:])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert needle in proc.stderr.strip().splitlines()[-1]
    assert sorted(p.name for p in (ROOT / "source").iterdir()) == before


def test_grade_flags_are_the_config_options_and_win_over_the_config(monkeypatch):
    """``labkit course grade`` has a flag per ``c.LabkitGrade`` option, with its help; a flag
    given wins over the course's config, an option not given comes from it."""
    from traitlets.config import Config

    from labkit import cli
    from labkit.course.config import CourseSettings, option_help, option_names

    page = " ".join(run("course", "grade", "--help").stdout.split())
    for name in option_names():
        assert f"--{name.replace('_', '-')}" in page
        assert " ".join(option_help(name).split()) in page, name
    seen = {}

    def fake_grade(root, names, *, options, **kw):
        seen["options"] = options
        raise SystemExit(0)

    monkeypatch.setattr("labkit.course.grade.grade", fake_grade)
    monkeypatch.setattr("labkit.course.init.require_registered", lambda *a: None)
    cfg = Config()
    cfg.LabkitGrade.cpus, cfg.LabkitGrade.workers, cfg.LabkitGrade.memory_mb = 4.0, 5, 512
    args = cli.build_parser().parse_args(["course", "grade", "lab1_iphone", "--cpus", "2.5",
                                          "--workers", "3"])
    with pytest.raises(SystemExit):
        cli._cmd_course_grade(args, CourseSettings(ROOT, "labkit", "sqlite:///x.db", cfg))
    got = seen["options"]
    assert (got.cpus, got.workers, got.memory_mb, got.cell_timeout) == (2.5, 3, 512, 60)
