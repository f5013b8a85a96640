"""Lab 2 Part B, fleet scenario: the declarative spec -- questions, options, the paper's
playbook and the prose templates, each filled from a :class:`~..plan.capacity.FleetSizing`
(no number is typed here; every one comes from a computed field through
:mod:`labkit.core.format`)."""

from __future__ import annotations

import math
from collections.abc import Callable

from labkit import ui as lw
from labkit.core.format import counted, fmt_count, fmt_num, fmt_pct, fmt_time, tex_num
from labkit.labs.common import CheckSpec, Spec, html_table
from labkit.scenarios.fleet.plan.capacity import MAX_REPLICA_DEVICES, FleetSizing
from labkit.tracks import Track

PLAYBOOK = {
    "weights": ("A. capacity (weights)", "more TP / PP devices per replica",
                "a bigger-memory device; FP8 / INT4 weights"),
    "kv": ("B. KV headroom", "more CP; fewer sequences per replica",
           "GQA / MQA / MLA; INT4 KV; sparse attention"),
    "slo": ("C. TPOT throughput", "more replicas (DP)",
            "loosen the SLO; a smaller model; speculative decoding"),
}
AXIS_LABELS = {"weights": "A: weights floor", "kv": "B: KV headroom",
               "slo": "C: TPOT throughput"}
SERVED_LABEL = "fleet: + prefill, utilisation cap"
BAR_NAMES = [AXIS_LABELS["weights"], AXIS_LABELS["kv"], AXIS_LABELS["slo"],
             "decode only (sized plan)", SERVED_LABEL]
LOG_FLOOR = 0.5
"""Where a limit of zero sequences is drawn on the log chart (labelled in its title)."""


def basis(f: FleetSizing) -> str:
    """What the fleet size includes, as the student reads it."""
    if f.fleet_includes_prefill:
        return (f"decode + prefill, replicas at most {fmt_pct(f.max_utilisation)} busy")
    return "decode only: excludes prefill and the utilisation cap"


def hook(users: int, rate: float, seconds: float, context: int, device: str) -> str:
    return (f"{fmt_count(users)} conversations are live at any moment "
            f"({fmt_count(rate)} requests/s x {fmt_time(seconds)} each, Little's law), each "
            f"holding up to {fmt_count(context)} tokens of KV. Size the {device} fleet on "
            "three axes -- weights, KV headroom and TPOT -- then add what serving needs: "
            "each request's prefill and the utilisation cap.")


def prediction(track: Track, f: FleetSizing) -> Spec:
    q = (f"{lw.esc(track.label)}: {fmt_count(f.users)} users at "
         f"{fmt_count(f.context_tokens)} tokens, TPOT within {fmt_time(f.tpot_slo_s)}, "
         f"{f.weight_bits}-bit weights and {f.kv_bits}-bit KV. Which of the paper's three "
         "axes decides the decode-only fleet (before prefill and the utilisation cap)?")
    return q, [("A: the weights floor (devices to hold one copy of the model)", "weights"),
               ("B: KV headroom (memory for every user's cache)", "kv"),
               ("C: TPOT throughput (users per replica within the SLO)", "slo")]


def checkpoint() -> CheckSpec:
    q = "When the KV axis binds, which lever does the paper's playbook pull first?"
    opts = [("More CP, fewer sequences per replica; then shrink kv_bpt (GQA/MLA, "
             "INT4 KV)", "kv_levers"),
            ("FP8 weights", "weights"),
            ("More replicas at the same size, nothing else", "dp_only"),
            ("Loosen the TPOT SLO", "slo")]
    good = ("Right: KV is the axis where algorithms buy the most, because they attack "
            "kv_bpt directly; CP spreads one sequence's cache, fewer sequences per "
            "replica leave room for it.")
    bad = ("Not quite: that lever answers another axis. For KV the paper pulls CP and a "
           "smaller batch per replica first, then GQA/MQA/MLA, INT4 KV or sparse "
           "attention.")
    return q, opts, "kv_levers", {v: (good if v == "kv_levers" else bad) for _, v in opts}


