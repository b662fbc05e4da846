"""Where a loss happened (capture/stats/losses.py): before the capture point, after it, spurious;
the handshake's round trip split at the capture point."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import wirelab
from wirelab.capture import handshakes, loss_places, read_capture

ROOT = Path(__file__).resolve().parents[1]
RECEIVER = ROOT / "captures" / "tcp-10mbit-loss2.pcapng"       # dumpcap in wlcap-b, the receiver (captures/README.md)
SENDER = ROOT / "tests" / "data" / "tcp-loss-at-sender.pcapng"  # the same testbed, dumpcap in the sender's namespace
needs_tshark = pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed (apt-get install tshark)")

FAR, NEAR = 0.030, 0.001            # the crafted capture: 30 ms to the server and back, 1 ms to the client


def _crafted(path: Path) -> dict:
    """A capture taken next to a client sending 100 B segments (scapy): the handshake, then
    segment 2 never captured and resent (before), 4 captured and resent after a silence with
    its ACK a round trip later (after), 5 resent though already ACKed, 6 resent with the
    ACK covering it back 1 ms later and 7 resent and D-SACKed (spurious all three). Returns
    each resend's frame number."""
    scapy = pytest.importorskip("scapy.all")
    IP, TCP, wrpcap, Ether = scapy.IP, scapy.TCP, scapy.wrpcap, scapy.Ether
    c, s = dict(src="10.9.0.1", dst="10.9.0.2"), dict(src="10.9.0.2", dst="10.9.0.1")
    cp, sp = dict(sport=40000, dport=80), dict(sport=80, dport=40000)
    iss, irs = 1000, 5000
    frames = []

    def send(t, ip, tcp, payload=b""):
        p = Ether() / IP(**ip) / TCP(**tcp) / payload
        p.time = t
        frames.append(p)
        return len(frames)

    def data(t, k):                     # the k-th segment of 100 B (k from 1)
        return send(t, c, dict(cp, flags="PA", seq=iss + 1 + (k - 1) * 100, ack=irs + 1, window=1000), bytes([k]) * 100)

    def ack(t, upto, twice=None):       # the server's ACK of the first ``upto`` segments (a D-SACK of one)
        edge = iss + 1 + ((twice or 1) - 1) * 100
        options = [("NOP", None), ("NOP", None), ("SAck", (edge, edge + 100))] if twice else []
        return send(t, s, dict(sp, flags="A", seq=irs + 1, ack=iss + 1 + upto * 100, window=1000, options=options))

    send(0.0, c, dict(cp, flags="S", seq=iss, window=1000))
    send(FAR, s, dict(sp, flags="SA", seq=irs, ack=iss + 1, window=1000))
    send(FAR + NEAR, c, dict(cp, flags="A", seq=iss + 1, ack=irs + 1, window=1000))
    t = 0.1
    data(t, 1)
    data(t + 0.001, 3)                  # segment 2 lost before the capture point: a hole
    ack(t + FAR, 1)
    ack(t + FAR + 0.001, 1)             # (a duplicate)
    resent = {"before": data(t + 0.2, 2)}
    ack(t + 0.2 + FAR, 3)
    t = 0.5
    data(t, 4)                          # captured, lost beyond: no ACK, resent 0.2 s later
    resent["after"] = data(t + 0.2, 4)
    ack(t + 0.2 + FAR + 0.005, 4)       # (a round trip and a little: the resend's own ACK)
    t = 1.0
    data(t, 5)
    ack(t + FAR, 5)                     # it arrived ...
    resent["spurious_acked"] = data(t + 0.2, 5)      # ... and is sent again
    ack(t + 0.2 + FAR, 5)
    t = 1.5
    data(t, 6)                          # its ACK is late (a queue): the resend goes, then the ACK comes
    resent["spurious_early"] = data(t + 0.2, 6)
    ack(t + 0.2 + NEAR, 6)              # 1 ms after the resend: 30 ms are needed for the resend's own
    ack(t + 0.2 + FAR, 6)
    t = 2.0
    data(t, 7)                          # its ACK is lost on the way back: resent, and the receiver says
    resent["spurious_dsack"] = data(t + 0.2, 7)      # it got it twice (RFC 2883: a block below the ACK)
    ack(t + 0.2 + FAR + 0.005, 7, twice=7)
    wrpcap(str(path), frames)
    return resent


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    path = tmp_path_factory.mktemp("losses") / "crafted.pcap"
    return path, _crafted(path)


