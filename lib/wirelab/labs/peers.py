"""Document 001 §5 live, as an engine of the one runner: peers that die, fall silent, butt in or queue up.

    exp = Experiment("peers", engine="peers", workload="scenario", rate="2mbit", max_wait="0.5s",
                     max_retransmits=2, capture=True, reps=1,
                     cases=[{"scenario": "server_dies", "proto": "udpr"}, {"scenario": "second_client", "proto": "tcp"}])
    df = run(exp, engine=PeersEngine())   # one row per scenario: peer, as_specified, result_elapsed_s, bound_s, ...

(The lab of document 001, ``doc001``, declares its scenarios with this engine.)

Each run is one scenario (the ``scenario`` column) with one protocol, across the
link the runner opened (host ``a`` plays the client side, host ``b`` the server
side): ``run`` captures what host ``b`` sees with dumpcap (``capture=True``: the
run's pcapng, its server ``port`` in the row), makes one peer misbehave, and
records what the well-behaved side did, how long it took against the protocol's
bound (``bound_s``, also the engine's prediction ``pred_bound_s``), and whether a
wirelab server then serves the next client. The misbehaving peers are real: a
client or server *process* killed with SIGKILL mid-transfer, a socket that
connects and says nothing, a second client, an intruder sending DATA of a
session that is not its own. The plays are a table by name (``PLAYS``).

    client_dies    the server gives up: udpr after MAX_WAIT × (MAX_RETRANSMITS + 1) of
                   resending its last ACC, udp after MAX_WAIT, tcp when the kernel closes
                   (udp's dying client is a raw peer: a real one floods and fails first)
    server_dies    the client fails: ERROR within the same bounds
    silent_client  connects (tcp) or sends CONN (udp) and nothing more: the server times out
    silent_server  never answers: the client resends CONN (udpr) and gives up
    foreign_data   DATA of another session: udp answers RJT to the intruder while the served
                   client completes; tcp answers RJT and closes that connection
    second_client  udp answers CONRJT at once; tcp keeps the second client waiting its turn
"""
from __future__ import annotations

import math
import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..errors import UsageError, WirelabError
from ..transfer import HashSink, make_data, ppcb, send_tcp, send_udp, start_server
from ..wire.ppcb import HEADER_BYTES
from ..experiment.client import client_argv

__all__ = ["PeersEngine", "PLAYS", "SCENARIOS"]

SCENARIOS = ("client_dies", "server_dies", "silent_client", "silent_server", "foreign_data", "second_client")
BIG = 5_000_000            # bytes a dying peer's partner was sending: far more than it gets to
PROGRESS = 20_000          # bytes delivered before the peer is killed
OTHER = b"INTRUDER"        # the intruder's session id


def _wait(predicate, timeout: float, step: float = 0.005) -> bool:
    """Poll ``predicate`` until true or ``timeout`` (a bounded wait on an event we cannot join)."""
    end, tick = time.monotonic() + timeout, threading.Event()
    while time.monotonic() < end:
        if predicate():
            return True
        tick.wait(step)
    return bool(predicate())


def _in(net, host: str, target, *args):
    """Run ``target(*args)`` in a thread whose sockets live on ``host``; its return value lands in a box."""
    box: list = []

    def body():
        with net.inside(host):
            box.append(target(*args))
    thread = threading.Thread(target=body, daemon=True, name=f"wirelab-{host}")
    thread.start()
    return thread, box


def _socket(net, host: str, kind: str) -> socket.socket:
    with net.inside(host):
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)


def _send(proto: str, host: str, port: int, data: bytes, max_wait: float, retransmits: int):
    if proto == "tcp":
        return send_tcp(host, port, data, max_wait=max_wait)
    return send_udp(host, port, data, proto=proto, max_wait=max_wait, max_retransmits=retransmits)