def playbook_table(bind: str) -> str:
    rows = [[("<b>" if k == bind else "") + lw.esc(PLAYBOOK[k][0])
             + ("</b> ◀ binds" if k == bind else ""),
             lw.esc(PLAYBOOK[k][1]), lw.esc(PLAYBOOK[k][2])] for k in PLAYBOOK]
    return ("<div><b>The paper's playbook per binding axis</b> (levers of the paper; the "
            "controls here move users, context, SLO and precisions)</div>"
            + html_table(["binding axis", "first lever", "second lever"], rows))


def lab1_count(f: FleetSizing) -> str:
    """Where Lab 1's count of the same replica's sequences differs from the paper's KV
    count, the difference with its reason ("" where they agree)."""
    kv = f.kv_limit_by_size[f.replica_index]
    if f.lab1_sessions is None or f.lab1_sessions == kv:
        return ""
    return (f". Lab 1's release review counts {fmt_count(f.lab1_sessions)} here: it also "
            "counts the weights outside the transformer blocks (the embeddings), which the "
            "paper's count leaves out, and, where a replica has more devices than KV heads, "
            "each head's copies")


def _busy_basis(f: FleetSizing) -> str:
    """What the busy cost counts (this fleet's replica shape, at its load) and what Lab 1's
    release shape provisions for the same demand (its Part D figure)."""
    own = ("the decode-only devices, each 100% busy" if f.served_devices is None else
           f"{f.served_layout} replicas of {fmt_count(f.served_slots)} slots at their load")
    lab1 = ("" if f.release_cost_per_day is None else
            f"; Lab 1's release shape ({f.release_devices_per_replica} devices x "
            f"{fmt_count(f.release_slots)} slots) provisions "
            f"{fmt_num(f.release_cost_per_day)} USD")
    return own + lab1


def cards(f: FleetSizing, budget_text: str) -> list[tuple[str, str, str, str]]:
    sz = f.sizing
    fleet_note = (f"decode only {fmt_count(f.decode_only_devices)}; {basis(f)}"
                  if f.feasible else "")
    return [
        ("binding axis (decode only)", AXIS_LABELS[sz.binding_axis] if f.feasible else "infeasible",
         sz.reason, lw.PALETTE["red"]),
        ("fleet", f"{fmt_count(f.fleet_devices)} devices" if f.feasible else "—",
         fleet_note, lw.PALETTE["blue"]),
        ("users per replica (decode only)", fmt_count(sz.users_per_replica),
         f"TPOT allows {fmt_count(sz.batch_at_slo)}", lw.PALETTE["orange"]),
        ("cost per day (provisioned)", f"{fmt_num(f.provisioned_cost_per_day)} USD",
         f"busy {fmt_num(f.busy_cost_per_day)} USD ({_busy_basis(f)}); budget {budget_text}",
         lw.PALETTE["grey"]),
    ]


def served_title(f: FleetSizing) -> str:
    if f.fleet_includes_prefill:
        return (f"Fleet: {fmt_count(f.fleet_devices)} devices with prefill and replicas at "
                f"most {fmt_pct(f.max_utilisation)} busy (decode only: "
                f"{fmt_count(f.decode_only_devices)})")
    return (f"Fleet: {fmt_count(f.decode_only_devices)} devices, decode only (prefill and "
            "the utilisation cap not included: no such replica fits with the reserve)")


RELEASE_SHAPE = "Lab 1's release review sizes this demand on its own replica shape"
"""Why Part B's fleet differs from Lab 1's plan: the replica shape (said on screen)."""


