"""A block of decoded packets: one numpy array per column (``Part``), allocated once, grown, cut.

``name`` holds the values and ``name + "_ok"`` where they could be read. The
record's own columns (time, lengths, interface, where the frame is in the
file) always have a value; IPv6 addresses (16 bytes a packet) are allocated
only when a capture has IPv6. ``decode`` and the compiled ``decode_jit``
write these arrays; ``columns`` turns them into the DataFrame.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Part", "ADDRESS6", "NARROW", "ZEROED", "allocate", "grow", "shrink"]

Part = dict
#: columns of 16 bytes per packet (IPv6 addresses): allocated only when a capture has IPv6
ADDRESS6 = ("src6", "dst6")
#: (link types are 16 bits or -1; an interface is -1 or an index into the file's interfaces; a
#: record's lengths are 32 bits in both formats)
_RECORD = {"time": np.float64, "frame_len": np.uint32, "cap_len": np.uint32, "linktype": np.int32,
           "iface": np.int32, "file_offset": np.int64, "l3": np.int8}
#: columns as narrow as their values (a flag; addresses and protocol numbers, which become
#: categories; header fields of one to four bytes, each masked to its width where it is read:
#: ports, TTL/hop limit, TCP flags (9 bits), window, sequence and ack numbers, MSS and window
#: scale, the TCP header's length (0 to 60) and its options' (that less 20: -20 to 40, read only
#: where the length is 20 or more), the IP identification (16 bits, IPv6's fragment header 32),
#: the VLAN id (12 bits), the fragment offset (13 bits x 8, IPv6's 0xFFF8 at most), the IP
#: length (IPv6 jumbograms: 32 bits); a payload's length and offset inside one frame (a record
#: is 17 MiB at most: 32 bits, signed as a negative length is read and marked missing)): fewer
#: bytes to write than int64 (the conversation table is bound by memory bandwidth). ``columns``
#: and ``_Ints`` (stats/numbered.py) widen them to int64 as they read them; the numbering's
#: kernel reads them as they are (with their ``_ok``)
NARROW = {"more_frags": bool, "ip_proto": np.uint8, "src4": np.uint32, "dst4": np.uint32, "ttl": np.uint8,
          "tcp_win": np.uint16, "tcp_ack": np.uint32, "tcp_mss": np.uint16, "tcp_wscale": np.uint8,
          "tcp_hdr_len": np.uint8, "tcp_opts_len": np.int8, "ip_id": np.uint32, "vlan": np.uint16,
          "frag_offset": np.uint16, "sport": np.uint16, "dport": np.uint16, "tcp_seq": np.uint32,
          "tcp_flags": np.uint16, "ip_len": np.uint32, "payload_len": np.int32, "payload_offset": np.int32}
#: columns allocated as zeros (a fresh page of zeros costs nothing until written): the usual
#: packet has none of these, and ``decode_jit`` leaves their zeros (value 0, and missing
#: except ``frag_offset``, which is 0 and read) as they are
ZEROED = ("vlan", "frag_offset", "tcp_mss", "tcp_wscale")
_DISSECTED = ["vlan", "ip_len", "ttl", "ip_id", "frag_offset", "more_frags", "ip_proto", "src4", "dst4",
              "sport", "dport", "tcp_seq", "tcp_ack", "tcp_flags", "tcp_win", "tcp_hdr_len", "tcp_opts_len",
              "payload_len", "payload_offset", "tcp_mss", "tcp_wscale"]


def allocate(n: int) -> Part:
    """Empty columns for ``n`` packets (``ZEROED``'s and the IPv6 masks zeros)."""
    out: Part = {name: np.empty(n, dtype=dtype) for name, dtype in _RECORD.items()}
    for name in _DISSECTED:
        make = np.zeros if name in ZEROED else np.empty
        out[name] = make(n, dtype=NARROW.get(name, np.int64))
        out[name + "_ok"] = make(n, dtype=bool)
    for name in ADDRESS6:
        out[name], out[name + "_ok"] = None, np.zeros(n, dtype=bool)
    return out


def grow(out: Part | None, used: int, size: int) -> Part:
    """``out`` with room for ``size`` packets (its first ``used`` kept)."""
    bigger = allocate(size)
    if out is not None:
        for name, values in out.items():
            if values is not None:
                if bigger[name] is None:
                    bigger[name] = np.zeros((size, 16), dtype=np.uint8)
                bigger[name][:used] = values[:used]
    return bigger


def shrink(out: Part, used: int) -> Part:
    """The first ``used`` packets of ``out`` (views, no copy)."""
    return {name: None if values is None else values[:used] for name, values in out.items()}
