"""Document 001 §5 live, as an engine of the one runner: peers that die, fall silent, butt in or queue up.

    exp = Experiment("peers", engine="peers", workload="scenario", rate="2mbit", max_wait="0.5s",
                     max_retransmits=2, capture=True, reps=1,
                     cases=[{"scenario": "server_dies", "proto": "udpr"}, {"scenario": "second_client", "proto": "tcp"}])
    df = run(exp, engine=PeersEngine())   # one row per scenario: peer, as_specified, result_elapsed_s, bound_s, ...

(The lab of document 001, ``doc001``, declares its scenarios with this engine.)

Each run is one scenario (the ``scenario`` column) with one protocol, across the
link the runner opened (host ``a`` plays the client side, host ``b`` the server
side): ``run`` captures what host ``b`` sees with dumpcap (``capture=True``: the
run's pcapng, its server ``port`` in the row), makes one peer misbehave against
the kit's own programs, and records what the well-behaved side did, how long it
took against the protocol's bound (``bound_s``, also the engine's prediction
``pred_bound_s``), and whether the kit's server then serves the next client.

The misbehaving peers are ``wirelab.peers``' plays, the ones the grader sets
against a student's programs (``PLAYS`` here names which play each scenario is),
run on the lab's stage (``labs.stage``: the kit's programs, measured); where a
play finds the kit's program off the specification, ``deviation`` says how.
Two misbehaviours are the lab's own, a *process* killed with SIGKILL mid-transfer
(``labs.dying``): what a dying process leaves is the kernel's, not a packet a
peer sends.

    client_dies    the server gives up: udpr after MAX_WAIT × (MAX_RETRANSMITS + 1) of
                   resending its last ACC, udp after MAX_WAIT, tcp when the kernel closes
                   (udp's dying client is a play: a real one floods and fails first)
    server_dies    the client fails: ERROR within the same bounds
    silent_client  connects (tcp) or sends CONN (udp) and nothing more: the server times out
    silent_server  never answers: the client resends CONN (udpr) and gives up
    foreign_data   DATA of another session: udp answers RJT to the intruder while the served
                   client completes; tcp answers RJT and closes that connection
    second_client  udp answers CONRJT at once; tcp keeps the second client waiting its turn
"""
from __future__ import annotations

import math
import socket
from pathlib import Path

from .. import transports
from ..capture import LiveCapture
from ..errors import WirelabError
from ..peers import PLAYS as PEER_PLAYS, Failed
from .dying import PROGRESS, client_process_dies, server_process_dies
from .stage import KitStage

__all__ = ["PeersEngine", "PLAYS", "SCENARIOS"]

SCENARIOS = ("client_dies", "server_dies", "silent_client", "silent_server", "foreign_data", "second_client")
#: Each scenario's play of ``wirelab.peers`` by transport (None: the lab's own dying process), as each
#: transport declares it (``Transport.peer_scenarios``).
PLAYS = {scenario: {t.name: t.peer_scenarios[scenario] for t in transports.transports() if scenario in t.peer_scenarios}
         for scenario in SCENARIOS}
#: What the misbehaving peer does, by scenario (and tcp or udp where they differ).
PEER = {
    "silent_client": {"tcp": "a client connects and sends nothing", "udp": "a client sends CONN, then nothing"},
    "silent_server": "the server never answers (a socket that reads nothing)",
    "foreign_data": {"tcp": "a DATA with another session id on the connection",
                     "udp": "an intruder sends DATA of another session while a client is served"},
    "second_client": "a second client arrives while the first is served",
    "client_dies": {"udp": "a client sends CONN and 20 DATA of a long file, then is gone"},
}


def _socket(net, host: str, kind: str) -> socket.socket:
    with net.inside(host):
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)




class _Capture:
    """dumpcap on host b's side for ``port``, started before the scenario, proved by a probe."""

    def __init__(self, net, port: int, path):
        self.path = Path(path) if path else None
        self.cap = None
        self.error = None
        if self.path is None:
            return
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
        proto, scenario = setting.proto, setting["scenario"]
        kind = transports.get(proto).socket
        max_wait, retransmits = _waits(setting)
        port = link.free_port("b", kind)
        stage = KitStage(link, proto, port, max_wait=max_wait, retransmits=retransmits, deadline=deadline)
        play = PLAYS[scenario][proto]
        try:
            with _Capture(link, port, capture) as recorder:
                if play is None:
                    dies = client_process_dies if scenario == "client_dies" else server_process_dies
                    record = dies(stage)
                else:
                    record = _measured(stage, scenario, play)
        finally:
            stage.close()
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


def _bound(proto, max_wait, retransmits) -> float:
    """How long the protocol may take to notice a dead or silent peer (notebooks/ppcb-protocol.md)."""
    return transports.get(proto).give_up_s(max_wait, retransmits)


def _within(failed: bool, elapsed: float | None, bound: float) -> bool:
    """The peer's partner ended with an error, and (where the protocol bounds it) in time;
    half a second of slack for starting threads and the link's own delay."""
    return failed and (math.isnan(bound) or (elapsed is not None and elapsed <= bound + 0.5))


# ------------------------------------------------------------------ a play, measured
def _measured(stage: KitStage, scenario: str, play: str) -> dict:
    """Play ``play`` against the kit's programs; what it saw, and how the well-behaved side ended,
    as the scenario's columns."""
    try:
        seen, deviation = PEER_PLAYS[play](stage), None
    except Failed as err:
        seen, deviation = {}, str(err)
    peer = PEER[scenario]
    record = {"play": play, "peer": peer if isinstance(peer, str) else peer[stage.kind], "deviation": deviation}
    bound = _bound(stage.proto, stage.max_wait, stage.retransmits)
    ended = stage.servers[0].ended if stage.servers else []
    first = ended[0][1] if ended else None
    if scenario in ("silent_client", "client_dies"):
        began = seen.get("gone_at", stage.servers[0].started if stage.servers else None)
        elapsed = ended[0][0] - began if ended and began is not None else None
        record.update(server_error=first.receiver_error if first else "no result", elapsed_s=elapsed,
                      bound_s=bound, as_specified=deviation is None and _within(bool(first and not first.ok),
                                                                               elapsed, bound),
                      next_client_served=True if deviation is None else None)
        if scenario == "silent_client":
            record["replies_to_peer"] = seen.get("replies_to_peer")
        else:
            record["bytes_delivered"] = first.bytes_delivered if first else 0
    elif scenario == "silent_server":
        elapsed = stage.measured.get("gave_up_after_s")
        record.update(client_error=stage.measured.get("client_error", "client still running"),
                      conn_resends=stage.measured.get("conn_resends"), elapsed_s=elapsed, bound_s=bound,
                      as_specified=deviation is None and _within(stage.measured.get("client_ok") is False, elapsed, bound))
    elif scenario == "foreign_data":
        record.update(rjt_to_intruder=seen.get("rjt_to_intruder", 0),
                      served_client_completed=seen.get("served_client_completed"),
                      connection_closed=seen.get("connection_closed"),
                      server_error=first.receiver_error if first else None, as_specified=deviation is None)
    else:                                                    # second_client
        record.update(first_client_got=seen.get("first_client_got"), second_waited=seen.get("second_waited"),
                      second_completed=seen.get("second_completed", False), as_specified=deviation is None)
    return record
