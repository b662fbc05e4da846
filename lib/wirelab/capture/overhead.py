"""Overhead read from the wire, fed to ``wirelab.model`` to predict what this capture should show.

From the main flow of a capture (the conversation carrying most payload, in
its busier direction) we read what each packet really carried: IP version,
VLAN tag, MSS announced in the SYN, TCP option bytes per data segment (12 with
timestamps), the payload of a full segment (1448, not 1460, with timestamps),
the MTU in use, fragmentation. Those make a ``HeaderStack``; the model turns
it and a link rate into a predicted goodput, which we put beside the goodput
measured in the capture. Sanity warnings say when the capture cannot show
the wire: frames larger than the MTU (segmentation offload was on at the
capture point), a snaplen that cut frames, packets dropped by the capture.

The frame's parts are the link type's own: Ethernet's 14 B header, Linux cooked
capture's 16 B (v2: 20 B), none for raw IP, the loopback's 4 B address family
(``reader.formats.LINK_HEADER``); bytes after the IP packet (an Ethernet trailer)
are counted as such, so the parts add up to the frame.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CaptureError
from ..model.headers import HeaderStack
from ..wire.headers import ETHERNET_MTU, IP_HEADER, IPV4_MIN_MTU, IPV6_MIN_MTU, TCP_HEADER, UDP_HEADER, VLAN_TAG
from .conversations import conversations_of, first_seen_ids
from .reader.dissect import L3_NAMES
from .reader.formats import LINK_HEADER, LINK_NAMES
from .reader.frames import Frames
from .tcp_sequence import tcp_flags_of

if TYPE_CHECKING:
    from ..model.prediction import Prediction

__all__ = ["WireOverhead", "read_overhead", "overhead_of", "CaptureVerdict", "predict_from_capture",
           "predict_from_overhead", "capture_warnings", "header_sizes", "link_header_of", "loopback_warning"]



@dataclass(frozen=True)
class WireOverhead:
    """What the main flow's packets carried, read from the capture."""
    proto: str
    conv: int
    src: str
    dst: str
    ip_version: int
    vlan: bool
    mss: int | None                # announced in the SYN (None: no handshake captured)
    payload: int                   # most common payload per data packet (a full segment)
    tcp_options: int               # option bytes in that segment (TCP)
    ip_header: int
    l4_header: int
    frame_len: int                 # most common frame of data packets, as captured (no FCS)
    mtu: int                       # IP MTU in use
    fragmented: bool
    data_packets: int
    payload_bytes: int             # all payload in this direction, retransmissions included
    unique_payload_bytes: int      # without retransmitted segments
    first_time: float
    last_time: float
    warnings: tuple[str, ...] = field(default_factory=tuple)
    linktype: int = 1              # the full segments' link type (pcap's LINKTYPE_*)
    link_header: int = 14          # bytes before the IP header: the link type's, VLAN tags included

    @property
    def link(self) -> str:
        """The link type's name ("Ethernet", "Linux cooked", "raw IP", ...)."""
        return LINK_NAMES.get(self.linktype, f"link type {self.linktype}")

    @property
    def vlan_tags(self) -> int:
        """Bytes of 802.1Q/802.1ad tags in ``link_header`` (4 a tag)."""
        return max(self.link_header - link_header_of(self.linktype), 0)

    @property
    def trailer(self) -> int:
        """Bytes of a full segment's frame after its IP packet (an Ethernet trailer); for
        fragments, after a full fragment (an IP packet of ``mtu`` bytes)."""
        if self.fragmented:
            return max(self.frame_len - self.link_header - self.mtu, 0)
        return max(self.frame_len - self.link_header - self.ip_header - self.l4_header - self.payload, 0)

    @property
    def measured_goodput_bps(self) -> float:
        """Payload after the first data packet / time from first to last data packet."""
        span = self.last_time - self.first_time
        if span <= 0 or self.data_packets < 2:
            return float("nan")
        return (self.unique_payload_bytes - self.unique_payload_bytes / self.data_packets) * 8 / span

    def stack(self, wire: str = "emulated") -> HeaderStack:
        return HeaderStack(self.proto, self.mtu, self.ip_version, self.tcp_options if self.proto == "tcp" else 0,
                           self.vlan, False, wire)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["warnings"] = list(self.warnings)
        out["measured_goodput_bps"] = self.measured_goodput_bps
        out["link"], out["vlan_tags"], out["trailer"] = self.link, self.vlan_tags, self.trailer
        return out


def _mode(values: np.ndarray) -> int:
    """The most common value (the largest of the most common); 0 when there is none."""
    if not values.size:
        return 0
    distinct, counts = np.unique(values, return_counts=True)
    return int(distinct[counts == counts.max()].max())


