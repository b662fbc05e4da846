"""The loaders wirelab's capture reader is measured against, in the benches that compare
with them (bench_capture, bench_dataset): tshark's fields piped into pandas, and dpkt.
Both read the columns wirelab's standard schema has (Ethernet, IPv4, TCP)."""
from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pandas as pd

TSHARK_FIELDS = ["frame.time_epoch", "frame.len", "frame.cap_len", "ip.src", "ip.dst", "ip.proto", "ip.len",
                 "ip.ttl", "ip.frag_offset", "ip.flags.mf", "ip.id", "tcp.srcport", "tcp.dstport", "tcp.seq_raw",
                 "tcp.ack_raw", "tcp.flags", "tcp.window_size_value", "tcp.hdr_len", "tcp.len", "vlan.id"]


def with_tshark(path: Path) -> pd.DataFrame:
    argv = ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    for f in TSHARK_FIELDS:
        argv += ["-e", f]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=900).stdout
    return pd.read_csv(io.StringIO(out), sep="\t", header=None, names=TSHARK_FIELDS)


def with_dpkt(path: Path) -> pd.DataFrame:
    """Ethernet frames of a pcap or pcapng file (by its suffix)."""
    import dpkt
    rows = []
    with open(path, "rb") as f:
        reader = dpkt.pcapng.Reader(f) if path.suffix == ".pcapng" else dpkt.pcap.Reader(f)
        for ts, buf in reader:
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            row = [ts, len(buf)]
            if isinstance(ip, dpkt.ip.IP):
                row += [ip.src, ip.dst, ip.p, ip.len, ip.ttl, ip.offset, ip.mf, ip.id]
                tcp = ip.data
                if isinstance(tcp, dpkt.tcp.TCP):
                    row += [tcp.sport, tcp.dport, tcp.seq, tcp.ack, tcp.flags, tcp.win, tcp.off * 4,
                            ip.len - ip.hl * 4 - tcp.off * 4]
            rows.append(row + [None] * (18 - len(row)))
    return pd.DataFrame(rows)