def test_a_capture_at_the_receiver_saw_every_loss_before_it():
    places = wirelab.open_capture(RECEIVER).losses()
    assert len(places) == 43                         # Wireshark's retransmissions (captures/README.md)
    assert set(places["where"]) == {"before"}
    assert places["original_frame"].isna().all()
    # each resend fills a hole a "previous segment not captured" opened before it
    cap = wirelab.open_capture(RECEIVER)
    lost = cap.frames["frame"][cap.flags()["lost_segment"].to_numpy()].to_numpy()
    assert all((lost < frame).any() for frame in places["frame"])


def test_a_capture_at_the_sender_saw_every_loss_after_it():
    cap = wirelab.open_capture(SENDER)
    places = cap.losses()
    assert len(places) == int(cap.flags()["retransmission"].sum()) == 11
    assert not cap.flags()["lost_segment"].any()     # (nothing was lost before the sender's capture point)
    # the original: an earlier frame with the same first byte
    f = cap.frames.set_index("frame")
    for row in places.itertuples():
        assert row.original_frame < row.frame
        assert f.loc[row.original_frame, "tcp_seq"] == f.loc[row.frame, "tcp_seq"]
    # the transfer's 10 were lost beyond; the control connection's resend (a probe sent while
    # the ACK was late) arrived twice: the receiver's D-SACK (frame 730) says so
    assert (places[places["stream"] == 1]["where"] == "after").sum() == 10
    probe = places[places["stream"] == 0].iloc[0]
    assert (probe["frame"], probe["where"]) == (728, "spurious") and "D-SACK" in probe["reason"]


@needs_tshark
def test_the_dsacks_read_are_tsharks():
    from wirelab.capture.reader.frames import Frames
    from wirelab.capture.stats.dsack import dsack_of

    cap = wirelab.open_capture(SENDER)
    f = Frames.of(cap.frames)
    found = dsack_of(f, cap._bytes(), np.flatnonzero(f.tcp_opts_len >= 10))
    out = subprocess.run(["tshark", "-n", "-r", str(SENDER), "-Y", "tcp.options.sack.dsack_le", "-T", "fields",
                          "-e", "frame.number"], capture_output=True, text=True, timeout=60, check=True).stdout
    assert sorted(found["row"] + 1) == sorted(int(x) for x in out.split()) and found["row"].size


def test_crafted_losses_in_each_place(crafted):
    path, resent = crafted
    places = wirelab.open_capture(path).losses().set_index("frame")        # (with the file's bytes)
    assert len(places) == 5
    for place, frame in resent.items():
        assert places.loc[frame, "where"] == place.split("_")[0], (place, places.loc[frame].to_dict())
    assert "ACKed before the resend" in places.loc[resent["spurious_acked"], "reason"]
    assert "sooner than a round trip" in places.loc[resent["spurious_early"], "reason"]
    assert "D-SACK" in places.loc[resent["spurious_dsack"], "reason"]
    # without the file's bytes no D-SACK is read: the resend is "after" the capture point
    alone = loss_places(read_capture(path), buffer=None).set_index("frame")
    assert alone.loc[resent["spurious_dsack"], "where"] == "after"
    assert pd.isna(places.loc[resent["before"], "original_frame"])
    assert places.loc[resent["after"], "original_frame"] == resent["after"] - 1
    # the first ACK covering the resend, after it
    assert places.loc[resent["after"], "ack_frame"] == resent["after"] + 1


def test_crafted_handshake_is_split_at_the_capture_point(crafted):
    path, _ = crafted
    h = handshakes(read_capture(path)).iloc[0]
    assert (h["syn"], h["synack"], h["ack"]) == (1, 2, 3)
    assert h["server_side"] == pytest.approx(FAR, abs=1e-6) and h["client_side"] == pytest.approx(NEAR, abs=1e-6)
    assert h["initial_rtt"] == pytest.approx(FAR + NEAR, abs=1e-6)
    assert h["nearer"] == "client" and h["client"] == "10.9.0.1:40000" and h["server"] == "10.9.0.2:80"


@needs_tshark
def test_crafted_resends_are_the_ones_tshark_flags(crafted):
    path, resent = crafted
    out = subprocess.run(["tshark", "-n", "-r", str(path), "-Y", "tcp.analysis.retransmission", "-T", "fields",
                          "-e", "frame.number"], capture_output=True, text=True, timeout=60, check=True).stdout
    assert sorted(int(x) for x in out.split()) == sorted(resent.values())