def served_text(f: FleetSizing) -> str:
    """The sizing step by step, and Lab 1's release shape, every term computed."""
    sz = f.sizing
    dpr = sz.devices_per_replica
    head = (f"First, decode only (the paper's three axes, every replica "
            f"{fmt_pct(1.0)} busy): "
            f"{fmt_count(f.decode_only_devices)} devices ({fmt_count(sz.replicas)} x {dpr}) "
            f"for {fmt_count(f.demand_rate_per_s)} requests/s. ")
    if f.release_devices is not None:
        tail = (f" {RELEASE_SHAPE} with "
                f"the same function: {fmt_count(f.release_devices)} devices "
                f"({fmt_count(f.release_replicas)} x {f.release_devices_per_replica}, "
                f"{fmt_count(f.release_slots)} slots each).")
    else:
        tail = (" Lab 1's release shape has no plan here (weights + one session do not "
                "fit).")
    if not f.fleet_includes_prefill and f.served_step_s is not None \
            and f.served_step_s > f.tpot_slo_s:
        return (head + f"With each step's communication counted, a replica laid out as "
                f"{f.served_layout} (Lab 1's replica, Part D's row of it) steps "
                f"{fmt_time(f.served_step_s)} at one sequence, over the "
                f"{fmt_time(f.tpot_slo_s)} TPOT budget the sizing above met without it, so "
                "prefill and the utilisation cap cannot be added on this shape." + tail)
    if not f.fleet_includes_prefill:
        return (head + f"With the {fmt_pct(f.memory_reserve_fraction)} memory reserve, "
                f"weights + one sequence no longer fit a replica of {counted(dpr, 'device')}, so "
                "prefill and the utilisation cap cannot be added on this shape." + tail)
    sdpr = f.fleet_devices_per_replica
    heads = (f", and past the model's {f.kv_heads} KV heads each head's cache sits on "
             f"{sdpr // f.kv_heads} devices," if f.kv_replicated else "")
    slots = _served_slots(f, heads)
    if sdpr == dpr:
        which = f"The same replicas{slots} need"
    else:
        own = (f"would need {fmt_count(f.same_shape_devices)} devices once served"
               if f.same_shape_devices is not None else
               "cannot be served (with each step's communication and the memory reserve "
               "counted)")
        which = (f"The sizing's replicas of {counted(dpr, 'device')} {own}; "
                 f"replicas of {counted(sdpr, 'device')}{slots} need the fewest,")
    return (head + f"Then prefill: each request also needs {fmt_time(f.prefill_s)} of "
            f"prefill on a replica of {counted(sdpr, 'device')} "
            f"({fmt_pct(f.prefill_share, sig=2)} of a saturated replica's time). Then the "
            f"utilisation cap: replicas at most "
            f"{fmt_pct(f.max_utilisation)} busy. {which} "
            f"<b>{fmt_count(f.served_devices)} devices</b> ({fmt_count(f.served_replicas)} x "
            f"{sdpr}): the fleet this part reports." + tail)


def boundary(f: FleetSizing) -> tuple[str, str]:
    sz = f.sizing
    title = (f"{fmt_count(f.fleet_devices)} devices serve {fmt_count(f.users)} users within "
             f"{fmt_time(f.tpot_slo_s)} ({basis(f)})")
    kv = f.kv_limit_by_size[f.replica_index]
    detail = (f"{counted(f.fleet_replicas, 'replica')} of {f.fleet_devices_per_replica}; "
              f"the decode sizing's replica of {sz.devices_per_replica} holds "
              f"{fmt_count(sz.users_per_replica)} users (KV allows "
              f"{fmt_count(kv)}, TPOT {fmt_count(sz.batch_at_slo)}); provisioned "
              f"{fmt_num(f.provisioned_cost_per_day)} USD/day within the budget.")
    return title, detail


def budget_detail(f: FleetSizing, budget_text: str) -> str:
    return (f"Provisioned: {fmt_count(f.fleet_devices)} devices ({basis(f)}) x "
            f"{fmt_count(f.price_per_device_hour)} USD/h x {fmt_count(f.active_hours_per_day)} h "
            f"= {fmt_num(f.provisioned_cost_per_day)} USD/day against {budget_text} "
            f"(busy device-time: {fmt_num(f.busy_cost_per_day)} USD/day).")


def infeasible_title() -> str:
    return f"Infeasible: no replica of up to {MAX_REPLICA_DEVICES} devices serves this"


