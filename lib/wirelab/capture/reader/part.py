"""A block of decoded packets: one numpy array per column (``Part``), allocated once, grown, cut.

``name`` holds the values and ``name + "_ok"`` where they could be read. The
record's own columns (time, lengths, interface, where the frame is in the
file) always have a value; IPv6 addresses (16 bytes a packet) are allocated
only when a capture has IPv6. ``decode`` and the compiled ``decode_jit``
write these arrays; ``columns`` turns them into the DataFrame.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Part", "ADDRESS6", "ZEROED", "allocate", "grow", "shrink"]

Part = dict
#: columns of 16 bytes per packet (IPv6 addresses): allocated only when a capture has IPv6
ADDRESS6 = ("src6", "dst6")
_RECORD = {"time": np.float64, "frame_len": np.int64, "cap_len": np.int64, "linktype": np.int64,
           "iface": np.int64, "file_offset": np.int64, "l3": np.int8}
#: columns as narrow as their values (a flag; addresses and protocol numbers, which become
#: categories): fewer bytes to write than int64
_NARROW = {"more_frags": bool, "ip_proto": np.uint8, "src4": np.uint32, "dst4": np.uint32}
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
        out[name] = make(n, dtype=_NARROW.get(name, np.int64))
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
