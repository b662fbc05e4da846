"""Wireshark's Statistics › Protocol Hierarchy of what the kit decodes (``tshark -q -z io,phs``).

Each frame is a path of protocols, Wireshark's names: ``frame`` (the root, as in
Wireshark's window and in tshark's when it dissects whole frames), the link (``eth``, ``sll`` for
Linux cooked v1 and v2, ``null`` for BSD loopback, ``raw`` for raw IP), 802.1Q tags
(``vlan``; ``ieee8021ad:vlan`` for a Q-in-Q outer tag, read from the frame's bytes when
there are bytes), the network layer (``ip``, ``ipv6``, ``arp``), the transport (``tcp``,
``udp``, ``icmp``, ...) and what it carries: ``data`` (a payload, whole or cut by the
snaplen), or ``ppcb`` where the kit read a PPCB packet. A TCP retransmission (not a
fast or spurious one) or out-of-order segment carries no ``data``: Wireshark does not
hand it to a subdissector (packet-tcp.c, ``tcp_no_subdissector_on_error``, on by default). An IP fragment
other than the last is ``data`` right under ``ip``: Wireshark reassembles the datagram
and dissects its transport at the last fragment (``transport_frames``), unless the
snaplen cut one of its fragments (then every fragment stays ``data``). A TCP segment whose
header the snaplen cut (its options: SACK blocks behind a 80-byte snaplen) is ``tcp:_ws.short``,
as Wireshark's dissector stops there (``tcp_header_cut``). A row per prefix of a path: its frames and bytes (``frame_len``), in
the order Wireshark prints them (a protocol's children in order of first frame).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["LINK", "protocol_hierarchy", "frame_paths", "transport_frames", "unreassembled", "tcp_header_cut"]

#: link type → Wireshark's protocol name (tcpdump.org/linktypes.html)
LINK = {0: "null", 108: "null", 1: "eth", 113: "sll", 276: "sll", 101: "raw", 12: "raw", 14: "raw",
        228: "raw", 229: "raw"}
_L3 = {"ipv4": "ip", "ipv6": "ipv6", "arp": "arp"}
_QINQ, _VLAN = 0x88A8, 0x8100


def _fragments(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per frame: an IP fragment; the last of its datagram; in a datagram Wireshark cannot
    reassemble (the snaplen cut one of its fragments)."""
    offset = df["frag_offset"].fillna(0).to_numpy(np.int64)
    more = df["more_frags"].fillna(False).to_numpy(bool)
    fragment = more | (offset > 0)
    if not fragment.any():
        return fragment, fragment, fragment
    # cut: the file holds less of the fragment's IP data than it carried (not frame_len: an
    # editcap -C chops the link header and keeps the length on the wire)
    held = df["cap_len"].to_numpy(np.int64) - df["payload_offset"].fillna(0).to_numpy(np.int64)
    cut = (held < df["payload_len"].fillna(0).to_numpy(np.int64)) & fragment
    key = pd.MultiIndex.from_arrays([df["src"].cat.codes, df["dst"].cat.codes, df["proto"].cat.codes,
                                     df["ip_id"].fillna(-1)])
    codes, _ = pd.factorize(key)
    any_cut = np.bincount(codes[fragment], weights=cut[fragment], minlength=codes.max() + 1) > 0
    return fragment, (offset > 0) & ~more, fragment & any_cut[codes]


def unreassembled(df: pd.DataFrame) -> np.ndarray:
    """The IP fragments of datagrams Wireshark cannot reassemble (the snaplen cut one)."""
    return _fragments(df)[2]


def tcp_header_cut(df: pd.DataFrame) -> np.ndarray:
    """TCP segments whose header, options included, the snaplen cut: Wireshark's TCP dissector
    throws at the cut (``_ws.short``), before its conversation tap and its sequence analysis."""
    return ((df["proto"] == "tcp").to_numpy()
            & (df["payload_offset"].fillna(0).to_numpy(np.int64) > df["cap_len"].to_numpy(np.int64)))


