"""iperf3 as a second engine: the tool everyone uses, in the same table as ours.

iperf3 runs as a one-off server (``iperf3 -s -1``) and a client with ``-J
--get-server-output``; its JSON is parsed into the same Result columns the
wirelab programs fill, so both appear side by side.

Payload-rate semantics (what iperf3's numbers mean):
  * ``bits_per_second`` counts **application payload** (no TCP/UDP/IP/Ethernet
    headers), like wirelab's goodput; compare it with ``pred_goodput_bps``.
  * ``goodput_bps`` here is the *receiver's* figure (``end.sum_received``);
    ``sender_goodput_bps`` is the sender's (``end.sum_sent``).
  * With ``-n SIZE`` the test ends when the sender has *written* the last
    block into its socket buffer. On a slow link most of the file may still
    be queued then (on a 10 Mbit/s link the receiver had counted only about
    20 % of 1 MB): ``bytes_received`` ≪ ``bytes_sent`` and the rate mostly
    measures slow start. To compare with iperf3, prefer the ``time``
    workload (``-t``); a ``warning`` column flags such file runs.
  * ``-b RATE`` paces payload bits; iperf3 UDP defaults to 1 Mbit/s, so an
    offered load (or the link rate) is always given for UDP.
  * iperf3 has no udpr (stop-and-wait): such runs are ``skipped``.
"""
from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import time

from ..errors import LinkError, MissingToolError, TransferError, UsageError
from ..link.iperf import listening
from .links import run_client

__all__ = ["Iperf3Engine", "client_argv", "server_argv", "parse", "SEMANTICS"]

SEMANTICS = ("iperf3 counts application payload bits (no headers); goodput is the receiver's "
             "end.sum_received; with -n the test stops when the sender has written the last byte, "
             "so data still queued is not counted (prefer the time workload)")


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def server_argv(port: int, bind: str = "127.0.0.1") -> list[str]:
    """A one-off iperf3 server (JSON, so the client's --get-server-output is JSON too)."""
    return ["iperf3", "-s", "-1", "-B", bind, "-p", str(port), "-J", "-i", "0.1"]