def _tex_sig(x: float, k: int) -> tuple[str, float]:
    """``x`` to ``k`` significant digits: (LaTeX, the value printed)."""
    if abs(x) >= 1e6:
        mant, exp = f"{x:.{k - 1}e}".split("e")
        return f"{float(mant):g}\\times10^{{{int(exp)}}}", float(f"{mant}e{exp}")
    dec = max(0, k - 1 - math.floor(math.log10(abs(x)))) if x else 0
    text = f"{x:.{dec}f}"
    return text, float(text)


def printed(values: list[float], check: Callable[[list[float]], bool]) -> list[str]:
    """``values`` printed with the fewest significant digits (from three) at which the
    result they yield, ``check`` of the printed values, is the one computed: a math peek's
    terms re-derive its result."""
    for k in range(3, 13):
        pairs = [_tex_sig(x, k) for x in values]
        if check([v for _, v in pairs]):
            return [t for t, _ in pairs]
    return [tex_num(x) for x in values]


def _ceil(x: float) -> int:
    return math.ceil(x - 1e-9)


def _axes_math(f: FleetSizing) -> str:
    sz = f.sizing
    kvu = f.users * f.context_tokens * f.kv_bytes_per_token
    nb, hbm = printed([f.weight_bytes, f.usable_bytes_per_device], lambda v: (
        _ceil(v[0] / v[1]) == sz.weights_floor_devices
        and _ceil((v[0] + kvu) / v[1]) == sz.kv_headroom_devices))
    return (
        f"<p>Three axes, all must hold (HBM = usable bytes per device, {f.memory_basis}; "
        "N = the transformer blocks' parameters, as the paper counts them: the embedding "
        "table and LM head, which the memory cards count in the resident weights, aside):</p>"
        f"$$A = \\left\\lceil \\frac{{N b}}{{\\mathrm{{HBM}}}} \\right\\rceil = "
        f"\\left\\lceil \\frac{{{nb}}}{{{hbm}}}\\right\\rceil = {sz.weights_floor_devices}$$"
        f"$$B = \\left\\lceil \\frac{{N b + u\\,S\\,\\mathrm{{kv\\_bpt}}}}"
        f"{{\\mathrm{{HBM}}}} \\right\\rceil = \\left\\lceil \\frac{{{nb} + "
        f"{f.users} \\times {f.context_tokens} \\times {tex_num(f.kv_bytes_per_token)}}}"
        f"{{{hbm}}} \\right\\rceil = {sz.kv_headroom_devices}$$")


def _served_math(f: FleetSizing) -> str:
    mu = float(f.served_capacity_per_s or 0.0)
    reps, dpr = int(f.served_replicas or 0), f.fleet_devices_per_replica
    lam, umax, mu_t = printed([f.demand_rate_per_s, f.max_utilisation, mu],
                              lambda v: _ceil(v[0] / (v[1] * v[2])) == reps)
    return ("<p>The fleet adds prefill (in the replica's capacity μ, requests/s) and "
            "the utilisation cap:</p>"
            f"$$N = \\left\\lceil \\frac{{\\lambda}}{{u_{{max}}\\,\\mu}} \\right\\rceil = "
            f"\\left\\lceil \\frac{{{lam}}}{{{umax} \\times {mu_t}}}\\right\\rceil = {reps};"
            f"\\quad {reps} \\times {dpr} = {f.served_devices}\\ \\text{{devices}}$$")


def _served_slots(f: FleetSizing, heads: str) -> str:
    """Why a served replica holds fewer sequences than the decode-only count (memory, its
    own step), or nothing when it holds them all."""
    n = f.served_sizing_slots
    mem, step = f.served_memory_slots or n, f.served_step_slots or n
    why = []
    if mem < n:
        why.append(f"with the embedding table and LM head resident too{heads or ','} the same "
                   f"memory holds {fmt_count(mem)} of the {fmt_count(n)} sequences")
    if step < min(mem, n):
        why.append(f"laid out as {f.served_layout} with each step's communication "
                   f"counted, its step keeps the {fmt_time(f.tpot_slo_s)} TPOT budget up to "
                   f"{fmt_count(step)} sequences (as Part D counts a replica)")
    return f" ({'; and '.join(why)})" if why else ""


