"""iperf3, the tool everyone uses: the one driver (argv, readiness, parser) and the engine.

iperf3 runs as a one-off server (``iperf3 -s -1``) on host ``b`` of a link and
a client with ``-J --get-server-output`` on host ``a``; its JSON is parsed
into the same Result columns the wirelab programs fill (``goodput_bps``,
``retransmissions``, ``congestion_control``, ...), so both appear side by
side. ``wirelab.experiment.iperf3_run(link, ...)`` runs one test across any open link.

Payload-rate semantics (what iperf3's numbers mean):
  * ``bits_per_second`` counts **application payload** (no TCP/UDP/IP/Ethernet
    headers), like wirelab's goodput; compare it with ``pred_goodput_bps``.
  * ``goodput_bps`` is the glossary's (``wirelab.transfer.measures``): bytes
    the receiver got × 8 ÷ the transfer's time, here iperf3's receiver's own
    span (``end.sum_received``; no common clock, the glossary's "receiver
    only"); ``sender_goodput_bps`` is the sender's (``end.sum_sent``).
  * With ``-n SIZE`` the test ends when the sender has *written* the last
    block into its socket buffer. On a slow link most of the file may still
    be queued then (on a 10 Mbit/s link the receiver had counted only about
    20 % of 1 MB): ``bytes_received`` ≪ ``bytes_sent`` and the rate mostly
    measures slow start. To compare with iperf3, prefer the ``time``
    workload (``-t``); a ``warning`` column flags such file runs.
  * ``-b RATE`` paces payload bits; iperf3 UDP defaults to 1 Mbit/s, so an
    offered load (or the link rate) is always given for UDP.
  * iperf3 has no udpr (stop-and-wait): such runs are ``skipped``.
  * iperf3 3.12 reads ``-t`` and ``-O`` (omit: seconds left out of the sums,
    e.g. slow start) as whole seconds: both are rounded up.
  * The server takes every test parameter from the client: ``-w`` (socket
    buffers), ``-l`` (write and read length) and ``-P`` apply at both ends;
    ``-R`` (a setting's ``reverse``) makes the server (host b) the sender.
  * ``-P N`` (a setting's ``streams``): ``streams`` lists each stream's own
    receiver goodput (``stream_goodputs_bps``), beside the sums.
"""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import time
from contextlib import nullcontext
from pathlib import Path

from .. import transports
from ..capture import LiveCapture
from ..errors import MissingToolError, TransferError, UsageError
from ..link.cleanup import end_process
from ..model.fairness import jain_index
from ..transfer.sockets import congestion_unavailable
from ..wire.headers import ETHERNET_MTU, udp_payload
from ..transfer.client import run_client

from .iperf3_live import installed_version, parse_server_output, read_intervals, server_reporting

__all__ = ["Iperf3Engine", "client_argv", "server_argv", "parse", "listening", "wait_listening",
           "connect_timeout", "SEMANTICS"]

SEMANTICS = ("iperf3 counts application payload bits (no headers); goodput is the receiver's "
             "end.sum_received; with -n the test stops when the sender has written the last byte, "
             "so data still queued is not counted (prefer the time workload)")


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def server_argv(port: int, bind: str = "127.0.0.1", *, live: tuple[int, ...] | None = None) -> list[str]:
    """A one-off iperf3 server (JSON, so the client's --get-server-output is JSON too); ``live``:
    the installed version, whose server then reports each interval as it ends (``iperf3_live``)."""
    base = ["iperf3", "-s", "-1", "-B", bind, "-p", str(port)]
    return base + (server_reporting(live) if live is not None else ["-J", "-i", "0.1"])


def _seconds(value: float) -> str:
    """iperf3 3.12 reads -t and -O as whole seconds (0.5 → 0, and -t 0 is "forever")."""
    return str(max(1, math.ceil(value - 1e-9)))


def connect_timeout(setting) -> float:
    """Seconds to wait for the connection: 5 s plus two round trips of the link (a 5 s delay
    each way needs more than iperf3's usual patience)."""
    return 5.0 + 4.0 * float(setting.get("delay_s", 0.0))


