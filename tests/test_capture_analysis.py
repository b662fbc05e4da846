"""Flows, I/O graph, TCP analysis and UDP loss: checked against tshark and Wireshark's flags."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from wirelab.capture import flows, io_graph, read_capture, retransmission_summary, tcp_analysis, udp_loss
from wirelab.capture.tcp_sequence import FLAGS

ROOT = Path(__file__).resolve().parents[1]
CAP = ROOT / "captures"
needs_tshark = pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed (apt-get install tshark)")
LOSSY = CAP / "tcp-10mbit-loss2.pcapng"
#: Wireshark 4.0.17's tcp.analysis flag counts on the committed lossy capture (frames)
LOSSY_FLAGS = {"retransmission": 43, "fast_retransmission": 34, "spurious_retransmission": 0,
               "out_of_order": 0, "lost_segment": 42, "duplicate_ack": 191}


def _key(a, ap, b, bp):
    return tuple(sorted([(str(a), int(ap)), (str(b), int(bp))]))


@needs_tshark
@pytest.mark.parametrize("name,proto", [("tcp-10mbit.pcapng", "tcp"), ("tcp-10mbit-loss2.pcapng", "tcp"),
                                        ("udp-5mbit-loss2.pcapng", "udp"), ("ipv6.pcapng", "tcp"),
                                        ("ipv6.pcapng", "udp"), ("udp-fragments.pcapng", "udp")])
def test_flow_packets_and_bytes_equal_tshark(name, proto):
    from wirelab.capture import tshark_conversations, tshark_fields
    df = read_capture(CAP / name)
    ours = flows(df, later_fragments=False)
    ours = ours[ours["proto"] == proto]
    conv = tshark_conversations(CAP / name, proto)
    assert len(ours) == len(conv) > 0
    mine = {_key(r.a, r.a_port, r.b, r.b_port): r for r in ours.itertuples()}
    # exact bytes per conversation from tshark's own stream numbers
    fields = tshark_fields(CAP / name, [f"{proto}.stream", "frame.len"],
                           options=("-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE"),
                           display_filter=proto)
    exact = fields.groupby(f"{proto}.stream")["frame.len"].agg(["size", "sum"]).sort_values("sum")
    assert sorted(ours["bytes"]) == sorted(exact["sum"].astype(int))
    for r in conv.itertuples():
        m = mine[_key(r.a, r.a_port, r.b, r.b_port)]
        assert m.packets == r.packets
        assert {m.packets_a_to_b, m.packets_b_to_a} == {r.packets_a_to_b, r.packets_b_to_a}
        if r.bytes_exact:
            assert m.bytes == r.bytes
        assert m.duration == pytest.approx(r.duration, abs=1e-3)


def test_later_fragments_join_their_datagram():
    df = read_capture(CAP / "udp-fragments.pcapng")
    with_frags, without = flows(df), flows(df, later_fragments=False)
    assert with_frags["packets"].sum() > without["packets"].sum()
    assert with_frags["bytes"].sum() == df.loc[df["proto"].isin(["udp", "tcp"]), "frame_len"].sum()


def test_lossy_capture_flags_match_wireshark_counts():
    flags = tcp_analysis(read_capture(LOSSY))
    assert {f: int(flags[f].sum()) for f in FLAGS} == LOSSY_FLAGS


@needs_tshark
@pytest.mark.parametrize("name", ["tcp-10mbit-loss2.pcapng", "tcp-10mbit.pcapng", "ipv6.pcapng",
                                  "two-interfaces.pcapng"])
def test_flags_equal_wiresharks_frame_by_frame(name):
    from wirelab.capture import tcp_analysis_flags
    ours = tcp_analysis(read_capture(CAP / name))
    theirs = tcp_analysis_flags(CAP / name).reindex(ours.index, fill_value=False)
    for f in FLAGS:
        diff = np.flatnonzero(ours[f].to_numpy() != theirs[f].to_numpy())
        assert diff.size == 0, f"{f} differs at frames {diff[:10] + 1}"


def test_retransmission_summary_and_clean_transfer():
    df = read_capture(LOSSY)
    s = retransmission_summary(df)
    main = s.sort_values("data_segments").iloc[-1]
    assert main["retransmission"] == 43 and 0.01 < main["retransmitted_fraction"] < 0.06


def test_io_graph_adds_up():
    df = read_capture(LOSSY)
    flags = tcp_analysis(df)
    g = io_graph(df, 0.1, marks={"retransmission": flags["retransmission"]})
    assert g["packets"].sum() == len(df)
    assert g["bytes"].sum() == df["frame_len"].sum()
    assert g["retransmission"].sum() == 43
    assert (g["goodput_bps"] <= g["throughput_bps"]).all()
    busy = g[g["time"].between(0.2, 1.4)]
    assert busy["throughput_bps"].median() == pytest.approx(10e6, rel=0.15)    # tbf rate 10 Mbit/s


def test_io_graph_rejects_a_bad_interval():
    from wirelab import UsageError
    with pytest.raises(UsageError):
        io_graph(read_capture(LOSSY), 0)


def test_udp_loss_from_iperf3_sequence_numbers():
    path = CAP / "udp-5mbit-loss2.pcapng"
    loss = udp_loss(read_capture(path), path, format="iperf3")
    assert len(loss) == 1
    row = loss.iloc[0]
    assert row["expected"] == row["received"] + row["lost"]
    assert 0.0 < row["loss"] < 0.08        # 2 % random drop in the router
    assert row["duplicates"] == 0


def _udp_capture(seqs: list[int], kind: int = 0x82) -> bytes:
    """A pcap of wirelab measurement RECORDs (type 0x82 · u64 seq · u64 send_ns · padding)."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)]
    for i, s in enumerate(seqs):
        payload = struct.pack("!BQQ", kind, s, 123) + b"\0" * 20
        udp = struct.pack("!HHHH", 40000, 9000, 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0,
                         bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + udp
        out.append(struct.pack("<IIII", 1, i, len(ip), len(ip)) + ip)
    return b"".join(out)


def test_udp_loss_in_wirelab_records_counts_gaps_duplicates_and_reordering():
    raw = _udp_capture([0, 1, 2, 4, 3, 3, 7, 8, 9])
    loss = udp_loss(read_capture(raw), raw).iloc[0]
    assert (loss["expected"], loss["received"], loss["lost"], loss["duplicates"]) == (10, 8, 2, 1)
    assert loss["reordered"] == 1
    assert udp_loss(read_capture(raw), raw, format="ppcb").empty


def test_unknown_sequence_format_is_a_usage_error():
    from wirelab import UsageError
    raw = _udp_capture([0])
    with pytest.raises(UsageError):
        udp_loss(read_capture(raw), raw, format="rtp")


def test_flows_of_an_empty_capture():
    raw = _udp_capture([])
    assert flows(read_capture(raw)).empty
    assert not tcp_analysis(read_capture(raw))[FLAGS].any().any()


def test_io_graph_of_one_direction_from_a_pandas_mask():
    df = read_capture(LOSSY)
    data = (df["src"] == "10.77.1.1") & (df["proto"] == "tcp")
    g = io_graph(df, 0.1, mask=data)
    assert g["packets"].sum() == int(data.sum())


def test_udp_loss_as_iperf3_warns_when_the_datagrams_are_not_iperf3s(tmp_path):
    """mDNS answers (written by scapy) read as iperf3 gave 99.997 % loss without a word
    (issue 33): their header is no iperf3 clock, so a NotThatFormatWarning says so."""
    import warnings

    from scapy.layers.dns import DNS, DNSRR
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    from wirelab.capture.udp_sequence import NotThatFormatWarning
    answers = []
    for i in range(30):
        packet = Ether() / IP(src="10.0.0.5", dst="224.0.0.251") / UDP(sport=5353, dport=5353) / DNS(
            id=0, qr=1, aa=1, an=DNSRR(rrname=f"host{i}.local", type="A", rdata="10.0.0.5", ttl=120))
        packet.time = 1_700_000_000 + 0.7 * i                # one every 0.7 s, for 20 s
        answers.append(packet)
    path = tmp_path / "mdns.pcap"
    wrpcap(str(path), answers)
    with pytest.warns(NotThatFormatWarning, match="not iperf3's"):
        udp_loss(read_capture(path), path, format="iperf3")
    iperf3 = CAP / "udp-5mbit-loss2.pcapng"
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotThatFormatWarning)         # iperf3's own datagrams: no warning
        assert len(udp_loss(read_capture(iperf3), iperf3, format="iperf3")) == 1