def capture_warnings(df) -> list[str]:
    """Things that make a capture show something other than the wire (a ``read_capture``
    DataFrame, or its ``frames.Frames``)."""
    f = df if isinstance(df, Frames) else Frames.of(df)
    out = []
    cut = f.cap_len < f.frame_len
    if cut.any():
        out.append(f"snaplen cut {int(cut.sum())} of {len(f)} frames (to {int(f.cap_len[cut].max())} B): "
                   "headers are complete, payload bytes are not in the file")
    for i, iface in enumerate(f.info.get("interfaces", [])):
        dropped = (iface.get("dropped") or 0) + (iface.get("os_dropped") or 0)
        if dropped:
            out.append(f"the capture dropped {dropped} packets on interface {iface.get('name') or i}: "
                       "counts and retransmissions may be wrong; use a capture filter or a bigger buffer (-B)")
    loopback = [f.addresses.index(a) for a in ("127.0.0.1", "::1") if a in f.addresses]
    if loopback:
        on_lo = np.isin(f.src, loopback) | np.isin(f.dst, loopback)
        biggest = int(f.ip_len[on_lo].max(initial=-1))
        if biggest > ETHERNET_MTU:        # (loopback packets of wire sizes: nothing to warn about)
            out.append(loopback_warning(biggest))
    for note in f.info.get("notes", []):
        out.append(f"file: {note}")
    return out


def loopback_warning(biggest: int) -> str:
    """The warning for loopback packets larger than an Ethernet's (the pandas and SQL twins')."""
    return (f"loopback capture: packets of up to {biggest} B, larger than an Ethernet MTU of {ETHERNET_MTU} B "
            "(the loopback's MTU is 64 KiB and the kernel hands GSO super-frames to the capture), not "
            "wire-sized packets; measure the wire on a testbed with offloads off")


def header_sizes(proto: str, tcp_options: int, ip_version: int, ip_len: int, payload: int,
                 fragmented: bool) -> tuple[int, int]:
    """(transport header, IP header) of the main flow's full packets: TCP 20 + options or UDP 8;
    IP 20 or 40, more when the packets say so (IP options, IPv6 extension headers)."""
    l4 = TCP_HEADER + tcp_options if proto == "tcp" else (UDP_HEADER if proto == "udp" else 0)
    ip_header = IP_HEADER[ip_version]
    if ip_len and not fragmented:
        ip_header = max(ip_len - payload - l4, ip_header)
    return l4, ip_header


def read_overhead(df, *, conv: int | None = None, flags=None) -> WireOverhead:
    """Read the overhead of the main flow (or conversation ``conv``) from a capture DataFrame
    (``flags``: its ``tcp_analysis``, if already made)."""
    retransmission = None if flags is None else flags["retransmission"].to_numpy(bool)
    return overhead_of(Frames.of(df), conv=conv, retransmission=retransmission)