def client_argv(setting, host: str, port: int, *, connect_timeout_s: float | None = None) -> list[str]:
    """The client's argv for one setting (pure: tested without running iperf3)."""
    proto = setting.proto
    if not transports.get(proto).iperf3:
        raise UsageError(f"iperf3 has no {proto}", f"use engine='wirelab' for {proto}")
    wait = connect_timeout(setting) if connect_timeout_s is None else connect_timeout_s
    argv = ["iperf3", "-c", host, "-p", str(port), "-J", "--get-server-output",
            "--connect-timeout", str(int(wait * 1000))]
    streams = int(setting.get("streams", 1))
    if streams < 1 or streams > 128:
        raise UsageError(f"iperf3 runs 1 to 128 parallel streams, not {streams}", "e.g. streams=4")
    if streams > 1:
        argv += ["-P", str(streams)]
    if setting["reverse"]:
        argv += ["-R"]
    workload = setting.workload
    if workload == "file":
        argv += ["-n", _num(setting.get("size_bytes", 1e6))]
    elif workload in ("time", "load"):
        argv += ["-t", _seconds(setting.get("time_s", 10))]
        if setting["omit_s"]:
            argv += ["-O", _seconds(setting["omit_s"])]
    else:
        raise UsageError(f"iperf3 cannot run the {workload} workload", "use file, time or load")
    rate, offered, packet = setting["rate_bps"], setting["offered_bps"], setting["packet_bytes"]
    if transports.get(proto).socket == "udp":           # iperf3 -u
        mtu = setting.get("mtu", ETHERNET_MTU)
        argv += ["-u", "-b", _num(offered or rate or 1e6), "-l", _num(packet or udp_payload(mtu))]
    else:
        if offered:
            argv += ["-b", _num(offered)]
            packet = packet or 8192      # small writes: iperf3 paces per write (128 KB by default)
        if packet:
            argv += ["-l", _num(packet)]
        if setting["cc"]:
            argv += ["-C", setting["cc"]]
    buffer = setting["window_bytes"] or setting["sndbuf_bytes"] or setting["rcvbuf_bytes"]
    if buffer:
        argv += ["-w", _num(buffer)]
    return argv


def _get(d: dict, *path, default=None):
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return default
        d = d[key]
    return d


