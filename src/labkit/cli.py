"""``labkit`` command line: the models as a contract for tests, tools and instructors.

Every sub-command prints a readable table, or with ``--json`` one JSON object. A bad
argument exits with status 2 and one line naming the parameter and what it accepts.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from labkit.course.config import CourseSettings
    from labkit.physics.derating import DeratingTerm

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage dump
        self.exit(EXIT_USAGE, f"labkit: error: {message}\n")


def _number(kind: str, minimum: float, *, integer: bool,
            strict: bool) -> Callable[[str], float | int]:
    rel = ">" if strict else ">="
    want = f"{'an integer' if integer else 'a number'} {rel} {minimum:g}"

    def parse(text: str) -> float | int:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}") from None
        if not math.isfinite(value) or (integer and not value.is_integer()):
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}")
        if value < minimum or (strict and value == minimum):
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}")
        return int(value) if integer else value

    parse.__name__ = kind
    return parse


_count = _number("count", 1, integer=True, strict=False)
_tokens = _number("tokens", 1, integer=True, strict=False)
_positive = _number("positive", 0, integer=False, strict=True)
_BITS = (4, 8, 16, 32)


def _add_common(p: argparse.ArgumentParser, *, model: bool = True) -> None:
    p.add_argument("--hardware", required=True, help="hardware id (labkit list hardware)")
    if model:
        p.add_argument("--model", required=True, help="model id (labkit list models)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _bits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--weight-bits", type=int, choices=_BITS, default=16, metavar="{4,8,16,32}")
    p.add_argument("--kv-bits", type=int, choices=_BITS, default=16, metavar="{4,8,16,32}")


def build_parser() -> argparse.ArgumentParser:
    """The ``labkit`` parser: model commands, ``course`` (instructor tools), ``summary``."""
    parser = _Parser(prog="labkit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("roofline", help="decode roofline: B*, L*, per-token split "
                                       "(a CNN: one pass)")
    _add_common(p)
    p.add_argument("--batch", type=_count, default=1, help="sequences per step (>= 1)")
    p.add_argument("--context", type=_tokens, default=8192, help="context tokens (>= 1)")
    _bits(p)
    p.add_argument("--tp", type=_count, default=1, help="tensor-parallel devices (>= 1)")
    p.add_argument("--mode", choices=("peak", "achievable"), default="peak")
    p.add_argument("--explain", action="store_true",
                   help="list what each achievable derating term adds to the step, and the "
                        "band published systems span around it")
    p.add_argument("--stack", default=None,
                   help="software stack for --explain (e.g. vllm, x-cube-ai): its fitted "
                        "term on achievable and its kernels' band where their cases pin one")

    p = sub.add_parser("size", help="three-axis capacity planning")
    _add_common(p)
    p.add_argument("--users", type=_count, required=True, help="concurrent users (>= 1)")
    p.add_argument("--context", type=_tokens, required=True, help="context tokens (>= 1)")
    p.add_argument("--tpot-ms", type=_positive, required=True, help="TPOT budget, ms (> 0)")
    _bits(p)
    p.add_argument("--mode", choices=("peak", "achievable"), default="peak")

    p = sub.add_parser("economy", help="a track's cost crossover, capacity and serving plan")
    p.add_argument("--track", required=True, help="track id (labkit list tracks)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("parallelism", help="TP x CP x PP x DP x EP selection")
    _add_common(p)
    p.add_argument("--context", type=_tokens, required=True, help="context tokens (>= 1)")
    p.add_argument("--batch", type=_count, default=1, help="concurrent sequences (>= 1)")
    _bits(p)

    p = sub.add_parser("list", help="list registry ids")
    p.add_argument("what", choices=("hardware", "models", "tracks"))
    p.add_argument("--json", action="store_true")

    _course_commands(sub.add_parser("course", help="instructor tools: build the notebooks"))
    p = sub.add_parser("summary", help="track summaries and the paper's roofline figures")
    p.add_argument("--json", action="store_true")
    _name_commands(sub)
    return parser


def _name_commands(sub: argparse._SubParsersAction) -> None:
    """Usage and "required" errors list the commands, not the internal ``dest``."""
    sub.metavar = "{" + ",".join(sub.choices) + "}"


def _course_where(q: argparse.ArgumentParser) -> None:
    q.add_argument("--root", default=None,
                   help="course root with source/, release/, submitted/ (default: search up)")
    q.add_argument("--db", default=None,
                   help="gradebook URL (default: c.CourseDirectory.db_url of the course's "
                        "nbgrader_config.py, else sqlite:///ROOT/gradebook.db)")


def _grade_flags(p: argparse.ArgumentParser, names: Sequence[str] = (), *,
                 configured: bool = True) -> None:
    """A flag per grade option (``--cell-timeout`` for ``c.LabkitGrade.cell_timeout``;
    all, or ``names``) with the trait's type, bounds, help and default; unset, None."""
    from labkit.course.config import accepted, option_default, option_help, option_names

    for name in names or option_names():
        default = option_default(name)
        shown = "unset" if default is None else f"{default:g}" if isinstance(
            default, float) else str(default)
        where = f"c.LabkitGrade.{name}, else " if configured else ""
        bounds = "" if isinstance(default, str | None) else f"; {accepted(name)}"
        p.add_argument(f"--{name.replace('_', '-')}", type=_option_type(name), default=None,
                       help=f"{option_help(name)}{bounds} (default: {where}{shown})"
                       .replace("%", "%%"))