@needs_tshark
@pytest.mark.parametrize("name", ["udp-5mbit-loss2.pcapng", "ipv6.pcapng", "ppcb.pcapng", "two-interfaces.pcapng"])
def test_stream_numbers_are_wiresharks_tcp_and_udp_stream_and_conv_joins_frames(name):
    """With UDP in the capture, ``conv`` counts every conversation; ``stream`` is Wireshark's
    ``tcp.stream``/``udp.stream`` frame by frame (issue 33: iperf3's UDP flow after its TCP
    control connection is udp.stream 0, conv 1); ``conv`` is in ``flows()`` to join frames on."""
    from wirelab.capture import conversation_ids, tshark_fields
    df = read_capture(CAP / name)
    ids = conversation_ids(df)
    theirs = tshark_fields(CAP / name, ["tcp.stream", "udp.stream"],
                           options=("-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE"))
    later_fragment = (df["frag_offset"].fillna(0) > 0).to_numpy()       # (no ports: tshark names no stream)
    for proto in ("tcp", "udp"):
        rows = (df["proto"] == proto).to_numpy() & ~later_fragment
        assert ids["stream"][rows].tolist() == theirs[f"{proto}.stream"][rows].astype(int).tolist()
    table = flows(df).set_index("conv")
    joined = ids[ids["conv"] >= 0].join(table[["stream", "proto"]], on="conv", rsuffix="_of_flow")
    assert (joined["stream"] == joined["stream_of_flow"]).all()
    assert (joined["proto"].to_numpy() == df["proto"][ids["conv"] >= 0].astype(str).to_numpy()).all()
    assert sorted(table.index) == list(range(len(table)))


