"""Lab 2 Parts B and C, handheld scenario: the questions, options and prose templates. Every
number is formatted from a computed field (:mod:`..plan.device`)."""

from __future__ import annotations

from labkit import ui as lw
from labkit.core.format import (
    fmt,
    fmt_count,
    fmt_energy,
    fmt_pct,
    fmt_time,
    format_bytes,
    tex_num,
)
from labkit.core.units import J_PER_MWH
from labkit.labs.accelerators.base import feedback_map
from labkit.labs.accelerators.edge_view import tex_count, tex_eq
from labkit.labs.common import CheckSpec, Spec
from labkit.registries.edge import Link
from labkit.scenarios.handheld.plan.device import Handoff, PhoneContext, PhoneDevice, PhoneWalls
from labkit.tracks import Track

PHONE_LIMIT_TITLES = {"memory": "Out of memory beside the OS",
                      "tpot": "Streams slower than the SLO (mean TPOT)",
                      "ttft": "First token too slow",
                      "energy": "Over the battery budget"}


def b_hook(hw_name: str, usable: float, ram: float) -> str:
    return (f"The {hw_name}'s OS leaves one app about {format_bytes(usable)} of "
            f"{format_bytes(ram)}. As a conversation grows, its KV cache, its prompt pass and "
            "its battery cost grow with it. Which limit does a longer conversation hit first?")


def b_prediction(tr: Track, requests: float) -> Spec:
    q = (f"{lw.esc(tr.label)}: {tr.weight_bits}-bit weights, {tr.kv_bits}-bit KV, "
         f"{fmt_count(requests)} requests a day of {fmt_count(tr.output_tokens)} output "
         "tokens. As the conversation grows past its default length, which limit fails "
         "first?")
    return q, [("Memory: weights + KV no longer fit beside the OS", "memory"),
               ("TPOT: replies stream slower than the SLO", "tpot"),
               ("TTFT: the prompt pass takes longer than the first-token limit", "ttft"),
               ("Energy: the day's requests spend more than the battery budget", "energy")]


def b_checkpoint() -> CheckSpec:
    q = "Why does an on-device LM's time per token grow with the conversation?"
    opts = [("Every token reads all the weights and the whole KV cache, and the KV grows "
             "with the context", "bytes"),
            ("The phone's FLOP/s drop as it warms up", "thermal"),
            ("The attention compute is quadratic per token", "quadratic"),
            ("iOS swaps the model out", "swap")]
    good = ("Right: decode is memory-bound; a step reads the weights and S x kv_bpt bytes of "
            "KV, so lower-precision weights and KV are the lever.")
    bad = ("Not quite: decode reads the weights plus the whole KV cache for every token; the "
           "KV term grows with the context S.")
    return q, opts, "bytes", feedback_map(opts, "bytes", good, bad)


WALL_WORDS = {"tpot": "mean TPOT over the reply"}
"""How a wall is named where its basis matters (TPOT: the mean over a reply's tokens, its
context growing as it streams -- not one step at the full context, as Exercise B's is)."""


def _walls_text(walls: PhoneWalls) -> str:
    return "; ".join(f"{WALL_WORDS.get(k, k)} from {fmt_count(x)}" if x is not None
                     else f"{WALL_WORDS.get(k, k)} not within {fmt_count(walls.grid_top_tokens)}"
                     for k, x in walls.walls)


def b_reveal(computed_line: str, walls: PhoneWalls, kv_per_token: float) -> str:
    at = ("" if walls.first_at is None else f", from about {fmt_count(walls.first_at)} tokens")
    return (f"{computed_line}<div>At the defaults, {walls.first} fails first{at}.</div>"
            "<div style='color:#5d6d7e'>Why: memory grows by "
            f"{format_bytes(kv_per_token)} of KV per token, the prompt pass with every "
            "prompt token, and the battery pays for all of it. As the conversation grows "
            f"each limit fails at ({_walls_text(walls)} tokens).</div>")


