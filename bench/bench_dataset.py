"""Captures of any size: loader rates on fresh dumpcap captures, a conversion 4x larger than memory, DuckDB.

1. Fresh captures made by dumpcap (pcapng, its default): a TCP transfer between
   two scratch network namespaces over veth with offloads off (wire-sized
   frames; needs root), or UDP datagrams on loopback without root. A small
   (75,000 frames) and a large (1,000,000 frames) one; the same packets as
   classic pcap by ``editcap -F pcap``; the small one's packets again as link
   type raw IP (``editcap -C 14 -T rawip``). ``read_capture`` reads each (best of
   three, page cache warm), by its compiled path (numba) and by its numpy fallback
   one after the other, beside tshark's fields piped into pandas and dpkt on
   the first 100,000 packets of the same file (their rate is extrapolated); and
   what loading the compiled kernels costs a fresh process, with and without
   numba's disk cache.
2. A huge capture (4.5 GB: dumpcap until that many packets) converted to a parquet
   dataset by a child process limited to 1 GiB of address space (RLIMIT_AS):
   it must finish (by the numpy path: capture.reader.jit loads no numba under an
   address-space limit, where LLVM would end the process if it ran out). Its peak
   memory beside the same conversion of the 1.5 GB one (flat = the same peak for
   3x the file).
3. DuckDB on that dataset, in a child with DuckDB's memory_limit at 1 GB: the
   flow table, Wireshark's TCP flags, the I/O graph, the overhead from the wire.
4. What a sweep costs per run beyond its transfers, and 5. how fast the
   ``wirelab`` command starts (bench_overhead.py's measurements, so that one
   run prints every goal of issue 16; ``--no-overhead`` leaves them out).

Everything is measured in the same run; the machine may be shared (the load
average is printed): run it twice. Bounded: dumpcap stops at a packet count or
file size, the traffic at a byte count, each child at a timeout.

Run (root for namespaces): .venv/bin/python bench/bench_dataset.py [--huge-gb 4.5] [--keep] [--no-overhead]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from wirelab.capture import LiveCapture, read_capture

from reader_paths import PATHS, describe_first_call, reader_path
from peers import with_dpkt, with_tshark

WORK = Path(os.environ.get("TMPDIR", "/tmp")) / "wirelab-bench-dataset"
LIMIT = 1 << 30                      # the memory the conversion is allowed (address space)



def sh(*argv, check=True, timeout=60, **kw):
    return subprocess.run(list(argv), check=check, timeout=timeout, capture_output=True, text=True, **kw)


@contextmanager
def namespaces():
    """Two scratch namespaces joined by veth (offloads off); removed on exit, Ctrl-C included."""
    a, b = f"wlbd-a{os.getpid()}", f"wlbd-b{os.getpid()}"
    try:
        sh("ip", "netns", "add", a)
        sh("ip", "netns", "add", b)
        sh("ip", "link", "add", "va", "netns", a, "type", "veth", "peer", "name", "vb", "netns", b)
        for ns, dev, addr in ((a, "va", "10.91.0.1/24"), (b, "vb", "10.91.0.2/24")):
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off",
               check=False)
        yield a, b
    finally:
        for ns in (a, b):
            sh("ip", "netns", "del", ns, check=False)


def _wait_listening(ns: str, port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        if f":{port} " in sh("ip", "netns", "exec", ns, "ss", "-ltnH").stdout:
            return
        time.sleep(0.05)               # polling a state with a deadline, not a sleep as synchronisation
    raise RuntimeError(f"nothing listens on port {port} in {ns}")


def make_capture(path: Path, *, packets: int | None = None, filesize_kb: int | None = None) -> str:
    """A fresh dumpcap capture of a TCP transfer (namespaces) or UDP on loopback; returns how."""
    if path.exists():
        return "reused"
    tmp = path.with_suffix(".part.pcapng")
    if os.geteuid() == 0 and shutil.which("iperf3"):
        with namespaces() as (a, b):
            server = subprocess.Popen(["ip", "netns", "exec", b, "iperf3", "-s", "-1", "-p", "5301"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                _wait_listening(b, 5301, time.monotonic() + 10)
                with LiveCapture("va", tmp, prefix=["ip", "netns", "exec", a], packets=packets,
                                 filesize_kb=filesize_kb, buffer_mb=64, stop_timeout=60) as cap:
                    client = subprocess.Popen(["ip", "netns", "exec", a, "iperf3", "-c", "10.91.0.2", "-p", "5301",
                                               "-t", "120", "--connect-timeout", "5000"],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    deadline = time.monotonic() + 150
                    while cap.running and client.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.1)        # polling dumpcap's state with a deadline
                    client.terminate()
                    client.wait(10)
            finally:
                server.terminate()
                server.wait(10)
        how = "TCP (iperf3) between two namespaces over veth, offloads off"
    else:
        import socket
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.bind(("127.0.0.1", 0))
        port = rx.getsockname()[1]
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with LiveCapture("lo", tmp, capture_filter=f"udp port {port}", packets=packets,
                         filesize_kb=filesize_kb, buffer_mb=64) as cap:
            data = bytes(1400)
            for i in range(10_000_000):
                if not cap.running:
                    break
                tx.sendto(data[:64 + (i * 37) % 1336], ("127.0.0.1", port))
        how = "UDP datagrams on loopback"
    tmp.rename(path)
    return how


def as_pcap(path: Path) -> Path:
    out = path.with_suffix(".pcap")
    if not out.exists():
        sh("editcap", "-F", "pcap", str(path), str(out), timeout=600)
    return out


def raw_ip(path: Path) -> Path:
    """The same packets without their Ethernet header: link type raw IP (editcap -C 14 -T rawip)."""
    out = path.with_name(f"{path.stem}-rawip{path.suffix}")
    if not out.exists():
        sh("editcap", "-F", path.suffix[1:], "-C", "14", "-T", "rawip", str(path), str(out), timeout=600)
    return out


def prefix(path: Path, packets: int) -> Path:
    out = path.with_name(f"{path.stem}-first{packets}{path.suffix}")
    if not out.exists():
        sh("editcap", "-F", path.suffix[1:], "-r", str(path), str(out), f"1-{packets}", timeout=600)
    return out


def best(fn, repeat=3):
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall, cpu, result


def loader_rates(files: list) -> list[dict]:
    """Each file read by both paths of read_capture, one after the other (best of 3 each),
    beside the peers."""
    rows = []
    for label, path in files:
        read_capture(path)                                  # page cache warm
        row = {"capture": label, "format": path.suffix[1:], "MB": path.stat().st_size / 1e6}
        for name in PATHS:
            with reader_path(name):
                wall, cpu, df = best(lambda: read_capture(path))
            n = row["packets"] = len(df)
            row[f"{name} pkt/s"], row[f"{name} pkt/s (CPU)"] = n / wall, n / cpu
        row["wirelab pkt/s"] = row["compiled pkt/s"]
        sub = prefix(path, 100_000) if n > 100_000 else path
        for peer, fn in (("tshark", lambda p: len(with_tshark(p))), ("dpkt", lambda p: len(with_dpkt(p)))):
            if peer == "tshark" and not shutil.which("tshark"):
                continue
            if peer == "dpkt" and "rawip" in sub.name:
                continue                                  # (our dpkt reader expects Ethernet)
            w, _, got = best(lambda: fn(sub), repeat=1)
            row[f"{peer} pkt/s"] = got / w
        rows.append(row)
    return rows


CHILD = """
import json, sys, time, resource
from wirelab.capture import convert, open_dataset
job, src, out = sys.argv[1:4]
t = time.perf_counter()
result = {}
if job == "convert":
    convert(src, out, overwrite=True, progress=False)
