"""The kit's own programs as an engine: ``wirelab.transfer`` over a ``wirelab.link`` testbed.

What each (workload, protocol) runs:

    file  tcp   PPCB over TCP (``send_tcp``), ``packet`` B per DATA (default 1000)
          udpr  PPCB stop-and-wait over UDP (``send_udp(proto="udpr")``)
          udp   on a rate-limited link: offered load at the link rate for as long as
                ``size`` takes (PPCB udp has no flow control: flooding a slow link
                only measures the queue's drops, as document 001 found); else PPCB udp
    time  tcp/udp  bulk for ``time`` seconds (``measure(mode="bulk")``)
    load  tcp/udp  ``offered`` bit/s in ``packet``-byte records (``measure(mode="load")``)
    echo  tcp/udp  ``echo`` request/response rounds (RTT samples)

With root, the server runs in host ``b`` and the client in host ``a`` of a
fresh two-host testbed per run (``links.fresh_link``): the receiver is a
thread of this process whose socket lives in ``b`` (``Testbed.inside``), the
sender a process in ``a`` (``client.py``, so it cannot starve the receiver).
One host, one clock: one-way delay is exact.

Without root (``loopback`` backend) both ends run on 127.0.0.1 and a fresh
relay of ``wirelab.link`` sits between them: ``UdpRelay`` (rate, queue,
delay, jitter, loss: a real emulated link for udp and udpr) or ``TcpRelay``
(paces and delays the byte stream, cannot lose segments: TCP runs with loss
are skipped and say why). With no link parameters at all there is no relay.
"""
from __future__ import annotations

import hashlib
import json
import time

from ..errors import TransferError, UsageError
from . import links
from .client import client_argv
from .series import goodput_series

__all__ = ["WirelabEngine", "PPCB_DATA_HEADER", "DEFAULT_CHUNK"]

#: PPCB DATA header bytes in front of every chunk (../shared/ppcb.md).
PPCB_DATA_HEADER = 21
#: Bytes of file data per DATA packet when ``packet`` is not set (document 001).
DEFAULT_CHUNK = 1000


def plan(setting) -> dict:
    """How a setting is run: ``call`` (file/measure), ``mode``, ``proto``, sizes. Pure."""
    proto, workload = setting.proto, setting.workload
    rate, mtu = setting["rate_bps"], int(setting.get("mtu", 1500))
    if workload == "file":
        if proto == "udp" and rate:
            seconds = setting.get("size_bytes", 1e6) * 8 / rate
            return {"call": "measure", "mode": "load", "rate_bps": rate, "time_s": seconds,
                    "packet": int(setting.get("packet_bytes", mtu - 28)), "payload": None,
                    "note": "udp file on a rate-limited link: offered load at the link rate"}
        chunk = int(setting.get("packet_bytes", DEFAULT_CHUNK))
        return {"call": "file", "mode": "file", "chunk": chunk,
                "payload": chunk if proto != "tcp" else None,
                "stream_header": PPCB_DATA_HEADER if proto == "tcp" else 0,
                "udp_header": PPCB_DATA_HEADER if proto == "udp" else 0}
    if proto == "udpr":
        raise UsageError(f"udpr runs file transfers only, not the {workload} workload",
                         "use workload='file' for udpr")
    packet = int(setting.get("packet_bytes", 1448 if proto == "tcp" else mtu - 28))
    mode = {"time": "bulk", "load": "load", "echo": "echo"}[workload]
    return {"call": "measure", "mode": mode, "time_s": setting.get("time_s", 1.0),
            "rate_bps": setting["offered_bps"], "count": int(setting.get("echo_count", 100)),
            "packet": packet, "payload": packet if proto == "udp" else None}


