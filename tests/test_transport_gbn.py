"""Go-Back-N (transports/gbn: its facts, sender, receiver and model): every byte arrives, the window
holds, a timeout resends the whole window, a strict PPCB server refuses it; its model against a
simulation of its rules, stop-and-wait, Stallings, and goodput measured through the kit's emulated links."""
import hashlib
import random
import socket
import statistics
import threading
import time

import pytest

from gbn_sim import simulate
from ppcb_raw import wait_for
from transfer_relay import LossyRelay
from wirelab.link import LinkSpec
from wirelab.link.relay import UdpRelay
from wirelab.model.headers import HeaderStack
from wirelab.model.packetization import packetize
from wirelab.model.stopwait import acc_wire_bytes, stop_and_wait, udpr_transfer
from wirelab.transfer import HashSink, make_data, ppcb, send_udp
from wirelab.transfer.result import merge
from wirelab.transfer.udp_server import _answer_linger, listen_udp, serve_udp
from wirelab.transports import gbn as wire
from wirelab.transports.gbn.model import gbn_transfer, go_back_n, last_send_s
from wirelab.transports.gbn.sender import send_gbn

W = 0.05          # MAX_WAIT for the loopback tests: short, so a lost DATA costs little


class Server:
    """The kit's udp server (which hands Go-Back-N's CONN to its receiver) in a thread on loopback;
    ``results`` fills as sessions end."""

    def __init__(self, **kwargs):
        self.sock, self.sink, self.results, self.stop = listen_udp("127.0.0.1", 0), HashSink(), [], threading.Event()
        self.port = self.sock.getsockname()[1]
        kwargs.setdefault("max_wait", W)
        self.thread = threading.Thread(target=serve_udp, args=(self.sock,), daemon=True,
                                       kwargs=dict(out=self.sink, stop=self.stop, on_result=self.results.append,
                                                   **kwargs))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(3)
        self.sock.close()


def transfer(data: bytes, window: int, *, via=None, **kwargs):
    """Send ``data`` to a fresh receiver (through ``via(port)``, a relay, if given); (sender, server, events)."""
    events = []
    with Server(max_retransmits=kwargs.get("max_retransmits", 20)) as server:
        port = server.port
        relay = via(port) if via else None
        try:
            target = relay.port if hasattr(relay, "port") else relay.address[1] if relay else port
            kwargs.setdefault("max_wait", W)
            kwargs.setdefault("max_retransmits", 20)
            result = send_gbn("127.0.0.1", target, data, window_packets=window,
                              trace=lambda e, n: events.append((e, n)), **kwargs)
            assert wait_for(lambda: server.results, timeout=5)
        finally:
            if relay:
                relay.__exit__(None, None, None)
    return result, server, events


def byte_exact(server, data) -> bool:
    return server.sink.bytes == len(data) and server.sink.hexdigest() == hashlib.sha256(data).hexdigest()


def in_flight_ok(events, window) -> bool:
    """Every DATA sent or resent lies within the window the ACCs so far allow (read off the events)."""
    acked = -1
    for event, number in events:
        if event == "ack":
            acked = max(acked, number)
        elif event in ("send", "resend") and number > acked + window:
            return False
    return True


@pytest.mark.parametrize("window", [1, 4, 16])
def test_every_byte_arrives_on_loopback_and_the_window_fills(window):
    data = make_data(60_000, seed=window)
    result, server, events = transfer(data, window)
    assert result.ok, result.error
    assert byte_exact(server, data) and server.results[0].ok and server.results[0].proto == "gbn"
    assert result.metadata["max_in_flight"] == window and in_flight_ok(events, window)
    assert [n for e, n in events if e == "send"] == list(range(60)), "each DATA once, in order"


@pytest.mark.parametrize("window", [1, 4, 16])
def test_every_byte_arrives_over_a_lossy_relay_and_the_window_holds(window):
    data = make_data(80_000, seed=window)
    lossy = lambda port: LossyRelay(port, drop=0.1, duplicate=0.02, reorder=0.02, seed=window).__enter__()  # noqa: E731
    result, server, events = transfer(data, window, via=lossy)
    assert result.ok, result.error
    assert byte_exact(server, data)
    assert result.retransmissions > 0 and result.metadata["timeouts"] > 0
    assert in_flight_ok(events, window) and result.metadata["max_in_flight"] <= window
    if window > 1:
        assert server.results[0].out_of_order > 0, "DATA after a lost one arrived and was discarded"