def math_html(f: FleetSizing) -> str:
    """The math peek: each axis, then the served fleet, every result re-derivable from
    the terms printed beside it."""
    sz = f.sizing
    out = _axes_math(f)
    if sz.feasible:
        reps = -(-f.users // max(1, sz.batch_at_slo))
        out += (f"$$C:\\ N_{{\\text{{replicas}}}} = \\left\\lceil \\frac{{u}}"
                f"{{B_{{\\mathrm{{SLO}}}}}}\\right\\rceil = \\left\\lceil \\frac{{{f.users}}}"
                f"{{{max(1, sz.batch_at_slo)}}}\\right\\rceil = {reps}$$"
                "<p>A and B count devices as one pool, C counts replicas; the sizing decides "
                "per replica. It tries every power-of-two replica size d (KV split evenly "
                "over its devices) and keeps the fewest devices; at d = "
                f"{sz.devices_per_replica} a replica's KV fits "
                f"{fmt_count(f.kv_limit_by_size[f.replica_index])} users and TPOT allows "
                f"{fmt_count(f.slo_limit_by_size[f.replica_index])}, so it holds "
                f"{fmt_count(sz.users_per_replica)} (the smaller binds){lab1_count(f)}:</p>"
                f"$$\\left\\lceil \\frac{{{f.users}}}{{{sz.users_per_replica}}} \\right\\rceil "
                f"\\times {sz.devices_per_replica} = {sz.replicas} \\times "
                f"{sz.devices_per_replica} = {sz.total_devices}\\ \\text{{devices}}$$")
    if f.fleet_includes_prefill and f.served_capacity_per_s:
        out += _served_math(f)
    return out + ("<p>Source: <code>labkit.scenarios.fleet.plan.capacity.size_fleet</code> "
                  "(achievable roofline; the fleet by "
                  "<code>labkit.plans.serving.serving_plan</code>).</p>")


def reveal(f0: FleetSizing, f: FleetSizing) -> str:
    sz0 = f0.sizing
    return (f"<div>At the defaults: {lw.esc(sz0.reason)}; decode only "
            f"{fmt_count(f0.decode_only_devices)} devices ({sz0.replicas} x "
            f"{sz0.devices_per_replica}); the fleet {fmt_count(f0.fleet_devices)} devices "
            f"({basis(f0)}).</div>"
            f"<div>With your settings: <b>{AXIS_LABELS.get(f.sizing.binding_axis, '')}"
            f"</b>, {fmt_count(f.fleet_devices)} devices ({basis(f)}).</div>"
            "<div style='color:#5d6d7e'>Why: the weights fit on a few devices, but "
            "every live user keeps a KV cache; at chat context the caches outweigh the "
            "model, and memory, not FLOP/s or the TPOT budget, sets the decode fleet.</div>")


def takeaway(f: FleetSizing) -> str:
    bind = f.sizing.binding_axis
    return (f"Capacity: {fmt_count(f.users)} users at {fmt_count(f.context_tokens)} tokens "
            f"within {fmt_time(f.tpot_slo_s)} need {fmt_count(f.fleet_devices)} devices "
            f"({basis(f)}; decode only {fmt_count(f.decode_only_devices)}); of the paper's "
            f"three axes the {AXIS_LABELS.get(bind, 'n/a')} one binds the decode-only "
            f"fleet, so its first lever is {PLAYBOOK[bind][1]}.")


LIMIT_WORDS = {"fit": "no replica serves it", "budget": "daily budget"}
"""Part B's two checks as the decision line names them."""


def task(tr: Track) -> str:
    """Part B's task: a fleet that serves every live conversation inside the budget."""
    return (f"size a fleet that serves every live conversation within its TPOT budget and "
            f"the {tr.budget_text} a day budget")