def transport_frames(df: pd.DataFrame) -> np.ndarray:
    """Frames whose transport header Wireshark dissects: those that are no IP fragment, and the
    last fragment of a datagram whose fragments the file holds whole (Wireshark reassembles
    it there; a cut fragment leaves the datagram unreassembled)."""
    fragment, last, broken = _fragments(df)
    return ~fragment | (last & ~broken)


def frame_paths(df: pd.DataFrame, *, outer_ethertype: np.ndarray | None = None,
                ppcb: np.ndarray | None = None, resent: np.ndarray | None = None) -> pd.Series:
    """Each frame's protocol path, "eth:ip:tcp:data" (``outer_ethertype``: the Ethernet type
    field of each frame, to tell Q-in-Q; ``ppcb``: frames holding a PPCB packet; ``resent``:
    TCP segments whose payload Wireshark leaves undissected, see the module docstring)."""
    n = len(df)
    link = pd.Series(df["linktype"].to_numpy(np.int64)).map(LINK).fillna("unknown").to_numpy(object)
    path = "frame:" + pd.Series(link, dtype=object)
    tagged = df["vlan"].notna().to_numpy()
    if tagged.any():
        qinq = tagged & (outer_ethertype == _QINQ) if outer_ethertype is not None else np.zeros(n, bool)
        path = path + np.where(qinq, ":ieee8021ad:vlan", np.where(tagged, ":vlan", ""))
    l3 = df["l3"].astype(object).map(_L3).to_numpy(object)
    has_l3 = pd.notna(l3)
    path = path + np.where(has_l3, ":" + pd.Series(l3).fillna("").to_numpy(object), "")
    dissected = transport_frames(df)
    fragment = ~dissected & has_l3
    proto = df["proto"].astype(object).to_numpy(object)
    transport = pd.notna(proto) & has_l3 & dissected
    path = path + np.where(transport, ":" + pd.Series(proto).fillna("").astype(str).to_numpy(object), "")
    payload = df["payload_len"].fillna(0).to_numpy(np.int64) > 0
    carries = transport & payload & np.isin(proto, ["tcp", "udp"]) & ~tcp_header_cut(df)
    if resent is not None:
        carries &= ~resent
    leaf = np.full(n, ":data", dtype=object)
    if ppcb is not None:
        leaf = np.where(ppcb, ":ppcb", leaf)
    path = path + np.where(carries, leaf, np.where(fragment & ~transport, ":data", ""))
    path = path + np.where(transport & tcp_header_cut(df), ":_ws.short", "")
    return path


def protocol_hierarchy(df: pd.DataFrame, **kwargs) -> pd.DataFrame:
    """The hierarchy: ``protocol``, ``level`` (0 for ``frame``, 1 for the link), ``path``, ``frames``, ``bytes``,
    one row per protocol under its parent (``frame_paths``' keywords pass on)."""
    columns = ["protocol", "level", "path", "frames", "bytes"]
    if not len(df):
        return pd.DataFrame(columns=columns)
    paths = frame_paths(df, **kwargs)
    sizes = df["frame_len"].to_numpy(np.int64)
    # the distinct paths (few), then every prefix of each: a loop over paths, not frames
    codes, distinct = pd.factorize(paths)
    frames = np.bincount(codes, minlength=distinct.size)
    nbytes = np.bincount(codes, weights=sizes, minlength=distinct.size)
    first = np.full(distinct.size, len(df))
    np.minimum.at(first, codes, np.arange(codes.size))
    rows: dict[str, list] = {}
    for path, count, size, at in zip(distinct, frames, nbytes, first):
        parts = path.split(":")
        for depth in range(1, len(parts) + 1):
            prefix = ":".join(parts[:depth])
            row = rows.setdefault(prefix, [0, 0, at])
            row[0] += int(count)
            row[1] += int(size)
            row[2] = min(row[2], at)

    def key(prefix: str) -> tuple:
        parts = prefix.split(":")
        return tuple(rows[":".join(parts[:d])][2] for d in range(1, len(parts) + 1))
    order = sorted(rows, key=key)
    return pd.DataFrame({"protocol": [p.rsplit(":", 1)[-1] for p in order],
                         "level": [p.count(":") for p in order], "path": order,
                         "frames": [rows[p][0] for p in order], "bytes": [rows[p][1] for p in order]},
                        columns=columns)