def parse(doc: dict | str) -> dict:
    """iperf3 ``-J`` output (client side, with ``--get-server-output``) → Result columns."""
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except json.JSONDecodeError as err:
            raise TransferError(f"iperf3 printed no JSON ({err})", "run the same argv by hand to see why")
    start, end = doc.get("start", {}), doc.get("end", {})
    test = start.get("test_start", {})
    proto = str(test.get("protocol", "")).lower() or None
    out = {"proto": proto, "ok": "error" not in doc and bool(end), "error": doc.get("error"),
           "tool": start.get("version"), "semantics": SEMANTICS, "omit_s": test.get("omit", 0),
           "reverse": bool(test.get("reverse", 0))}
    if not out["ok"]:
        out["error"] = out["error"] or "iperf3 reported no results"
        out["goodput_bps"] = None
        return out
    if proto == "udp":
        sent, received = end.get("sum_sent") or end.get("sum", {}), end.get("sum_received", {})
        lost = received.get("lost_packets")
        out.update(packets_sent=sent.get("packets"), lost=lost,
                   packets_received=None if lost is None else received.get("packets", 0) - lost,
                   out_of_order=_get(end, "streams", default=[{}])[0].get("udp", {}).get("out_of_order"),
                   jitter_s=None if received.get("jitter_ms") is None else received["jitter_ms"] / 1e3,
                   loss_fraction=None if received.get("lost_percent") is None
                   else received["lost_percent"] / 100.0)
    else:
        sent, received = end.get("sum_sent", {}), end.get("sum_received", {})
        stream = _get(end, "streams", default=[{}])[0].get("sender", {})
        out.update(retransmissions=sent.get("retransmits"),
                   congestion_control=end.get("sender_tcp_congestion"),
                   receiver_congestion_control=end.get("receiver_tcp_congestion"),
                   rtt_mean_s=stream["mean_rtt"] / 1e6 if stream.get("mean_rtt") else None,
                   mss_bytes=start.get("tcp_mss_default"),
                   # what the receiver advertised (Linux doubles -w and grants a share of it)
                   window_advertised_bytes=stream.get("max_snd_wnd"))
    # iperf3 -n sends whole blocks, so it may send past -n: what it sent is what it offered
    offered = max(test.get("bytes") or 0, sent.get("bytes") or 0) or None
    out.update(bytes_offered=offered, bytes_sent=sent.get("bytes"),
               bytes_received=received.get("bytes"),
               bytes_delivered=received.get("bytes") if proto == "tcp" else None,
               sender_duration_s=sent.get("seconds"), receiver_duration_s=received.get("seconds"),
               goodput_bps=received.get("bits_per_second"),
               sender_goodput_bps=sent.get("bits_per_second"),
               packet_bytes=test.get("blksize"),
               sndbuf_granted_bytes=start.get("sndbuf_actual"),
               rcvbuf_granted_bytes=start.get("rcvbuf_actual"))
    out["streams"] = _streams(end.get("streams") or [], proto, test, out["receiver_duration_s"])
    goodputs = [st["goodput_bps"] for st in out["streams"]]
    if len(goodputs) > 1 and None not in goodputs:
        out["stream_goodputs_bps"] = goodputs
        out["streams_jain_index"] = jain_index(goodputs)
    if proto == "tcp" and test.get("bytes") and out["bytes_received"] is not None \
            and out["bytes_received"] < 0.9 * (out["bytes_sent"] or 0):
        out["warning"] = (f"iperf3 -n ended with only {out['bytes_received'] / out['bytes_sent']:.0%} of "
                          "the data received: its rate mostly shows slow start; use the time workload")
        # the test ended before the data arrived: not the transfer's goodput, and said so in the row
        out["outcome"], out["outcome_reason"] = "incomplete", out["warning"]
    cpu = end.get("cpu_utilization_percent", {})
    if cpu and out["sender_duration_s"]:
        out["sender_cpu_s"] = cpu.get("host_total", 0) / 100.0 * out["sender_duration_s"]
        out["receiver_cpu_s"] = cpu.get("remote_total", 0) / 100.0 * out["sender_duration_s"]
    server_intervals = _get(doc, "server_output_json", "intervals", default=[])
    out["receiver_series"] = [{"t_s": _get(i, "sum", "end"), "bps": _get(i, "sum", "bits_per_second")}
                              for i in server_intervals if _get(i, "sum", "end") is not None] or \
        [{"t_s": i["end_s"], "bps": i["bps"]} for i in parse_server_output(doc.get("server_output_text") or "")]
    return out


def _streams(streams: list, proto: str | None, test: dict, seconds: float | None) -> list[dict]:
    """Each stream's own figures (``-P``): receiver goodput, bytes, retransmissions or loss.
    UDP streams report packets and losses, not bytes received: their goodput is
    (packets − lost) × datagram length × 8 / the receiver's time."""
    out = []
    for i, stream in enumerate(streams):
        if proto == "udp":
            udp = stream.get("udp", {})
            packets, lost = udp.get("packets"), udp.get("lost_packets")
            delivered = None if packets is None or lost is None else (packets - lost) * (test.get("blksize") or 0)
            span = udp.get("seconds") or seconds
            out.append({"stream": i, "goodput_bps": 8.0 * delivered / span if delivered is not None and span
                        else None, "bytes_received": delivered, "packets_sent": packets, "lost": lost,
                        "loss_fraction": None if udp.get("lost_percent") is None else udp["lost_percent"] / 100,
                        "jitter_s": None if udp.get("jitter_ms") is None else udp["jitter_ms"] / 1e3})
        else:
            sent, received = stream.get("sender", {}), stream.get("receiver", {})
            out.append({"stream": i, "goodput_bps": received.get("bits_per_second"),
                        "bytes_received": received.get("bytes"), "bytes_sent": sent.get("bytes"),
                        "retransmissions": sent.get("retransmits"),
                        "rtt_mean_s": sent["mean_rtt"] / 1e6 if sent.get("mean_rtt") else None})
    return out