def _option_type(name: str) -> Callable[[str], object]:
    """argparse's ``type`` for grade option ``name``: :func:`parse_option`, its error
    reworded for the flag."""
    from labkit.course.config import accepted, parse_option

    def parse(text: str) -> object:
        try:
            return parse_option(name, text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {accepted(name)}, got {text!r}"
                                             ) from None

    parse.__name__ = name
    return parse


def _course_commands(p: argparse.ArgumentParser) -> None:
    """``labkit course build|init|grade|feedback|export|demo|fixtures``."""
    course = p.add_subparsers(dest="course_command", required=True, parser_class=_Parser)
    b = course.add_parser("build", help="regenerate source/ and release/ (nbgrader)")
    b.add_argument("--check", action="store_true",
                   help="rebuild in a scratch copy and fail if anything committed is stale")
    b.add_argument("--root", default=None, help="course repository root (default: search up)")
    b.add_argument("--labs", nargs="+", default=None,
                   help="only these labs (default: every lab in labkit.labs.LABS)")
    b.add_argument("--tracks", nargs="+", default=None,
                   help="only these tracks (default: every registered track, including "
                        "those in $LABKIT_TRACKS)")
    b.add_argument("--out", default=None,
                   help="build into this course folder instead of the repository (it gets "
                        "a copy of course/ and nbgrader_config.py)")

    i = course.add_parser("init", help="register every assignment of source/ in the "
                          "gradebook (nbgrader generate_assignment; release/ untouched)")
    i.add_argument("labs", nargs="*", help="labs or assignments (default: all in source/)")
    _course_where(i)

    g = course.add_parser("grade", help="autograde collected submissions in parallel, "
                          "each in a sandbox; resumable")
    g.add_argument("lab", help="a lab (lab1) or one assignment (lab1_iphone)")
    g.add_argument("--track", action="append", default=None, help="only this track (repeat)")
    _grade_flags(g)
    g.add_argument("--force", action="store_true", help="regrade what is already graded")
    g.add_argument("--no-isolation", action="store_true",
                   help="run student code without the sandbox (machines without bubblewrap)")
    _course_where(g)

    f = course.add_parser("feedback", help="per-student HTML feedback (nbgrader)")
    f.add_argument("lab", help="a lab (lab1) or one assignment (lab1_iphone)")
    f.add_argument("--track", action="append", default=None)
    _course_where(f)

    e = course.add_parser("export", help="grade CSV per assignment and the class summary")
    e.add_argument("labs", nargs="*", help="labs or assignments (default: all in source/)")
    e.add_argument("--out", default=None, help="output folder (default: ROOT/exports)")
    _course_where(e)

    d = course.add_parser("demo", help="the whole pipeline on a fresh demo course: release, "
                          "demo submissions, grade, feedback, export")
    d.add_argument("--dir", default="out/demo-course", help="demo course folder (replaced)")
    d.add_argument("--labs", nargs="+", default=None,
                   help="labs to include (default: every lab in labkit.labs.LABS)")
    _grade_flags(d, ("workers",), configured=False)
    d.add_argument("--root", default=None, help="course repository (default: search up)")

    x = course.add_parser("fixtures", help="rewrite autograder/fixtures (honest and hostile "
                          "submissions with expected scores)")
    x.add_argument("--lab", default="lab1")
    x.add_argument("--root", default=None, help="course repository (default: search up)")
    _name_commands(course)


