"""Wireshark's field names → the reader's columns: the one table both evaluations read.

``LAYERS``: when a protocol is in a frame (Wireshark's ``tcp``, ``ip``, ...), as
conditions on columns. ``FIELDS``: each field's kind, its column(s) and its
layer; a field is in a frame where its layer is and its column is not missing.
Two columns (``ip.addr``, ``tcp.port``) mean either side: ``==`` holds if
either does, ``!=`` if neither does (Wireshark 4.0's ``any_eq`` and
``all_ne``). A field's values come from one of four places (``source``):

* ``frames``: a column of ``read_capture``'s table (a dataset's ``packets``);
* ``analysis``: Wireshark's TCP analysis flags, ``tcp_sequence.tcp_analysis``
  (``expert=True``; SQL: the dataset's ``tcp_flags`` table, the six flags only);
* ``streams``: Wireshark's ``tcp.stream``/``udp.stream``, ``conversations.conversation_ids``;
* ``ppcb``: PPCB packets as the kit's dissector reads them (``ppcb_reader``), frames only.

A TCP or UDP field (``TRANSPORT``) of a fragmented datagram is where Wireshark
shows it after reassembly: on its last fragment (``frames.Context.header``).
``value(field, token)`` reads a literal as the field's kind (a number, an
address or CIDR block, a PPCB type name) or says why not.
"""
from __future__ import annotations

import difflib
import ipaddress
from dataclasses import dataclass

from ... import transports
from ...wire.ppcb import CODES
from ..reader.formats import IP_PROTO
from .syntax import FilterError, Token

__all__ = ["Field", "FIELDS", "LAYERS", "TRANSPORT", "field", "value", "proto_names"]

#: protocol → conditions on columns (column, test, argument) that all hold where it is in a frame
LAYERS = {
    "frame": (),
    "eth": (("linktype", "==", 1),),
    "sll": (("linktype", "==", 113),),
    "vlan": (("vlan", "present", None),),
    "ip": (("l3", "==", "ipv4"),),
    "ipv6": (("l3", "==", "ipv6"),),
    "arp": (("l3", "==", "arp"),),
    "tcp": (("proto", "==", "tcp"), ("tcp_seq", "present", None)),
    "udp": (("proto", "==", "udp"), ("sport", "present", None)),
    "icmp": (("proto", "==", "icmp"),),
    "icmpv6": (("proto", "==", "icmpv6"),),
}
#: layers Wireshark shows on a fragmented datagram's last fragment, after reassembly
TRANSPORT = {"tcp", "udp"}


@dataclass(frozen=True)
class Field:
    """One Wireshark field: ``kind`` int | float | bool | bit | addr4 | addr6 | ipproto | flag |
    text; ``columns``: one, or two meaning either side; ``bit``: the mask of a flag bit."""
    kind: str
    columns: tuple
    layer: str
    source: str = "frames"
    bit: int = 0
    add: int = 0               # a constant the column is off by (udp.length = payload + 8)


def _f(kind, *columns, layer="frame", **kw) -> Field:
    return Field(kind, columns, layer, **kw)


_TCP_BITS = {"fin": 0x01, "syn": 0x02, "reset": 0x04, "push": 0x08, "ack": 0x10, "urg": 0x20,
             "ece": 0x40, "cwr": 0x80}
#: Wireshark's tcp.analysis.* → the column of ``tcp_analysis(df, expert=True)``
ANALYSIS = {"retransmission": "retransmission", "fast_retransmission": "fast_retransmission",
            "spurious_retransmission": "spurious_retransmission", "out_of_order": "out_of_order",
            "lost_segment": "lost_segment", "duplicate_ack": "duplicate_ack", "keep_alive": "keep_alive",
            "zero_window": "zero_window", "window_update": "window_update", "ack_lost_segment": "ack_unseen",
            "keep_alive_ack": "keep_alive_ack", "window_full": "window_full", "reused_ports": "reused_ports"}

