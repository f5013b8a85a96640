"""Peak and achievable against the published measurements: the table, geomean and biases.

    .venv/bin/python benchmarks/bench_calibration.py          # table + summary
    .venv/bin/python benchmarks/bench_calibration.py --fit    # re-run the class fits

The ``--fit`` grids (:data:`labkit.physics.holdout.FITS`) are how the fitted factors in
:mod:`labkit.physics.derating` were set: for each class, the grid point with the least mean
|log error| over its fitted cases (one value per class; no case tuned on its own). Check
cases (``fitted = false``) were recorded after the fit and never used by it: the shipped
derating sees them out of sample. The second table holds each source family out (its
class refit on the other families' cases) and predicts it: the figure that cannot flatter
itself; the third is the band around achievable and its coverage of held-out families.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from labkit.physics import derating as dr
from labkit.physics.band import QUANTILES, band_of, held_out_coverage, kernel_bands
from labkit.physics.calibration import TOLERANCE, calibrate
from labkit.physics.holdout import FITS, fit_class, fit_terms, hold_out_families
from labkit.physics.stacks import REFERENCE_CORE
from labkit.registries.hardware import get_hardware
from labkit.registries.measurements import MEASUREMENTS


def table() -> None:
    t0 = time.perf_counter()
    cal = calibrate()
    took = time.perf_counter() - t0
    print(f"{'id':46s} {'class':10s} {'measured':>10s} {'peak':>10s} {'achievable':>10s} "
          f"{'ratio':>6s}")
    for r in cal.rows:
        flag = "" if r.within else f"  outside +-{TOLERANCE:.0%}"
        print(f"{r.id:46s} {r.device_class:10s} {r.measured_s * 1e3:9.3f}ms "
              f"{r.peak_s * 1e3:9.3f}ms {r.achievable_s * 1e3:9.3f}ms {r.ratio:6.2f}{flag}")
    fitted = {m.id for m in MEASUREMENTS if m.fitted}
    fit_rows = [r for r in cal.rows if r.id in fitted]
    check = [r for r in cal.rows if r.id not in fitted]
    print(f"\n{len(cal.rows)} cases; ratio = measured / achievable. geomean |error| "
          f"{cal.geomean_abs_error:.1%}; within +-{TOLERANCE:.0%}: {cal.within_share:.1%} "
          f"(fitted cases {sum(r.within for r in fit_rows) / len(fit_rows):.1%} of "
          f"{len(fit_rows)}; check cases, never fitted, "
          f"{sum(r.within for r in check) / max(1, len(check)):.1%} of {len(check)})")
    for c, b in cal.bias.items():
        print(f"  {c:10s} bias {b:+.1%} (achievable vs measured, geomean), "
              f"geomean |error| {cal.class_geomean_abs_error[c]:.1%}")
    print(f"calibrate(): {took * 1e3:.0f} ms")


def hold_out() -> None:
    """Each source family held out in turn: its class refit on the other families."""
    t0 = time.perf_counter()
    h = hold_out_families()
    took = time.perf_counter() - t0
    print(f"\n{'id':46s} {'class':10s} {'family':24s} {'stack':18s} {'in-sample':>9s} "
          f"{'held out':>9s}")
    for r in h.rows:
        held = "  (none)" if r.held_out_error is None else f"{r.held_out_error:+8.0%}"
        print(f"{r.id:46s} {r.device_class:10s} {r.source_family:24s} {r.stack:18s} "
              f"{r.in_sample_error:+8.0%} {held:>9s}")
    print(f"\nwithin +-{TOLERANCE:.0%}: in sample {h.in_sample_within:.1%}, leave one source "
          f"family out {h.held_out_within:.1%} ({len(h.rows)} cases, "
          f"{len({r.source_family for r in h.rows})} families)")
    for c in h.class_in_sample_within:
        print(f"  {c:10s} in sample {h.class_in_sample_within[c]:.1%}, held out "
              f"{h.class_held_out_within[c]:.1%}")
    if h.unvalidated:
        print(f"  cannot be validated (their class has one family): {', '.join(h.unvalidated)}")
    print(f"hold_out_families(): {took * 1e3:.0f} ms")


def bands() -> None:
    """Each class's band (held-out errors) and its coverage of families held out of it."""
    t0 = time.perf_counter()
    cov = held_out_coverage()
    took = time.perf_counter() - t0
    lo, hi = (f"{q:.1%}" for q in QUANTILES)
    print(f"\nband = the {lo}-{hi} quantiles of held-out measured / achievable")
    for c in cov.class_share:
        b = band_of(c)
        print(f"  {c:10s} x{b.low:.2f} to x{b.high:.2f} of achievable ({b.scope}: {b.cases} "
              f"cases, {b.families} families); held-out coverage {cov.class_share[c]:.1%}")
    print(f"coverage of held-out families: {cov.share:.1%} of {len(cov.rows)} cases "
          f"({len(cov.unvalidated)} without a band to check)")
    for r in cov.rows:
        if not r.inside:
            print(f"  outside: {r.id:46s} {r.source_family:24s} ratio {r.ratio:5.2f}, band "
                  f"{r.band.low:.2f}-{r.band.high:.2f}")
    print(f"held_out_coverage(): {took * 1e3:.0f} ms")