@needs_tshark
@pytest.mark.parametrize("path", [RECEIVER, SENDER, ROOT / "captures" / "ipv6.pcapng",
                                  ROOT / "captures" / "ppcb.pcapng"],
                         ids=lambda p: p.name)
def test_the_handshake_split_sums_to_tsharks_initial_rtt(path):
    out = subprocess.run(["tshark", "-n", "-r", str(path), "-Y", "tcp.analysis.initial_rtt", "-T", "fields",
                          "-e", "tcp.stream", "-e", "tcp.analysis.initial_rtt"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    theirs = {int(s): float(r) for s, r in (line.split("\t") for line in out.splitlines())}
    mine = wirelab.open_capture(path).handshakes().set_index("stream")
    assert set(mine.index) == set(theirs)
    for stream, irtt in theirs.items():
        # (frame times are float64 epoch seconds: 2.4e-7 s apart near 1.7e9 s)
        assert mine.loc[stream, "initial_rtt"] == pytest.approx(irtt, abs=5e-7)
        assert mine.loc[stream, "server_side"] > 0 and mine.loc[stream, "client_side"] > 0


def test_the_sender_side_capture_is_nearer_the_client():
    # at the sender (the client) the SYN → SYN-ACK trip crosses the router, SYN-ACK → ACK does not
    h = wirelab.open_capture(SENDER).handshakes()
    assert (h["nearer"] == "client").all()


def test_a_filtered_capture_keeps_the_losses_of_its_frames():
    cap = wirelab.open_capture(SENDER)
    every = cap.losses()
    one = cap.filter("tcp.stream == 1").losses()
    assert 0 < len(one) < len(every)
    assert (one["stream"] == 1).all()
    assert np.array_equal(one["frame"], every[every["stream"] == 1]["frame"])
    assert len(cap.filter("tcp.stream == 1").handshakes()) == 1


def test_no_retransmissions_no_rows():
    places = wirelab.open_capture(ROOT / "captures" / "udp-fragments.pcapng").losses()
    assert places.empty and list(places.columns)[:3] == ["frame", "stream", "a_to_b"]


@pytest.mark.parametrize("which", ["receiver", "sender", "crafted"])
def test_a_dataset_places_the_losses_as_the_file_does(tmp_path, crafted, which):
    from wirelab.capture import convert
    from wirelab.capture.report import report

    path = {"receiver": RECEIVER, "sender": SENDER, "crafted": crafted[0]}[which]
    convert(path, tmp_path / "d", chunk_packets=100)          # (several parts: the SQL sees them as one)
    for chosen in (None, "tcp.stream == 1", "frame.number > 5"):
        from_file = report(path, ppcb=False, filter=chosen)["losses"]
        from_dataset = report(tmp_path / "d", filter=chosen)["losses"]
        assert from_file.pop("dsack_read") and not from_dataset.pop("dsack_read")
        if which != "receiver" and chosen != "tcp.stream == 1":   # (a dataset has no bytes: no D-SACK read)
            from_file["spurious"], from_file["after"] = from_file["spurious"] - 1, from_file["after"] + 1
        assert from_dataset == from_file, chosen
    if which == "crafted":
        whole = report(path)["losses"]
        assert {k: whole[k] for k in ("before", "after", "spurious")} == {"before": 1, "after": 1, "spurious": 3}


def test_a_hole_filled_twice_first_before_then_after(tmp_path):
    # 100..200 and 300..400 seen, 200..300 missing (a hole); resent twice; no ACK captured at all
    scapy = pytest.importorskip("scapy.all")
    frames = []
    for seq, t in ((100, 0.0), (300, 0.01), (200, 0.5), (200, 0.9)):
        p = scapy.Ether() / scapy.IP(src="10.9.0.1", dst="10.9.0.2") / scapy.TCP(sport=1, dport=2, flags="P", seq=seq) \
            / (b"x" * 100)
        p.time = t
        frames.append(p)
    scapy.wrpcap(str(tmp_path / "twice.pcap"), frames)
    places = wirelab.open_capture(tmp_path / "twice.pcap").losses()
    assert list(places["frame"]) == [3, 4] and list(places["where"]) == ["before", "after"]
    assert pd.isna(places["original_frame"][0]) and places["original_frame"][1] == 3