def listening(pid: int, port: int) -> bool:
    """Is a TCP socket in LISTEN on ``port`` in the network namespace of process ``pid``?
    (``/proc/PID/net/tcp`` shows that process's namespace, so this works on any host of a
    link.) Raises ``TransferError`` when the process is gone."""
    want = f":{port:04X}"
    lines = []
    for table in ("tcp", "tcp6"):
        try:
            lines += Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            raise TransferError(f"iperf3 server (pid {pid}) exited", "is another server using the port?") from None
    # columns: sl local_address rem_address st ...; st 0A = LISTEN
    return any(f[1].endswith(want) and f[3] == "0A" for f in (line.split() for line in lines))


def wait_listening(proc: subprocess.Popen, port: int, deadline: float) -> None:
    """Poll until the server listens (every 5 ms, bounded by ``deadline``)."""
    while True:
        try:
            if proc.poll() is None and listening(proc.pid, port):
                return
        except TransferError:
            pass                # it has just exited: its output is read below
        if proc.poll() is not None:
            output = proc.stdout.read() if proc.stdout else ""
            output = (output.decode(errors="replace") if isinstance(output, bytes) else output).strip()
            raise TransferError(f"iperf3 server exited before listening ({output[:200] or 'no output'})",
                                "check that the port is free and that iperf3 runs by hand")
        if time.monotonic() > deadline:
            raise TransferError(f"iperf3 server not listening on port {port} in time",
                                "the machine may be overloaded; try again or raise the timeout")
        time.sleep(0.005)


class Iperf3Engine:
    """Run a setting with iperf3 across the link it is given: the server on host ``b``,
    the client on host ``a``, sending to ``link.reach`` (on loopback: a TCP relay for the
    control connection and TCP data, plus a UDP relay on the same port number for UDP)."""
    name = "iperf3"
    emits_events = True            # the server's interval reports, as they come (iperf3_live)

    def info(self) -> dict:
        return {"iperf3": shutil.which("iperf3"), "version": ".".join(map(str, installed_version() or ())) or None,
                "semantics": SEMANTICS}

    def framing(self, setting) -> dict:
        return {}                  # payload is application bytes, no framing of its own

    def unsupported(self, setting) -> str | None:
        if not shutil.which("iperf3"):
            return str(MissingToolError("iperf3"))
        if not transports.get(setting.proto).iperf3:
            return f"iperf3 has no {setting.proto}; use engine='wirelab'"
        if setting.workload not in ("file", "time", "load"):
            return f"iperf3 has no {setting.workload} workload; use engine='wirelab'"
        if setting["read_bytes"]:
            return "iperf3's server reads with the client's -l; a reader's own length needs engine='wirelab'"
        if transports.get(setting.proto).stream:
            return congestion_unavailable(setting["cc"])
        return None

    def run(self, setting, link, *, deadline: float, seed: int = 0, workdir=None, capture=None,
            events=None, event_tags: dict | None = None) -> dict:
        host = link.address("b")
        port = link.free_port("b")
        live = installed_version() if events is not None else None
        reports = None
        server = link.popen("b", server_argv(port, host, live=live), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        recorder = _capture(capture, link, port) if capture else nullcontext()
        try:
            wait_listening(server, port, min(deadline, time.monotonic() + 10))
            if events is not None:
                reports = read_intervals(server.stdout, events.emit, streams=int(setting.get("streams", 1)),
                                         tags=event_tags)
            # iperf3 -u still opens its control connection over TCP
            target = link.reach(port, ("tcp", "udp") if transports.get(setting.proto).socket == "udp" else "tcp")
            argv = client_argv(setting, *target)
            with recorder:
                done = run_client(link, argv, deadline, what="iperf3",
                                  fix="give the experiment a longer timeout or a smaller size")
            result = parse(done.stdout)
            if done.returncode and result.get("ok"):
                result.update(ok=False, error=f"iperf3 exited {done.returncode}: {done.stderr.strip()}")
            result["argv"] = " ".join(argv)
            if capture:
                result.update(capture_file=str(capture), capture_packets=recorder.packets,
                              capture_dropped=recorder.dropped)
            return result
        finally:
            if reports is not None:               # the one-off server ends with its test: its last lines
                reports.join(timeout=2.0)
            end_process(server)


def _capture(path, link, port: int):
    interface, prefix = link.capture_point("b")
    return LiveCapture(interface, path, prefix=prefix, capture_filter=f"port {port}")