def client_argv(setting, host: str, port: int, *, pace_rate: bool = False,
                connect_timeout_s: float = 5.0) -> list[str]:
    """The client's argv for one setting (pure: tested without running iperf3).

    ``pace_rate``: no link enforces the rate, so iperf3 paces TCP to the
    link rate itself (``-b``, payload bits).
    """
    proto = setting.proto
    if proto == "udpr":
        raise UsageError("iperf3 has no udpr (stop-and-wait)", "use engine='wirelab' for udpr")
    argv = ["iperf3", "-c", host, "-p", str(port), "-J", "--get-server-output",
            "--connect-timeout", str(int(connect_timeout_s * 1000))]
    workload = setting.workload
    if workload == "file":
        argv += ["-n", _num(setting.get("size_bytes", 1e6))]
    elif workload in ("time", "load"):
        # iperf3 reads -t as whole seconds (and 0 as "forever"): round up, at least 1
        argv += ["-t", str(max(1, math.ceil(setting.get("time_s", 10) - 1e-9)))]
    else:
        raise UsageError(f"iperf3 cannot run the {workload} workload", "use file, time or load")
    rate, offered, packet = setting["rate_bps"], setting["offered_bps"], setting["packet_bytes"]
    if proto == "udp":
        mtu = setting.get("mtu", 1500)
        argv += ["-u", "-b", _num(offered or rate or 1e6), "-l", _num(packet or mtu - 28)]
    else:
        if offered or (pace_rate and rate):
            argv += ["-b", _num(offered or rate)]
            packet = packet or 8192      # small writes: iperf3 paces per write (128 KB by default)
        if packet:
            argv += ["-l", _num(packet)]
        if setting["cc"]:
            argv += ["-C", setting["cc"]]
    buffer = setting["sndbuf_bytes"] or setting["rcvbuf_bytes"]
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
           "tool": start.get("version"), "semantics": SEMANTICS}
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
                   rtt_mean_s=stream["mean_rtt"] / 1e6 if stream.get("mean_rtt") else None,
                   mss_bytes=start.get("tcp_mss_default"))
    out.update(bytes_offered=test.get("bytes") or sent.get("bytes"), bytes_sent=sent.get("bytes"),
               bytes_received=received.get("bytes"),
               bytes_delivered=received.get("bytes") if proto == "tcp" else None,
               sender_duration_s=sent.get("seconds"), receiver_duration_s=received.get("seconds"),
               goodput_bps=received.get("bits_per_second"),
               sender_goodput_bps=sent.get("bits_per_second"),
               packet_bytes=test.get("blksize"),
               sndbuf_granted_bytes=start.get("sndbuf_actual"),
               rcvbuf_granted_bytes=start.get("rcvbuf_actual"))
    if proto == "tcp" and test.get("bytes") and out["bytes_received"] is not None \
            and out["bytes_received"] < 0.9 * (out["bytes_sent"] or 0):
        out["warning"] = (f"iperf3 -n ended with only {out['bytes_received'] / out['bytes_sent']:.0%} of "
                          "the data received: its rate mostly shows slow start; use the time workload")
    cpu = end.get("cpu_utilization_percent", {})
    if cpu and out["sender_duration_s"]:
        out["sender_cpu_s"] = cpu.get("host_total", 0) / 100.0 * out["sender_duration_s"]
        out["receiver_cpu_s"] = cpu.get("remote_total", 0) / 100.0 * out["sender_duration_s"]
    server_intervals = _get(doc, "server_output_json", "intervals", default=[])
    out["receiver_series"] = [{"t_s": _get(i, "sum", "end"), "bps": _get(i, "sum", "bits_per_second")}
                              for i in server_intervals if _get(i, "sum", "end") is not None]
    return out


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_listening(proc: subprocess.Popen, port: int, deadline: float) -> None:
    """Poll until the server listens (every 5 ms, bounded by ``deadline``)."""
    while True:
        try:
            if proc.poll() is None and listening(proc.pid, port):
                return
        except LinkError:
            pass                # it has just exited: its output is read below
        if proc.poll() is not None:
            output = proc.stdout.read().decode(errors="replace").strip() if proc.stdout else ""
            raise TransferError(f"iperf3 server exited before listening ({output[:200] or 'no output'})",
                                "check that the port is free and that iperf3 runs by hand")
        if time.monotonic() > deadline:
            raise TransferError(f"iperf3 server not listening on port {port} in time",
                                "the machine may be overloaded; try again or raise the timeout")
        time.sleep(0.005)