def _listening(net, host: str, port: int, kind: str) -> bool:
    """Is something bound to ``port`` on ``host``? (/proc/thread-self/net: this thread's namespace)"""
    with net.inside(host):
        with open(f"/proc/thread-self/net/{'tcp' if kind == 'tcp' else 'udp'}") as table:
            rows = [line.split() for line in table.readlines()[1:]]
    return any(int(r[1].split(":")[1], 16) == port and (kind != "tcp" or r[3] == "0A") for r in rows)


class _Capture:
    """dumpcap on host b's side for ``port``, started before the scenario, proved by a probe."""

    def __init__(self, net, port: int, path):
        self.path = Path(path) if path else None
        self.cap = None
        self.error = None
        if self.path is None:
            return
        from ..capture import LiveCapture
        interface, prefix = net.capture_point("b")
        probe_to = (net.address("b"), 9)           # discard port: nothing answers, dumpcap counts it
        probe_socket = _socket(net, "a", "udp")
        self._probe_socket = probe_socket
        try:
            self.cap = LiveCapture(interface, self.path, prefix=prefix,
                                   capture_filter=f"port {port} or port 9 or icmp",
                                   probe=lambda: probe_socket.sendto(b"probe", probe_to))
        except WirelabError as err:              # no dumpcap: the scenario still runs
            self._uncaptured(err)

    def _uncaptured(self, err) -> None:
        self.error = f"not captured: {err}"
        self.cap = None
        self._probe_socket.close()

    def __enter__(self):
        if self.cap is not None:
            try:
                self.cap.start()
            except WirelabError as err:          # no root or no capture rights: the scenario still runs
                self._uncaptured(err)
        return self

    def __exit__(self, *exc):
        if self.cap is not None:
            # drain until dumpcap's count stops moving: one probe counted is not proof that the
            # packets queued before it were read (the last DATA went missing that way)
            self.cap.probe = None
            self.cap.stop()
            self._probe_socket.close()


class PeersEngine:
    """Plays the setting's ``scenario`` with its ``proto``, ``max_wait`` (default 0.5 s) and
    ``max_retransmits`` (default 2) across the link the runner opened."""
    name = "peers"
    keeps_links = False          # a peer killed mid-transfer leaves what it leaves: a fresh link each time
    measure = "as_specified"

    def info(self) -> dict:
        return {"programs": "wirelab.transfer (PPCB servers and clients), misbehaving peers", "scenarios": SCENARIOS}

    def unsupported(self, setting) -> str | None:
        if setting["scenario"] not in PLAYS:
            return f"no scenario {setting['scenario']!r}: choose one of {', '.join(SCENARIOS)}"
        return None

    def cannot_carry(self, setting, link) -> str | None:
        return None              # the peers need no more of a link than to carry a few packets

    def predict(self, setting) -> dict:
        """The protocol's bound on noticing the peer, and how long the play should take: the
        bound, once for the peer and once for the next client, and the transfer before the peer acts."""
        max_wait, retransmits = _waits(setting)
        bound = _bound(setting.proto, max_wait, retransmits)
        rate = setting["rate_bps"]
        return {"pred_bound_s": bound,
                "pred_transfer_time_s": 2 * bound + (8.0 * PROGRESS / rate if rate else 0.0)}

    def run(self, setting, link, *, deadline: float, seed: int = 0, workdir=None, capture=None) -> dict:
        proto = setting.proto
        kind = "tcp" if proto == "tcp" else "udp"
        max_wait, retransmits = _waits(setting)
        port = link.free_port("b", kind)
        with _Capture(link, port, capture) as recorder:
            record = PLAYS[setting["scenario"]](link, proto, kind, port, max_wait, retransmits)
        record["port"] = port
        for key, value in record.items():      # the packet kinds a peer saw, as one cell of text
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                record[key] = " ".join(value)
        if recorder.error:
            record["capture_error"] = recorder.error
        elif capture is not None:
            record["capture_file"] = str(capture)
        return record


def _waits(setting) -> tuple[float, int]:
    return float(setting.get("max_wait_s", 0.5)), int(setting.get("max_retransmits", 2))