class WirelabEngine:
    """Runs each setting with wirelab's senders and receivers on a fresh link."""
    name = "wirelab"

    def __init__(self, backend: str | None = None):
        self.requested = backend
        self.backend: str | None = None

    def info(self) -> dict:
        return {"backend": self.backend, "requested_backend": self.requested}

    def prepare(self, settings, backend: str = "auto") -> None:
        """Choose one backend for the whole sweep (the runner calls this before ``open``)."""
        self.backend = links.sweep_backend(settings, self.requested or backend)

    def describe(self, setting) -> dict:
        backend = self.backend or "loopback"
        try:
            how = plan(setting)
        except UsageError:
            how = {}
        wire = "emulated" if backend != "loopback" or _needs_relay(setting) else "none"
        return {"backend": backend, "wire": wire,
                "predict_as": {"payload": how.get("payload"), "stream_header": how.get("stream_header", 0),
                               "udp_header": how.get("udp_header", 0)},
                "plan": how.get("note")}

    def unsupported(self, setting) -> str | None:
        try:
            plan(setting)
        except UsageError as err:
            return str(err)
        if (self.backend or "loopback") == "loopback" and setting.proto == "tcp" and setting.get("loss", 0):
            return ("without root TCP runs through a relay that cannot lose segments: run as root "
                    "(namespaces or userspace backend) for TCP with loss")
        return None

    def run(self, setting, *, deadline: float, seed: int = 0, workdir=None, capture=None) -> dict:
        """One run. ``capture``: a path for a pcapng of the run's packets as the receiver's
        side of the link saw them (dumpcap; needs root or capture rights)."""
        from ..transfer import Result, merge, start_server
        from ..transfer.run import HashSink, make_data

        how = plan(setting)
        proto = setting.proto
        max_wait = float(setting.get("max_wait_s", 5.0))
        retransmits = int(setting.get("max_retransmits", 5))
        sndbuf, rcvbuf = setting["sndbuf_bytes"], setting["rcvbuf_bytes"]
        sndbuf, rcvbuf = (None if sndbuf is None else int(sndbuf)), (None if rcvbuf is None else int(rcvbuf))
        size = int(setting.get("size_bytes", 1e6))
        with links.fresh_link(setting, self.backend or "loopback", seed=seed) as testbed:
            host = "127.0.0.1" if testbed is None else testbed.address("b")
            sink = HashSink()
            with (testbed.inside("b") if testbed else _nowhere()):
                port, stop, thread, server_results = start_server(
                    proto, host=host, out=sink, max_wait=max_wait,
                    max_retransmits=retransmits, rcvbuf=rcvbuf)
            relay = _relay(setting, port, seed) if testbed is None else None
            target = relay.address if relay is not None else (host, port)
            recorder = _capture(capture, testbed, proto, port) if capture else _nowhere()
            try:
                with recorder:
                    config = _client_config(how, setting, target[0], target[1], size=size, seed=seed,
                                            max_wait=max_wait, retransmits=retransmits, sndbuf=sndbuf)
                    sender = Result.from_dict(_run_client(testbed, config, deadline))
                    # the server ends its session by itself (RCVD sent, or MAX_WAIT bounds it)
                    until = min(deadline, time.monotonic() + max_wait * (retransmits + 1) + 1.0)
                    while how["call"] == "file" and not server_results and thread.is_alive() \
                            and time.monotonic() < until:
                        thread.join(0.01)
            finally:
                stop.set()
                thread.join(max_wait + 1.0)
                if relay is not None:
                    relay.close()
            info = testbed.describe() if testbed is not None else None
        if how["call"] == "file":
            receiver = (server_results[0] if server_results
                        else Result(proto, receiver_error="server saw no session"))
            result = merge(sender, receiver, same_clock=True)
            if proto == "udp" and result.packets_received is not None:
                result.lost = max(len(sender.send_times_s) - len(receiver.receive_times_s), 0)
            payload = make_data(size, seed)
            result.metadata["byte_exact"] = sink.bytes == len(payload) and \
                sink.hexdigest() == hashlib.sha256(payload).hexdigest()
        else:
            result = sender
        record = result.to_dict(samples=False)
        if capture:
            record["capture_file"] = str(capture)
            record["capture_packets"] = recorder.packets
            record["capture_dropped"] = recorder.dropped
        record["receiver_series"] = goodput_series(result.receive_times_s,
                                                   how.get("chunk") or how.get("packet") or 1000)
        record["plan"] = how.get("note") or f"{how['call']} {how['mode']}"
        if info is not None:
            record["link"] = {"backend": info["backend"], "tc_commands": info["shaping_commands"],
                              "emulated_by": info["emulated_by"], "testbed": info["testbed"]}
        elif relay is not None:
            described = relay.describe()
            record["link"] = {"backend": "loopback", "tc_commands": [f"# {described['link']}"],
                              "emulated_by": f"wirelab {relay.kind} relay on 127.0.0.1 "
                              f"(emulates: {', '.join(described.get('emulates', ['rate', 'delay']))})",
                              "counters": described.get("counters")}
        else:
            record["link"] = {"backend": "loopback", "tc_commands": [],
                              "emulated_by": "nothing: both ends on 127.0.0.1"}
        return record