class DropFirst(LossyRelay):
    """Forwards everything, but drops the first send of DATA ``number`` (and nothing else)."""

    def __init__(self, port, number):
        super().__init__(port, drop=0.0, duplicate=0.0, reorder=0.0)
        self.number, self.dropped = number, False

    def _forward(self, direction, data, now):
        if direction == 0 and data[0] == 4 and int.from_bytes(data[9:17], "big") == self.number \
                and not self.dropped:
            self.dropped = True
            return
        self._send(direction, data)


def test_a_timeout_resends_the_whole_window_and_only_it():
    data = make_data(10_000, seed=2)                     # 10 DATA, window 4, DATA 3 lost once
    result, server, events = transfer(data, 4, via=lambda port: DropFirst(port, 3).__enter__(), max_wait=0.2)
    assert result.ok and byte_exact(server, data)
    timeout = events.index(("timeout", 3))
    resent = [n for e, n in events[timeout + 1:] if e == "resend"]
    assert resent == [3, 4, 5, 6], "the window 3..6 again, nothing more"
    assert result.metadata["timeouts"] == 1 and result.retransmissions == 4
    assert [n for e, n in events[:timeout] if e == "ack"][-1] == 2, "ACC 2 was the last before the loss"
    assert server.results[0].out_of_order == 3, "4, 5, 6 arrived first and were discarded"


class DropTheEnd(LossyRelay):
    """Drops the ACCs of DATA ``first`` onwards and the first RCVD: the receiver has finished while the
    sender still waits for them."""

    def __init__(self, port, first=7):
        super().__init__(port, drop=0.0, duplicate=0.0, reorder=0.0)
        self.first, self.rcvd_dropped = first, False

    def _forward(self, direction, data, now):
        if direction == 1 and not self.rcvd_dropped and (
                data[0] == 5 and int.from_bytes(data[9:17], "big") >= self.first or data[0] == 7):
            self.rcvd_dropped = data[0] == 7
            return
        self._send(direction, data)


def test_a_finished_session_answers_the_resent_window_with_its_last_acc_and_rcvd():
    data = make_data(10_000, seed=6)                     # 10 DATA, window 4: ACC 7, 8, 9 and RCVD lost
    result, server, events = transfer(data, 4, via=lambda port: DropTheEnd(port).__enter__(), max_wait=0.2)
    assert result.ok and byte_exact(server, data), result.error
    assert [n for e, n in events if e == "resend"] == [7, 8, 9] and result.metadata["timeouts"] == 1
    assert events[-1] == ("ack", 9) and len(server.results) == 1, "answered by the server's linger"


def test_the_linger_answers_any_data_of_the_session_up_to_its_last_with_the_last_acc():
    session, other = ppcb.new_session_id(), ppcb.new_session_id()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
        server.bind(("127.0.0.1", 0))
        client.bind(("127.0.0.1", 0))
        client.settimeout(2)
        addr = client.getsockname()
        linger = (session, addr, 9, time.monotonic() + 5)
        answered = {n: _answer_linger(server, ppcb.pack("DATA", session, b"x", packet_no=n), addr, linger)
                    for n in (7, 9, 10)}
        stranger = _answer_linger(server, ppcb.pack("DATA", other, b"x", packet_no=9), addr, linger)
        replies = [ppcb.unpack(client.recv(64)) for _ in range(4)]
    assert answered == {7: True, 9: True, 10: False} and not stranger
    assert [(r.kind, getattr(r, "packet_no", None)) for r in replies] == [("ACC", 9), ("RCVD", None)] * 2


class DropFirstConacc(LossyRelay):
    """Forwards everything but the first CONACC."""

    def __init__(self, port):
        super().__init__(port, drop=0.0, duplicate=0.0, reorder=0.0)
        self.dropped = False

    def _forward(self, direction, data, now):
        if direction == 1 and data[0] == 2 and not self.dropped:
            self.dropped = True
            return
        self._send(direction, data)


