"""How fast does read_capture load a capture, next to tshark-fields→pandas, dpkt, scapy and pyshark?

The file: a 1,000,000-packet pcapng made by repeating the real records of
captures/tcp-10mbit-loss2.pcapng (TCP through a lossy 10 Mbit/s link), every
frame padded back to its full wire size (so the file is ~1 GB, like a real
capture without snaplen), written once to /tmp and reused.

Every tool produces the same schema (time, lengths, addresses, ports, IP
and TCP header fields, payload length) as a pandas DataFrame. wirelab reads
the whole file, and the same packets written as classic pcap (best of 5
reads each), and the pcapng once more without the fast path for the usual
packet (``capture.fastpath``; best of 3) to show what it gains; the peers
read a prefix of it (tshark 100,000 packets, dpkt 100,000, scapy 5,000,
pyshark 500) and their rate is extrapolated —
labelled "(prefix)" in the table. Ratios are wirelab's packets/s over the
peer's, measured in the same run. Bounded: about 2 minutes.

Run: .venv/bin/python bench/bench_capture.py [--packets N] [--snaplen 96]
"""
from __future__ import annotations

import argparse
import os
import shutil
import struct
import sys
import time
from pathlib import Path

import pandas as pd

import wirelab.capture.reader.decode as decode
from wirelab.capture import read_capture

from reader_paths import PATHS, describe_first_call, reader_path
from peers import with_dpkt, with_tshark

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "captures" / "tcp-10mbit-loss2.pcapng"
WORK = Path("/tmp/wirelab-bench")


def _blocks(data: bytes):
    pos = 0
    while pos + 8 <= len(data):
        btype, blen = struct.unpack_from("<II", data, pos)
        yield btype, data[pos:pos + blen]
        pos += blen


def _full_size(epb: bytes, snaplen: int | None) -> bytes:
    """The same packet block with its frame padded to the wire length (or cut to ``snaplen``)."""
    iface, hi, lo, cap, orig = struct.unpack_from("<IIIII", epb, 8)
    frame = epb[28:28 + cap]
    keep = min(orig, snaplen) if snaplen else orig
    frame = (frame + bytes(max(keep - len(frame), 0)))[:keep]
    pad = -len(frame) % 4
    blen = 32 + len(frame) + pad
    return struct.pack("<IIIIIII", 6, blen, iface, hi, lo, len(frame), orig) + frame + bytes(pad) + \
        struct.pack("<I", blen)


def make_file(packets: int, snaplen: int | None) -> Path:
    WORK.mkdir(exist_ok=True)
    path = WORK / f"bench-{packets}-{snaplen or 'full'}.pcapng"
    if path.exists():
        return path
    blocks = list(_blocks(SOURCE.read_bytes()))
    head = b"".join(b for t, b in blocks if t in (0x0A0D0D0A, 1))
    records = [_full_size(b, snaplen) for t, b in blocks if t == 6]
    chunk = b"".join(records)
    full, rest = divmod(packets, len(records))
    tmp = path.with_suffix(".part")
    with open(tmp, "wb") as f:
        f.write(head)
        for _ in range(full):
            f.write(chunk)
        f.write(b"".join(records[:rest]))
    tmp.rename(path)
    return path


def pcap_copy(path: Path) -> Path:
    """The same packets as classic pcap (timestamps in the pcapng's units: µs or ns)."""
    out = path.with_suffix(".pcap")
    if out.exists():
        return out
    ticks = read_capture(SOURCE).attrs["capture"]["interfaces"][0]["ticks"]
    magic = {1_000_000: 0xA1B2C3D4, 1_000_000_000: 0xA1B23C4D}[ticks]
    data = path.read_bytes()
    parts = [struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 262144, 1)]
    for btype, block in _blocks(data):
        if btype == 6:
            _, hi, lo, cap, orig = struct.unpack_from("<IIIII", block, 8)
            sec, frac = divmod((hi << 32) | lo, ticks)
            parts.append(struct.pack("<IIII", sec, frac, cap, orig) + block[28:28 + cap])
    tmp = out.with_suffix(".part")
    tmp.write_bytes(b"".join(parts))
    tmp.rename(out)
    return out