FIELDS: dict[str, Field] = {
    "frame.number": _f("int", "frame"), "frame.len": _f("int", "frame_len"),
    "frame.cap_len": _f("int", "cap_len"), "frame.time_relative": _f("float", "time_relative"),
    "frame.time_epoch": _f("float", "time"), "frame.interface_id": _f("int", "iface"),
    "vlan.id": _f("int", "vlan", layer="vlan"),
    "ip.src": _f("addr4", "src", layer="ip"), "ip.dst": _f("addr4", "dst", layer="ip"),
    "ip.addr": _f("addr4", "src", "dst", layer="ip"), "ip.len": _f("int", "ip_len", layer="ip"),
    "ip.ttl": _f("int", "ttl", layer="ip"), "ip.id": _f("int", "ip_id", layer="ip"),
    "ip.frag_offset": _f("int", "frag_offset", layer="ip"), "ip.flags.mf": _f("bool", "more_frags", layer="ip"),
    "ip.proto": _f("ipproto", "proto", layer="ip"),
    "ipv6.src": _f("addr6", "src", layer="ipv6"), "ipv6.dst": _f("addr6", "dst", layer="ipv6"),
    "ipv6.addr": _f("addr6", "src", "dst", layer="ipv6"), "ipv6.hlim": _f("int", "ttl", layer="ipv6"),
    "ipv6.nxt": _f("ipproto", "proto", layer="ipv6"),
    "tcp.srcport": _f("int", "sport", layer="tcp"), "tcp.dstport": _f("int", "dport", layer="tcp"),
    "tcp.port": _f("int", "sport", "dport", layer="tcp"), "tcp.seq_raw": _f("int", "tcp_seq", layer="tcp"),
    "tcp.ack_raw": _f("int", "tcp_ack", layer="tcp"), "tcp.flags": _f("int", "tcp_flags", layer="tcp"),
    "tcp.window_size_value": _f("int", "tcp_win", layer="tcp"), "tcp.hdr_len": _f("int", "tcp_hdr_len", layer="tcp"),
    "tcp.len": _f("int", "payload_len", layer="tcp"), "tcp.options.mss_val": _f("int", "tcp_mss", layer="tcp"),
    "tcp.options.wscale.shift": _f("int", "tcp_wscale", layer="tcp"),
    "tcp.stream": _f("int", "stream", layer="tcp", source="streams"),
    "tcp.analysis.flags": _f("flag", *ANALYSIS.values(), layer="tcp", source="analysis"),
    "udp.srcport": _f("int", "sport", layer="udp"), "udp.dstport": _f("int", "dport", layer="udp"),
    "udp.port": _f("int", "sport", "dport", layer="udp"), "udp.length": _f("int", "payload_len", layer="udp", add=8),
    "udp.stream": _f("int", "stream", layer="udp", source="streams"),
    "ppcb": _f("flag", "ppcb", layer="frame", source="ppcb"),
    "ppcb.type": _f("int", "type", layer="frame", source="ppcb"),
    "ppcb.session_id": _f("text", "session_id", layer="frame", source="ppcb"),
    "ppcb.protocol_id": _f("int", "protocol_id", layer="frame", source="ppcb"),
    "ppcb.total_length": _f("int", "total_length", layer="frame", source="ppcb"),
    "ppcb.packet_no": _f("int", "packet_no", layer="frame", source="ppcb"),
    "ppcb.data_len": _f("int", "data_len", layer="frame", source="ppcb"),
}
FIELDS.update({f"tcp.flags.{name}": _f("bit", "tcp_flags", layer="tcp", bit=bit) for name, bit in _TCP_BITS.items()})
FIELDS.update({f"tcp.analysis.{name}": _f("flag", column, layer="tcp", source="analysis")
               for name, column in ANALYSIS.items()})
FIELDS.update({name: _f("flag", layer=name) for name in LAYERS})


def field(text: str, token: Token) -> Field:
    """The field named by ``token``, or a ``FilterError`` naming the nearest known ones."""
    found = FIELDS.get(token.text)
    if found is not None:
        return found
    near = difflib.get_close_matches(token.text, FIELDS, n=3, cutoff=0.6)
    prefix = token.text.split(".")[0]
    same = sorted(name for name in FIELDS if name.split(".")[0] == prefix)
    hint = (f"did you mean {' or '.join(near)}?" if near else
            f"the {prefix} fields known here: {', '.join(same)}" if same else
            f"the protocols known here: {', '.join(sorted(n for n in FIELDS if '.' not in n))}")
    raise FilterError(text, token.pos, token.width, f"unknown field '{token.text}'", hint)


def proto_names(test) -> list[str]:
    """The protocol names (as ``read_capture`` gives them) whose IP protocol number passes ``test``."""
    return [IP_PROTO.get(n, f"ip-proto-{n}") for n in range(256) if test(n)]


def value(text: str, f: Field, name: str, token: Token):
    """The literal ``token`` as a value of field ``f`` (named ``name``)."""
    raw = token.text

    def bad(why: str, fix: str):
        raise FilterError(text, token.pos, token.width, f"'{raw}' {why} for {name}", fix)

    if f.kind in ("addr4", "addr6"):
        try:
            net = ipaddress.ip_network(raw, strict=False)
        except ValueError:
            bad("is not an address or CIDR block", "e.g. 10.0.0.1, 10.0.0.0/8, fe80::/10 (no host names)")
        if (net.version == 4) != (f.kind == "addr4"):
            bad(f"is an IPv{net.version} address", f"compare it with {'ip' if net.version == 4 else 'ipv6'}.addr")
        return net
    if f.kind == "text":
        return raw
    if name == "ppcb.type" and raw.upper() in CODES:
        return CODES[raw.upper()]
    if name == "ppcb.protocol_id" and raw.lower() in transports.names():
        return transports.get(raw.lower()).protocol_id
    if f.kind in ("bool", "bit", "flag") and raw.lower() in ("true", "false"):
        return int(raw.lower() == "true")
    if f.kind == "float":
        try:
            return float(raw)
        except ValueError:
            bad("is not a number", "e.g. 1.5 (seconds)")
    try:
        number = int(raw, 0) if not (len(raw) > 1 and raw[0] == "0" and raw[1:].isdigit()) else int(raw, 8)
    except ValueError:
        if f.kind == "ipproto" and raw.lower() in IP_PROTO.values():
            return next(k for k, v in IP_PROTO.items() if v == raw.lower())
        bad("is not a whole number", "e.g. 80, 0x50" + (" or CONN, DATA, ..." if name == "ppcb.type" else ""))
    if f.kind in ("bool", "bit", "flag") and number not in (0, 1):
        bad("is not 0 or 1", "a flag is 1 (set) or 0 (not set)")
    return number