def _tcp_pcap(path, events) -> None:
    """A pcap of one TCP conversation, 10.0.0.1:40000 (client) ↔ 10.0.0.2:80: ``events`` are
    (seconds, from the client?, flags, window, payload bytes, seq offset); sequence and
    acknowledgement numbers follow what each side has sent (``seq offset``: bytes back from
    the next one, -1 for a keep-alive)."""
    sent = {True: 1000, False: 9000}
    records = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i, (t, client, flags, window, size, back) in enumerate(events):
        ack = sent[not client] if flags & 0x10 else 0
        tcp = struct.pack("!HHIIBBHHH", 40000 if client else 80, 80 if client else 40000,
                          (sent[client] + back) % 2 ** 32, ack, 5 << 4, flags, window, 0, 0) + bytes(size)
        a, b = (bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))[::1 if client else -1]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), i, 0x4000, 64, 6, 0, a, b)
        frame = bytes(12) + b"\x08\x00" + ip + tcp
        records.append(struct.pack("<IIII", 1_700_000_000 + int(t), round(t % 1 * 1e6), len(frame), len(frame))
                       + frame)
        if back == 0:
            sent[client] += size + bool(flags & 0x03)        # SYN and FIN count one
    path.write_bytes(b"".join(records))


@needs_tshark
def test_keep_alives_zero_windows_and_window_updates_are_wiresharks(tmp_path):
    """Expert information stopped at six TCP flags (issue 33): keep-alive, zero window and
    window update, frame by frame as tshark marks them on a conversation that has each; the
    answer to a keep-alive is no duplicate ACK but a keep-alive ACK."""
    from wirelab.capture import tshark_fields
    from wirelab.capture.tcp_sequence import EXPERT
    S, SA, A, PA, FA = 0x02, 0x12, 0x10, 0x18, 0x11
    events = [(0.0, True, S, 64240, 0, 0), (0.01, False, SA, 65160, 0, 0), (0.02, True, A, 502, 0, 0)]
    for k, window in enumerate([3000, 2000, 1000, 0]):        # the receiver's buffer fills
        events += [(0.1 + 0.01 * k, True, PA, 502, 1000, 0), (0.105 + 0.01 * k, False, A, window, 0, 0)]
    events += [(0.5, False, A, 4000, 0, 0),                    # it reads: a window update
               (2.5, True, A, 502, 0, -1), (2.51, False, A, 4000, 0, 0),     # keep-alive, its ACK
               (4.5, True, A, 502, 1, -1), (4.51, False, A, 4000, 0, 0),     # a 1-byte keep-alive, its ACK
               (5.0, True, FA, 502, 0, 0), (5.01, False, FA, 4000, 0, 0), (5.02, True, A, 502, 0, 0)]
    path = tmp_path / "keepalive.pcap"
    _tcp_pcap(path, events)
    ours = tcp_analysis(read_capture(path), expert=True)
    fields = {name: f"tcp.analysis.{name}" for name in EXPERT + ["duplicate_ack"]}
    fields["ack_unseen"] = "tcp.analysis.ack_lost_segment"           # (Wireshark's name for it)
    theirs = tshark_fields(path, list(fields.values()))
    for name, field in fields.items():
        marked = theirs[field].astype(str).str.len().to_numpy() > 0
        assert ours[name].tolist() == marked.tolist(), name
    assert ours[EXPERT].sum().tolist() == [2, 1, 1, 0, 2, 1, 0]    # (keep-alive ACKs, a full window, no reuse)
    # the DuckDB twin marks the same six flags on it
    from wirelab.capture import convert, open_dataset
    with open_dataset(convert(path, tmp_path / "keepalive.dataset", progress=False)) as ds:
        assert ds.tcp_analysis()[FLAGS].equals(ours[FLAGS])