# ---------------------------------------------------------------------------- commands
def roofline_report(hardware: str, model: str, batch: int = 1, context: int = 8192,
                    weight_bits: int = 16, kv_bits: int = 16, tp: int = 1,
                    mode: str = "peak") -> dict[str, object]:
    """The ``labkit roofline --json`` object."""
    from labkit.physics import roofline as rf
    from labkit.registries.hardware import get_hardware
    from labkit.registries.models import get_model

    hw, m = get_hardware(hardware), get_model(model)
    if not m.is_transformer:
        return _cnn_roofline_report(hardware, model, batch, weight_bits, mode)
    r = rf.decode_roofline(hw, m, batch, context, weight_bits, kv_bits, tp=tp, mode=mode)
    mem = rf.memory_budget(hw, m, context, batch, weight_bits, kv_bits, tp=tp)
    knee = rf.knee_batch(hw, m, context, weight_bits, kv_bits, mode=mode, tp=tp)
    ms = 1e3
    return {
        "hardware": hw.id, "model": m.id, "batch": batch, "context_tokens": context,
        "weight_bits": weight_bits, "kv_bits": kv_bits, "tp": tp, "mode": mode,
        "ai_flop_per_byte": rf.arithmetic_intensity(hw, mode=mode),
        "critical_batch": rf.critical_batch(hw, m, weight_bits, mode=mode),
        "balance_context_tokens": rf.balance_context(hw, m, kv_bits, mode=mode),
        "knee_batch": knee,
        "per_token_ms": {"weight": r.weight_s * ms, "compute": r.compute_s * ms,
                         "kv": r.kv_s * ms, "overhead": r.overhead_s * ms,
                         "tp_comm": r.comm_s * ms, "total": r.per_token_s * ms},
        "step_ms": r.step_s * ms,
        "tokens_per_s": r.tokens_per_s,
        "regime": r.regime,
        "utilization": float(rf.utilization_at(context, rf.balance_context(hw, m, kv_bits,
                                                                          mode=mode))),
        "memory_per_device_bytes": {"weights": mem.weights_bytes, "kv": mem.kv_bytes,
                                    "transient": mem.transient_bytes, "used": mem.used_bytes,
                                    "capacity": mem.capacity_bytes},
        "fits_in_memory": not mem.over_budget,
    }


def _cnn_roofline_report(hardware: str, model: str, batch: int, weight_bits: int,
                         mode: str) -> dict[str, object]:
    """``labkit roofline --json`` for a CNN: one pass of ``batch`` inputs (no B*, L* or KV:
    a CNN has no decode loop)."""
    from labkit.physics.phases import cnn_compute_precision, cnn_inference_time

    r = cnn_inference_time(hardware, model, weight_bits, batch, mode)
    ms = 1e3
    return {"hardware": hardware, "model": model, "batch": batch,
            "weight_bits": weight_bits, "mode": mode,
            "precision": cnn_compute_precision(hardware, weight_bits),
            "flops": r.flops, "bytes_moved": r.bytes_moved,
            "pass_ms": {"compute": r.compute_s * ms, "memory": r.memory_s * ms,
                        "overhead": r.overhead_s * ms, "total": r.latency_s * ms},
            "per_inference_ms": r.per_inference_s * ms, "regime": r.regime}


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    if value is None:
        return "none"
    return str(value)


def _table(rows: dict[str, object], indent: str = "") -> str:
    lines = []
    width = max((len(k) for k in rows), default=0)
    for key, value in rows.items():
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            lines.append(_table(value, indent + "  "))
        else:
            lines.append(f"{indent}{key.ljust(width)}  {_fmt(value)}")
    return "\n".join(lines)


