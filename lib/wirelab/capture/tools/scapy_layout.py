"""Where every header field sits in a frame, as scapy builds it, beside the model's count.

scapy is the tool to build, show and take apart one packet; here it answers
"which byte is what" for the frames a capture shows (Ethernet II, optional
802.1Q tag, IPv4 or IPv6, TCP with options or UDP, payload), and
``compare_with_stack`` sets its header sizes beside ``wirelab.model.HeaderStack``:

    frame = build_frame("tcp", payload=1448, tcp_options=12)   # the 1514-byte frame of doc 002
    layout(frame)                  # layer, field, offset (bytes), bits, value: one row per field
    compare_with_stack(frame, HeaderStack("tcp", tcp_options=12, wire="emulated"))

A frame is what a capture holds: the 8 B preamble, 4 B FCS and 12 B gap of a
real wire (``wire="real"``) are never in it, so compare with ``wire="emulated"``.
"""
from __future__ import annotations

import pandas as pd

from ...errors import CaptureError, UsageError
from ...model import HeaderStack
from ...wire.headers import TCP_MAX_OPTIONS, TCP_TIMESTAMPS, tcp_payload

__all__ = ["build_frame", "layout", "header_bytes", "compare_with_stack"]

#: scapy layer → the name HeaderStack.layers() gives the same bytes
_STACK_NAMES = {"Ether": "ethernet", "Dot1Q": "802.1Q", "IP": "IPv4", "IPv6": "IPv6", "UDP": "UDP"}
#: what a real wire carries around a frame and no capture holds
_OUTSIDE_A_FRAME = ("preamble+SFD", "FCS", "inter-frame gap")


def build_frame(proto: str = "tcp", *, payload: int = tcp_payload(), ip_version: int = 4, tcp_options: int = 0,
                vlan: bool = False):
    """An Ethernet frame as scapy builds it: [802.1Q] / IPv4|IPv6 / TCP|UDP / ``payload`` bytes.
    ``tcp_options``: 0, or a multiple of 4 up to 40 (12 = two NOPs + a timestamp, as Linux sends)."""
    # start-up: scapy only when build_frame() runs
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.packet import Raw

    if proto not in ("tcp", "udp"):
        raise UsageError(f"build_frame makes tcp or udp frames, not {proto!r}",
                         "udpr is UDP carrying PPCB: build UDP and put the PPCB header in the payload")
    if tcp_options % 4 or not 0 <= tcp_options <= TCP_MAX_OPTIONS or (tcp_options and proto != "tcp"):
        raise UsageError(f"{tcp_options} B of TCP options is impossible here", "use 0, 12 (timestamps) … 40, TCP only")
    frame = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if vlan:
        frame = frame / Dot1Q(vlan=7)
    frame = frame / (IP(src="10.77.1.1", dst="10.77.2.2") if ip_version == 4 else
                     IPv6(src="fd77:1::1", dst="fd77:2::2"))
    if proto == "tcp":
        options = [("NOP", None), ("NOP", None), ("Timestamp", (1, 0))] if tcp_options >= TCP_TIMESTAMPS else []
        options += [("NOP", None)] * (tcp_options - TCP_TIMESTAMPS * bool(options))
        frame = frame / TCP(sport=44450, dport=5201, flags="A", options=options)
    else:
        frame = frame / UDP(sport=44450, dport=5201)
    return frame / Raw(b"\x00" * payload) if payload else frame


def layout(frame) -> pd.DataFrame:
    """One row per field of the built frame: layer, field, offset (bytes from the frame's
    start; bit fields share a byte), bits, and the value as scapy shows it."""
    # start-up: scapy only when layout() runs
    from scapy import fields as f

    bit_field = getattr(f, "_BitField", f.BitField)
    built, per_layer = frame.build_ps()
    rows, bit = [], 0
    for packet, fields in reversed(per_layer):               # build_ps lists the innermost first
        for field, value, raw in fields:
            bits = field.size if isinstance(field, bit_field) else 8 * len(raw)
            shown = str(value)
            rows.append({"layer": type(packet).__name__, "field": field.name, "offset": bit / 8,
                         "bits": bits, "value": shown if len(shown) <= 40 else f"({len(raw)} bytes)"})
            bit += bits
    table = pd.DataFrame(rows)
    if bit != 8 * len(built):                                 # a field scapy sizes in a way we miss
        raise CaptureError(f"scapy's fields cover {bit} bits of a {8 * len(built)}-bit frame",
                           "this layout does not know one of its field types")
    return table


def header_bytes(frame) -> dict[str, int]:
    """Header bytes per layer, named as ``HeaderStack.layers()`` names them (TCP options apart);
    the payload under "payload"."""
    table = layout(frame)
    out: dict[str, int] = {}
    for layer, part in table.groupby("layer", sort=False):
        size = int(part["bits"].sum()) // 8
        if layer == "TCP":
            options = int(part.loc[part["field"] == "options", "bits"].sum()) // 8
            out["TCP"] = size - options
            if options:
                out["TCP options"] = options
        elif layer == "Raw":
            out["payload"] = size
        else:
            out[_STACK_NAMES.get(layer, layer)] = size
    return out


def compare_with_stack(frame, stack: HeaderStack) -> pd.DataFrame:
    """Header bytes per layer: scapy's frame beside the model's ``stack``, and whether they agree.
    Parts a frame cannot hold (preamble, FCS, gap of a real wire) show as missing on scapy's side."""
    scapy_bytes = {k: v for k, v in header_bytes(frame).items() if k != "payload"}
    model_bytes = stack.layers()
    names = list(dict.fromkeys([*model_bytes, *scapy_bytes]))
    table = pd.DataFrame({"layer": names, "scapy (bytes in the frame)": [scapy_bytes.get(n) for n in names],
                          "model (HeaderStack)": [model_bytes.get(n) for n in names]})
    table["agree"] = table["scapy (bytes in the frame)"] == table["model (HeaderStack)"]
    outside = table["layer"].isin(_OUTSIDE_A_FRAME) & table["scapy (bytes in the frame)"].isna()
    table["agree"] = table["agree"].astype(object).where(~outside, "not in a captured frame")
    return table
