"""Edge registries: radio links, batteries and device profiles, with a source for every figure.

The data :mod:`labkit.physics.edge` computes with -- what an edge deployment pays *around*
the model:

* :data:`LINKS` (:class:`Link`) -- Bluetooth LE from a wearable to its phone, and the
  phone's LTE and Wi-Fi radios to a cloud service (Huang et al. 2012's radio model for
  phones; a packet-level derivation for BLE);
* :data:`BATTERIES` (:class:`Battery`) -- capacity, what the rest of the device draws per
  day, and the life the product promises;
* :data:`EDGE_PROFILES` (:class:`EdgeProfile`) -- per hardware id: its battery, the links
  its work can be handed off over, the host that runs handed-off work and its sensor
  front end;
* message sizes of a phone-to-cloud hand-off (:data:`HANDOFF_SOURCES`) and the YOLOv8-n
  backbone split of multi-camera perception (:data:`CAMERA_SOURCES`).

SI base units (bytes, seconds, watts, joules); decimal prefixes (1 kB = 1e3 bytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from labkit.core.lookup import lookup

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


# -- phone to cloud hand-off: message sizes ------------------------------------------------

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


# -- multi-camera perception: the split after the backbone ------------------------------

# A YOLOv8 split after the backbone: the three feature maps the neck consumes at 640 x 640.
YOLOV8N_SPLIT_BYTES = 80 * 80 * 64 + 40 * 40 * 128 + 20 * 20 * 256
YOLOV8M_SPLIT_BYTES = 80 * 80 * 192 + 40 * 40 * 384 + 20 * 20 * 576
BACKBONE_FLOP_SHARE = 0.5
CAMERA_SOURCES: Mapping[str, str] = MappingProxyType({
    "YOLOV8N_SPLIT_BYTES": "derived: YOLOv8-n backbone outputs P3 80x80x64, P4 40x40x128, "
                           "P5 20x20x256 at 640 x 640 (Ultralytics yolov8.yaml, width 0.25) "
                           "= 716,800 values, 1 byte each at INT8",
    "YOLOV8M_SPLIT_BYTES": "derived: YOLOv8-m backbone outputs P3 80x80x192, P4 40x40x384, "
                           "P5 20x20x576 at 640 x 640 (Ultralytics yolov8.yaml, width 0.75, "
                           "at most 768 channels) = 2,073,600 values, 1 byte each at INT8",
    "BACKBONE_FLOP_SHARE": "estimate: the backbone does about half of a YOLOv8's FLOPs, the "
                           "neck and head the other half",
    "cameras_wired": "assumption: every camera is wired to the first SoC; frames for the "
                     "second cross the board interconnect",
})

BACKBONE_SPLIT: Mapping[str, tuple[int, str]] = MappingProxyType({
    "yolov8n": (YOLOV8N_SPLIT_BYTES, "YOLOV8N_SPLIT_BYTES"),
    "yolov8m": (YOLOV8M_SPLIT_BYTES, "YOLOV8M_SPLIT_BYTES")})
"""Model id -> (bytes that cross the link when the detector is cut after its backbone, at
INT8; the key of their source in :data:`CAMERA_SOURCES`)."""


def backbone_split(model_id: str) -> tuple[int, str]:
    """(split bytes, source) of a detector cut after its backbone (:data:`BACKBONE_SPLIT`)."""
    if model_id not in BACKBONE_SPLIT:
        raise ValueError(f"model_id {model_id!r} has no backbone split; known: "
                         f"{sorted(BACKBONE_SPLIT)}")
    n, key = BACKBONE_SPLIT[model_id]
    return n, CAMERA_SOURCES[key]