def _emit(obj: dict[str, object], as_json: bool) -> None:
    if as_json:
        print(json.dumps(obj, indent=2, sort_keys=False))
    else:
        print(_table(obj))


def _band_report(hardware: str, stack: str | None, achievable_s: float,
                 key: str) -> dict[str, object]:
    """The band published systems span around ``achievable_s`` (``key``: its ms pair's
    name) and where it comes from: the shipped band the labs draw
    (:func:`labkit.registries.bands.shipped_band`)."""
    from labkit.core.format import percentile_name
    from labkit.physics.derating import device_class_of
    from labkit.registries.bands import shipped_band
    from labkit.registries.stacks import get_stack

    c = device_class_of(hardware).id
    band = shipped_band(c, get_stack(stack).kernels if stack else None)
    lo, hi = (percentile_name(q) for q in band.quantiles)
    who = {"stack": f"{stack}'s kernels ({band.kernels}) in the {c} class",
           "class": f"the {c} class, any stack",
           "all classes": f"every class (the {c} class has too few source families for its "
                          "own)"}[band.scope]
    return {key: [achievable_s * band.low * 1e3, achievable_s * band.high * 1e3],
            "band_basis": (f"{lo} to {hi} percentile of published systems' measured / "
                           "achievable, each "
                           f"from its class refit without its source family: {who} "
                           f"({band.cases} cases, {band.families} families)")}


def derating_report(hardware: str, model: str, batch: int = 1, context: int = 8192,
                    weight_bits: int = 16, kv_bits: int = 16, tp: int = 1,
                    stack: str | None = None) -> dict[str, object]:
    """``labkit roofline --explain``: the device class, peak and achievable step (ms; with
    ``stack``'s fitted term and attention kernel, :mod:`labkit.physics.stacks`), what each
    derating term adds, ms, with its source, and the band real systems span around
    achievable (:mod:`labkit.physics.band`; ``stack``'s kernels' own where their cases pin
    one). A CNN gets the same for one pass (:func:`_cnn_derating_report`)."""
    from labkit.physics import roofline as rf
    from labkit.physics.derating import device_class_of, with_attention
    from labkit.physics.stacks import SHIPPED
    from labkit.registries.hardware import get_hardware
    from labkit.registries.models import get_model

    if not get_model(model).is_transformer:
        return _cnn_derating_report(hardware, model, batch, weight_bits, stack)
    args = (hardware, model, batch, context, weight_bits, kv_bits, tp)
    cls = device_class_of(hardware)
    scale = SHIPPED.scale(cls.id, stack, get_hardware(hardware).core)
    line = with_attention(cls.derating("decode"), stack)  # the class line, no fitted terms
    peak = float(rf.decode_roofline(*args, mode="peak").step_s)
    real = float(rf.decode_roofline(
        *args, mode=rf.get_mode("achievable", hardware, "decode", stack)).step_s)
    terms = rf.derating_contributions(*args, mode=line)
    return {"device_class": cls.label, "stack": stack, "stack_scale": scale,
            "peak_step_ms": peak * 1e3, "achievable_step_ms": real * 1e3,
            **_terms_report(terms, real - float(rf.decode_roofline(*args, mode=line).step_s),
                            scale),
            **_band_report(hardware, stack, real, "band_step_ms")}


def _terms_report(terms: Sequence[DeratingTerm], stack_s: float,
                  scale: float) -> dict[str, object]:
    """What each class-line term adds (ms) and its source, then what the stack's kernel
    and the core's fitted terms add on top (``stack_s``, s; negative: a faster stack)."""
    added = {t.key: t.added_step_s * 1e3 for t in terms}
    sources = {t.key: t.source for t in terms}
    if scale != 1.0:
        added["stack_terms"] = stack_s * 1e3
        sources["stack_terms"] = (f"the fitted kernel-library and core terms "
                                  f"(labkit.physics.stacks): x{scale:.3g} on every term")
    return {"terms_ms": added, "sources": sources}


