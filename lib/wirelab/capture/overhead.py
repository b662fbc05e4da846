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
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ..errors import CaptureError
from ..model import HeaderStack, Prediction, predict
from ..wire.headers import IP_HEADER, IPV4_MIN_MTU, IPV6_MIN_MTU, TCP_HEADER, UDP_HEADER
from .conversations import conversation_ids
from .tcp_sequence import tcp_analysis

__all__ = ["WireOverhead", "read_overhead", "CaptureVerdict", "predict_from_capture", "predict_from_overhead",
           "capture_warnings"]



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
        return out


def _mode(values: pd.Series) -> int:
    counts = values.value_counts()
    if counts.empty:
        return 0
    top = counts[counts == counts.max()].index
    return int(max(top))


def capture_warnings(df: pd.DataFrame) -> list[str]:
    """Things that make a capture show something other than the wire."""
    out = []
    cut = (df["cap_len"] < df["frame_len"]).to_numpy()
    if cut.any():
        out.append(f"snaplen cut {int(cut.sum())} of {len(df)} frames (to {int(df['cap_len'][cut].max())} B): "
                   "headers are complete, payload bytes are not in the file")
    for i, iface in enumerate(df.attrs.get("capture", {}).get("interfaces", [])):
        dropped = (iface.get("dropped") or 0) + (iface.get("os_dropped") or 0)
        if dropped:
            out.append(f"the capture dropped {dropped} packets on interface {iface.get('name') or i}: "
                       "counts and retransmissions may be wrong; use a capture filter or a bigger buffer (-B)")
    if "127.0.0.1" in set(df["src"].cat.categories) or "::1" in set(df["src"].cat.categories):
        out.append("loopback capture: the kernel hands whole 64 KB GSO super-frames to the capture, "
                   "not wire-sized packets; measure the wire on a testbed with offloads off")
    for note in df.attrs.get("capture", {}).get("notes", []):
        out.append(f"file: {note}")
    return out


def header_sizes(proto: str, tcp_options: int, ip_version: int, ip_len: int, payload: int,
                 fragmented: bool) -> tuple[int, int]:
    """(transport header, IP header) of the main flow's full packets: TCP 20 + options or UDP 8;
    IP 20 or 40, more when the packets say so (IP options, IPv6 extension headers)."""
    l4 = TCP_HEADER + tcp_options if proto == "tcp" else (UDP_HEADER if proto == "udp" else 0)
    ip_header = IP_HEADER[ip_version]
    if ip_len and not fragmented:
        ip_header = max(ip_len - payload - l4, ip_header)
    return l4, ip_header


def read_overhead(df: pd.DataFrame, *, conv: int | None = None, flags: pd.DataFrame | None = None) -> WireOverhead:
    """Read the overhead of the main flow (or conversation ``conv``) from a capture DataFrame."""
    ids = conversation_ids(df)
    payload = df["payload_len"].fillna(0).to_numpy(np.int64)
    has = (ids["conv"] >= 0).to_numpy()
    if not has.any():
        raise CaptureError("no TCP or UDP conversation in this capture", "capture a transfer (tcp or udp)")
    per = pd.DataFrame({"conv": ids["conv"][has], "ab": ids["a_to_b"][has], "payload": payload[has]})
    sums = per.groupby(["conv", "ab"])["payload"].sum()
    if conv is not None:
        sums = sums[sums.index.get_level_values(0) == conv]
        if sums.empty:
            raise CaptureError(f"no conversation {conv} in this capture", "see flows() for the numbers")
    conv_id, ab = sums.idxmax()
    rows = (ids["conv"] == conv_id).to_numpy() & (ids["a_to_b"] == ab).to_numpy()
    d = df[rows]
    data = d[d["payload_len"].fillna(0) > 0]
    if data.empty:
        raise CaptureError("the main flow carries no payload", "capture the data transfer itself")
    proto = str(d["proto"].iloc[0])
    l3 = str(data["l3"].iloc[0])
    ip_version = 6 if l3 == "ipv6" else 4
    frag = bool(d["more_frags"].fillna(False).any() or (d["frag_offset"].fillna(0) > 0).any())
    sizes = data["payload_len"]
    if frag:        # a datagram's payload is spread over its fragments
        sizes = data.groupby(data["ip_id"].fillna(-1).to_numpy())["payload_len"].sum()
    full = _mode(sizes)
    segs = data[data["payload_len"] == (full if not frag else _mode(data["payload_len"]))]
    warnings = capture_warnings(df)
    tcp_opts = _mode(segs["tcp_opts_len"].dropna()) if proto == "tcp" else 0
    ip_len = _mode(segs["ip_len"].dropna())
    l4, ip_header = header_sizes(proto, tcp_opts, ip_version, ip_len, full, frag)
    mss_rows = df[(ids["conv"] == conv_id).to_numpy()]["tcp_mss"].dropna()
    mss = int(mss_rows.min()) if len(mss_rows) else None
    mtu = int(d["ip_len"].max()) if frag else int(ip_len or full + l4 + ip_header)
    if proto == "tcp" and mss and int(data["payload_len"].max()) > mss:
        warnings.append(f"segments of up to {int(data['payload_len'].max())} B exceed the MSS of {mss} B: "
                        "segmentation offload (TSO/GSO/GRO) was on where this was captured; "
                        "turn it off (ethtool -K IFACE tso off gso off gro off) to see wire packets")
        mtu = mss + ip_header + TCP_HEADER
    unique = int(data["payload_len"].sum())
    if proto == "tcp":
        flags = tcp_analysis(df) if flags is None else flags
        retrans = flags.loc[data.index, "retransmission"].to_numpy()
        unique -= int(data["payload_len"][retrans].sum())
    mtu = max(mtu, IPV6_MIN_MTU if ip_version == 6 else IPV4_MIN_MTU)
    return WireOverhead(
        proto=proto, conv=int(conv_id), src=str(d["src"].iloc[0]), dst=str(d["dst"].iloc[0]),
        ip_version=ip_version, vlan=bool(d["vlan"].notna().any()), mss=mss, payload=int(full),
        tcp_options=int(tcp_opts), ip_header=int(ip_header), l4_header=int(l4),
        frame_len=_mode(segs["frame_len"]), mtu=int(mtu), fragmented=frag, data_packets=len(sizes),
        payload_bytes=int(data["payload_len"].sum()), unique_payload_bytes=unique,
        first_time=float(data["time"].min()), last_time=float(data["time"].max()),
        warnings=tuple(warnings))


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


def predict_from_capture(df: pd.DataFrame, rate_bps: float, *, wire: str = "emulated",
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
    pred = predict(ov.proto if ov.proto in ("tcp", "udp") else "udp", rate_bps, mtu=ov.mtu,
                   payload=payload, ip_version=ov.ip_version,
                   tcp_options=ov.tcp_options if ov.proto == "tcp" else 0,
                   vlan=ov.vlan, wire=wire, **model_args)
    return CaptureVerdict(ov, pred, ov.measured_goodput_bps)
