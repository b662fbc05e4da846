"""iperf3's JSON, parsed from recorded runs (made on a wirelab testbed)."""
from pathlib import Path

import pytest

from wirelab.errors import LinkError
from wirelab.link.iperf import parse_iperf3

DATA = Path(__file__).parent / "data"


def test_tcp_summary_trusts_the_receiver():
    r = parse_iperf3((DATA / "link_iperf3_tcp.json").read_text())
    assert r["protocol"] == "tcp" and r["congestion"] == "bbr" and r["retransmits"] == 0
    assert r["goodput_bps"] == pytest.approx(8793338.24, rel=1e-6)
    assert r["sent_bps"] > r["goodput_bps"]        # a 1 s run: the sender's view is too high


def test_udp_summary_counts_loss():
    r = parse_iperf3((DATA / "link_iperf3_udp.json").read_text())
    assert r["protocol"] == "udp" and r["lost_packets"] == 4 and r["packets"] == 173
    assert r["loss"] == pytest.approx(4 / 173) and r["goodput_bps"] < r["sent_bps"]


def test_a_failed_run_is_a_link_error():
    with pytest.raises(LinkError, match="Connection refused"):
        parse_iperf3('{"start": {}, "intervals": [], "error": "unable to connect to server: Connection refused"}')