def b_takeaway(here: PhoneContext, shown: PhoneContext | None, walls: PhoneWalls) -> str:
    where = "" if walls.first_at is None else f" from {fmt_count(walls.first_at)} tokens"
    energy = ("does not run: the weights alone do not fit" if shown is None else
              f"spends {fmt_count(shown.daily_mwh)} mWh/day{_where(here, shown)}")
    return (f"Capacity on the phone: at {fmt_count(here.context_tokens)} tokens "
            f"({here.weight_bits}-bit weights, {here.kv_bits}-bit KV) the model needs "
            f"{format_bytes(here.memory_bytes)} of {format_bytes(here.usable_bytes)} and "
            f"{energy}; {walls.first} is the first wall{where}.")


def _where(here: PhoneContext, shown: PhoneContext) -> str:
    """"" when the numbers are quoted at your conversation, else where they are."""
    if shown.context_tokens == here.context_tokens:
        return ""
    return f" (at {fmt_count(shown.context_tokens)} tokens, the longest that fits)"


def b_cards(here: PhoneContext, shown: PhoneContext | None,
            walls: PhoneWalls) -> list[tuple[str, str, str, str]]:
    """The readout: memory at your conversation; speed and energy where they are quoted."""
    mem = ("memory", format_bytes(here.memory_bytes), f"of {format_bytes(here.usable_bytes)}",
           lw.PALETTE["blue"])
    first = ("first to fail", walls.first, "as conversations grow" if walls.first_at is None
             else f"from {fmt_count(walls.first_at)} tokens", lw.PALETTE["red"])
    if shown is None:
        none = "the weights alone do not fit"
        return [mem, ("streaming", "does not run", none, lw.PALETTE["orange"]),
                ("energy", "does not run", none, lw.PALETTE["teal"]), first]
    at = _where(here, shown)
    return [
        mem,
        ("streaming", f"{fmt_count(1 / shown.tpot_s)} tokens/s",
         f"mean TPOT {fmt_time(shown.tpot_s)}; SLO {fmt_time(shown.tpot_limit_s)}{at}",
         lw.PALETTE["orange"]),
        ("first token", fmt_time(shown.ttft_s), f"limit {fmt_time(shown.ttft_limit_s)}{at}",
         lw.PALETTE["purple"]),
        ("energy", f"{fmt_count(shown.daily_mwh)} mWh/day",
         f"{fmt_pct(shown.battery_share)} of the battery; {fmt_energy(shown.energy_j)} per "
         f"request{at}", lw.PALETTE["teal"]),
        first,
    ]


def b_details(here: PhoneContext, shown: PhoneContext | None) -> dict[str, str]:
    """Each failing limit's detail sentence: memory at your conversation, the others where
    they are quoted."""
    out = {"memory": (f"{format_bytes(here.weights_bytes)} weights + "
                      f"{format_bytes(here.kv_bytes)} KV exceed the "
                      f"{format_bytes(here.usable_bytes)} the OS leaves the app.")}
    if shown is None:
        return {**out, "tpot": "", "ttft": "", "energy": ""}
    at = _where(here, shown)
    return {
        **out,
        "tpot": (f"Mean TPOT {fmt_time(shown.tpot_s)} per reply token"
                 f"{at or f' at {fmt_count(shown.context_tokens)} tokens'} vs "
                 f"{fmt_time(shown.tpot_limit_s)} (the slowest gap, the last token's, is "
                 f"{fmt_time(shown.last_step_s)})."),
        "ttft": (f"The prompt pass over {fmt_count(shown.prompt_tokens)} tokens{at} takes "
                 f"{fmt_time(shown.ttft_s)} vs {fmt_time(shown.ttft_limit_s)}."),
        "energy": (f"{fmt_count(shown.requests_per_day)} requests x "
                   f"{fmt_energy(shown.energy_j)}{at} = {fmt_count(shown.daily_mwh)} mWh/day "
                   f"vs {fmt_count(shown.budget_mwh)} mWh."),
    }


