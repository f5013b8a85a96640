"""Lab 2 Part A's words for the software stack: the control's options, the readout cards,
the band sentence and the math peek's band. Every number is a field of a
:class:`~labkit.plans.stacks.StackChoice` (or of its equations), formatted by
:mod:`labkit.core.format`; every conditional clause is chosen by a predicate on those
fields."""

from __future__ import annotations

from collections.abc import Sequence

from labkit import ui as lw
from labkit.core.format import counted, fmt_pct, fmt_time, percentile_name, tex_num
from labkit.plans.stacks import StackChoice

Card = tuple[str, str, str, str]


def _x(scale: float) -> str:
    return f"×{scale:.2f}"


def stack_option_label(c: StackChoice) -> str:
    """The option's words: the stack and what it does to the class line."""
    if not c.named:
        return "none named (the class line)"
    if c.kernel_term is None:
        return f"{c.label} (the class line: no term fitted)"
    return f"{c.label} ({c.kernels} kernels: {_x(c.scale)} the class line)"


def stack_options(choices: Sequence[StackChoice]) -> list[tuple[str, str]]:
    """The stack control's (label, value) options."""
    return [(stack_option_label(c), c.id) for c in choices]


def _cases_clause(c: StackChoice) -> str:
    if c.ratios is None:
        return ""
    lo, hi = c.ratios
    where = f"{lo:.2f}x" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}x"
    return (f"; its {counted(len(c.cases), 'published case')} in the class "
            f"{'sits' if len(c.cases) == 1 else 'sit'} at {where} achievable")


def term_text(c: StackChoice, class_label: str) -> str:
    """What the stack does to achievable, and why (fitted, or too few cases to fit)."""
    core = ("" if c.core_term is None else
            f"; the {c.core} core's fitted {_x(c.core_term.scale)} applies whatever the stack")
    if not c.named:
        return f"no stack named: achievable is the {class_label} class line{core}"
    return _kernel_clause(c, class_label, _attention_clause(c) + core)


def _attention_clause(c: StackChoice) -> str:
    if not c.kv_per_query_head:
        return ""
    return (" plus the KV reads its attention kernel repeats (one thread block per query "
            "head fetches a grouped-query model's KV cache once for each query head sharing "
            "it: query heads / KV heads times the bytes)")


def _kernel_clause(c: StackChoice, class_label: str, after: str) -> str:
    """The stack's kernel term (fitted, or the class line), then ``after`` (its attention
    and the core's term), then its published cases."""
    if c.kernel_term is not None:
        t = c.kernel_term
        return (f"achievable on {c.label} is the {class_label} line with its {c.kernels} "
                f"kernels' fitted {_x(t.scale)} (least squares over "
                f"{counted(t.cases, 'case')} from "
                f"{counted(t.families, 'source family', 'source families')}){after}"
                f"{_cases_clause(c)}")
    return (f"{c.label}'s {c.kernels} kernels have no fitted term (a term needs cases from "
            f"two source families among the cases the line is fitted on): achievable is "
            f"the {class_label} class line{after}{_cases_clause(c)}")


def band_text(c: StackChoice, class_label: str) -> str:
    """Where real systems run out of sample around this achievable, and how often that
    band held a family it was not built from ("" for a class without published cases)."""
    b = c.band
    if b is None:
        return ""
    lo, hi = (percentile_name(q) for q in b.quantiles)
    if b.scope == "stack":
        who = f"published {class_label} systems on {c.kernels} kernels run"
        whose = f"{c.kernels} cases"
    elif b.scope == "class":
        who, whose = f"published {class_label} systems run", f"{class_label} cases"
    else:
        who = (f"published systems of every device class run (the {class_label} cases come "
               "from too few source families for a band of their own)")
        whose = f"{class_label} cases"
    return (f"out of sample, {who} at {b.low:.2f}-{b.high:.2f}x achievable (the {lo} to "
            f"{hi} percentile over {b.cases} cases from {b.families} source families, each "
            "predicted with its class refit without its own family); built without a "
            f"family, this band held {fmt_pct(b.coverage)} of that family's {whose}")


def stack_card(c: StackChoice) -> Card:
    """The readout's stack card: the stack and its term on the class line."""
    if not c.named:
        value, note = "none named", "achievable is the class line"
    elif c.kernel_term is None:
        value, note = c.label, "no fitted term: the class line"
    else:
        value, note = c.label, f"{_x(c.scale)} the class line ({c.kernels} kernels)"
    return ("software stack", value, note, lw.PALETTE["grey"])


def band_card(c: StackChoice, band_s: tuple[float, float] | None, what: str) -> Card:
    """The readout's band card: the time real systems take around achievable here."""
    if band_s is None or c.band is None:
        return ("real systems", "n/a", "no published case of this class",
                lw.PALETTE["grey"])
    whose = f"{c.kernels} kernels' band" if c.band.scope == "stack" else (
        "class band" if c.band.scope == "class" else "every class's band")
    return ("real systems (out of sample)",
            f"{fmt_time(band_s[0])} – {fmt_time(band_s[1])}",
            f"{what} on achievable × the {whose} ({c.band.low:.2f}-{c.band.high:.2f}x)",
            lw.PALETTE["teal"])


def stack_cards(c: StackChoice | None, band_s: tuple[float, float] | None,
                what: str) -> list[Card]:
    """The readout's stack and band cards (none without a stack choice)."""
    return [] if c is None else [stack_card(c), band_card(c, band_s, what)]


def band_math_html(c: StackChoice, achievable_ms: float, what: str, class_label: str) -> str:
    """The math peek's band: achievable on the stack times the band's ends, and where the
    ends come from ("" without a band)."""
    eqs = c.band_equations(achievable_ms, "ms")
    if eqs is None or c.band is None:
        return ""
    lo_q, hi_q = (percentile_name(q) for q in c.band.quantiles)
    fast, slow = eqs
    return (f"<p>Real systems around achievable ({lw.esc(term_text(c, class_label))}): "
            f"the band's ends are the {lo_q} and {hi_q} percentile of measured / "
            "achievable over published cases, each predicted with its class refit without "
            "its own source family.</p>"
            f"$$t_{{\\text{{fast}}}} = {tex_num(fast.terms[0], sig=4)}\\ \\text{{ms}} \\times "
            f"{tex_num(fast.terms[1], sig=4)} = {tex_num(fast.result, sig=4)}\\ \\text{{ms}}"
            f",\\quad t_{{\\text{{slow}}}} = {tex_num(slow.terms[0], sig=4)}\\ \\text{{ms}} "
            f"\\times {tex_num(slow.terms[1], sig=4)} = {tex_num(slow.result, sig=4)}\\ "
            f"\\text{{ms}}\\ \\text{{({lw.esc(what)})}}$$")