def _cnn_derating_report(hardware: str, model: str, batch: int, weight_bits: int,
                         stack: str | None) -> dict[str, object]:
    """``--explain`` for a CNN: one pass of ``batch`` inputs, peak and achievable (ms), what
    each CNN derating term adds, the stack's kernel and core terms, and the band."""
    from labkit.physics.derating import Derating, device_class_of, get_mode
    from labkit.physics.phases import cnn_derating_contributions, cnn_inference_time
    from labkit.physics.stacks import SHIPPED
    from labkit.registries.hardware import get_hardware

    hw = get_hardware(hardware)
    cls = device_class_of(hw)
    scale = SHIPPED.scale(cls.id, stack, hw.core)

    def pass_s(mode: str | Derating) -> float:
        return float(cnn_inference_time(hw, model, weight_bits, batch, mode).latency_s)

    line = cls.derating("cnn")
    real = pass_s(get_mode("achievable", hw, "cnn", stack))
    terms = cnn_derating_contributions(hw, model, weight_bits, batch, line)
    return {"device_class": cls.label, "stack": stack, "core": hw.core, "stack_scale": scale,
            "peak_pass_ms": pass_s("peak") * 1e3, "achievable_pass_ms": real * 1e3,
            **_terms_report(terms, real - pass_s(line), scale),
            **_band_report(hardware, stack, real, "band_pass_ms")}


def _cmd_roofline(a: argparse.Namespace) -> None:
    report = roofline_report(a.hardware, a.model, a.batch, a.context, a.weight_bits,
                             a.kv_bits, a.tp, a.mode)
    if a.explain:
        report["explain"] = derating_report(a.hardware, a.model, a.batch, a.context,
                                            a.weight_bits, a.kv_bits, a.tp, a.stack)
    _emit(report, a.json)


def _cmd_size(a: argparse.Namespace) -> None:
    from labkit.physics.capacity import size_deployment

    s = size_deployment(a.hardware, a.model, a.users, a.context, a.tpot_ms / 1e3,
                        a.weight_bits, a.kv_bits, mode=a.mode)
    _emit(s.as_dict(), a.json)


def _cmd_economy(a: argparse.Namespace) -> None:
    from labkit.plans.economy import track_economy

    e = track_economy(a.track)
    if a.json:
        print(json.dumps(e.as_dict(), indent=2))
    else:
        print(e.format_table())


def _cmd_parallelism(a: argparse.Namespace) -> None:
    from labkit.physics.parallelism import search

    result = search(a.hardware, a.model, a.context, batch=a.batch,
                    weight_bits=a.weight_bits, kv_bits=a.kv_bits)
    d = result.as_dict()
    if a.json:
        print(json.dumps(d, indent=2))
        return
    chosen = d["chosen"]
    print(_table({"chosen": chosen}))
    print("frontier (devices -> per-token ms):")
    for row in d["frontier"]:
        print(f"  {row['devices']:>5} devices  tp={row['tp']} cp={row['cp']} pp={row['pp']} "
              f"dp={row['dp']} ep={row['ep']}  {row['per_token_latency_s'] * 1e3:,.2f} ms")


def _registry_rows(what: str) -> list[dict[str, object]]:
    if what == "hardware":
        from labkit.registries.hardware import HARDWARE

        return [{"id": h.id, "name": h.name, "kind": h.kind,
                 "peak_tflops": h.flops() / 1e12, "precision": h.default_precision,
                 "bandwidth_gb_s": h.memory_bandwidth / 1e9, "memory": h.memory_declared}
                for h in HARDWARE.values()]
    if what == "models":
        from labkit.registries.models import MODELS

        return [{"id": m.id, "name": m.name, "architecture": m.architecture,
                 "params_total": m.params_total, "params_active": m.params_active}
                for m in MODELS.values()]
    from labkit.tracks import TRACKS

    return [{"id": t.id, "label": t.label, "hardware": t.hardware_id, "model": t.model_id}
            for t in TRACKS.values()]


_LIST_HEADERS = {
    "id": "id", "name": "name", "kind": "kind", "peak_tflops": "peak TFLOP/s",
    "precision": "at", "bandwidth_gb_s": "memory GB/s", "memory": "memory",
    "architecture": "architecture", "params_total": "params (total)",
    "params_active": "params (active)", "label": "label", "hardware": "hardware id",
    "model": "model id"}


