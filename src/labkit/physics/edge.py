"""Edge physics for Lab 2: radio hand-offs, batteries, duty cycles and multi-camera load.

The device side of the edge tracks (FLOP/s, bandwidth, memory, power) lives in
:mod:`labkit.registries.hardware`; the time of one pass in :mod:`labkit.physics.phases`. This module adds what
an edge deployment pays *around* the model:

* **links** (:class:`Link`) -- a Bluetooth Low Energy link from a wearable to its phone,
  and the phone's cellular (LTE) and Wi-Fi radios to a cloud service. A transfer costs
  ``wake + per-byte + base power x airtime + tail`` (the Huang et al. 2012 radio model for
  phones; a packet-level model for BLE) and a BLE connection costs one empty connection
  event per interval even when nothing is sent (:func:`ble_idle_power_w`).
* **batteries** (:class:`Battery`) -- capacity, what the rest of the device draws per day,
  and the life the product promises: :func:`battery_life_days`.
* **split points** -- where a wearable cuts its pipeline (run the model, send features, or
  send the raw window): :func:`wearable_split`; whether a phone answers on the device or
  hands the request to the cloud: :func:`cloud_handoff`.
* **multi-camera load** -- frames per second from several unsynchronised cameras against a
  hard per-frame deadline on one or two SoCs (split by camera or by model layers):
  :func:`camera_load`.

Conventions: SI base units throughout (bytes, seconds, watts, joules); decimal prefixes
(1 kB = 1e3 bytes). Every constant carries a ``sources`` entry naming where it comes from
or marking it as an estimate. Functions are pure, check their inputs with
:mod:`labkit.core.validation` (errors name the parameter) and return frozen dataclasses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType

import numpy as np

from labkit.core import validation as v
from labkit.core.lookup import lookup

J_PER_MWH = 3.6  # 1 mWh = 1e-3 W x 3600 s
J_PER_WH = 3600.0
SECONDS_PER_DAY = 86_400.0


# -- links ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    """A radio (or board) link from an edge device to where its work is handed off.

    up/down_bytes_per_s: payload goodput device -> peer / peer -> device, bytes/s.
    up/down_j_per_byte: device energy per payload byte sent / received, J/byte (on top of
    the base power). active_w: device radio power while a transfer or a stream is in
    progress (the "connected" state), W. wake_s / wake_w: promotion from idle to connected
    (time, power). tail_s / tail_w: the high-power tail the radio stays in after the last
    byte. rtt_s: one network round trip to the peer, s. event_j: energy of one empty BLE
    connection event (0 for links without connection events), J.
    """

    id: str
    name: str
    medium: str
    up_bytes_per_s: float
    down_bytes_per_s: float
    up_j_per_byte: float
    down_j_per_byte: float
    active_w: float
    wake_s: float
    wake_w: float
    tail_s: float
    tail_w: float
    rtt_s: float
    event_j: float
    sources: Mapping[str, str]

    @property
    def fixed_j(self) -> float:
        """Energy paid once per transfer whatever its size: wake + tail, J."""
        return self.wake_w * self.wake_s + self.tail_w * self.tail_s


# BLE 1M PHY, packet-level derivation (nRF52840 at 3.0 V, DC/DC on, 0 dBm):
BLE_SUPPLY_V = 3.0
BLE_TX_A = 6.4e-3              # nRF52840 product spec: radio TX at 0 dBm, 1 Mbps BLE, DC/DC
BLE_RX_A = 6.26e-3             # nRF52840 product spec: radio RX at 1 Mbps BLE, DC/DC
BLE_PAYLOAD_BYTES = 244        # ATT payload of one LL packet with data-length extension
BLE_PACKET_OVERHEAD_BYTES = 21  # preamble 1 + access address 4 + header 2 + L2CAP 4 + ATT 3
#                                 + MIC 4 + CRC 3 (Bluetooth Core spec framing)
BLE_US_PER_BYTE = 8.0          # 1 Mbit/s PHY: 8 us on air per byte
BLE_T_IFS_S = 150e-6           # Bluetooth Core spec: inter-frame space
BLE_EMPTY_RX_S = 80e-6         # the peer's empty acknowledgement packet: 10 bytes on air
BLE_EVENT_J = 7e-6             # estimate: one empty connection event incl. crystal/CPU wake


def _ble_packet() -> tuple[float, float]:
    """(seconds, joules) of one full data packet and its acknowledgement on the 1M PHY."""
    tx_s = (BLE_PAYLOAD_BYTES + BLE_PACKET_OVERHEAD_BYTES) * BLE_US_PER_BYTE * 1e-6
    rx_s = 2 * BLE_T_IFS_S + BLE_EMPTY_RX_S   # the receiver listens through both gaps
    joules = BLE_SUPPLY_V * (BLE_TX_A * tx_s + BLE_RX_A * rx_s)
    return tx_s + rx_s, joules


_PKT_S, _PKT_J = _ble_packet()

LINKS: Mapping[str, Link] = MappingProxyType({lk.id: lk for lk in (
    Link(
        id="ble-1m", name="Bluetooth LE 1M PHY (wearable to phone)", medium="ble",
        up_bytes_per_s=BLE_PAYLOAD_BYTES / _PKT_S, down_bytes_per_s=BLE_PAYLOAD_BYTES / _PKT_S,
        up_j_per_byte=_PKT_J / BLE_PAYLOAD_BYTES, down_j_per_byte=_PKT_J / BLE_PAYLOAD_BYTES,
        active_w=0.0, wake_s=0.0, wake_w=0.0, tail_s=0.0, tail_w=0.0, rtt_s=0.0,
        event_j=BLE_EVENT_J,
        sources=MappingProxyType({
            "up_bytes_per_s": "derived: 244-byte ATT payloads in 265-byte packets at 8 us/byte "
                              "(2.12 ms) + 2 x 150 us T_IFS + 80 us empty ack = 2.50 ms per "
                              "packet -> 97.6 kB/s (Bluetooth Core spec framing, data-length "
                              "extension, back-to-back packets)",
            "up_j_per_byte": "derived: 3.0 V x (6.4 mA TX x 2.12 ms + 6.26 mA RX x 0.38 ms) = "
                             "47.8 uJ per 244-byte packet = 0.196 uJ/byte (nRF52840 product "
                             "specification radio currents, DC/DC on, 0 dBm)",
            "event_j": "estimate: one empty connection event (crystal start-up, radio ramp, "
                       "empty TX/RX, CPU) of about 2.3 uC at 3 V = 7 uJ, the order of "
                       "Nordic's online power profiler figures",
            "rtt_s": "no network: the phone is the peer; waiting for the next connection "
                     "event is charged by the connection interval instead",
        }),
    ),
    Link(
        id="lte", name="LTE (phone to cloud)", medium="cellular",
        up_bytes_per_s=6e6 / 8, down_bytes_per_s=13e6 / 8,
        up_j_per_byte=0.43839 * 8e-6, down_j_per_byte=0.05197 * 8e-6,
        active_w=1.28804, wake_s=0.2601, wake_w=1.2107, tail_s=11.576, tail_w=1.060,
        rtt_s=0.070, event_j=0.0,
        sources=MappingProxyType({
            "up_bytes_per_s": "Huang et al. 2012 (MobiSys, 'A close examination of performance "
                              "and power characteristics of 4G LTE networks'): median uplink "
                              "6 Mbit/s",
            "down_bytes_per_s": "same study: median downlink 13 Mbit/s",
            "up_j_per_byte": "same study's LTE power model, Table 3: alpha_u = 438.39 mW per "
                             "Mbit/s -> 0.43839 W / 1e6 bit/s x 8 bit = 3.51 uJ/byte "
                             "(2011-era handset; an estimate for a current phone)",
            "down_j_per_byte": "same model: alpha_d = 51.97 mW per Mbit/s -> 0.416 uJ/byte",
            "active_w": "same model: base power beta = 1288.04 mW while connected",
            "wake_s": "same model: promotion (idle -> connected) 260.1 ms at 1210.7 mW",
            "tail_s": "same model: tail timer 11.576 s at 1060.0 mW after the last packet",
            "rtt_s": "estimate: about 70 ms LTE round trip to a cloud region (the order the "
                     "same study measured)",
        }),
    ),
    Link(
        id="wifi", name="Wi-Fi (phone to cloud)", medium="wifi",
        up_bytes_per_s=10e6 / 8, down_bytes_per_s=20e6 / 8,
        up_j_per_byte=0.28317 * 8e-6, down_j_per_byte=0.13701 * 8e-6,
        active_w=0.13286, wake_s=0.0791, wake_w=0.1244, tail_s=0.2381, tail_w=0.1193,
        rtt_s=0.030, event_j=0.0,
        sources=MappingProxyType({
            "up_bytes_per_s": "estimate: 10 Mbit/s uplink on a home or office network",
            "down_bytes_per_s": "estimate: 20 Mbit/s downlink",
            "up_j_per_byte": "Huang et al. 2012, Table 3 (Wi-Fi): alpha_u = 283.17 mW per "
                             "Mbit/s -> 2.27 uJ/byte (2011-era handset; an estimate today)",
            "down_j_per_byte": "same table: alpha_d = 137.01 mW per Mbit/s -> 1.10 uJ/byte",
            "active_w": "same table: beta = 132.86 mW",
            "wake_s": "same table: promotion 79.1 ms at 124.4 mW",
            "tail_s": "same table: tail 238.1 ms at 119.3 mW",
            "rtt_s": "estimate: about 30 ms round trip over Wi-Fi to a cloud region",
        }),
    ),
)})


def get_link(link: str | Link) -> Link:
    """Look up a link by id (``ble-1m``, ``lte``, ``wifi``) or pass a :class:`Link` through."""
    return lookup("link", LINKS, link)


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

@dataclass(frozen=True)
class Battery:
    """A device battery. capacity_mwh: usable energy, mWh. other_mwh_per_day: what the rest
    of the device draws per day besides the workload studied. target_days: the promised
    life on one charge."""

    id: str
    name: str
    capacity_mwh: float
    other_mwh_per_day: float
    target_days: float
    sources: Mapping[str, str]


BATTERIES: Mapping[str, Battery] = MappingProxyType({b.id: b for b in (
    Battery(
        id="smart-ring", name="Smart-ring Li-ion cell", capacity_mwh=20.0 * 3.85,
        other_mwh_per_day=20.0 * 3.85 / 4.0 - 8.0, target_days=4.0,
        sources=MappingProxyType({
            "capacity_mwh": "estimate: a ring-sized Li-ion cell of about 20 mAh at 3.85 V "
                            "nominal = 77 mWh (consistent with the smart-ring track's "
                            "daily budget derivation)",
            "other_mwh_per_day": "derived: a 4-day life leaves 77 / 4 = 19.25 mWh per day, of "
                                 "which the spotter may take 8 mWh (track budget); sensors, "
                                 "BLE advertising and the RTOS take the other 11.25 mWh",
            "target_days": "the stakeholder's promise: four days on a charge",
        }),
    ),
    Battery(
        id="iphone-15-pro", name="iPhone 15 Pro battery", capacity_mwh=3274.0 * 3.87,
        other_mwh_per_day=0.0, target_days=1.0,
        sources=MappingProxyType({
            "capacity_mwh": "Apple regulatory filing: 3,274 mAh at 3.87 V nominal = 12,670 mWh",
            "other_mwh_per_day": "not modelled: the assistant's budget is a share of the "
                                 "battery per day (track daily budget)",
            "target_days": "a phone is charged daily",
        }),
    ),
)})


def get_battery(battery: str | Battery) -> Battery:
    return lookup("battery", BATTERIES, battery)


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


# -- edge device profiles -------------------------------------------------------------------

@dataclass(frozen=True)
class EdgeProfile:
    """What an edge device pairs with, per :mod:`labkit.registries.hardware` id.

    battery: a :data:`BATTERIES` id (None: mains or vehicle power). offload_links: the
    links its work can be handed off over (:data:`LINKS` ids). host_hardware_id: the device
    that runs handed-off work (None: a cloud service). front_end_ops: sensor
    pre-processing per input before the model (e.g. MFCC), operations. feature_bytes: the
    pre-processed input the model consumes, bytes. result_bytes: what the device reports
    per input when it runs the model itself, bytes.
    """

    hardware_id: str
    battery: str | None
    offload_links: tuple[str, ...]
    host_hardware_id: str | None
    front_end_ops: float
    feature_bytes: float
    result_bytes: float
    sources: Mapping[str, str]


EDGE_PROFILES: Mapping[str, EdgeProfile] = MappingProxyType({p.hardware_id: p for p in (
    EdgeProfile(
        hardware_id="cortex-m4-ring", battery="smart-ring", offload_links=("ble-1m",),
        host_hardware_id="a17-pro", front_end_ops=2.0e6, feature_bytes=49 * 10,
        result_bytes=4,
        sources=MappingProxyType({
            "offload_links": "the ring talks to its phone over Bluetooth LE",
            "host_hardware_id": "handed-off windows are classified on the paired phone",
            "front_end_ops": "estimate: MFCC of 1 s of 16 kHz audio = 49 frames x (512-point "
                             "FFT about 23k operations + 40 mel filters over 257 bins + a "
                             "10-term DCT), about 2 million operations",
            "feature_bytes": "Zhang et al. 2017 (Hello Edge): 49 x 10 MFCC features, 1 byte "
                             "each at INT8",
            "result_bytes": "estimate: a 4-byte decision record (class id, score, timestamp)",
        }),
    ),
    EdgeProfile(
        hardware_id="a17-pro", battery="iphone-15-pro", offload_links=("lte", "wifi"),
        host_hardware_id=None, front_end_ops=0.0, feature_bytes=0.0, result_bytes=0.0,
        sources=MappingProxyType({
            "offload_links": "a phone hands a request to a cloud service over LTE or Wi-Fi",
            "host_hardware_id": "the cloud service (its latency from the chat SLO targets)",
        }),
    ),
    EdgeProfile(
        hardware_id="drive-orin", battery=None, offload_links=(), host_hardware_id=None,
        front_end_ops=0.0, feature_bytes=0.0, result_bytes=0.0,
        sources=MappingProxyType({
            "battery": "vehicle power: the budget is energy per day, not battery life",
            "offload_links": "no hand-off off the vehicle for perception: the peer SoC on the "
                             "same board is reached over the hardware interconnect",
        }),
    ),
)})


def edge_profile(hardware_id: str) -> EdgeProfile | None:
    """The :class:`EdgeProfile` of a device, or None for devices without one."""
    return EDGE_PROFILES.get(str(hardware_id))


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

BYTES_PER_TOKEN = 4.0          # OpenAI's rule of thumb: one token is about 4 characters
REQUEST_OVERHEAD_BYTES = 2_000.0   # estimate: TLS records + HTTP headers + JSON envelope
STREAM_BYTES_PER_TOKEN = 100.0     # estimate: one server-sent event (JSON chunk) per token
HANDOFF_SOURCES: Mapping[str, str] = MappingProxyType({
    "BYTES_PER_TOKEN": "OpenAI tokenizer guidance: 1 token is about 4 characters of English "
                       "text, 1 byte each in UTF-8",
    "REQUEST_OVERHEAD_BYTES": "estimate: TLS records, HTTP/2 headers and the JSON envelope "
                              "of one chat request",
    "STREAM_BYTES_PER_TOKEN": "estimate: a streamed reply sends one server-sent event of "
                              "about 100 bytes (JSON chunk) per token",
})


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
# YOLOv8-n split after the backbone: the three feature maps the neck consumes at 640 x 640.
YOLOV8N_SPLIT_BYTES = 80 * 80 * 64 + 40 * 40 * 128 + 20 * 20 * 256
BACKBONE_FLOP_SHARE = 0.5
CAMERA_SOURCES: Mapping[str, str] = MappingProxyType({
    "YOLOV8N_SPLIT_BYTES": "derived: YOLOv8-n backbone outputs P3 80x80x64, P4 40x40x128, "
                           "P5 20x20x256 at 640 x 640 (Ultralytics yolov8.yaml, width 0.25) "
                           "= 716,800 values, 1 byte each at INT8",
    "BACKBONE_FLOP_SHARE": "estimate: the backbone does about half of YOLOv8-n's FLOPs, the "
                           "neck and head the other half",
    "cameras_wired": "assumption: every camera is wired to the first SoC; frames for the "
                     "second cross the board interconnect",
})


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