def test_a_lost_conacc_is_recovered():
    data = make_data(5_000, seed=4)
    result, server, _ = transfer(data, 4, via=lambda port: DropFirstConacc(port).__enter__(), max_wait=0.1,
                                 max_retransmits=2)
    assert result.ok and byte_exact(server, data), result.error


def test_the_sender_gives_up_after_max_retransmits_windows():
    with Server() as server:
        server.stop.set()                                 # nothing answers: CONN itself is the window
        server.thread.join(3)
        result = send_gbn("127.0.0.1", server.port, b"x" * 3000, window_packets=2, max_wait=0.02, max_retransmits=2)
    assert not result.ok and "CONACC" in result.error and result.metadata["conn_resends"] == 2


def strict_ppcb_server(sock, seen):
    """The assignment's server as far as CONN goes: protocols 2 and 3 get CONACC, any other CONRJT."""
    raw, addr = sock.recvfrom(65535)
    conn = ppcb.unpack(raw)
    seen.append(conn.protocol_id)
    sock.sendto(ppcb.pack("CONACC" if conn.protocol_id in (2, 3) else "CONRJT", conn.session_id), addr)


def test_a_strict_ppcb_server_refuses_protocol_4_and_the_kits_server_takes_it_beside_udpr():
    seen = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as strict:
        strict.bind(("127.0.0.1", 0))
        thread = threading.Thread(target=strict_ppcb_server, args=(strict, seen), daemon=True)
        thread.start()
        refused = send_gbn("127.0.0.1", strict.getsockname()[1], b"abc" * 100, window_packets=4, max_wait=0.5)
        thread.join(2)
    assert seen == [4] and not refused.ok and "CONRJT" in refused.error and refused.bytes_sent == 0
    data = b"abc" * 100
    with Server() as server:                 # the kit's server takes both on one port, by protocol id
        udpr = send_udp("127.0.0.1", server.port, data, proto="udpr", max_wait=0.2)
        gbn = send_gbn("127.0.0.1", server.port, data, window_packets=4, max_wait=0.2)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as raw:   # a protocol id nobody has
            raw.settimeout(2)
            raw.sendto(ppcb.pack("CONN", ppcb.new_session_id(), protocol_id=9, total_length=3), ("127.0.0.1", server.port))
            answer = ppcb.unpack(raw.recv(64))
        assert wait_for(lambda: len(server.results) == 2, timeout=5)
    assert udpr.ok and gbn.ok and sorted(r.proto for r in server.results) == ["gbn", "udpr"]
    assert answer.kind == "CONRJT" and byte_exact(server, data + data)
    assert wire.PROTOCOL_ID == 4


def test_bad_windows_are_refused_with_a_fix():
    from wirelab.errors import ModelError, UsageError
    for bad in (0, -1, 2.5, True):
        with pytest.raises(UsageError, match="window"):
            send_gbn("127.0.0.1", 9, b"x", window_packets=bad)
        with pytest.raises(ModelError, match="window"):
            go_back_n(1000, 10e6, 0.01, window=bad)


# ---- the model ---------------------------------------------------------------------------------------

EMULATED = HeaderStack("udpr", wire="emulated")
RATE = 10e6


def wire_times(stack=EMULATED, rate=RATE, payload=1000):
    frame = lambda ppcb: stack.frame(stack.l3 + 8 + ppcb)           # noqa: E731
    return dict(data_s=8 * packetize(stack, payload).wire_bytes / rate, ack_s=8 * acc_wire_bytes(stack) / rate,
                rcvd_s=8 * frame(9) / rate)