# ------------------------------------------------------------------ the scenarios
def _server(net, proto, port, max_wait, retransmits):
    sink = HashSink()
    with net.inside("b"):
        _, stop, thread, results = start_server(proto, host=net.address("b"), port=port, out=sink,
                                                max_wait=max_wait, max_retransmits=retransmits)
    return sink, stop, thread, results


def _next_client_served(net, proto, kind, port, max_wait, retransmits) -> bool:
    host, target = net.reach(port, kind)
    thread, box = _in(net, "a", _send, proto, host, target, b"next client", max(max_wait, 1.0), retransmits)
    thread.join(10)
    return bool(box) and box[0].ok


def _bound(proto, max_wait, retransmits) -> float:
    """How long the protocol may take to notice a dead or silent peer (shared/ppcb.md)."""
    return max_wait * (retransmits + 1) if proto == "udpr" else max_wait


def _within(result, elapsed: float, bound: float) -> bool:
    """The peer's partner ended with an error, and (where the protocol bounds it) in time;
    half a second of slack for starting threads and the link's own delay."""
    failed = result is not None and not result.ok
    return failed and (math.isnan(bound) or elapsed <= bound + 0.5)


def _client_dies(net, proto, kind, port, max_wait, retransmits) -> dict:
    sink, stop, thread, results = _server(net, proto, port, max_wait, retransmits)
    host, target = net.reach(port, kind)
    client = peer = None
    try:
        if proto == "udp":
            # udp has no flow control: a real client would flood the link and fail on the first lost
            # datagram before it could die. This one sends CONN and 20 DATA, then is gone.
            peer = _socket(net, "a", kind)
            peer.connect((host, target))
            session = b"DIES-20!"
            peer.send(ppcb.pack("CONN", session, protocol_id=ppcb.PROTOCOL_IDS["udp"], total_length=BIG))
            for number in range(20):
                peer.send(ppcb.pack("DATA", session, packet_no=number, data=bytes(1000)))
            _wait(lambda: sink.bytes >= 20_000, 10)
            peer.close()
        else:
            # a small send buffer: a dead TCP client's socket outlives it and still sends what it holds
            config = {"call": "send_tcp" if proto == "tcp" else "send_udp", "host": host, "port": target,
                      "size": BIG, "seed": 1, "max_wait": max_wait, "sndbuf": 32768}
            if proto != "tcp":
                config.update(proto=proto, max_retransmits=retransmits)
            client = net.popen("a", client_argv(config))
            if not _wait(lambda: sink.bytes >= PROGRESS, 20):
                raise UsageError("the client delivered nothing to kill it in the middle of", "check the link")
            client.kill()
        killed = time.monotonic()
        _wait(lambda: results, _bound(proto, max_wait, retransmits) + 10)
        gave_up = time.monotonic() - killed
        served = results[0] if results else None
        next_ok = _next_client_served(net, proto, kind, port, max_wait, retransmits)
    finally:
        if client is not None:
            client.kill()
            client.wait(5)
        if peer is not None:
            peer.close()
        stop.set()
        thread.join(max_wait + 2)
    # tcp: no MAX_WAIT bound: the kernel sends the dead client's buffered bytes, then FIN
    bound = math.nan if proto == "tcp" else _bound(proto, max_wait, retransmits)
    return {"peer": ("a client sends CONN and 20 DATA of a long file, then is gone" if proto == "udp"
                     else "the client process is killed (SIGKILL) mid-transfer"),
            "server_error": served.receiver_error if served else "no result", "bytes_delivered": sink.bytes,
            "elapsed_s": gave_up, "bound_s": bound, "as_specified": _within(served, gave_up, bound),
            "next_client_served": next_ok}