def b_math(here: PhoneContext, shown: PhoneContext | None) -> str:
    """The math peek: memory at your conversation, TPOT and energy where they are quoted;
    every result printed from the terms beside it."""
    ms = 1e3
    h = here
    verdict = "fits in" if h.memory_bytes <= h.usable_bytes else "is over (out of memory)"
    out = (tex_eq("M(S) = W + S\\,\\mathrm{kv\\_bpt}",
                  f"{tex_num(h.weights_bytes)} + {tex_count(h.context_tokens)} \\times "
                  f"{tex_count(h.kv_bytes_per_token)}", h.memory_bytes, "B")
           + f"<p>That {verdict} the {format_bytes(h.usable_bytes)} the app may use.</p>")
    if shown is None:
        return out + "<p>The weights alone do not fit: nothing runs to time.</p>"
    q = shown
    at = _where(here, q)
    return (out
            + (f"<p>Speed and energy below are quoted{at}.</p>" if at else "")
            + tex_eq("\\mathrm{TPOT} = t_W + t_{\\text{compute}} + "
                     "\\frac{(P + L/2)\\,\\mathrm{kv\\_bpt}}{BW} + o",
                     f"{tex_num(q.weight_step_s * ms)} + {tex_num(q.compute_step_s * ms)} + "
                     f"{tex_num(q.kv_step_s * ms)} + {tex_num(q.overhead_step_s * ms)}",
                     q.tpot_s * ms, "ms")
            + "<p>TPOT is the mean per reply token after the first: one step at the mean "
              f"context P + L/2 = {fmt_count(q.mean_context_tokens)} tokens "
              f"(BW = {format_bytes(q.bandwidth_bytes_per_s)}/s, achievable). The slowest "
              f"gap, the last token's, is {fmt_time(q.last_step_s)}.</p>"
            + tex_eq("E_{\\text{day}} = n \\cdot E_{\\text{request}} / (\\text{J per mWh})",
                     f"{tex_num(q.requests_per_day)} \\times {fmt(q.energy_j, sig=4)} / "
                     f"{tex_num(J_PER_MWH)}",
                     q.daily_mwh, "mWh")
            + "<p>E<sub>request</sub> = P (t<sub>prefill</sub> + t<sub>decode</sub>) = "
              f"{fmt(q.energy_j, sig=4)} J ({fmt_energy(q.energy_j)}). Source: "
              "<code>labkit.scenarios.handheld.plan.device.phone_context</code> "
              "(achievable roofline).</p>")


# -- Part C ---------------------------------------------------------------------------------

def c_hook(link: Link, cloud: Handoff) -> str:
    return (f"The phone could send the prompt to a cloud model instead: "
            f"{format_bytes(cloud.up_bytes)} up, a streamed reply of "
            f"{format_bytes(cloud.down_bytes)} down. Over {lw.esc(link.name)} the radio pays a "
            f"wake-up of {fmt_time(link.wake_s)} and a high-power tail of "
            f"{fmt_time(link.tail_s)} whatever the size. When does handing off save "
            "battery, and what does it cost in latency?")


def c_prediction(tr: Track, prompt: int, out: int, link: Link) -> Spec:
    q = (f"{lw.esc(tr.label)}: a {fmt_count(prompt)}-token prompt and a {fmt_count(out)}-token "
         f"reply. Which spends less phone energy: answering on the device "
         f"({tr.weight_bits}-bit), or handing off to a cloud service over "
         f"{lw.esc(link.name)}?")
    return q, [("On the device", "on_device"), ("In the cloud", "cloud")]


def c_checkpoint(link: Link) -> CheckSpec:
    q = "Why can a short request cost more phone energy in the cloud than on the device?"
    opts = [("The radio's wake-up and high-power tail cost the same however few bytes are "
             "sent", "fixed_cost"),
            ("Uploading a prompt takes minutes", "upload"),
            ("The cloud model is bigger", "bigger"),
            ("It cannot: the cloud is always cheaper for the phone", "never")]
    good = (f"Right: a {lw.esc(link.name)} transfer pays "
            f"{fmt_energy(link.wake_w * link.wake_s)} to wake and "
            f"{fmt_energy(link.tail_w * link.tail_s)} of tail after the last byte; the SoC "
            "spends per token. Short replies favour the device, long ones the cloud.")
    bad = ("Not quite: the bytes are few; the radio's fixed wake + tail energy is what a "
           "short request cannot amortise.")
    return q, opts, "fixed_cost", feedback_map(opts, "fixed_cost", good, bad)