else:
    with open_dataset(out, memory_limit="1GB") as ds:
        for name, fn in (("flows", lambda: ds.flows()), ("TCP analysis flags", lambda: ds.retransmission_summary()),
                         ("I/O graph (1 s)", lambda: ds.io_graph(1.0, marks=["retransmission"])),
                         ("overhead from the wire", lambda: ds.read_overhead())):
            t1 = time.perf_counter(); fn(); result[name] = time.perf_counter() - t1
        result["packets"] = len(ds)
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
result.update(seconds=time.perf_counter() - t, vm_peak_mb=int(status["VmPeak"].split()[0]) / 1024,
              rss_peak_mb=int(status["VmHWM"].split()[0]) / 1024)
print(json.dumps(result))
"""


def limited(job: str, src: Path, out: Path, *, address_space: bool = True) -> dict:
    """Run ``job`` in a child (limited to 1 GiB of address space); its result, or why it failed."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))
    run = subprocess.run([sys.executable, "-c", CHILD, job, str(src), str(out)],
                         preexec_fn=limit if address_space else None,
                         capture_output=True, text=True, timeout=3600)
    if run.returncode:
        return {"failed": run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"exit {run.returncode}"}
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=75_000, help="frames in the small capture")
    ap.add_argument("--large", type=int, default=1_000_000, help="frames in the large capture")
    ap.add_argument("--huge-gb", type=float, default=4.5, help="size of the capture converted under 1 GiB")
    ap.add_argument("--keep", action="store_true", help="keep the captures for the next run")
    ap.add_argument("--no-overhead", action="store_true", help="leave out the sweep and start-up costs")
    ap.add_argument("--loaders-only", action="store_true", help="only 1. (the loader rates); no huge capture")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    WORK.mkdir(exist_ok=True)
    free = shutil.disk_usage(WORK).free / 1e9
    need = args.huge_gb * 2 + 4
    if free < need:
        print(f"only {free:.0f} GB free in {WORK}; this needs about {need:.0f} GB")
        return 1
    small, large = WORK / f"small-{args.small}.pcapng", WORK / f"large-{args.large}.pcapng"
    huge = WORK / f"huge-{args.huge_gb:g}GB.pcapng"
    how = make_capture(small, packets=args.small)
    make_capture(large, packets=args.large)
    per_packet = large.stat().st_size / args.large      # dumpcap stops files at 2 GiB: count packets
    if not args.loaders_only:
        make_capture(huge, packets=int(args.huge_gb * 1e9 / per_packet))
    print(f"captures: {how}, by dumpcap (pcapng); pcap copies by editcap -F pcap; in {WORK}")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start "
          "(shared with other work: every rate is lower when it is busy)\n")

    print("1. read_capture (best of 3), compiled (numba) and its numpy fallback on the same files, beside\n"
          "   tshark -T fields → pandas and dpkt (first 100,000 packets)")
    print("   loading the compiled kernels in a fresh process (bench/reader_paths.py):")
    print(describe_first_call(small))
    rows = loader_rates([("small", as_pcap(small)), ("small", small), ("small raw IP", raw_ip(as_pcap(small))),
                         ("small raw IP", raw_ip(small)), ("large", as_pcap(large)), ("large", large)])
    table = pd.DataFrame(rows).set_index(["capture", "format"])
    shown = table.drop(columns=["wirelab pkt/s"])
    shown["compiled/numpy"] = shown["compiled pkt/s"] / shown["numpy pkt/s"]
    for peer in ("tshark", "dpkt"):
        if f"{peer} pkt/s" in shown:
            shown[f"x {peer}"] = shown["compiled pkt/s"] / shown[f"{peer} pkt/s"]
    with pd.option_context("display.float_format", "{:,.1f}".format, "display.width", 250):
        print(f"   load average {os.getloadavg()[0]:.1f} after the reads")
        print(shown.to_string(), "\n")
    for size in ("small", "small raw IP", "large"):
        for name in PATHS:
            ng, pc = table.loc[(size, "pcapng")], table.loc[(size, "pcap")]
            ratio = ng[f"{name} pkt/s"] / pc[f"{name} pkt/s"]
            slowest = min(ng[f"{name} pkt/s"], pc[f"{name} pkt/s"])
            print(f"   {size:12} {name:8}: pcapng/pcap = {ratio:.2f} (goal ≥ 0.9: "
                  f"{'met' if ratio >= 0.9 else 'NOT met'}); slower of the two {slowest / 1e6:.2f} M packets/s "
                  f"(goal ≥ 2: {'met' if slowest >= 2e6 else 'NOT met'})")

    if args.loaders_only:
        print(f"load average at the end {os.getloadavg()[0]:.1f}; total {time.perf_counter() - t0:.0f} s")
        return 0
    print(f"\n2. convert to a parquet dataset in a child limited to {LIMIT >> 20} MiB of address space")
    sizes = {"large": large, "huge": huge}
    conv = {}
    for label, path in sizes.items():
        conv[label] = limited("convert", path, WORK / f"{label}.dataset")
        c = conv[label]
        gb = path.stat().st_size / 1e9
        if "failed" in c:
            print(f"   {label} ({gb:.1f} GB): FAILED: {c['failed']}")
        else:
            print(f"   {label} ({gb:.1f} GB = {gb * 1e9 / LIMIT:.1f}x the limit): finished in {c['seconds']:.0f} s, "
                  f"peak resident {c['rss_peak_mb']:.0f} MB, peak address space {c['vm_peak_mb']:.0f} MB")
    if all("failed" not in c for c in conv.values()):
        grow = conv["huge"]["rss_peak_mb"] / conv["large"]["rss_peak_mb"]
        factor = huge.stat().st_size / large.stat().st_size
        print(f"   peak memory for a {factor:.1f}x larger file: x{grow:.2f} (flat: about 1)")

    print("\n3. DuckDB on the huge dataset (DuckDB's own memory_limit 1GB: it reserves address space\n"
          "   beyond RLIMIT_AS, so that limit is not set here; peak resident memory is what it used)")
    q = limited("query", huge, WORK / "huge.dataset", address_space=False)
    if "failed" in q:
        print(f"   FAILED: {q['failed']}")
    else:
        for name in ("flows", "TCP analysis flags", "I/O graph (1 s)", "overhead from the wire"):
            print(f"   {name:24} {q[name]:7.1f} s  ({q['packets'] / q[name] / 1e6:.2f} M packets/s)")
        print(f"   peak resident {q['rss_peak_mb']:.0f} MB, peak address space {q['vm_peak_mb']:.0f} MB")
    if not args.keep:
        for p in (huge, huge.with_suffix(".pcap")):
            p.unlink(missing_ok=True)
        for d in WORK.glob("*.dataset"):
            shutil.rmtree(d, ignore_errors=True)
    if not args.no_overhead:
        import bench_overhead
        print("\n4. sweep overhead per run (bench_overhead.py)")
        bench_overhead.sweep_overhead(3, ["0", "20ms"], grid=True)
        print("\n5. start-up of the wirelab command (bench_overhead.py)")
        bench_overhead.start_up()
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}; total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
