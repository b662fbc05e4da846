"""Document 001 §5 across a real link, with the packets read back from the capture."""
import pytest

from wirelab.errors import UsageError
from wirelab.experiment.misbehaviour import SCENARIOS, run_scenario
from wirelab.experiment.ppcb_capture import collapse, exchange


def test_unknown_scenario_or_protocol_is_a_usage_error():
    with pytest.raises(UsageError):
        run_scenario("client_sneezes", "udp")
    with pytest.raises(UsageError):
        run_scenario("client_dies", "sctp")


def test_the_exchange_of_a_capture_without_ppcb(project_root):
    packets = exchange(project_root / "captures" / "tcp-10mbit.pcapng")
    # iperf3's stream is no PPCB: the reader says so instead of inventing packets
    assert set(packets["kind"]) <= {"SYN", "FIN", "RST", "not PPCB"}
    assert (packets["kind"] == "not PPCB").any() and (packets["kind"] == "FIN").sum() >= 2


@pytest.mark.root
@pytest.mark.parametrize("name,proto", [("client_dies", "udpr"), ("server_dies", "tcp"),
                                        ("silent_server", "udpr"), ("foreign_data", "udpr"),
                                        ("second_client", "udp"), ("second_client", "tcp")])
def test_scenario_behaves_as_specified_and_the_capture_shows_it(name, proto, tmp_path):
    record = run_scenario(name, proto, out=tmp_path, max_wait=0.3, max_retransmits=2)
    assert record["as_specified"], record
    assert record.get("next_client_served", True)
    packets = record["packets"]
    kinds = list(packets["kind"])
    if name == "client_dies":                        # the server resent its last ACC, then gave up
        dead = packets[packets["session"] == packets["session"].iloc[0]]
        accs = dead[dead["kind"] == "ACC"]["packet_no"]
        assert (accs == accs.iloc[-1]).sum() == 3                 # sent once, resent twice
        assert "timeout" in record["server_error"]
    elif name == "server_dies":                      # the kernel reset the dead server's connection
        assert "RST" in kinds and "closed" in record["client_error"]
    elif name == "silent_server":
        assert kinds.count("CONN") == 3 and record["conn_resends"] == 2
    elif name == "foreign_data":
        assert record["rjt_to_intruder"] >= 1 and record["served_client_completed"]
        assert "RJT" in kinds and "RCVD" in kinds
    elif proto == "udp":
        assert "CONRJT" in kinds and kinds.index("CONRJT") < kinds.index("RCVD")
    else:                                            # tcp: the second client waited, then was served
        assert kinds.count("RCVD") == 2 and record["second_waited"]
    folded = collapse(packets)
    exchanges = folded.loc[folded["kind"] == "DATA ⇄ ACC", "count"].sum()
    assert folded["count"].sum() + exchanges == len(packets)          # every packet counted once
    if proto == "udpr" and name in ("client_dies", "foreign_data"):
        assert exchanges > 0
    assert set(SCENARIOS) >= {name}
