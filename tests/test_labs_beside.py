"""A document's table beside measurement and prediction; its stop-and-wait figures read backwards."""
import math

import pandas as pd
import pytest

from wirelab.errors import ExperimentError
from wirelab.labs.beside import beside, format_beside, loss_for_goodput
from wirelab.model import HeaderStack, stop_and_wait
from wirelab.reference import load_reference


def _runs():
    rows = []
    for rate, goodputs in ((1e5, [9.2e4, 9.4e4]), (1e6, [9.3e5])):
        for g in goodputs:
            rows.append({"proto": "tcp", "rate_bps": rate, "size_bytes": 1e6, "status": "ok", "error": None,
                         "goodput_bps": g, "sender_goodput_bps": g * 1.01, "send_loop_bps": g * 1.2,
                         "pred_goodput_bps": rate * 0.9367, "pred_rtt_s": math.nan, "pred_binding": "link",
                         "pred_note": "link"})
    rows.append({"proto": "udp", "rate_bps": 1e5, "size_bytes": 1e6, "status": "failed",
                 "error": "server rejected packet 7 (RJT)", "goodput_bps": 4e4, "sender_goodput_bps": 3e8,
                 "send_loop_bps": 6e8, "pred_goodput_bps": 9.4e4, "pred_rtt_s": math.nan,
                 "pred_binding": "link", "pred_note": None})
    return pd.DataFrame(rows)


def test_beside_joins_the_document_and_keeps_both_sides():
    doc = load_reference("seed001_transfers")
    table = beside(_runs(), doc, experiment="rate", axis="rate_bps", doc_axis="rate_kbps", to_doc=1e-3)
    tcp100 = table[(table.proto == "tcp") & (table.rate_kbps == 100)].iloc[0]
    assert tcp100["doc_bps"] == pytest.approx(18.728e6)            # the paper's number, its own column
    assert tcp100["goodput_bps"] == pytest.approx(9.3e4) and tcp100["runs_ok"] == 2
    assert tcp100["measured_over_predicted"] == pytest.approx(9.3e4 / 9.367e4)
    udp100 = table[(table.proto == "udp") & (table.rate_kbps == 100)].iloc[0]
    assert math.isnan(udp100["goodput_bps"]) and udp100["runs_failed"] == 1
    assert udp100["send_loop_bps"] == pytest.approx(6e8)            # failed runs still sent
    assert "RJT" in udp100["why_failed"]
    assert len(table) == 9                                           # the document's other rows stay, unmeasured
    shown = format_beside(table, "rate_kbps", " (kbit/s)")
    assert shown.loc[tcp100.name, "runs ok"] == "2/2"
    with pytest.raises(ExperimentError):
        beside(_runs(), doc, experiment="no-such", axis="rate_bps", doc_axis="rate_kbps")


def test_tcp_rows_the_steady_state_model_does_not_cover_say_so():
    runs = _runs()
    runs.loc[runs.proto == "tcp", "pred_rtt_s"] = 1.0            # 2 × BDP ≥ 23 KB: above a 10 KB file
    runs.loc[runs.proto == "tcp", "size_bytes"] = 10_000
    table = beside(runs, load_reference("seed001_transfers"), experiment="rate", axis="rate_bps",
                   doc_axis="rate_kbps", to_doc=1e-3)
    tcp = table[(table.proto == "tcp") & table.goodput_bps.notna()]
    assert tcp["pred_goodput_bps"].isna().all()                     # no line where it does not hold
    assert tcp["pred_note"].str.startswith("not covered").all()


def test_loss_for_goodput_inverts_stop_and_wait():
    stack = HeaderStack("udpr", mtu=65535, wire="emulated")
    figure = stop_and_wait(1000, 1e12, 0.0, stack=stack, loss_forward=0.2, timeout_s=20).goodput_bps
    assert loss_for_goodput(figure, 1000, timeout_s=20) == pytest.approx(0.2, abs=1e-6)
    # document 001's udpr loss table: 10 / 20 / 30 % set, the model at MAX_WAIT 20 s says 8 / 19 / 30 %
    implied = [loss_for_goodput(g, 1000, timeout_s=20) for g in (4384, 1710.45, 937.6)]
    assert implied == pytest.approx([0.084, 0.190, 0.299], abs=0.003)
    assert math.isnan(loss_for_goodput(1e13, 1000, timeout_s=20))   # faster than a lossless link
