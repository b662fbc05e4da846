"""Is `wirelab analyze FILE` faster than tshark's conversation statistics on the same file?

The peer: ``tshark -q -z conv,tcp -z conv,udp -r FILE`` (Wireshark's conversation
table, the part of ``analyze`` tshark also does). ``wirelab analyze`` prints more
(TCP analysis flags, the main flow's overhead, PPCB sessions, UDP end markers).
Both run as fresh processes, as a user runs them, after one run each that is not
timed; each time is the best of ``--repeat`` runs, taken in turns (tshark,
wirelab, tshark, ...) so that load on the machine hits both alike. Python keeps
its compiled modules as it does by default (``PYTHONDONTWRITEBYTECODE`` is unset
for the runs: with it, every start compiles wirelab's modules again, ~0.1 s).
The ratio is tshark's time over wirelab's: above 1, wirelab is faster.

The files: every committed capture (captures/, tests/data/), and a fresh capture
made here: iperf3 TCP (a 256 KiB window) for a few seconds across two network
namespaces joined by a veth (``wirelab.link.open``, offloads off: wire-sized
frames) while dumpcap stops after 57,000 frames (``--frames``); bounded by a 30 s
deadline. It needs root and iperf3; without them that line says why. The fresh
file is deleted at the end. (The window keeps tshark's time near what it takes on
an ordinary capture, ~1.5 s: with iperf3's default autotuned window, megabytes in
flight made tshark's TCP analysis take 15 to 70 s on the same number of frames.)

Run: .venv/bin/python bench/bench_analyze.py [--repeat 5] [--frames 57000]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIRELAB = [sys.executable, "-m", "wirelab", "analyze"]
TSHARK = ["tshark", "-q", "-z", "conv,tcp", "-z", "conv,udp", "-r"]


def committed() -> list[Path]:
    return sorted([*(ROOT / "captures").glob("*.pcap*"), *(ROOT / "tests" / "data").glob("*.pcap*")])


def fresh_capture(folder: Path, frames: int) -> tuple[Path | None, str]:
    """iperf3 across a namespace pair while dumpcap keeps ``frames`` frames; (path, how) or (None, why not)."""
    if os.geteuid() != 0:
        return None, "needs root (namespaces)"
    if not shutil.which("iperf3") or not shutil.which("dumpcap"):
        return None, "needs iperf3 and dumpcap"
    from wirelab.capture import LiveCapture
    from wirelab.experiment import iperf3_run
    from wirelab.link import LinkSpec
    from wirelab.link import open as open_link

    path = folder / "iperf3.pcapng"
    with open_link(LinkSpec.parse(), name="benchan", backend="namespaces") as link:
        interface, prefix = link.capture_point("b")
        with LiveCapture(interface, path, prefix=prefix, packets=frames, duration=30, buffer_mb=64):
            iperf3_run(link, time="4s", omit=0, window="256KiB", timeout=30)
    return path, "iperf3 TCP, 256 KiB window, between two namespaces (veth, no shaping), dumpcap"


#: the environment of the runs: a user's (compiled modules kept)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str]) -> float:
    """Seconds one run of ``argv`` takes, start to exit (a fresh process, as a user runs it)."""
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=300, env=ENV)
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command, best kept (default 5)")
    parser.add_argument("--frames", type=int, default=57_000, help="frames in the fresh capture")
    args = parser.parse_args(argv)
    if not shutil.which("tshark"):
        print("tshark is not installed (apt-get install tshark): nothing to compare with")
        return 0
    with tempfile.TemporaryDirectory(prefix="wirelab-bench-analyze-") as tmp:
        files = committed()
        made, how = fresh_capture(Path(tmp), args.frames)
        if made is not None:
            files.append(made)
        print(f"{'file':<36} {'frames':>7} {'tshark conv':>11} {'wirelab':>9} {'ratio':>6}")
        slowest = None
        for path in files:
            count = int(subprocess.run(["capinfos", "-c", "-M", str(path)], capture_output=True, text=True
                                       ).stdout.split()[-1]) if shutil.which("capinfos") else -1
            timed([*TSHARK, str(path)]), timed([*WIRELAB, str(path)])        # not timed: warm caches
            tshark = wirelab = float("inf")
            for _ in range(args.repeat):                 # in turns: load hits both alike
                tshark = min(tshark, timed([*TSHARK, str(path)]))
                wirelab = min(wirelab, timed([*WIRELAB, str(path)]))
            ratio = tshark / wirelab
            slowest = ratio if slowest is None else min(slowest, ratio)
            name = path.name if path != made else f"(fresh) {path.name}"
            print(f"{name:<36} {count:>7} {tshark:>10.3f}s {wirelab:>8.3f}s {ratio:>6.2f}")
        print(f"fresh capture: {how}" if made is not None else f"fresh capture: not made ({how})")
        print(f"lowest ratio {slowest:.2f} (tshark's time ÷ wirelab's; above 1: wirelab analyze is faster); "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