@pytest.mark.parametrize("rtt, loss", [(0.01, 0.0), (0.04, 0.0), (0.01, 0.02), (0.002, 0.1)])
def test_a_window_of_one_is_stop_and_wait(rtt, loss):
    args = dict(stack=EMULATED, loss_forward=loss, loss_reverse=loss, timeout_s=0.3)
    gbn = go_back_n(1000, RATE, rtt, window=1, **args)
    sw = stop_and_wait(1000, RATE, rtt, **args)
    assert gbn.goodput_bps == pytest.approx(sw.goodput_bps, rel=0.05)
    whole = gbn_transfer(200_000, RATE, rtt, window=1, **args)
    udpr = udpr_transfer(200_000, RATE, rtt, **args)
    assert whole.total_s == pytest.approx(udpr.total_s, rel=0.05)


def test_without_loss_the_window_limits_until_it_covers_the_cycle():
    rtt = 0.01
    t = 8 * packetize(EMULATED, 1000).wire_bytes / RATE
    cycle = t + rtt + 8 * acc_wire_bytes(EMULATED) / RATE
    link = packetize(EMULATED, 1000).efficiency * RATE
    for n in (1, 2, 4, 8, 12, 13, 16, 64):
        g = go_back_n(1000, RATE, rtt, window=n, stack=EMULATED)
        assert g.goodput_bps == pytest.approx(min(1, n * t / cycle) * link)
        assert g.binding == ("link" if n * t >= cycle else "window")
    assert last_send_s(35, 8, t, cycle) == pytest.approx(4 * cycle + 2 * t) and last_send_s(33, 64, t, cycle) == 32 * t


def test_under_loss_the_model_becomes_stallings_when_the_timer_is_one_cycle():
    # Stallings, appendix 7A: U = (1 − P)/(1 + 2aP) for N ≥ 2a + 1, N(1 − P)/((2a + 1)(1 − P + NP)) below it.
    # His frames need no headers, his ACK no time, his error is noticed one cycle later: a wire whose
    # ACC is free and T₀ = c = (1 + 2a)·T; no reverse loss.
    stack, rate, p = HeaderStack("udpr", wire="emulated"), 1e6, 0.05
    t = 8 * packetize(stack, 1000).wire_bytes / rate
    for a in (0.5, 3.0, 10.0):
        rtt = 2 * a * t - 8 * acc_wire_bytes(stack) / rate           # c = T + RTT + A = (1 + 2a)·T
        for n in (1, 3, 7, 30):
            g = go_back_n(1000, rate, rtt, window=n, stack=stack, loss_forward=p, timeout_s=(1 + 2 * a) * t)
            assert g.cycle_s == pytest.approx((1 + 2 * a) * t)
            u = t / (max(t, g.cycle_s / n) + g.cycle_s * g.stalls_per_packet)   # his frames never queue: E[w] = 0
            stallings = (1 - p) / (1 + 2 * a * p) if n >= 2 * a + 1 else n * (1 - p) / ((2 * a + 1) * (1 - p + n * p))
            assert u == pytest.approx(stallings, rel=1e-9), (a, n)


def test_a_worked_example_of_the_textbook_form():
    # K. J. Christensen's worked GBN example (USF, class notes "Example U problem for GBN with errors",
    # 2003): 1.544 Mbit/s, 3000 km at 5 ns/m, 250 B frames, p = 0.1813, N = 30: U = 15.74 %.
    # A 187 B payload makes a 250 B frame on the emulated wire; the ACC's time goes into the RTT.
    rate, t_pr, p = 1.544e6, 0.015, 0.1813
    t = 8 * packetize(EMULATED, 187).wire_bytes / rate
    assert t == pytest.approx(0.001295, abs=1e-6)
    rtt = 2 * t_pr - 8 * acc_wire_bytes(EMULATED) / rate
    g = go_back_n(187, rate, rtt, window=30, stack=EMULATED, loss_forward=p, timeout_s=t + 2 * t_pr)
    assert g.efficiency == 1.0                                 # N·t_fr = 38.9 ms > 2·t_pr + t_fr = 31.3 ms
    u = t / (max(t, g.cycle_s / 30) + g.cycle_s * g.stalls_per_packet)
    assert u == pytest.approx(0.1574, abs=2e-4)              # his t_fr is rounded to 1.295 ms


def _simulated(packets, window, rtt, loss_f, loss_r, timeout, runs, seed):
    rng = random.Random(seed)
    return [simulate(rng, packets=packets, window=window, delay_s=rtt / 2, timeout_s=timeout, loss_forward=loss_f,
                     loss_reverse=loss_r, **wire_times()) for _ in range(runs)]