def overhead_of(f: Frames, *, conv: int | None = None, retransmission: np.ndarray | None = None) -> WireOverhead:
    """``read_overhead`` on numpy columns; ``retransmission``: the TCP analysis flag per frame."""
    ids, a_to_b = conversations_of(f)
    payload = np.maximum(f.payload_len, 0)
    has = ids >= 0
    if not has.any():
        raise CaptureError("no TCP or UDP conversation in this capture", "capture a transfer (tcp or udp)")
    # payload per (conversation, direction), B→A before A→B as a sorted group-by has them
    sums = np.bincount(2 * ids[has] + a_to_b[has], weights=payload[has])
    groups = np.flatnonzero(np.bincount(2 * ids[has] + a_to_b[has]))          # the pairs that occur
    if conv is not None:
        groups = groups[groups // 2 == conv]
        if not groups.size:
            raise CaptureError(f"no conversation {conv} in this capture", "see flows() for the numbers")
    best = int(groups[np.argmax(sums[groups])])
    conv_id, ab = best // 2, bool(best % 2)
    rows = np.flatnonzero((ids == conv_id) & (a_to_b == ab))
    data = rows[payload[rows] > 0]
    if not data.size:
        raise CaptureError("the main flow carries no payload", "capture the data transfer itself")
    proto = f.protocols[f.proto[rows[0]]]
    ip_version = 6 if L3_NAMES[f.l3[data[0]]] == "ipv6" else 4
    frag = bool(f.more_frags[rows].any() or (f.frag_offset[rows] > 0).any())
    sizes = f.payload_len[data]
    if frag:        # a datagram's payload is spread over its fragments
        datagram, _ = first_seen_ids(f.ip_id[data].reshape(-1, 1))
        sizes = np.bincount(datagram, weights=sizes).astype(np.int64)
    full = _mode(sizes)
    segs = data[f.payload_len[data] == (full if not frag else _mode(f.payload_len[data]))]
    warnings = capture_warnings(f)
    present = lambda values: values[values >= 0]     # noqa: E731 - missing values are -1
    tcp_opts = _mode(present(f.tcp_opts_len[segs])) if proto == "tcp" else 0
    ip_len = _mode(present(f.ip_len[segs]))
    l4, ip_header = header_sizes(proto, tcp_opts, ip_version, ip_len, full, frag)
    announced = present(f.tcp_mss[ids == conv_id])
    mss = int(announced.min()) if announced.size else None
    biggest = int(f.payload_len[data].max())
    mtu = int(present(f.ip_len[rows]).max()) if frag else int(ip_len or full + l4 + ip_header)
    if proto == "tcp" and mss and biggest > mss:
        warnings.append(f"segments of up to {biggest} B exceed the MSS of {mss} B: "
                        "segmentation offload (TSO/GSO/GRO) was on where this was captured; "
                        "turn it off (ethtool -K IFACE tso off gso off gro off) to see wire packets")
        mtu = mss + ip_header + TCP_HEADER
    unique = int(f.payload_len[data].sum())
    if proto == "tcp":
        again = tcp_flags_of(f)[0]["retransmission"] if retransmission is None else retransmission
        unique -= int(f.payload_len[data][again[data]].sum())
    mtu = max(mtu, IPV6_MIN_MTU if ip_version == 6 else IPV4_MIN_MTU)
    linktype = _mode(f.linktype[segs])
    # what came before the IP header, as the frames say (two VLAN tags: 8 B); the link type's
    # own size for fragments (the later ones have no transport header to count back from)
    before_ip = (_mode(present(f.payload_offset[segs]) - ip_header - l4) if not frag else 0) or \
        link_header_of(linktype) + VLAN_TAG * bool((f.vlan[rows] >= 0).any())
    return WireOverhead(
        proto=proto, conv=int(conv_id), src=f.addresses[f.src[rows[0]]], dst=f.addresses[f.dst[rows[0]]],
        ip_version=ip_version, vlan=bool((f.vlan[rows] >= 0).any()), mss=mss, payload=int(full),
        tcp_options=int(tcp_opts), ip_header=int(ip_header), l4_header=int(l4),
        frame_len=_mode(f.frame_len[segs]), mtu=int(mtu), fragmented=frag, data_packets=int(sizes.size),
        payload_bytes=int(f.payload_len[data].sum()), unique_payload_bytes=unique,
        first_time=float(np.nanmin(f.time[data])), last_time=float(np.nanmax(f.time[data])),
        warnings=tuple(warnings), linktype=linktype, link_header=int(before_ip))


def link_header_of(linktype: int) -> int:
    """The link type's header before the IP packet (Ethernet 14, Linux cooked 16 or 20, raw IP 0)."""
    return LINK_HEADER.get(linktype, (0,))[0]


@dataclass(frozen=True)
class CaptureVerdict:
    """Predicted goodput for the overhead this capture shows, beside the measured one."""
    overhead: WireOverhead
    prediction: Prediction
    measured_bps: float

    @property
    def ratio(self) -> float:
        return self.measured_bps / self.prediction.goodput_bps

    def to_dict(self) -> dict:
        return {"overhead": self.overhead.to_dict(), "prediction": self.prediction.to_dict(),
                "measured_goodput_bps": self.measured_bps, "predicted_goodput_bps": self.prediction.goodput_bps,
                "ratio": self.ratio}


def predict_from_capture(df, rate_bps: float, *, wire: str = "emulated",
                         conv: int | None = None, **model_args) -> CaptureVerdict:
    """``wirelab.model.predict`` with the overhead read from this capture, and the measured goodput.

    ``wire="emulated"`` counts 14 B of Ethernet per frame (what tbf charges);
    use ``"real"`` (38 B) for a capture of a physical link. ``model_args`` go to
    ``predict`` (``rtt_s``, ``loss``, ``window_bytes``...).
    """
    return predict_from_overhead(read_overhead(df, conv=conv), rate_bps, wire=wire, **model_args)


def predict_from_overhead(ov: WireOverhead, rate_bps: float, *, wire: str = "emulated",
                          **model_args) -> CaptureVerdict:
    """``predict_from_capture`` for an overhead already read (e.g. from a capture dataset)."""
    payload = None if ov.proto == "tcp" else ov.payload
    # the whole model only when a prediction is asked for (start-up of `wirelab analyze`)
    from ..model import predict

    pred = predict(ov.proto if ov.proto in ("tcp", "udp") else "udp", rate_bps, mtu=ov.mtu,
                   payload=payload, ip_version=ov.ip_version,
                   tcp_options=ov.tcp_options if ov.proto == "tcp" else 0,
                   vlan=ov.vlan, wire=wire, **model_args)
    return CaptureVerdict(ov, pred, ov.measured_goodput_bps)