def _capture(path, testbed, proto: str, port: int):
    """dumpcap on the receiver's side: host b's link in a testbed, else the relay→server leg on lo."""
    from ..capture import LiveCapture
    kind = "tcp" if proto == "tcp" else "udp"
    if testbed is not None:
        peer = [h for h in testbed.hosts if h != "b"][0]
        return LiveCapture(f"to-{peer}", path, prefix=["ip", "netns", "exec", testbed.namespace("b")],
                           capture_filter=f"{kind} port {port}")
    return LiveCapture("lo", path, capture_filter=f"{kind} port {port}")


def _needs_relay(setting) -> bool:
    if links.link_layer() is None:          # no wirelab.link here: nothing can shape loopback
        return False
    return bool(setting["rate_bps"] or setting.get("delay_s", 0) or setting.get("loss", 0)
                or setting.get("jitter_s", 0))


def _relay(setting, port: int, seed: int):
    """A started loopback relay in front of the server, or None when nothing is to be emulated."""
    if not _needs_relay(setting):
        return None
    link = links.link_layer()
    spec = links.link_spec(setting)
    kind = link.TcpRelay if setting.proto == "tcp" else link.UdpRelay
    return kind(spec, ("127.0.0.1", port), seed=seed).start()


def _client_config(how: dict, setting, host: str, port: int, *, size: int, seed: int,
                   max_wait: float, retransmits: int, sndbuf) -> dict:
    """The arguments of the client call (``client.py`` runs it in its own process)."""
    proto = setting.proto
    if how["call"] == "measure":
        return {"call": "measure", "proto": "tcp" if proto == "tcp" else "udp", "host": host,
                "port": port, "mode": how["mode"], "time_s": how.get("time_s", 1.0),
                "rate_bps": how.get("rate_bps"), "packet": how["packet"],
                "count": how.get("count", 100), "max_wait": max_wait,
                "max_retransmits": retransmits, "sndbuf": sndbuf, "congestion": setting["cc"]}
    if proto == "tcp":
        return {"call": "send_tcp", "host": host, "port": port, "size": size, "seed": seed,
                "max_wait": max_wait, "chunk": how["chunk"], "sndbuf": sndbuf,
                "congestion": setting["cc"]}
    return {"call": "send_udp", "host": host, "port": port, "size": size, "seed": seed,
            "proto": proto, "max_wait": max_wait, "max_retransmits": retransmits,
            "chunk": how["chunk"], "sndbuf": sndbuf}


def _run_client(testbed, config: dict, deadline: float) -> dict:
    """Run the client process (in host ``a`` on a testbed) and read its Result JSON."""
    argv = client_argv(config)
    done = links.run_client(testbed, argv, deadline, what=f"the {config.get('proto', 'tcp')} client",
                            fix="raise the experiment's timeout or lower size / MAX_WAIT")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = (done.stderr or done.stdout).strip().splitlines()
        raise TransferError(f"the client printed no Result ({tail[-1] if tail else 'no output'})",
                            f"run {' '.join(argv[:3])} '<config>' by hand to see why") from None


class _nowhere:
    """A context manager that does nothing (stay in this namespace)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