def _server_dies(net, proto, kind, port, max_wait, retransmits) -> dict:
    program = (["wirelab.transfer.tcp", "serve", str(port), net.address("b")] if proto == "tcp"
               else ["wirelab.transfer.udp_server", str(port), net.address("b")])
    server = net.popen("b", [sys.executable, "-m", *program], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=False)
    try:
        if not _wait(lambda: _listening(net, "b", port, kind), 15):
            raise UsageError("the server process did not start listening", "run it by hand to see why")
        host, target = net.reach(port, kind)
        thread, box = _in(net, "a", _send, proto, host, target, make_data(BIG, 1), max_wait, retransmits)
        got, end = 0, time.monotonic() + 20
        while got < PROGRESS and time.monotonic() < end:      # the server writes what it received
            ready, _, _ = select.select([server.stdout], [], [], 0.1)
            if ready:
                got += len(os.read(server.stdout.fileno(), 1 << 16))
        server.kill()
        killed = time.monotonic()
        thread.join(_bound(proto, max_wait, retransmits) + 10)
        failed_after = time.monotonic() - killed
    finally:
        server.kill()
        server.wait(5)
    result = box[0] if box else None
    return {"peer": "the server process is killed (SIGKILL) mid-transfer",
            "client_error": result.error if result else "client still running", "bytes_delivered": got,
            "elapsed_s": failed_after, "bound_s": _bound(proto, max_wait, retransmits),
            "as_specified": _within(result, failed_after, _bound(proto, max_wait, retransmits))}


def _silent_client(net, proto, kind, port, max_wait, retransmits) -> dict:
    sink, stop, thread, results = _server(net, proto, port, max_wait, retransmits)
    host, target = net.reach(port, kind)
    peer = _socket(net, "a", kind)
    replies = []
    try:
        started = time.monotonic()
        peer.settimeout(_bound(proto, max_wait, retransmits) + 3)
        peer.connect((host, target))
        if kind == "udp":                                   # udp "connects" with CONN, then silence
            peer.send(ppcb.pack("CONN", b"SILENT!!", protocol_id=ppcb.PROTOCOL_IDS[proto], total_length=100))
            while not results:
                ready, _, _ = select.select([peer], [], [], 0.05)
                if ready:
                    replies.append(ppcb.unpack(peer.recv(100)).kind)
                elif time.monotonic() - started > _bound(proto, max_wait, retransmits) + 3:
                    break
        _wait(lambda: results, _bound(proto, max_wait, retransmits) + 3)
        gave_up = time.monotonic() - started
        next_ok = _next_client_served(net, proto, kind, port, max_wait, retransmits)
    finally:
        peer.close()
        stop.set()
        thread.join(max_wait + 2)
    served = results[0] if results else None
    return {"peer": "a client " + ("connects and sends nothing" if kind == "tcp" else "sends CONN, then nothing"),
            "server_error": served.receiver_error if served else "no result", "replies_to_peer": replies,
            "elapsed_s": gave_up, "bound_s": _bound(proto, max_wait, retransmits),
            "as_specified": _within(served, gave_up, _bound(proto, max_wait, retransmits)),
            "next_client_served": next_ok}


def _silent_server(net, proto, kind, port, max_wait, retransmits) -> dict:
    mute = _socket(net, "b", kind)                         # bound (and listening) but never answers
    try:
        mute.bind((net.address("b"), port))
        if kind == "tcp":
            mute.listen(1)
        host, target = net.reach(port, kind)
        started = time.monotonic()
        thread, box = _in(net, "a", _send, proto, host, target, b"hello", max_wait, retransmits)
        thread.join(_bound(proto, max_wait, retransmits) + 10)
        failed_after = time.monotonic() - started
    finally:
        mute.close()
    result = box[0] if box else None
    return {"peer": "the server never answers (a socket that reads nothing)",
            "client_error": result.error if result else "client still running",
            "conn_resends": result.metadata.get("conn_resends") if result else None,
            "elapsed_s": failed_after, "bound_s": _bound(proto, max_wait, retransmits),
            "as_specified": _within(result, failed_after, _bound(proto, max_wait, retransmits))}


