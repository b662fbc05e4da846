"""Our TCP and UDP senders against iperf3 on loopback, in the same run.

    .venv/bin/python bench/bench_transfer.py [--seconds 3] [--gso]

Goals (issue 3): TCP goodput ≥ 0.9× iperf3 at the same write size (128 KiB);
UDP at 1472 B payload ≥ 0.85× iperf3's packet rate (sender side, as iperf3
reports it); with --gso (Linux UDP GSO at the sender, GRO at the receiver,
off in the teaching path) ≥ 5× iperf3's packet rate. Our receiver runs as a
separate `wirelab serve` process, our sender in this one. Each run is bounded.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import subprocess
import sys
import threading

from wirelab.transfer import measure

PY = sys.executable


def free_port(kind=socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_line(stream, timeout=10.0) -> bytes:
    box = []
    t = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    t.start()
    t.join(timeout)
    return box[0] if box else b""


def ours(proto: str, seconds: float, packet: int, gso: bool = False) -> dict:
    server = subprocess.Popen([PY, "-m", "wirelab", "serve", proto, "0", "--rcvbuf", "4MiB",
                               "--max-wait", "5"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        match = re.search(rb":(\d+)\s*$", first_line(server.stderr))
        if not match:
            raise SystemExit("wirelab serve did not start")
        r = measure(proto, "127.0.0.1", int(match.group(1)), mode="bulk", time_s=seconds, packet=packet,
                    gso=gso, max_wait=5.0)
    finally:
        server.terminate()
        server.wait(10)
    if not r.ok:
        raise SystemExit(f"our {proto} run failed: {r.error or r.receiver_error}")
    return {"goodput_bps": r.goodput_bps, "sender_pps": r.packets_sent / r.sender_duration_s,
            "sender_cpu_fraction": r.sender_cpu_s / r.sender_duration_s,
            "receiver_pps": r.packets_received / r.receiver_duration_s, "lost": r.lost}


def iperf3(proto: str, seconds: float, packet: int) -> dict:
    port = free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port), "--forceflush"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(5):
            if b"listening" in first_line(server.stdout):
                break
        argv = ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds), "-l", str(packet), "-J"]
        if proto == "udp":
            argv += ["-u", "-b", "0"]
        out = subprocess.run(argv, capture_output=True, timeout=seconds + 30)
    finally:
        server.terminate()
        server.wait(10)
    end = json.loads(out.stdout)["end"]
    cpu = end.get("cpu_utilization_percent", {}).get("host_total", float("nan")) / 100
    if proto == "tcp":
        return {"goodput_bps": end["sum_received"]["bits_per_second"], "sender_cpu_fraction": cpu}
    s = end["sum"]
    sent_pps = s["packets"] / s["seconds"]
    return {"goodput_bps": s["bits_per_second"] * (1 - s["lost_percent"] / 100), "sender_pps": sent_pps,
            "sender_cpu_fraction": cpu,
            "receiver_pps": (s["packets"] - s["lost_packets"]) / s["seconds"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--gso", action="store_true", help="also run the UDP GSO/GRO fast path")
    args = ap.parse_args()
    if not shutil.which("iperf3"):
        print("iperf3 is not installed: sudo apt-get install iperf3")
        return 1
    rows = []
    tcp_ours, tcp_peer = ours("tcp", args.seconds, 131072), iperf3("tcp", args.seconds, 131072)
    rows.append(("TCP goodput, 128 KiB writes", tcp_ours["goodput_bps"] / 1e9, tcp_peer["goodput_bps"] / 1e9,
                 "Gbit/s", 0.9))
    udp_ours, udp_peer = ours("udp", args.seconds, 1472), iperf3("udp", args.seconds, 1472)
    rows.append(("UDP 1472 B, sender packet rate", udp_ours["sender_pps"] / 1e3, udp_peer["sender_pps"] / 1e3,
                 "kpkt/s", 0.85))
    rows.append(("UDP 1472 B, packets per sender CPU-second", udp_ours["sender_pps"] / udp_ours["sender_cpu_fraction"]
                 / 1e3, udp_peer["sender_pps"] / udp_peer["sender_cpu_fraction"] / 1e3, "kpkt/cpu-s", None))
    rows.append(("UDP 1472 B, receiver packet rate", udp_ours["receiver_pps"] / 1e3,
                 udp_peer["receiver_pps"] / 1e3, "kpkt/s", None))
    if args.gso:
        gso = ours("udp", args.seconds, 1472, gso=True)
        rows.append(("UDP 1472 B with GSO/GRO, sender rate", gso["sender_pps"] / 1e3,
                     udp_peer["sender_pps"] / 1e3, "kpkt/s", 5.0))
        rows.append(("UDP 1472 B with GSO/GRO, receiver rate", gso["receiver_pps"] / 1e3,
                     udp_peer["receiver_pps"] / 1e3, "kpkt/s", None))
    print(f"{'measure':<40} {'wirelab':>10} {'iperf3':>10}  unit     ratio  goal")
    for name, mine, peer, unit, goal in rows:
        ratio = mine / peer if peer else float("nan")
        mark = "" if goal is None else (f"≥{goal:g} " + ("ok" if ratio >= goal else "BELOW"))
        print(f"{name:<40} {mine:>10.2f} {peer:>10.2f}  {unit:<7} {ratio:5.2f}  {mark}")
    print(f"sender CPU busy: ours {udp_ours['sender_cpu_fraction']:.0%}, iperf3 {udp_peer['sender_cpu_fraction']:.0%} "
          "of the run (UDP); a sender that is not on a CPU cannot send.")
    print("(loopback, one machine shared with other work: ratios move between runs; "
          "receiver rates show what the Python receiver keeps up with; per-CPU-second rates "
          "compare the code when the machine is shared)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
