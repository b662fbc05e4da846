"""A large synthetic pcap written with numpy (scapy takes minutes for a million packets): ``write_flows``.

Ethernet/IPv4 frames of ``flows`` conversations, 80 % TCP (a bulk transfer each: full-sized
data segments one way, pure ACKs back, sequence and acknowledgement numbers consistent so that
TCP analysis flags nothing) and 20 % UDP (1,200-byte datagrams one way). Each packet's flow is
drawn from a Zipf-like weight (a few large conversations, many small), its time uniform over
``seconds``, sorted. IPv4 header checksums are right (RFC 791's one's-complement sum); TCP and
UDP checksums are 0 (tshark does not check them by default). Seeded: the same arguments give the
same file. Frames are written whole (no snaplen), as a capture without ``-s`` is; payloads are
zeros, or random bytes (``random_payload``: as iperf3 sends by default).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

MSS, UDP_PAYLOAD = 1448, 1200
_HEAD = [("ts_sec", "<u4"), ("ts_usec", "<u4"), ("incl", "<u4"), ("orig", "<u4"),
         ("dst_mac", "V6"), ("src_mac", "V6"), ("ethertype", ">u2"),
         ("vihl", "u1"), ("tos", "u1"), ("ip_len", ">u2"), ("ip_id", ">u2"), ("frag", ">u2"), ("ttl", "u1"),
         ("proto", "u1"), ("ip_sum", ">u2"), ("src", ">u4"), ("dst", ">u4"), ("sport", ">u2"), ("dport", ">u2")]
TCP_HEAD = np.dtype(_HEAD + [("seq", ">u4"), ("ack", ">u4"), ("off", "u1"), ("flags", "u1"), ("win", ">u2"),
                             ("sum", ">u2"), ("urg", ">u2")])
UDP_HEAD = np.dtype(_HEAD + [("udp_len", ">u2"), ("sum", ">u2")])


def _ip_checksum(h: np.ndarray) -> np.ndarray:
    """RFC 791/1071: the one's complement of the one's-complement sum of the 10 header words."""
    words = h.view(np.uint8).reshape(len(h), -1)[:, 30:50].reshape(len(h), 10, 2).astype(np.uint32)
    total = ((words[:, :, 0] << 8) | words[:, :, 1]).sum(axis=1)
    while (total >> 16).any():
        total = (total & 0xFFFF) + (total >> 16)
    return (~total & 0xFFFF).astype(np.uint16)


def write_flows(path: Path, packets: int = 1_000_000, flows: int = 1000, seconds: float = 10.0,
                seed: int = 33, chunk: int = 100_000, random_payload: bool = False) -> Path:
    rng = np.random.default_rng(seed)
    n_tcp = flows * 4 // 5
    weight = 1.0 / np.arange(1, flows + 1) ** 0.8
    flow = rng.choice(flows, size=packets, p=weight / weight.sum())
    flow[:flows] = np.arange(flows)                   # every flow has at least one packet
    rng.shuffle(flow)
    t = np.sort(rng.uniform(0.0, seconds, packets))
    tcp = flow < n_tcp
    order = np.argsort(flow, kind="stable")
    fs = flow[order]
    start = np.flatnonzero(np.r_[True, fs[1:] != fs[:-1]])
    group = np.cumsum(np.r_[True, fs[1:] != fs[:-1]]) - 1

    def before(counted: np.ndarray) -> np.ndarray:
        """Per packet, how many ``counted`` packets its flow had before it."""
        c = counted[order].astype(np.int64)
        c = np.cumsum(c) - c
        out = np.empty(packets, np.int64)
        out[order] = c - c[start][group]
        return out
    # TCP: every third packet of a flow is an ACK of all data so far (no duplicate ACKs); UDP: all data
    data = ~tcp | (before(np.ones(packets, bool)) % 3 != 2)
    k = before(data)                                  # data segments before: sequence offset / what is acked
    isn = rng.integers(0, 2**32, size=(flows, 2), dtype=np.uint64)
    client = (10 << 24) | (np.arange(flows) // 250 << 8) | (np.arange(flows) % 250 + 1)
    server = (10 << 24) | (1 << 16) | 1
    payload = np.where(tcp, np.where(data, MSS, 0), UDP_PAYLOAD)
    frame = 14 + 20 + np.where(tcp, 20, 8) + payload
    # a data packet goes client → server, an ACK server → client
    a, b = client[flow].astype(np.uint32), np.uint32(server)
    src, dst = np.where(data, a, b), np.where(data, b, a)
    cport, sport_ = (32768 + np.arange(flows))[flow], np.where(tcp, 5201, 5001)
    sport, dport = np.where(data, cport, sport_), np.where(data, sport_, cport)
    seq = np.where(data, isn[flow, 0] + k * MSS, isn[flow, 1]) % 2**32
    ack = np.where(data, isn[flow, 1], isn[flow, 0] + k * MSS) % 2**32
    usec = np.round(t * 1e6).astype(np.int64)
    size = 16 + frame
    with open(path, "wb") as f:
        f.write(np.array([0xA1B2C3D4, 0x00040002, 0, 0, 65535, 1], "<u4").astype("<u4").tobytes()[:24])
        for lo in range(0, packets, chunk):
            hi = min(lo + chunk, packets)
            at = np.r_[0, np.cumsum(size[lo:hi])]
            buf = (rng.integers(0, 256, int(at[-1]), dtype=np.uint8) if random_payload
                   else np.zeros(int(at[-1]), np.uint8))
            for is_tcp, dtype in ((True, TCP_HEAD), (False, UDP_HEAD)):
                pick = np.flatnonzero(tcp[lo:hi] == is_tcp)
                i = pick + lo
                h = np.zeros(len(pick), dtype)
                h["ts_sec"], h["ts_usec"] = usec[i] // 10**6, usec[i] % 10**6
                h["incl"] = h["orig"] = frame[i]
                h["dst_mac"] = np.frombuffer(b"\x02\x00\x00\x00\x00\x02", "V6")[0]
                h["src_mac"] = np.frombuffer(b"\x02\x00\x00\x00\x00\x01", "V6")[0]
                h["ethertype"], h["vihl"], h["ip_len"], h["ip_id"] = 0x0800, 0x45, frame[i] - 14, i & 0xFFFF
                h["frag"], h["ttl"], h["proto"] = 0x4000, 64, 6 if is_tcp else 17
                h["src"], h["dst"], h["sport"], h["dport"] = src[i], dst[i], sport[i], dport[i]
                if is_tcp:
                    h["seq"], h["ack"], h["off"], h["win"] = seq[i], ack[i], 0x50, 65535
                    h["flags"] = np.where(data[i], 0x18, 0x10)
                else:
                    h["udp_len"] = 8 + UDP_PAYLOAD
                h["ip_sum"] = _ip_checksum(h)
                rows = h.view(np.uint8).reshape(len(pick), -1)
                buf[at[pick][:, None] + np.arange(dtype.itemsize)] = rows
            f.write(buf.tobytes())
    return path
