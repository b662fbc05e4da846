"""Document 001 §5 across a real link, an engine of the one runner, with the packets read back
from the capture."""
import json
from pathlib import Path

import pytest

from wirelab.errors import UsageError
from wirelab.experiment import Experiment, run
from wirelab.labs.peers import PLAYS, SCENARIOS, PeersEngine
from wirelab.capture.ppcb_exchange import collapse, exchange
from wirelab.labs import doc001


def peers(tmp_path, cases, **kw):
    exp = Experiment("peers", engine="peers", workload="scenario", rate="2mbit", max_wait="0.3s",
                     max_retransmits=2, capture=True, reps=1, cases=cases, **kw)
    return run(exp, out=tmp_path / "peers", engine=PeersEngine(), progress=False)


def test_unknown_scenario_or_protocol_is_said_before_anything_runs(tmp_path):
    assert set(PLAYS) == set(SCENARIOS)
    with pytest.raises(UsageError):
        Experiment("x", engine="peers", workload="scenario", scenario="client_dies", proto="sctp")
    with pytest.raises(UsageError, match="scenario="):
        Experiment("x", engine="peers", workload="scenario")
    frame = peers(tmp_path, [{"scenario": "client_sneezes", "proto": "udp"}])
    assert frame["status"].tolist() == ["skipped"] and "client_dies" in frame["error"].iloc[0]


def test_the_bound_is_the_prediction_and_sets_the_deadline():
    setting = Experiment("x", engine="peers", workload="scenario", scenario="silent_server", proto="udpr",
                         max_wait="0.5s", max_retransmits=2, rate="2mbit").settings()[0]
    pred = PeersEngine().predict(setting)
    assert pred["pred_bound_s"] == pytest.approx(1.5) and pred["pred_transfer_time_s"] > 3.0
    assert "scenario" not in Experiment("plain").settings()[0].columns()     # a column of peers' sweeps only
    from wirelab.experiment import get_engine
    tcp = Experiment("x", engine="peers", workload="scenario", scenario="silent_server", proto="tcp").settings()[0]
    for name in ("wirelab", "iperf3"):                   # a scenario is the peers' alone: skipped, with why
        assert "no scenario workload" in get_engine(name).unsupported(tcp)


def test_the_scenarios_as_saved_before_the_one_runner_show_the_same_columns(tmp_path):
    before = json.loads((Path(__file__).parent / "data" / "before-one-runner" / "scenario" / "record.json").read_text())
    frame = peers(tmp_path, [{"scenario": "silent_client", "proto": "udp"}], backend="loopback")
    table = doc001.scenario_table(frame)
    assert set(doc001.SCENARIO_COLUMNS) - {"client_error", "capture_error"} <= set(table.columns)
    assert set(before) - {"packets"} <= set(frame.columns) | {"elapsed_s"}
    assert table["as_specified"].tolist() == [True] and frame["status"].tolist() == ["ok"]


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
    frame = peers(tmp_path, [{"scenario": name, "proto": proto}])
    record = frame.iloc[0].to_dict()
    assert record["status"] == "ok" and record["as_specified"], record
    assert record.get("next_client_served") is not False
    packets = doc001.scenario_packets(frame, tmp_path / "peers")[f"{name}/{proto}"]
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