# the residual: coincidences left out (a DATA and the ACC before it both lost start the timer one DATA
# early) ≤ 5 %; lost ACCs bunch the window's sends (the DATA after it leave one T later), not modelled:
# the model reads short by up to 8 % at 10 % reverse loss, the case the last tolerance is for
@pytest.mark.parametrize("window, packets, loss_f, loss_r, residual", [
    (1, 30, 0.05, 0.05, 0.05), (4, 40, 0.05, 0.05, 0.05), (16, 60, 0.05, 0.05, 0.05), (8, 100, 0.02, 0.02, 0.05),
    (16, 60, 0.1, 0.0, 0.05), (8, 50, 0.0, 0.0, 0.0), (4, 40, 0.0, 0.1, 0.08)])
def test_the_expectation_against_a_simulation_of_the_exact_rules(window, packets, loss_f, loss_r, residual):
    rtt, timeout = 0.02, 0.1
    runs = _simulated(packets, window, rtt, loss_f, loss_r, timeout, 1500, seed=window * 7 + packets)
    model = gbn_transfer(packets * 1000, RATE, rtt, window=window, stack=EMULATED, loss_forward=loss_f,
                         loss_reverse=loss_r, timeout_s=timeout, max_retransmits=10 ** 6)
    data = [r.data_time_s for r in runs]
    done = [r.done_s for r in runs]
    assert max(r.max_in_flight for r in runs) == window
    if not loss_f and not loss_r:
        assert model.data_time_s == pytest.approx(data[0], rel=1e-9)
        assert model.total_s - model.handshake_s == pytest.approx(done[0], rel=1e-9)
        return
    err = 3 * statistics.stdev(data) / len(data) ** 0.5 / statistics.mean(data) + residual
    assert model.data_time_s == pytest.approx(statistics.mean(data), rel=err)
    err = 3 * statistics.stdev(done) / len(done) ** 0.5 / statistics.mean(done) + residual
    assert model.total_s - model.handshake_s == pytest.approx(statistics.mean(done), rel=err)
    assert model.std_s == pytest.approx(statistics.stdev(done), rel=0.25)


# ---- measured beside predicted, through the kit's emulated link ---------------------------------------

def relayed(spec):
    return lambda port: UdpRelay(spec, ("127.0.0.1", port), seed=1).start()


@pytest.mark.parametrize("window", [1, 4, 16])
def test_goodput_on_a_delayed_relay_is_bounded_by_the_model_and_near_it(window):
    # 5 Mbit/s, 10 ms each way: the window binds for N = 1 and 4 (0.37, 1.47 Mbit/s); N = 16 covers the
    # 21.8 ms cycle and the link binds (4.7 Mbit/s). The relay charges the emulated wire. It is a thread
    # of this process: on a loaded machine its timed releases come late (3-7 ms a cycle seen at a load
    # of 7 on 2 cores), so runs read low then, never high. The ±10 % check against the model, the
    # host's round trip probed as the kit's runner does, is on the userspace link (a process of its
    # own): test_a_sweep_of_windows_on_the_userspace_link_is_the_models.
    link, size = LinkSpec.parse(rate="5mbit", delay="10ms"), 60_000
    data = make_data(size, seed=window)
    result, server, _ = transfer(data, window, via=relayed(link), max_wait=1.0)
    assert result.ok and byte_exact(server, data)
    measured = merge(result, server.results[0], same_clock=True).goodput_bps
    predicted = gbn_transfer(size, 5e6, 0.02, window=window, stack=EMULATED, timeout_s=1.0).goodput_bps
    assert 0.6 < measured / predicted < 1.1, (measured / 1e6, predicted / 1e6)
    steady = go_back_n(1000, 5e6, 0.02, window=window, stack=EMULATED)
    assert steady.binding == ("link" if window == 16 else "window")



# ---- through the registry: the kit runs and predicts it as any transport -----------------------------