def prefix_file(path: Path, packets: int) -> Path:
    """The first ``packets`` packets of ``path`` (for the slow peers)."""
    out = path.with_name(path.stem + f"-first{packets}.pcapng")
    if out.exists():
        return out
    n, parts = 0, []
    with open(path, "rb") as f:
        data = f.read(8 * 1024 * 1024 * max(1, packets // 5000))
    for t, b in _blocks(data):
        parts.append(b)
        n += t == 6
        if n >= packets:
            break
    out.write_bytes(b"".join(parts))
    return out


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def with_scapy(path: Path) -> pd.DataFrame:
    from scapy.all import IP, TCP, PcapNgReader
    rows = []
    for p in PcapNgReader(str(path)):
        row = [float(p.time), len(p)]
        if IP in p:
            ip = p[IP]
            row += [ip.src, ip.dst, ip.proto, ip.len, ip.ttl, ip.frag, ip.id]
            if TCP in p:
                t = p[TCP]
                row += [t.sport, t.dport, t.seq, t.ack, int(t.flags), t.window, t.dataofs * 4]
        rows.append(row)
    return pd.DataFrame(rows)


def with_pyshark(path: Path) -> pd.DataFrame:
    import pyshark
    rows = []
    cap = pyshark.FileCapture(str(path), use_json=True, keep_packets=False)
    try:
        for p in cap:
            row = [float(p.sniff_timestamp), int(p.length)]
            if hasattr(p, "ip"):
                row += [p.ip.src, p.ip.dst, p.ip.proto, p.ip.len, p.ip.ttl]
            if hasattr(p, "tcp"):
                row += [p.tcp.srcport, p.tcp.dstport, p.tcp.seq_raw, p.tcp.ack_raw, p.tcp.window_size_value]
            rows.append(row)
    finally:
        cap.close()
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--snaplen", type=int, default=None, help="cut frames (default: full wire size)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    path = make_file(args.packets, args.snaplen)
    print(f"file: {path} ({path.stat().st_size / 1e6:.0f} MB, {args.packets} packets, "
          f"made/reused in {time.perf_counter() - t0:.1f} s); cores: {os.cpu_count()}")
    pcap = pcap_copy(path)
    print("loading the compiled kernels in a fresh process (bench/reader_paths.py):")
    print(describe_first_call(prefix_file(path, 5_000)))
    rates = {}
    for fmt, file in (("pcap", pcap), ("pcapng", path)):
        read_capture(file)                                # warm the page cache
        for name in PATHS:                                # compiled, then its numpy fallback
            with reader_path(name):
                cpu0 = time.process_time()
                seconds, df = timed(lambda: read_capture(file), repeat=5)
                rates[fmt, name] = (seconds, (time.process_time() - cpu0) / 5, len(df))
            assert len(df) == args.packets
    load = os.getloadavg()[0]
    seconds, cpu, _ = rates["pcapng", "compiled"]
    ours = args.packets / seconds
    with reader_path("numpy"):
        decode.FAST = False                               # what numpy's fast path gains, in the same run
        general, _ = timed(lambda: read_capture(path), repeat=3)
        decode.FAST = True
    results = [("wirelab read_capture", args.packets, seconds, ours, "compiled (numba)")]
    for fmt, name, note in (("pcap", "compiled", "same packets as classic pcap"),
                            ("pcapng", "numpy", "the numpy fallback"), ("pcap", "numpy", "the numpy fallback")):
        results.append((f"wirelab read_capture ({fmt})" if fmt == "pcap" else "wirelab read_capture", args.packets,
                        rates[fmt, name][0], args.packets / rates[fmt, name][0], f"{name}: {note}"))
    results.append(("wirelab, no fast path", args.packets, general, args.packets / general,
                    "numpy, pcapng, every packet through dissect"))
    peers = [("tshark -T fields → pandas", with_tshark, 100_000, shutil.which("tshark")),
             ("dpkt", with_dpkt, 100_000, True), ("scapy", with_scapy, 5_000, True),
             ("pyshark (JSON)", with_pyshark, 500, shutil.which("tshark"))]
    for name, fn, count, available in peers:
        if not available:
            print(f"{name}: skipped (not installed)")
            continue
        count = min(count, args.packets)
        sub = prefix_file(path, count)
        secs, out = timed(lambda: fn(sub))
        assert len(out) == count, (name, len(out))
        label = "" if count == args.packets else f"(prefix of {count})"
        results.append((name, count, secs, count / secs, label))
    print(f"\n{'reader':30} {'packets':>9} {'seconds':>8} {'packets/s':>12} {'wirelab ×':>10}")
    for name, n, secs, pps, label in results:
        print(f"{name:30} {n:>9} {secs:>8.2f} {pps:>12,.0f} {ours / pps:>10.1f}  {label}")
    tshark = next((r for r in results if r[0].startswith("tshark")), None)
    print(f"\nwirelab pcapng (compiled): {cpu:.2f} s of CPU per read on average ({args.packets / cpu:,.0f} packets "
          f"per CPU second); load average during the run {load:.1f} on {os.cpu_count()} cores "
          "(other work on the machine slows every reader)")
    for name in PATHS:
        ng_rate, pcap_rate = (args.packets / rates[fmt, name][0] for fmt in ("pcapng", "pcap"))
        print(f"{name:8}: pcap {rates['pcap', name][1]:.2f} s of CPU per read (threads add up); pcapng/pcap speed "
              f"{ng_rate / pcap_rate:.2f} (goal ≥ 0.9: {'met' if ng_rate / pcap_rate >= 0.9 else 'NOT met'}); "
              f"≥ 2,000,000 packets/s → pcap {'met' if pcap_rate >= 2e6 else 'NOT met'} ({pcap_rate:,.0f}), "
              f"pcapng {'met' if ng_rate >= 2e6 else 'NOT met'} ({ng_rate:,.0f})")
    print("compiled: "
          + (f"≥ 60× tshark fields → {'met' if ours / tshark[3] >= 60 else 'NOT met'} ({ours / tshark[3]:.0f}×)"
             if tshark else "tshark not installed"))
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