def _foreign_data(net, proto, kind, port, max_wait, retransmits) -> dict:
    sink, stop, thread, results = _server(net, proto, port, max(max_wait, 1.0), retransmits)
    host, target = net.reach(port, kind)
    intruder = _socket(net, "a", kind)
    rejected = 0
    try:
        if kind == "tcp":                                  # on its own connection: CONN, DATA 0, a foreign DATA 1
            intruder.settimeout(max_wait + 3)
            intruder.connect((host, target))
            intruder.sendall(ppcb.pack("CONN", b"SESSION1", protocol_id=ppcb.PROTOCOL_IDS["tcp"], total_length=3000))
            intruder.recv(HEADER_BYTES["CONRJT"])
            intruder.sendall(ppcb.pack("DATA", b"SESSION1", packet_no=0, data=b"x" * 1000)
                             + ppcb.pack("DATA", OTHER, packet_no=1, data=b"evil"))
            reply = intruder.recv(100)
            rejected = int(reply[:1] == bytes([ppcb.TABLE["RJT"][0]]))
            try:
                closed = intruder.recv(100) == b""
            except ConnectionError:            # closed with our bytes unread: a reset
                closed = True
            _wait(lambda: results, 5)
            client_ok = None
        else:                                              # while a real udpr client is served
            data = make_data(300_000, 2)
            client, box = _in(net, "a", _send, "udpr", host, target, data, max(max_wait, 1.0), retransmits)
            intruder.connect((host, target))
            n, end = 0, time.monotonic() + 30
            while client.is_alive() and time.monotonic() < end:
                intruder.send(ppcb.pack("DATA", OTHER, packet_no=n, data=b"evil"))
                ready, _, _ = select.select([intruder], [], [], 0.02)
                if ready and ppcb.unpack(intruder.recv(100)).kind == "RJT":
                    rejected += 1
                n += 1
            client.join(5)
            client_ok = bool(box) and box[0].ok and sink.bytes == len(data)
            closed = None
    finally:
        intruder.close()
        stop.set()
        thread.join(3)
    return {"peer": ("a DATA with another session id on the connection" if kind == "tcp" else
                     "an intruder sends DATA of another session while a client is served"),
            "rjt_to_intruder": rejected, "served_client_completed": client_ok, "connection_closed": closed,
            "server_error": results[0].receiver_error if results else None,
            "as_specified": rejected >= 1 and (client_ok is not False) and closed is not False}


def _second_client(net, proto, kind, port, max_wait, retransmits) -> dict:
    sink, stop, thread, results = _server(net, proto, port, max(max_wait, 1.0), retransmits)
    host, target = net.reach(port, kind)
    first = _socket(net, "a", kind)
    try:
        first.settimeout(5)
        first.connect((host, target))
        first.send(ppcb.pack("CONN", b"FIRST!!!", protocol_id=ppcb.PROTOCOL_IDS[proto], total_length=5))
        first_got = [ppcb.unpack(first.recv(HEADER_BYTES["CONACC"])).kind]
        second, box = _in(net, "a", _send, proto, host, target, b"me too", 3.0, retransmits)
        if kind == "udp":
            second.join(5)                                 # refused at once, while the first is served
        waiting = second.is_alive()
        first.send(ppcb.pack("DATA", b"FIRST!!!", packet_no=0, data=b"hello"))
        while "RCVD" not in first_got:
            first_got.append(ppcb.unpack(first.recv(HEADER_BYTES["ACC" if kind == "udp" else "RCVD"])).kind)
        first.close()
        second.join(10)
    finally:
        first.close()
        stop.set()
        thread.join(3)
    result = box[0] if box else None
    return {"peer": "a second client arrives while the first is served",
            "first_client_got": first_got, "second_waited": waiting,
            "client_error": result.error if result else "still running",
            "second_completed": bool(result and result.ok),
            "as_specified": ("RCVD" in first_got) and (bool(result and result.ok) if kind == "tcp"
                                                       else bool(result) and "CONRJT" in (result.error or ""))}


#: Each scenario's play: (link, proto, kind, port, max_wait, max_retransmits) → what happened.
PLAYS = {"client_dies": _client_dies, "server_dies": _server_dies, "silent_client": _silent_client,
         "silent_server": _silent_server, "foreign_data": _foreign_data, "second_client": _second_client}