def _list_cell(key: str, value: object) -> str:
    if key.startswith("params_") and isinstance(value, int | float):
        for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
            if value >= scale:
                return f"{value / scale:.3g} {suffix}"
    return _fmt(value)


def _cmd_list(a: argparse.Namespace) -> None:
    rows = _registry_rows(a.what)
    if a.json:
        print(json.dumps(rows, indent=2))
        return
    keys = list(rows[0]) if rows else []
    cells = [[_LIST_HEADERS[k] for k in keys]] + [
        [_list_cell(k, row[k]) for k in keys] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(keys))]
    numeric = {i for i, k in enumerate(keys)
               if all(isinstance(row[k], int | float) for row in rows)}
    for r in cells:
        print("  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                        for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip())


PAPER_POINTS = ((8192, 1), (8192, 256), (1_048_576, 1), (1_048_576, 256))


def _cmd_summary(a: argparse.Namespace) -> None:
    from labkit.plans.economy import track_economy
    from labkit.tracks import TRACKS

    paper = [roofline_report("ahbm-pe", "llama-3.1-70b", batch=b, context=s)
             for s, b in PAPER_POINTS]
    if a.json:
        print(json.dumps({"tracks": [track_economy(t).as_dict() for t in TRACKS],
                          "paper_roofline": paper}, indent=2))
        return
    for t in TRACKS:
        print(track_economy(t).format_table())
        print()
    first = paper[0]
    print("Paper section 5.1 -- Llama 3.1 70B on one AHBM PE (peak roofline)")
    print(f"  B* = {first['critical_batch']:.2f}   L* = {first['balance_context_tokens']:,.0f} "
          "tokens")
    for row in paper:
        pt = row["per_token_ms"]
        if not isinstance(pt, dict):
            raise TypeError("roofline_report's per_token_ms must be a dict")
        print(f"  S_kv={row['context_tokens']:>9,}  B={row['batch']:>3}  per-token "
              f"{pt['total']:8.1f} ms  (weight {pt['weight']:.1f}, compute {pt['compute']:.1f}, "
              f"KV {pt['kv']:.1f})  {row['regime']}")


def _cmd_course(a: argparse.Namespace) -> None:
    from pathlib import Path

    from labkit.course.build import build, find_root, stale_files

    for t in getattr(a, "track", None) or ():
        from labkit.tracks import get_track

        get_track(t)  # an unknown id: ValueError with the close matches, before any work
    root = find_root(Path(a.root) if a.root else None)
    if a.course_command != "build":
        _cmd_course_grading(a, root)
        return
    if a.check:
        if a.labs or a.tracks or a.out:
            raise ValueError("--check compares the whole committed course: it takes no "
                             "--labs, --tracks or --out")
        problems = stale_files(root)
        if problems:
            print("labkit course build --check: generated notebooks are stale:")
            for line in problems:
                print(f"  {line}")
            print("run `labkit course build` and commit the result")
            raise SystemExit(1)
        print("labkit course build --check: source/ and release/ are up to date")
        return
    out = Path(a.out).resolve() if a.out else None
    where = f"{out}/" if out is not None else ""
    for a_ in build(root, a.labs, a.tracks, out):
        print(f"built {where}source/{a_.name} and {where}release/{a_.name}")
    print("the gradebook is not touched: `labkit course init` registers the assignments in it")


def _cmd_course_grading(a: argparse.Namespace, root: Path) -> None:
    from labkit.course import demo
    from labkit.course.grade import GradeError

    if a.course_command == "demo":
        from labkit.labs.registry import LABS

        labs = [LABS.get_lab(x).id for x in a.labs] if a.labs else list(LABS)
        raise SystemExit(demo.run_pipeline(root, Path(a.dir).resolve(), labs,
                                           a.workers or 0))
    if a.course_command == "fixtures":
        dest = root / "autograder" / "fixtures" / a.lab
        expected = demo.write_fixture_set(root, dest, a.lab)
        print(f"wrote {len(expected)} submissions and expected.json under {dest}")
        return
    from labkit.course.config import course_settings

    settings = course_settings(root, a.db)
    try:
        _COURSE_GRADING[a.course_command](a, settings)
    except GradeError as exc:
        print(f"labkit: error: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None


def _lab_names(root: Path, labs: Sequence[str]) -> list[str]:
    """Assignments of ``labs`` (labs or assignments; default: every one of source/)."""
    from labkit.course import demo

    chosen = labs or sorted({p.name.split("_")[0] for p in (root / "source").glob("*_*")})
    return [n for lab in chosen for n in demo.lab_assignments(root, lab)]


def _cmd_course_init(a: argparse.Namespace, s: CourseSettings) -> None:
    from labkit.course.gradebook import shown
    from labkit.course.init import init_gradebook

    names = _lab_names(s.root, a.labs) if a.labs else None
    done = init_gradebook(s, names)
    for r in done:
        print(f"registered {r.name}: {', '.join(r.notebooks)}; {r.max_score:g} points "
              f"({r.max_score - r.manual_max:g} autograded, {r.manual_max:g} by a person)")
    print(f"{len(done)} assignment(s) in the gradebook {shown(s.db_url)} (course "
          f"{s.course_id!r}); release/ unchanged. Next: nbgrader release_assignment NAME, "
          "nbgrader collect NAME, labkit course grade LAB")


def _cmd_course_export(a: argparse.Namespace, s: CourseSettings) -> None:
    from labkit.course.report import export

    names = _lab_names(s.root, a.labs)
    out = export(s.root, s.db_url, Path(a.out) if a.out else s.root / "exports", names,
                 course_id=s.course_id)
    for path in out.csv_paths:
        print(f"wrote {path}")
    print(f"class summary: {out.summary_html}")
    if not out.rows:
        print(f"no graded submission of {', '.join(names)} in {s.db_url}: the files hold "
              "headers only; grade first: labkit course grade LAB")


def _cmd_course_feedback(a: argparse.Namespace, s: CourseSettings) -> None:
    from labkit.course import demo
    from labkit.course.feedback import write_feedback

    names = demo.lab_assignments(s.root, a.lab, a.track)
    paths = write_feedback(s.root, s.db_url, names)
    print(f"wrote {len(paths)} feedback file(s) under {s.root / 'feedback'}")
    if not paths:
        print(f"nothing to write: no graded submission of {', '.join(names)} in "
              f"{s.db_url}; grade first: labkit course grade {a.lab}")


def _cmd_course_grade(a: argparse.Namespace, s: CourseSettings) -> None:
    from labkit.course import demo
    from labkit.course.config import grade_options, option_names
    from labkit.course.grade import grade
    from labkit.course.init import require_registered
    from labkit.course.report import gradebook_status

    names = demo.lab_assignments(s.root, a.lab, a.track)
    options = grade_options(s.config, **{n: getattr(a, n) for n in option_names()},
                            isolate=not a.no_isolation, force=a.force)
    require_registered(s.db_url, s.course_id, names)
    report = grade(s.root, names, db_url=s.db_url, course_id=s.course_id, options=options,
                   log=print)
    print(report.summary(gradebook_status(s.root, s.db_url, s.course_id, names)))
    if not report.outcomes:
        print(f"nothing to grade: no submission of {', '.join(names)} under "
              f"{s.root / 'submitted'}/<student>/<assignment>/; collect them first: "
              f"nbgrader collect {names[0]}")
    if report.errors:
        raise SystemExit(1)


_COURSE_GRADING: dict[str, Callable[[argparse.Namespace, CourseSettings], None]] = {
    "init": _cmd_course_init, "export": _cmd_course_export,
    "feedback": _cmd_course_feedback, "grade": _cmd_course_grade}


COMMANDS: dict[str, Callable[[argparse.Namespace], None]] = {
    "roofline": _cmd_roofline, "size": _cmd_size, "economy": _cmd_economy,
    "parallelism": _cmd_parallelism, "list": _cmd_list, "summary": _cmd_summary,
    "course": _cmd_course,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        COMMANDS[args.command](args)
    except BrokenPipeError:  # `labkit list models | head`: the reader left, not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- no flush error at exit
        return 0
    except ValueError as exc:  # bad ids and out-of-range values from the models
        print(f"labkit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main())