def test_the_io_graph_of_one_flow_is_on_the_frames_time_relative_axis():
    """A flow's marks landed seconds off (issue 33) when placed on its own clock: the I/O graph
    counts from the capture's first frame, as ``time_relative`` does, whatever the mask."""
    df = read_capture(CAP / "udp-5mbit-loss2.pcapng")
    udp = (df["proto"] == "udp").to_numpy()
    graph = io_graph(df, 5e-5, mask=udp)
    first_udp = df.loc[udp, "time_relative"].min()
    assert first_udp > 5e-5                        # the UDP flow starts after the TCP control connection
    first_bin = graph.loc[graph["packets"] > 0, "time"].iloc[0]
    assert first_bin <= first_udp < first_bin + 5e-5


def _fragmented_tcp(path) -> None:
    """A pcap of one TCP transfer whose 2500-byte segments travel in two IP fragments each: the
    4th segment is not captured (its ACKs repeat), then comes again 0.5 s later, whole."""
    seq, ack_of_client, records = 1000, 1000, [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]

    def frame(t, client, ip_id, data, offset=0, more=False):
        a, b = (bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))[::1 if client else -1]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(data), ip_id, (more << 13) | offset // 8, 64, 6, 0,
                         a, b) + data
        f = bytes(12) + b"\x08\x00" + ip
        records.append(struct.pack("<IIII", 1_700_000_000 + int(t), round(t % 1 * 1e6), len(f), len(f)) + f)

    def tcp(client, flags, seq_no, ack, size=0):
        return struct.pack("!HHIIBBHHH", 40000 if client else 80, 80 if client else 40000, seq_no, ack, 5 << 4,
                           flags, 5000, 0, 0) + bytes(size)
    frame(0.0, True, 1, tcp(True, 0x02, seq - 1, 0))
    frame(0.01, False, 1, tcp(False, 0x12, 8999, seq))
    frame(0.02, True, 2, tcp(True, 0x10, seq, 9000))
    starts = [seq + 2500 * k for k in range(8)]
    for k, start in enumerate(starts):
        t = 0.1 + 0.01 * k
        if k != 3:
            segment = tcp(True, 0x18, start, 9000, 2500)
            frame(t, True, 10 + k, segment[:1480], 0, True)
            frame(t + 0.0001, True, 10 + k, segment[1480:], 1480)
        ack_of_client = start + 2500 if k < 3 else starts[3]
        if k != 3:
            frame(t + 0.005, False, 10 + k, tcp(False, 0x10, 9000, ack_of_client))
    segment = tcp(True, 0x18, starts[3], 9000, 2500)
    frame(0.7, True, 30, segment[:1480], 0, True)
    frame(0.7001, True, 30, segment[1480:], 1480)
    frame(0.705, False, 31, tcp(False, 0x10, 9000, starts[-1] + 2500))
    path.write_bytes(b"".join(records))


