"""Document 002's figures on a real wire: measured ÷ model, and the emulated wire beside it.

A 10 Mbit/s link charging a cable's 38 B a frame (``LinkSpec(wire="real")``: tbf with
a size table on the kernel backend, the same charge in the userspace link and the
loopback relay) should carry TCP at 9.41 and UDP at 9.57 Mbit/s of goodput, as
document 002 measured with nttcp; the peer in the same run is the emulated wire
(14 B a frame: 9.56 and 9.72). "delivered": the share of what the sender sent that
arrived (the userspace link and the relay never hold a sender back: they drop the rest,
as document 002's USB adapter did). Then the minimum frame: 4 B datagrams (nttcp's end
markers) on a 1 Mbit/s real wire should leave at 84 B each (tbf's ``mpu``), i.e.
1488 a second, not at 70 B (1786 a second).

Needs root for namespaces and the userspace link (else: the loopback relay only).
Bounded: about 60 s as root.  Run: .venv/bin/python bench/bench_realwire.py
"""
from __future__ import annotations

import os
import select
import socket
import tempfile
import threading
import time

from wirelab.experiment import Experiment, run
from wirelab.link import LinkSpec
from wirelab.link import open as open_link

PUBLISHED = {"tcp": 9.41e6, "udp": 9.57e6}      # document 002, the receiver's goodput


def goodput(backend: str, wire: str, protos=("tcp", "udp")) -> None:
    workload = dict(workload="time", time="5s") if backend != "loopback" else dict(size="3MB")
    # queue: a NIC's 1000 frames, as behind document 002's sender (holds UDP's socket buffer: no loss);
    # a 2 MB receive buffer, as a receiver on its own machine (tests/test_link_realwire.py says why)
    exp = Experiment(f"bench-{wire}", proto=list(protos), rate="10mbit", wire=wire, reps=1, backend=backend,
                     queue=1000, rcvbuf="2MB", **workload)
    with tempfile.TemporaryDirectory() as folder:
        df = run(exp, out=folder, progress=False)
    for _, row in df.iterrows():
        if row["status"] != "ok":
            print(f"{backend:>10} {wire:>8} {row['proto']:>4}  {row['status']}: {row['error']}")
            continue
        measured, model = row["goodput_bps"], row["pred_goodput_bps"]
        published = f"{measured / PUBLISHED[row['proto']]:8.4f}" if wire == "real" else f"{'':8}"
        print(f"{backend:>10} {wire:>8} {row['proto']:>4}  {measured / 1e6:8.3f} {model / 1e6:8.3f} "
              f"{measured / model:8.4f} {published} {row['delivered_fraction']:10.4f}")


def minimum_frame(seconds: float = 3.0) -> None:
    """4 B datagrams as fast as the sender goes over 1 Mbit/s: the arrival rate tells the charge."""
    spec = LinkSpec.parse(rate="1mbit", wire="real")
    with open_link(spec, name="benchmpu", backend="namespaces") as link:
        with link.inside("b"):
            rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.bind((link.address("b"), 0))
        with link.inside("a"):
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        arrivals: list[float] = []

        def receive():
            while True:
                ready, _, _ = select.select([rx], [], [], 1.0)
                if not ready:
                    return
                rx.recv(64)
                arrivals.append(time.monotonic())

        thread = threading.Thread(target=receive, daemon=True)
        thread.start()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                tx.sendto(b"\0\0\0\0", (link.address("b"), rx.getsockname()[1]))
            except OSError:           # ENOBUFS: the queue is full, as on a saturated cable
                pass
        thread.join(timeout=5)
        tx.close()
        rx.close()
    steady = arrivals[len(arrivals) // 10:]          # past the tbf's burst
    rate = (len(steady) - 1) / (steady[-1] - steady[0])
    print(f"4 B datagrams on 1 Mbit/s real wire: {rate:.0f}/s = {1e6 / 8 / rate:.1f} B a frame "
          f"(84 B expected: {1e6 / 8 / 84:.0f}/s; without the mpu 70 B: {1e6 / 8 / 70:.0f}/s)")


def main() -> None:
    print(f"load {os.getloadavg()[0]:.2f} (1 min)")
    print(f"{'backend':>10} {'wire':>8} {'':>4}  {'Mbit/s':>8} {'model':>8} {'÷model':>8} {'÷doc002':>8} "
          f"{'delivered':>10}")
    root = os.geteuid() == 0
    for backend in (("namespaces", "userspace") if root else ()):
        for wire in ("real", "emulated"):
            goodput(backend, wire)
    for wire in ("real", "emulated"):
        goodput("loopback", wire, protos=("udp",))
    if root:
        minimum_frame()
    print(f"load {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
