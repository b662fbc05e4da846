"""Document 004's sweeps: prediction lines, and a measured point on the loopback backend."""
import math

import pytest

from wirelab.errors import UsageError
from wirelab.link.goodput import goodput_sweep, prediction_lines


def test_prediction_lines_name_every_limit():
    rows = prediction_lines("loss", 0.001, 0.05, {"rate": "10mbit", "delay": "20ms"}, points=5, log=True)
    assert {r["limit"] for r in rows} == {"η·C", "Mathis", "PFTK", "predicted (min)"}
    best = [r["goodput_bps"] for r in rows if r["limit"] == "predicted (min)"]
    assert best == sorted(best, reverse=True)                 # more loss, less goodput
    window = prediction_lines("delay", 0.005, 0.1, {"rate": "10mbit"}, window=65536, points=5)
    assert any(r["limit"] == "W/RTT" for r in window)


def test_loopback_sweep_measures_rate_and_refuses_loss():
    rows = goodput_sweep("rate", [5e6], {}, backend="loopback", seconds=0.5, omit=0.3, repetitions=1)
    assert rows[0]["backend"] == "loopback" and rows[0]["binding"] == "link"
    assert rows[0]["goodput_bps"] == pytest.approx(rows[0]["predicted_bps"], rel=0.1)
    lossy = goodput_sweep("loss", [0.01], {"rate": "10mbit"}, backend="loopback", repetitions=1)
    assert math.isnan(lossy[0]["goodput_bps"]) and "cannot lose" in lossy[0]["note"]
    with pytest.raises(UsageError):
        goodput_sweep("mtu", [1500], {})