@needs_tshark
def test_tcp_in_ip_fragments_is_analysed_whole_as_wireshark_does(tmp_path):
    """A segment in IP fragments counted only its first fragment's payload, so the next segment
    was "previous segment not captured" (issue 33: 4 of them in a fragments file, tshark none)."""
    from wirelab.capture import convert, open_dataset, tshark_fields
    path = tmp_path / "tcp-fragments.pcap"
    _fragmented_tcp(path)
    ours = tcp_analysis(read_capture(path))
    theirs = tshark_fields(path, [f"tcp.analysis.{name}" for name in FLAGS])
    counts = {name: int((theirs[f"tcp.analysis.{name}"].astype(str).str.len() > 0).sum()) for name in FLAGS}
    assert ours[FLAGS].sum().to_dict() == counts
    assert counts["lost_segment"] == 1 and counts["retransmission"] == 1 and counts["duplicate_ack"] >= 3
    with open_dataset(convert(path, tmp_path / "fragments.dataset", progress=False)) as ds:
        assert ds.tcp_analysis()[FLAGS].equals(ours[FLAGS])


@needs_tshark
def test_an_ack_of_a_segment_the_capture_missed_is_wiresharks_acked_unseen(tmp_path):
    """Expert information's "ACKed segment that wasn't captured" (issue 33), frame by frame."""
    from wirelab.capture import tshark_fields
    S, SA, A, PA = 0x02, 0x12, 0x10, 0x18
    events = [(0.0, True, S, 5000, 0, 0), (0.01, False, SA, 5000, 0, 0), (0.02, True, A, 5000, 0, 0)]
    for k in range(6):
        events.append((0.1 + 0.01 * k, True, PA, 5000, 1000, 0))
        if k in (1, 4):
            events.append((0.105 + 0.01 * k, False, A, 5000, 0, 0))
    path = tmp_path / "unseen.pcap"
    _tcp_pcap(path, events)
    data = path.read_bytes()
    # leave the 3rd data segment out of the file: the ACK after the 5th covers it
    records, at = [data[:24]], 24
    while at < len(data):
        size = struct.unpack_from("<I", data, at + 8)[0]
        records.append(data[at:at + 16 + size])
        at += 16 + size
    del records[1 + 3 + 2 + 1]                    # (header; handshake 3; data 1, data 2, ACK; data 3)
    path.write_bytes(b"".join(records))
    ours = tcp_analysis(read_capture(path), expert=True)
    theirs = tshark_fields(path, ["tcp.analysis.ack_lost_segment", "tcp.analysis.lost_segment"])
    for ours_name, field in (("ack_unseen", "tcp.analysis.ack_lost_segment"), ("lost_segment", "tcp.analysis.lost_segment")):
        marked = theirs[field].astype(str).str.len().to_numpy() > 0
        assert ours[ours_name].tolist() == marked.tolist(), ours_name
    assert ours["ack_unseen"].sum() == 1
