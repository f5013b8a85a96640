"""Edge physics for Lab 2: radio hand-offs, batteries, duty cycles and multi-camera load.

The device side of the edge tracks (FLOP/s, bandwidth, memory, power) lives in
:mod:`labkit.registries.hardware`, the links, batteries and edge profiles with their sources
in :mod:`labkit.registries.edge` (re-exported here), and the time of one pass in
:mod:`labkit.physics.phases`. This module computes what an edge deployment pays *around*
the model:

* **transfers** over a :class:`Link` -- ``wake + per-byte + base power x airtime + tail``
  (the Huang et al. 2012 radio model for phones; a packet-level model for BLE):
  :func:`link_transfer`; a BLE connection costs one empty connection event per interval
  even when nothing is sent (:func:`ble_idle_power_w`).
* **batteries** -- days on one charge: :func:`battery_life_days`; energy per day:
  :func:`daily_energy_mwh`.
* **split points** -- where a wearable cuts its pipeline (run the model, send features, or
  send the raw window): :func:`wearable_split`; whether a phone answers on the device or
  hands the request to the cloud: :func:`cloud_handoff`.
* **multi-camera load** -- frames per second from several unsynchronised cameras against a
  hard per-frame deadline on one or two SoCs (split by camera or by model layers):
  :func:`camera_load`.

Conventions: SI base units throughout (bytes, seconds, watts, joules); decimal prefixes
(1 kB = 1e3 bytes). Functions are pure, check their inputs with
:mod:`labkit.core.validation` (errors name the parameter) and return frozen dataclasses.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from labkit.core import validation as v
from labkit.core.units import J_PER_MWH, J_PER_WH, SECONDS_PER_DAY
from labkit.registries.edge import (
    BACKBONE_FLOP_SHARE,
    BATTERIES,
    BYTES_PER_TOKEN,
    CAMERA_SOURCES,
    EDGE_PROFILES,
    HANDOFF_SOURCES,
    LINKS,
    REQUEST_OVERHEAD_BYTES,
    STREAM_BYTES_PER_TOKEN,
    YOLOV8N_SPLIT_BYTES,
    Battery,
    EdgeProfile,
    Link,
    edge_profile,
    get_battery,
    get_link,
)

__all__ = [  # the registry names are re-exported: Lab 2 and old gradebooks read them here
    "BACKBONE_FLOP_SHARE", "BATTERIES", "BYTES_PER_TOKEN", "CAMERA_SOURCES", "EDGE_PROFILES",
    "HANDOFF_SOURCES", "J_PER_MWH", "J_PER_WH", "LAYOUTS", "LINKS", "REQUEST_OVERHEAD_BYTES",
    "SECONDS_PER_DAY", "SPLITS", "STREAM_BYTES_PER_TOKEN", "YOLOV8N_SPLIT_BYTES", "Battery",
    "CameraLoad", "EdgeProfile", "Handoff", "Link", "SplitCost", "Transfer",
    "battery_life_days", "ble_idle_power_w", "camera_load", "cloud_handoff",
    "cloud_handoff_energy", "daily_energy_mwh", "edge_profile", "get_battery", "get_link",
    "link_transfer", "wearable_split", "worst_latency",
]


# -- links ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Transfer:
    """One hand-off over a link, device side. Energies J, times s, bytes decimal.

    ``time_s`` runs from the request to the last byte received (wake + round trip + airtime
    + any stream); ``energy_j`` = wake + per-byte + base power x connected time + tail.
    """

    link: str
    up_bytes: float
    down_bytes: float
    wake_j: float
    data_j: float
    active_j: float
    tail_j: float
    energy_j: float
    airtime_s: float
    connected_s: float
    time_s: float

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def link_transfer(link: str | Link, up_bytes: object, down_bytes: object = 0.0,
                  stream_s: object = 0.0) -> Transfer:
    """Energy and time of sending ``up_bytes`` and receiving ``down_bytes`` over ``link``.

    airtime = up / up rate + down / down rate; the radio stays connected for
    max(airtime, stream_s) after one round trip (a streamed reply keeps it connected while
    the server produces it). energy = wake_w x wake_s + up x up_J/B + down x down_J/B
    + active_w x connected + tail_w x tail_s (Huang et al. 2012's model: per-Mbit/s
    power terms become per-byte energies). time = wake_s + rtt + connected.
    """
    lk = get_link(link)
    up = float(v.non_negative("up_bytes", up_bytes))
    down = float(v.non_negative("down_bytes", down_bytes))
    stream = float(v.non_negative("stream_s", stream_s))
    airtime = up / lk.up_bytes_per_s + down / lk.down_bytes_per_s
    connected = max(airtime, stream)
    wake_j = lk.wake_w * lk.wake_s
    data_j = up * lk.up_j_per_byte + down * lk.down_j_per_byte
    active_j = lk.active_w * connected
    tail_j = lk.tail_w * lk.tail_s
    return Transfer(link=lk.id, up_bytes=up, down_bytes=down, wake_j=wake_j, data_j=data_j,
                    active_j=active_j, tail_j=tail_j,
                    energy_j=wake_j + data_j + active_j + tail_j, airtime_s=airtime,
                    connected_s=connected, time_s=lk.wake_s + lk.rtt_s + connected)


def ble_idle_power_w(interval_s: object, link: str | Link = "ble-1m") -> float:
    """Average power of keeping a BLE connection at ``interval_s``: event_j / interval, W.

    Each connection interval the two sides exchange (at least) empty packets to stay in
    sync, so the link costs power even when nothing is sent; a shorter interval answers
    sooner and costs proportionally more.
    """
    lk = get_link(link)
    t = float(v.positive("interval_s", interval_s))
    return lk.event_j / t


# -- batteries ------------------------------------------------------------------------------

def battery_life_days(battery: str | Battery, load_mwh_per_day: object) -> float:
    """Days on one charge: capacity / (other load + ``load_mwh_per_day``), days."""
    b = get_battery(battery)
    load = float(v.non_negative("load_mwh_per_day", load_mwh_per_day))
    total = b.other_mwh_per_day + load
    return math.inf if total <= 0 else b.capacity_mwh / total


def daily_energy_mwh(energy_per_event_j: object, events_per_day: object,
                     idle_power_w: object = 0.0) -> float:
    """energy per event x events per day + idle power x 86,400 s, in mWh (1 mWh = 3.6 J)."""
    e = float(v.non_negative("energy_per_event_j", energy_per_event_j))
    n = float(v.non_negative("events_per_day", events_per_day))
    p = float(v.non_negative("idle_power_w", idle_power_w))
    return (e * n + p * SECONDS_PER_DAY) / J_PER_MWH


# -- wearable split point -------------------------------------------------------------------

SPLITS = ("on_device", "features", "raw")


@dataclass(frozen=True)
class SplitCost:
    """One input (window) handled with the pipeline cut at ``split``; device side.

    front_end_j / model_j: compute energy on the device (pre-processing, model), J.
    radio_j: payload bytes over the link, J. idle_j: the connection's share of this input
    (idle power x period), J. energy_j: their sum. bytes_sent: payload per input.
    latency_s: end of window to decision (worst case: waits one whole connection interval
    before sending). link_utilisation: airtime share of the link at this input rate.
    """

    split: str
    bytes_sent: float
    front_end_s: float
    model_s: float
    transfer_s: float
    wait_s: float
    host_s: float
    latency_s: float
    front_end_j: float
    model_j: float
    radio_j: float
    idle_j: float
    energy_j: float
    link_utilisation: float

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def wearable_split(split: str, *, window_bytes: object, feature_bytes: object,
                   result_bytes: object, front_end_ops: object, front_end_ops_per_s: object,
                   model_s: object, device_power_w: object, host_s: object,
                   interval_s: object, inputs_per_s: object,
                   link: str | Link = "ble-1m") -> SplitCost:
    """Energy and latency of one input with the pipeline cut at ``split``.

    ``on_device``: front end + model on the device, send ``result_bytes``.
    ``features``: front end on the device, send ``feature_bytes``; the host runs the model.
    ``raw``: send the whole ``window_bytes``; the host does everything.
    Compute energy = device_power_w x time (front end = ops / ops_per_s). Radio energy =
    bytes x J/byte. Idle = BLE connection power x (1 / inputs_per_s): the link is kept at
    ``interval_s`` whatever the split. Latency (worst case) = device compute + (offloaded:
    one interval waiting for the next connection event + airtime + host compute).
    """
    s = v.choice("split", split, SPLITS)
    lk = get_link(link)
    window = float(v.positive("window_bytes", window_bytes))
    feats = float(v.positive("feature_bytes", feature_bytes))
    result = float(v.non_negative("result_bytes", result_bytes))
    ops = float(v.non_negative("front_end_ops", front_end_ops))
    ops_rate = float(v.positive("front_end_ops_per_s", front_end_ops_per_s))
    t_model = float(v.non_negative("model_s", model_s))
    power = float(v.non_negative("device_power_w", device_power_w))
    t_host = float(v.non_negative("host_s", host_s))
    interval = float(v.positive("interval_s", interval_s))
    rate = float(v.positive("inputs_per_s", inputs_per_s))
    t_front = ops / ops_rate if s != "raw" else 0.0
    t_dev_model = t_model if s == "on_device" else 0.0
    sent = {"on_device": result, "features": feats, "raw": window}[s]
    transfer = sent / lk.up_bytes_per_s
    offloaded = s != "on_device"
    wait = interval if offloaded else 0.0
    host = t_host if offloaded else 0.0
    latency = t_front + t_dev_model + (wait + transfer + host if offloaded else 0.0)
    front_j = power * t_front
    model_j = power * t_dev_model
    radio_j = sent * lk.up_j_per_byte
    idle_j = ble_idle_power_w(interval, lk) / rate if lk.event_j else 0.0
    return SplitCost(
        split=s, bytes_sent=sent, front_end_s=t_front, model_s=t_dev_model,
        transfer_s=transfer, wait_s=wait, host_s=host, latency_s=latency,
        front_end_j=front_j, model_j=model_j, radio_j=radio_j, idle_j=idle_j,
        energy_j=front_j + model_j + radio_j + idle_j,
        link_utilisation=rate * sent / lk.up_bytes_per_s,
    )


# -- phone: on device vs cloud hand-off -------------------------------------------------------

@dataclass(frozen=True)
class Handoff:
    """One request answered in the cloud, phone side: the radio's energy and the delays.

    ttft_s: request -> first token (wake + round trip + upload + server TTFT).
    total_s: request -> last token. energy_j: the phone radio (the SoC idles meanwhile).
    """

    link: str
    up_bytes: float
    down_bytes: float
    ttft_s: float
    total_s: float
    energy_j: float
    transfer: Transfer

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["transfer"] = self.transfer.as_dict()
        return d


def cloud_handoff(prompt_tokens: object, output_tokens: object, *, link: str | Link,
                  server_ttft_s: object, server_tpot_s: object,
                  bytes_per_token: object = BYTES_PER_TOKEN,
                  overhead_bytes: object = REQUEST_OVERHEAD_BYTES,
                  stream_bytes_per_token: object = STREAM_BYTES_PER_TOKEN) -> Handoff:
    """Send the prompt, stream the reply back: phone radio energy and latency.

    up = prompt x bytes/token + overhead; down = output x stream bytes/token. The radio
    stays connected while the server streams: stream = server TTFT + (output - 1) x TPOT.
    TTFT = wake + rtt + upload airtime + server TTFT; total = wake + rtt + stream (or the
    airtime, if longer).
    """
    p = float(v.positive("prompt_tokens", prompt_tokens))
    n = float(v.positive("output_tokens", output_tokens))
    ttft = float(v.non_negative("server_ttft_s", server_ttft_s))
    tpot = float(v.non_negative("server_tpot_s", server_tpot_s))
    bpt = float(v.positive("bytes_per_token", bytes_per_token))
    over = float(v.non_negative("overhead_bytes", overhead_bytes))
    sbpt = float(v.non_negative("stream_bytes_per_token", stream_bytes_per_token))
    lk = get_link(link)
    up = p * bpt + over
    down = n * sbpt
    stream = ttft + (n - 1.0) * tpot
    tr = link_transfer(lk, up, down, stream_s=stream)
    first = lk.wake_s + lk.rtt_s + up / lk.up_bytes_per_s + ttft
    return Handoff(link=lk.id, up_bytes=up, down_bytes=down, ttft_s=first,
                   total_s=tr.time_s, energy_j=tr.energy_j, transfer=tr)


def cloud_handoff_energy(prompt_tokens: object, output_tokens: object, *, link: str | Link,
                         server_ttft_s: object, server_tpot_s: object,
                         bytes_per_token: object = BYTES_PER_TOKEN,
                         overhead_bytes: object = REQUEST_OVERHEAD_BYTES,
                         stream_bytes_per_token: object = STREAM_BYTES_PER_TOKEN) -> np.ndarray:
    """:func:`cloud_handoff`'s phone energy, J, over an array of reply lengths (the same
    formula, vectorised: wake + bytes + base power x max(airtime, stream) + tail)."""
    p = float(v.positive("prompt_tokens", prompt_tokens))
    n = np.atleast_1d(np.asarray(v.positive("output_tokens", output_tokens), dtype=float))
    ttft = float(v.non_negative("server_ttft_s", server_ttft_s))
    tpot = float(v.non_negative("server_tpot_s", server_tpot_s))
    bpt = float(v.positive("bytes_per_token", bytes_per_token))
    over = float(v.non_negative("overhead_bytes", overhead_bytes))
    sbpt = float(v.non_negative("stream_bytes_per_token", stream_bytes_per_token))
    lk = get_link(link)
    up = p * bpt + over
    down = n * sbpt
    connected = np.maximum(up / lk.up_bytes_per_s + down / lk.down_bytes_per_s,
                           ttft + (n - 1.0) * tpot)
    data_j = up * lk.up_j_per_byte + down * lk.down_j_per_byte
    return (lk.wake_w * lk.wake_s + data_j + lk.active_w * connected
            + lk.tail_w * lk.tail_s)


# -- multi-camera load on one or two SoCs -----------------------------------------------------

LAYOUTS = ("single", "cameras", "model")


def _stages(frame_s: float, overhead_s: float, share: float) -> tuple[float, float]:
    """(stage A, stage B) seconds of a pass split after ``share`` of its compute; each stage
    pays the fixed overhead once."""
    work = frame_s - overhead_s
    return share * work + overhead_s, (1.0 - share) * work + overhead_s


def worst_latency(frame_s: float, overhead_s: float, cameras: object, layout: str, *,
                  link_bytes_per_s: float = 0.0, link_latency_s: float = 0.0,
                  frame_bytes: float = 0.0, split_bytes: float = YOLOV8N_SPLIT_BYTES,
                  split_share: float = BACKBONE_FLOP_SHARE) -> float | np.ndarray:
    """Worst-case latency of the last of ``cameras`` simultaneous frames, s (vectorised over
    ``cameras``; the formulas of :func:`camera_load`, which validates the inputs)."""
    n = np.asarray(cameras, dtype=float)
    t = float(frame_s)
    if layout == "single":
        out = n * t
    elif layout == "cameras":
        first, second = np.ceil(n / 2), np.floor(n / 2)
        x = frame_bytes / link_bytes_per_s + link_latency_s
        out = np.maximum(first * t, np.where(second > 0, x + second * max(t, x), 0.0))
    else:
        a, b = _stages(t, overhead_s, split_share)
        x = split_bytes / link_bytes_per_s + link_latency_s
        out = a + x + b + (n - 1) * max(a, x, b)
    return float(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class CameraLoad:
    """Frames from ``cameras`` unsynchronised cameras at ``fps`` on ``socs`` SoCs.

    busy: each SoC's busy fraction (frames/s x its time per frame). worst_latency_s: the
    last frame's latency when every camera's frame lands at once (the hard-deadline worst
    case for unsynchronised cameras), s. link_bytes_per_s / link_utilisation: traffic on
    the SoC-to-SoC interconnect. energy_j_per_frame: SoC power x busy time per frame.
    """

    layout: str
    socs: int
    cameras: int
    fps: float
    frames_per_s: float
    frame_s: float
    stage_s: tuple[float, ...]
    transfer_s: float
    busy: tuple[float, ...]
    worst_latency_s: float
    link_bytes_per_s: float
    link_utilisation: float
    energy_j_per_frame: float

    @property
    def max_busy(self) -> float:
        return max(self.busy)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def camera_load(frame_s: object, overhead_s: object, cameras: object, fps: object, *,
                layout: str = "single", power_w: object = 0.0,
                link_bytes_per_s: object = 0.0, link_latency_s: object = 0.0,
                frame_bytes: object = 0.0, split_bytes: object = YOLOV8N_SPLIT_BYTES,
                split_share: object = BACKBONE_FLOP_SHARE) -> CameraLoad:
    """Load and worst-case latency of multi-camera perception, one frame per pass.

    ``frame_s``: one pass on one SoC including its fixed ``overhead_s``.
    ``single``: one SoC serves every frame back to back: worst = cameras x frame_s.
    ``cameras``: two SoCs, ceil(N/2) cameras each; the second SoC's frames first cross the
    link (x = frame_bytes / bandwidth + latency): worst = max(ceil(N/2) x frame_s,
    x + floor(N/2) x max(frame_s, x)).
    ``model``: a two-stage pipeline split after the backbone; stage A does ``split_share``
    of the compute, stage B the rest, each paying the overhead, and the activations
    (``split_bytes``) cross the link: worst = a + x + b + (N - 1) x max(a, x, b).
    Busy = frames/s x stage time; energy per frame = power x (sum of stage times).
    """
    t = float(v.positive("frame_s", frame_s))
    o = float(v.non_negative("overhead_s", overhead_s))
    if o > t:
        raise ValueError(f"overhead_s must not exceed frame_s, got {o} > {t}")
    n = v.positive_int("cameras", cameras)
    f = float(v.positive("fps", fps))
    lay = v.choice("layout", layout, LAYOUTS)
    p = float(v.non_negative("power_w", power_w))
    bw = float(v.non_negative("link_bytes_per_s", link_bytes_per_s))
    lat = float(v.non_negative("link_latency_s", link_latency_s))
    fb = float(v.non_negative("frame_bytes", frame_bytes))
    sb = float(v.non_negative("split_bytes", split_bytes))
    share = float(v.fraction("split_share", split_share, allow_zero=False, allow_one=False))
    rate = n * f
    if lay != "single" and bw <= 0:
        raise ValueError("link_bytes_per_s must be > 0 to split work across two SoCs")
    worst = float(worst_latency(t, o, n, lay, link_bytes_per_s=bw, link_latency_s=lat,
                                frame_bytes=fb, split_bytes=sb, split_share=share))
    stages: tuple[float, ...]
    busy: tuple[float, ...]
    if lay == "single":
        stages, x, link_rate = (t,), 0.0, 0.0
        busy = (rate * t,)
    elif lay == "cameras":
        first, second = -(-n // 2), n // 2
        x = fb / bw + lat
        stages = (t, t)
        busy = (first * f * t, second * f * t)
        link_rate = second * f * fb
    else:
        a, b = _stages(t, o, share)
        x = sb / bw + lat
        stages = (a, b)
        busy = (rate * a, rate * b)
        link_rate = rate * sb
    return CameraLoad(
        layout=lay, socs=len(stages), cameras=n, fps=f, frames_per_s=rate, frame_s=t,
        stage_s=stages, transfer_s=x, busy=busy, worst_latency_s=worst,
        link_bytes_per_s=link_rate, link_utilisation=(link_rate / bw if bw > 0 else 0.0),
        energy_j_per_frame=p * (sum(stages) if lay == "model" else t),
    )