def test_the_registry_holds_go_back_n_with_its_window():
    from wirelab import transports
    gbn = transports.get("gbn")
    assert gbn.protocol_id == wire.PROTOCOL_ID == 4 and transports.by_protocol_id(4) is gbn
    assert gbn.socket == "udp" and gbn.retransmits and gbn.acked and gbn.reliable and not gbn.ppcb
    assert [o.name for o in gbn.options] == ["window_packets"] and gbn.option_values({})["window_packets"] == 8
    assert gbn.option_values({"window_packets": "16"})["window_packets"] == 16
    from wirelab.errors import UsageError
    with pytest.raises(UsageError, match="window"):
        gbn.option_values({"window_packets": "0"})


def test_predict_and_run_pair_take_go_back_n():
    from wirelab.model import predict
    from wirelab.transfer import run_pair
    one = predict("gbn", 10e6, rtt_s=0.02, window_packets=1, loss=0.01, size=200_000, max_wait_s=0.3)
    udpr = predict("udpr", 10e6, rtt_s=0.02, loss=0.01, size=200_000, max_wait_s=0.3)
    assert one.goodput_bps == pytest.approx(udpr.goodput_bps, rel=0.05)
    eight = predict("gbn", 10e6, rtt_s=0.02, window_packets=8)
    assert eight.binding == "window" and eight.goodput_bps == pytest.approx(
        go_back_n(eight.payload_bytes, 10e6, 0.02, window=8, stack=eight.stack).goodput_bps)
    r = run_pair("gbn", data=40_000, max_wait=0.3, window_packets=4)
    assert r.ok and r.metadata["byte_exact"] and r.proto == "gbn" and r.metadata["max_in_flight"] == 4


@pytest.mark.root
def test_a_sweep_of_windows_on_the_userspace_link_is_the_models(tmp_path):
    # the kit's own runner on wirelab's userspace link (namespaces, a real veth each side), the
    # prediction with the host's probed round trip: N = 1 and 4 window-limited, 16 link-limited;
    # udpr beside it: a window of one is stop-and-wait, measured and predicted
    from wirelab.experiment import Experiment, run
    exp = Experiment("gbn-us", proto=["udpr", "gbn"], window_packets=[1, 4, 16], size="100KB", rate="10mbit",
                     delay="5ms", reps=1, max_wait="0.5s", backend="userspace", timeout=30)
    df = run(exp, out=tmp_path / "us", progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert (df["backend"] == "userspace").all()
    gbn = df[df["proto"] == "gbn"].set_index("window_packets")
    udpr = df[df["proto"] == "udpr"].iloc[0]
    assert sorted(gbn.index) == [1, 4, 16]
    # within ±10 % of the model on a quiet machine (0.96-1.00 seen); a shared machine's bursts of load
    # slow a run, never speed it (0.70-0.85 seen at a load of 8 on 2 cores while others ran benches): so
    # the median is held to 0.85-1.1, each run to the kit's testbed bounds (test_experiment_wirelab_engine:
    # 0.75-1.2; tight figures are bench/'s)
    ratio = (gbn["goodput_bps"] / gbn["pred_goodput_bps"]).tolist()
    assert 0.85 < statistics.median(ratio) < 1.1 and all(0.75 < r < 1.2 for r in ratio), ratio
    assert gbn["pred_binding"].to_dict() == {1: "window", 4: "window", 16: "link"}
    assert gbn.loc[1, "pred_goodput_bps"] == pytest.approx(udpr["pred_goodput_bps"], rel=0.05)
    assert gbn.loc[1, "goodput_bps"] == pytest.approx(udpr["goodput_bps"], rel=0.10)


def test_wirelab_predict_names_go_back_n_s_own_sources_with_and_without_loss(capsys):
    from wirelab.cli import main
    for loss in ("0", "1%"):
        assert main(["predict", "--proto", "gbn", "--window", "8", "--rate", "10mbit", "--rtt", "20ms",
                     "--loss", loss]) == 0
        out = capsys.readouterr().out
        window = next(line for line in out.splitlines() if line.strip().startswith("window"))
        assert "Stallings" in window and "RFC 1323" not in window
        assert ("go_back_n" in out) == (loss != "0")
