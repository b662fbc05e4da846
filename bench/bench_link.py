"""How exact is wirelab's emulated link, and how fast can the userspace link go?

Accuracy (10 Mbit/s, 20 ms each way): iperf3 TCP goodput against the model's
emulated-wire prediction (issue 4 asks for 2 %), UDP echo RTT against 40 ms
(asks for 1 ms), 5 % loss over 20,000 datagrams (asks for 5 ± 1 %).
Ceiling: the userspace link at rising rates, next to its peer, the kernel's
tbf on a plain veth, measured in the same run; the userspace link is "the
bottleneck" from the first rate where it delivers < 95 % of the prediction.

Needs root for namespaces; without root it measures the loopback relays.
Bounded: about 60 s as root.  Run: .venv/bin/python bench/bench_link.py
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from wirelab import units
from wirelab.experiment import iperf3_run
from wirelab.link import LinkSpec, Testbed, capabilities
from wirelab.link import open as open_link
from wirelab.link.relay import UdpRelay

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from link_probe import UdpCounter, UdpEcho, udp_blast, udp_rtts  # noqa: E402  (the tests' probes)

BUDGET_S = 80
RATES = ["50mbit", "200mbit", "400mbit", "800mbit", "1600mbit"]


def accuracy() -> None:
    spec = LinkSpec.parse(rate="10mbit", delay="20ms")
    predicted = spec.predict("tcp", timestamps=True).goodput_bps
    with open_link(spec, name="benchacc", backend="userspace") as link:
        runs = [iperf3_run(link, time="4s", omit="1s")["goodput_bps"] for _ in range(2)]
        tb = link.testbed
        with UdpEcho((tb.address("b"), 0), netns=tb.namespace("b")) as echo:
            rtts = udp_rtts(echo.address, 100, netns=tb.namespace("a"), interval_s=0.005)
    goodput = statistics.mean(runs)
    print(f"TCP goodput   {units.format_rate(goodput)} measured, {units.format_rate(predicted)} predicted: "
          f"error {100 * (goodput / predicted - 1):+.2f} % (issue: within 2 %)")
    median = statistics.median(rtts)
    print(f"UDP echo RTT  median {median * 1e3:.3f} ms, p95 {sorted(rtts)[int(0.95 * len(rtts))] * 1e3:.3f} ms "
          f"of 40 ms configured: error {1e3 * (median - 0.040):+.3f} ms (issue: within 1 ms)")
    spec = LinkSpec.parse(loss="5%", loss_reverse=0)
    for backend in ("userspace", "namespaces"):
        with Testbed(spec, name="benchloss", backend=backend) as tb:
            with UdpCounter((tb.address("b"), 0), netns=tb.namespace("b")) as counter:
                sent = udp_blast(counter.address, 20000, rate_pps=10000, netns=tb.namespace("a"))
                lost = 1 - counter.wait_quiet() / sent
        how = "userspace link" if backend == "userspace" else "iptables statistic (peer)"
        print(f"loss 5 %      {100 * lost:.2f} % of {sent} datagrams by the {how} (issue: 5 ± 1 %)")


def ceiling(deadline: float) -> None:
    print(f"\n{'rate':>10} {'userspace':>12} {'ratio':>6}   {'tbf (peer)':>12} {'ratio':>6}")
    ceiling_rate = None
    for rate in RATES:
        if time.monotonic() > deadline:
            print("(time budget reached)")
            break
        spec = LinkSpec.parse(rate=rate, delay="1ms")
        predicted = spec.predict("tcp", timestamps=True).goodput_bps
        row = []
        for backend in ("userspace", "namespaces"):
            kernel_spec = spec if backend == "userspace" else LinkSpec.parse(rate=rate)
            with open_link(kernel_spec, name="benchmax", backend=backend) as link:
                row.append(iperf3_run(link, time="2s", omit="1s")["goodput_bps"])
        ratios = [g / predicted for g in row]
        print(f"{rate:>10} {units.format_rate(row[0]):>12} {ratios[0]:6.3f}   "
              f"{units.format_rate(row[1]):>12} {ratios[1]:6.3f}")
        if ratios[0] >= 0.95:
            ceiling_rate = rate
        else:
            break
    print(f"userspace link keeps up (≥ 95 % of η·C) up to {ceiling_rate or 'below ' + RATES[0]} on this machine")


def loopback() -> None:
    spec = LinkSpec.parse(delay="20ms")
    with UdpEcho(("127.0.0.1", 0)) as echo, UdpRelay(spec, echo.address) as relay:
        rtts = udp_rtts(relay.address, 100, interval_s=0.005)
    print(f"loopback UDP relay RTT median {statistics.median(rtts) * 1e3:.3f} ms of 40 ms")
    with UdpCounter(("127.0.0.1", 0)) as counter, UdpRelay(LinkSpec.parse(loss="5%"), counter.address) as relay:
        sent = udp_blast(relay.address, 20000, rate_pps=10000)
        print(f"loopback UDP relay loss {100 * (1 - counter.wait_quiet() / sent):.2f} % of 5 %")


def main() -> int:
    start = time.monotonic()
    caps = capabilities()
    if "userspace" not in caps.backends:
        print(f"no namespaces here ({caps.reasons['root']}): measuring the loopback relays only")
        loopback()
        return 0
    print(f"netem: {'yes' if caps.netem else 'no'}; congestion control is whatever the kernel defaults to\n")
    accuracy()
    ceiling(start + BUDGET_S - 15)
    print(f"\n({time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