class Iperf3Engine:
    """Run a setting with iperf3: across a fresh testbed (root) or on loopback.

    On a testbed the server runs in host ``b`` and the client in host ``a``;
    the link shapes the traffic. On loopback (no root) the client talks to
    wirelab's relays in front of the server, the same ones the wirelab
    engine uses: a ``TcpRelay`` carries the control connection and TCP data
    (paced and delayed, never lost), a ``UdpRelay`` on the same port number
    carries UDP data (rate, delay, loss). ``relays=False``: no relays, iperf3
    paces the payload itself (``-b`` at the link rate), no delay, no loss.
    """
    name = "iperf3"

    def __init__(self, backend: str | None = None, relays: bool = True):
        self.requested = backend
        self.backend: str | None = None
        self.relays = relays

    def info(self) -> dict:
        return {"iperf3": shutil.which("iperf3"), "semantics": SEMANTICS, "backend": self.backend}

    def prepare(self, settings, backend: str = "auto") -> None:
        from . import links
        self.backend = links.sweep_backend(settings, self.requested or backend)

    def _relayed(self, setting) -> bool:
        from . import links
        usable = self.relays and links.link_layer() is not None
        return (self.backend or "loopback") == "loopback" and usable and bool(
            setting["rate_bps"] or setting.get("delay_s", 0) or setting.get("loss", 0))

    def describe(self, setting) -> dict:
        if (self.backend or "loopback") == "loopback" and not self._relayed(setting):
            return {"backend": "loopback", "wire": "payload" if setting["rate_bps"] else "none",
                    "tc_commands": ["# no link: iperf3 paces the payload itself (-b)"]}
        return {"backend": self.backend or "loopback", "wire": "emulated"}

    def unsupported(self, setting) -> str | None:
        if not shutil.which("iperf3"):
            return str(MissingToolError("iperf3"))
        if setting.proto == "udpr":
            return "iperf3 has no udpr (stop-and-wait); use engine='wirelab'"
        if setting.workload == "echo":
            return "iperf3 has no echo workload; use engine='wirelab'"
        if (self.backend or "loopback") == "loopback":
            if not self.relays and (setting.get("delay_s", 0) or setting.get("loss", 0) or setting["jitter_s"]):
                return ("loopback cannot add delay or loss without a link: run as root "
                        "(namespaces or userspace backend) or use delay=0, loss=0")
            if setting.proto == "tcp" and setting.get("loss", 0):
                return ("without root TCP runs through a relay that cannot lose segments: run as root "
                        "(namespaces or userspace backend) for TCP with loss")
        return None

    def run(self, setting, *, deadline: float, seed: int = 0, workdir=None) -> dict:
        from . import links
        with links.fresh_link(setting, self.backend or "loopback", seed=seed) as testbed:
            if testbed is None:
                host, port = "127.0.0.1", free_port()
                server = subprocess.Popen(server_argv(port, host), stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT)
            else:
                host, port = testbed.address("b"), 5201
                server = testbed.popen("b", server_argv(port, host), stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=False)
            relays = _relays(setting, port, seed) if testbed is None and self._relayed(setting) else []
            try:
                wait_listening(server, port, min(deadline, time.monotonic() + 10))
                target = relays[0].address[1] if relays else port
                argv = client_argv(setting, host, target, pace_rate=testbed is None and not relays)
                done = run_client(testbed, argv, deadline, what="iperf3",
                                  fix="give the experiment a longer timeout or a smaller size")
                result = parse(done.stdout)
                if done.returncode and result.get("ok"):
                    result.update(ok=False, error=f"iperf3 exited {done.returncode}: {done.stderr.strip()}")
                result["argv"] = " ".join(argv)
                if testbed is not None:
                    info = testbed.describe()
                    result["link"] = {"backend": info["backend"], "tc_commands": info["shaping_commands"],
                                      "emulated_by": info["emulated_by"], "testbed": info["testbed"]}
                elif relays:
                    result["link"] = {"backend": "loopback", "tc_commands": [f"# {relays[0].spec.describe()}"],
                                      "emulated_by": " + ".join(f"wirelab {r.kind} relay" for r in relays)
                                      + " on 127.0.0.1"}
                return result
            finally:
                for relay in relays:
                    relay.close()
                _stop(server)


def _relays(setting, port: int, seed: int) -> list:
    """Relays in front of a loopback iperf3 server: TCP (control and TCP data) and, for UDP,
    a UDP relay listening on the same port number (iperf3 sends its datagrams there)."""
    from . import links
    link, spec = links.link_layer(), links.link_spec(setting)
    for _ in range(5):         # the UDP port of that number may be taken: try another pair
        tcp = link.TcpRelay(spec, ("127.0.0.1", port), seed=seed).start()
        if setting.proto != "udp":
            return [tcp]
        try:
            udp = link.UdpRelay(spec, ("127.0.0.1", port), listen=("127.0.0.1", tcp.address[1]), seed=seed)
        except OSError:
            tcp.close()
            continue
        return [tcp, udp.start()]
    raise TransferError("no free port pair for the TCP and UDP relays", "try again")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=2)
    if proc.stdout:
        proc.stdout.close()
