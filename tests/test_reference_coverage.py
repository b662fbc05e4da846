"""What tests/reference_coverage.py counts as a reference row shown by a notebook (the notebook
coverage itself is tests/test_notebooks.py's, on the labs' quick-mode run)."""
import pandas as pd

from reference_coverage import coverage, reference_rows


def _notebook(*frames) -> dict:
    outputs = [{"output_type": "display_data", "data": {"text/html": f.to_html(), "text/plain": ""}} for f in frames]
    return {"cells": [{"cell_type": "code", "outputs": outputs}]}


def _rows_of(table: str) -> set:
    return {(t, r) for t, r, *_ in reference_rows() if t == table}


def test_a_row_is_shown_in_the_notebooks_units_to_its_shown_precision():
    # figures 22-23 as notebook 07 shows them: MB received of 1000 as %, rounded, next to a measurement
    doc = pd.read_csv("data/reference/seed000_buffers.csv")
    shown = pd.DataFrame({"proto": doc["protocol"], "packet_bytes": doc["packet_bytes"],
                          "sndbuf_bytes": doc["sndbuf_bytes"].astype(float), "rcvbuf_bytes": doc["rcvbuf_bytes"],
                          "rate_Mbps": 1.5, "doc_rate_Mbps": doc["rate_mbps"] * 1.0,
                          "doc_received_pct": (100 * doc["received_MB"] / doc["sent_MB"]).round(2)})
    found, missing = coverage({"07": _notebook(shown)})
    assert found["07"] == _rows_of("seed000_buffers")
    assert _rows_of("seed000_buffers").isdisjoint(missing)


def test_a_row_with_a_wrong_number_a_missing_one_or_no_document_label_is_not_shown():
    doc = pd.read_csv("data/reference/seed000_buffers.csv")
    wrong = doc.rename(columns={"rate_mbps": "doc_rate_Mbps"}).copy()
    wrong.loc[0, "doc_rate_Mbps"] = 131                      # the document says 130
    dropped = doc.drop(columns=["received_MB", "sent_MB"]).rename(columns={"rate_mbps": "doc_rate_Mbps"})
    unlabelled = doc.rename(columns={"rate_mbps": "Mbps", "received_MB": "MB"})   # a measurement of ours
    found, missing = coverage({"a": _notebook(wrong), "b": _notebook(dropped), "c": _notebook(unlabelled)})
    assert found["a"] == _rows_of("seed000_buffers") - {("seed000_buffers", 2)}
    assert not found["b"] and not found["c"]
    assert ("seed000_buffers", 2) in missing


def test_a_result_needs_its_significant_digits_and_a_setting_its_exact_value():
    doc = pd.read_csv("data/reference/seed003_delay.csv")
    coarse = doc.assign(measured_e2e_delay_ms=(doc["measured_e2e_delay_ms"] / 10).round(0))   # 14 ms as "1" cs
    shifted = doc.assign(emulated_delay_ms=doc["emulated_delay_ms"] * 1000 + 1)              # settings in µs
    found, _ = coverage({"coarse": _notebook(coarse), "shifted": _notebook(shifted), "as is": _notebook(doc)})
    assert not found["coarse"] and not found["shifted"] and found["as is"] == _rows_of("seed003_delay")


def test_every_table_of_data_reference_is_counted():
    tables = {t for t, *_ in reference_rows()}
    assert tables == {p.stem for p in __import__("pathlib").Path("data/reference").glob("*.csv")}
    assert len({(t, r) for t, r, *_ in reference_rows()}) == sum(
        len(pd.read_csv(f"data/reference/{t}.csv")) for t in tables)
