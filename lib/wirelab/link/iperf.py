"""iperf3 across a testbed (document 004's tool), reduced to the numbers we compare.

``iperf3_run(tb, ...)`` starts ``iperf3 -s -1`` on the server host, waits until
it listens (read from the server's own ``/proc/<pid>/net/tcp``, no sleeping),
runs the client with ``-J`` and returns ``parse_iperf3(json)``: goodput at
the receiver (the number to trust, document 002) and at the sender, TCP
retransmissions and congestion control, or UDP loss and jitter.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..errors import LinkError

__all__ = ["parse_iperf3", "iperf3_run", "listening", "wait_listening"]

PORT = 5201


def parse_iperf3(text: str) -> dict:
    """The summary of one ``iperf3 -J`` run (TCP or UDP) as a flat dict (bit/s, s, fractions)."""
    data = json.loads(text)
    if "error" in data and "end" not in data:
        raise LinkError(f"iperf3 failed: {data['error']}", "is the server reachable? see `wirelab testbed ls`")
    end, start = data["end"], data.get("start", {})
    test = start.get("test_start", {})
    out = {"protocol": test.get("protocol", "TCP").lower(), "seconds": test.get("duration"),
           "omit_s": test.get("omit", 0), "reverse": bool(test.get("reverse", 0)),
           "version": start.get("version")}
    if out["protocol"] == "tcp":
        out.update(goodput_bps=end["sum_received"]["bits_per_second"],
                   sent_bps=end["sum_sent"]["bits_per_second"],
                   received_bytes=end["sum_received"]["bytes"],
                   retransmits=end["sum_sent"].get("retransmits"),
                   congestion=end.get("sender_tcp_congestion"),
                   receiver_congestion=end.get("receiver_tcp_congestion"))
    else:
        s = end["sum"]
        out.update(goodput_bps=s["bits_per_second"] * (1 - s.get("lost_percent", 0) / 100),
                   sent_bps=s["bits_per_second"], loss=s.get("lost_percent", 0) / 100,
                   jitter_s=s.get("jitter_ms", 0) / 1000, packets=s.get("packets"),
                   lost_packets=s.get("lost_packets"))
    return out


def listening(pid: int, port: int) -> bool:
    """Is a TCP socket in LISTEN on ``port`` in the network namespace of process ``pid``?
    (``/proc/PID/net/tcp`` shows that process's namespace, so this works in a testbed too.)
    Raises ``LinkError`` when the process is gone."""
    want = f":{port:04X}"
    lines = []
    for table in ("tcp", "tcp6"):
        try:
            lines += Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            raise LinkError(f"iperf3 server (pid {pid}) exited", "is another server using the port?") from None
    # columns: sl local_address rem_address st ...; st 0A = LISTEN
    return any(f[1].endswith(want) and f[3] == "0A" for f in (line.split() for line in lines))


def wait_listening(pid: int, port: int = PORT, timeout_s: float = 10.0) -> None:
    """Wait until process ``pid`` has a TCP socket listening on ``port`` (in its namespace)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if listening(pid, port):
            return
        time.sleep(0.02)
    raise LinkError(f"nothing listens on port {port} after {timeout_s:g} s", "is iperf3 installed on the host?")


def iperf3_run(tb, *, client: str = "a", server: str = "b", seconds: float = 3, omit: float = 1,
               udp_rate_bps: float | None = None, length: int | None = None, window: int | None = None,
               congestion: str | None = None, extra: list[str] | None = None, port: int = PORT) -> dict:
    """One iperf3 test from ``client`` to ``server`` on testbed ``tb``; see ``parse_iperf3``."""
    address = tb.address(server, client if len(tb.hosts) > 2 else None)
    srv = tb.popen(server, ["iperf3", "-s", "-1", "-B", address, "-p", str(port)])
    try:
        wait_listening(srv.pid, port)
        argv = ["iperf3", "-c", address, "-p", str(port), "-t", f"{seconds:g}", "-O", f"{omit:g}", "-J"]
        if udp_rate_bps:
            argv += ["-u", "-b", f"{round(udp_rate_bps)}"]
        if length:
            argv += ["-l", str(length)]
        if window:
            argv += ["-w", str(window)]
        if congestion:
            argv += ["-C", congestion]
        done = tb.exec(client, argv + list(extra or []), timeout=seconds + omit + 30)
        if not done.stdout.strip():
            raise LinkError(f"iperf3 printed nothing: {done.stderr.strip()}", "run it by hand with `wirelab testbed exec`")
        result = parse_iperf3(done.stdout)
    finally:
        try:
            srv.wait(timeout=5)
        except Exception:
            srv.kill()
    result.update(client=client, server=server, backend=tb.backend)
    return result