def c_cards(dev: PhoneDevice, cloud: Handoff, winner: str, cross: float | None,
            mine: str) -> list[tuple[str, str, str, str]]:
    """Part C's readout (``mine``: the path the student chose, named on the energy card);
    the device is quoted only where it holds the model."""
    where = ("on the device" if winner == "on_device" else "in the cloud") + (
        " (yours)" if winner == mine else f" (you answer on {ROUTES[mine]})")
    if dev.oom:
        oom = (f"the device cannot hold it ({format_bytes(dev.memory_bytes)} vs "
               f"{format_bytes(dev.usable_bytes)})")
        energy = ("less phone energy", where, oom, lw.PALETTE["green"])
        first = ("first token", f"cloud {fmt_time(cloud.ttft_s)}", "device: out of memory",
                 lw.PALETTE["purple"])
    else:
        energy = ("less phone energy", where,
                  f"{fmt_energy(dev.energy_j)} vs {fmt_energy(cloud.energy_j)}",
                  lw.PALETTE["green"])
        first = ("first token", f"{fmt_time(dev.ttft_s)} vs {fmt_time(cloud.ttft_s)}",
                 "device vs cloud", lw.PALETTE["purple"])
    return [energy,
            ("bytes over the radio", f"{format_bytes(cloud.up_bytes)} up",
             f"{format_bytes(cloud.down_bytes)} down (streamed)", lw.PALETTE["blue"]),
            first,
            ("crossover", "none in range" if cross is None else f"{fmt_count(cross)} tokens",
             "reply length where they cost the same (where the device fits)",
             lw.PALETTE["orange"])]


def c_reveal(computed_line: str, dev: PhoneDevice, cloud: Handoff, winner: str) -> str:
    return (f"{computed_line}<div>At the defaults: device {fmt_energy(dev.energy_j)}, cloud "
            f"{fmt_energy(cloud.energy_j)} (of which {fmt_energy(cloud.transfer.tail_j)} is "
            "the radio's tail after the last byte).</div>"
            f"<div>With your settings the <b>{winner.replace('_', ' ')}</b> wins.</div>"
            "<div style='color:#5d6d7e'>Why: on the device every token streams the weights "
            f"through the SoC at {fmt_count(dev.power_w)} W; over the radio the bytes are "
            "cheap but every hand-off pays a fixed wake and tail. Where the two cost the same "
            "is a reply length.</div>")


def c_takeaway(dev: PhoneDevice, cloud: Handoff, link: Link, cross: float | None) -> str:
    device = (f"does not fit the device at {dev.weight_bits}-bit and costs"
              if dev.oom else f"costs {fmt_energy(dev.energy_j)} on the device vs")
    return (f"Hand-off: a {fmt_count(dev.prompt_tokens)}-token prompt with a "
            f"{fmt_count(dev.output_tokens)}-token reply {device} "
            f"{fmt_energy(cloud.energy_j)} over {link.name}; "
            + ("no crossover in range" if cross is None else
               f"they cross at about {fmt_count(cross)} reply tokens") + ".")


LIMIT_WORDS = {"memory": "memory", "tpot": "TPOT", "ttft": "TTFT", "energy": "battery budget"}
"""Each limit of Part B as the decision line names it."""


def b_task(tr: Track) -> str:
    """Part B's task: the conversation within every limit of the phone."""
    return (f"serve this conversation within the app's memory, a mean TPOT of "
            f"{fmt_time(tr.slo_s)}, the first-token limit and the {tr.budget_text} a day budget")


ROUTES = {"on_device": "the phone", "cloud": "the cloud (hand-off)"}
"""Part C's two paths as the "Answer on" control names them."""

C_LIMITS = {"on_device": {"oom": "memory", "device_slo": "TPOT", "energy": "battery budget"},
            "cloud": {"cloud_ttft": "first-token limit"}}
"""The limits each path must keep (Part C's checks), as the decision line names them."""


def c_task() -> str:
    """Part C's task: the path that keeps its limits at the lower phone energy."""
    return ("answer on the path (the phone, or a hand-off to the cloud) that keeps its "
            "limits at the lower phone energy")


def c_start_note(route: str) -> str:
    """The sentence naming Part C's starting path (the one that loses at the defaults)."""
    return f"The controls start at answering on {ROUTES[route]}, the candidate under review."