def write_bands(path: str) -> None:
    """Write each class's band and each kernel library's own band where its cases pin
    one, with their coverage (registries/data/bands.toml)."""
    cov = held_out_coverage()
    lines = ["# Generated by benchmarks/bench_calibration.py --write-bands from measurements.toml",
             "# and the derating grids (labkit.physics.band); tests/test_band.py checks it is",
             "# current. low / high: the band's ends, held-out measured / achievable; coverage:",
             "# the share of the class's cases inside the band built without their own family;",
             "# a band with `kernels` is that kernel library's own (its cases and coverage).",
             ""]
    for c in cov.class_share:
        b = band_of(c)
        lines += ["[[band]]", f'device_class = "{c}"', f"low = {b.low!r}", f"high = {b.high!r}",
                  f"quantiles = [{QUANTILES[0]!r}, {QUANTILES[1]!r}]", f"cases = {b.cases}",
                  f"families = {b.families}", f"coverage = {cov.class_share[c]!r}",
                  f'scope = "{b.scope}"', ""]
    for (c, k), b in kernel_bands().items():
        lines += ["[[band]]", f'device_class = "{c}"', f'kernels = "{k}"', f"low = {b.low!r}",
                  f"high = {b.high!r}", f"quantiles = [{QUANTILES[0]!r}, {QUANTILES[1]!r}]",
                  f"cases = {b.cases}", f"families = {b.families}",
                  f"coverage = {cov.kernel_share(c, k)!r}", 'scope = "stack"', ""]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"wrote {path}")


def write_terms(path: str) -> None:
    """Write the shipped kernel-library and core terms (registries/data/stack_terms.toml)."""
    t = fit_terms()
    lines = ["# Generated by benchmarks/bench_calibration.py --write-bands from measurements.toml",
             "# (labkit.physics.holdout.fit_terms); tests/test_stacks.py checks it is current.",
             "# scale: time on this kernel library (core) over the class line's, s/s, fitted",
             "# by least squares on ln(measured / line) over the class's fitted cases.", ""]
    for axis, terms in (("kernels", t.kernels), ("core", t.cores)):
        for (c, key), term in sorted(terms.items()):
            lines += ["[[term]]", f'device_class = "{c}"', f'axis = "{axis}"', f'key = "{key}"',
                      f"scale = {term.scale!r}", f"cases = {term.cases}",
                      f"families = {term.families}", ""]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"wrote {path}")


def fit() -> None:
    for cls in FITS:
        cases = [m for m in MEASUREMENTS
                 if dr.device_class_of(m.hardware).id == cls and m.fitted
                 and m.workload == FITS[cls].workload
                 and get_hardware(m.hardware).core in (None, REFERENCE_CORE)]
        d, score = fit_class(cls, cases)
        print(f"{cls:10s} best mean |log error| {score:.3f}: {d}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true",
                    help="re-run the per-class grid fits (over the fitted cases)")
    ap.add_argument("--write-bands", action="store_true",
                    help="write registries/data/stack_terms.toml and bands.toml")
    args = ap.parse_args()
    if args.write_bands:
        data = Path(__file__).resolve().parents[1] / "src" / "labkit" / "registries" / "data"
        write_terms(str(data / "stack_terms.toml"))
        write_bands(str(data / "bands.toml"))
    elif args.fit:
        fit()
    else:
        table()
        hold_out()
        bands()
