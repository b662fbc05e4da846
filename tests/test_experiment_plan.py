"""A sweep decides once: its settings, its backend, each setting's predictions and deadline; and
every run of every engine gets its status from one rule."""
import random

import pytest

from wirelab.experiment import Experiment, plan, spec, status
from wirelab.experiment import run as run_sweep
from wirelab.experiment.plan import Plan

from fake_links import FakeLinks


class Engine:
    """Goodput 0.9 of the rate ± 10 % (seeded); udpr at loss ends incomplete (the protocol's own ending)."""
    name = "fake"

    def run(self, setting, link, *, deadline, seed, workdir):
        if setting.proto == "udpr" and setting["loss"]:
            return {"goodput_bps": 1.0, "outcome": "incomplete", "outcome_reason": "lost its last ACC"}
        return {"goodput_bps": 0.9 * setting["rate_bps"] * random.Random(seed).uniform(0.9, 1.1)}


class Counted(FakeLinks):
    """The fake link layer, counting how often it is asked to choose a backend."""
    asked: list = []

    @staticmethod
    def backend_for(specs, requested):
        Counted.asked.append((len(specs), requested))
        return "fake-wire"


def sweep(**kw):
    args = dict(proto=["tcp", "udpr"], size="100KB", rate=["10mbit", "20mbit"], loss=["0", "1%"], reps=2,
                engine="fake")
    return Experiment("plan", **{**args, **kw})


def test_settings_backend_and_predictions_are_decided_once_per_sweep(tmp_path, monkeypatch):
    made, predicted = [], []
    settings, predict = spec.Experiment.settings, plan.predict_columns
    monkeypatch.setattr(spec.Experiment, "settings", lambda self: made.append(1) or settings(self))
    monkeypatch.setattr(plan, "predict_columns", lambda *a, **k: predicted.append(1) or predict(*a, **k))
    Counted.asked = []
    df = run_sweep(sweep(precision=0.01, max_reps=3), out=tmp_path / "s", engine=Engine(), progress=False,
                   link_layer=Counted)
    assert 16 < len(df) <= 16 + 8          # third repetitions where an interval is too wide
    assert len(made) == 1                   # the runs, the plan and the extra repetitions share them
    assert Counted.asked == [(8, "auto")]   # one backend for every setting's link, asked once
    assert len(predicted) == 8              # once per setting: the check before the runs and the runs share it
    # the runs' deadlines are the plan's
    one = Plan(sweep(), Engine(), link_layer=FakeLinks)
    for setting in one.settings:
        rows = df[df["setting_id"] == setting.setting_id]
        assert set(rows["deadline_s"]) == {one.deadline(setting)}


def test_every_run_of_every_engine_gets_its_status_from_one_rule(tmp_path, monkeypatch):
    asked = []
    decide = status.decide
    monkeypatch.setattr(status, "decide", lambda *a, **k: asked.append(k.get("measure")) or decide(*a, **k))
    from wirelab.experiment import flows, runner
    monkeypatch.setattr(runner, "decide", status.decide)
    monkeypatch.setattr(flows, "decide", status.decide)
    df = run_sweep(sweep(), out=tmp_path / "s", engine=Engine(), progress=False, link_layer=FakeLinks)
    assert len(asked) == len(df) == 16
    assert set(df.loc[(df["proto"] == "udpr") & (df["loss"] > 0), "status"]) == {"incomplete"}
    shared = Experiment("f", flows=["tcp + tcp"], workload="time", time="1s", reps=1, engine="fake")
    asked.clear()
    rows = run_sweep(shared, out=tmp_path / "f", engine=Engine(), progress=False, link_layer=FakeLinks)
    assert len(asked) == len(rows) == 2 and set(rows["status"]) == {"ok"}


def test_the_one_rule():
    assert status.decide({"goodput_bps": 5.0}) == ("ok", None)
    assert status.decide({"goodput_bps": 5.0}, error="TransferError: gone") == ("failed", "TransferError: gone")
    assert status.decide({"goodput_bps": None, "error": "refused"}) == ("failed", "refused")
    assert status.decide({}) == ("failed", "no goodput measured")
    assert status.decide({"outcome": "incomplete", "outcome_reason": "lost"}) == ("incomplete", "lost")
    assert status.decide({"goodput_bps": 5.0}, elapsed_s=10.6, deadline_s=10.0) == \
        ("failed", "overran its 10 s deadline")
    assert status.decide({"goodput_bps": 5.0}, elapsed_s=10.4, deadline_s=10.0)[0] == "ok"
    assert status.decide({"as_specified": False}, measure="as_specified") == ("ok", None)
    assert status.decide({"messages": None}, measure="messages") == ("failed", "no messages measured")


def test_a_topology_decides_the_backend_with_every_link(monkeypatch):
    from wirelab.labs.broker import BrokerEngine
    seen = []

    class Links(FakeLinks):
        @staticmethod
        def backend_for(specs, requested):
            seen.extend(specs)
            return "fake-wire"
    exp = Experiment("b", engine="broker", workload="echo", echo=5, rate=None, reps=1,
                     cases=[{"delay": "0ms"}, {"delay": "20ms", "jitter": "5ms"}])
    made = Plan(exp, BrokerEngine(), link_layer=Links)
    assert made.backend == "fake-wire" and len(seen) == 2 * 5          # five links per network
    assert made.predictions(made.settings[1])["pred_one_way_s"] == pytest.approx(2 * 0.0200625, rel=0.01)


def test_cases_are_settings_that_are_not_a_grid():
    exp = Experiment("c", proto="udp", rate=None, cases=[{"delay": "1ms", "jitter": "5ms"}, {"delay": "20ms"}])
    assert [(s["delay_s"], s["jitter_s"]) for s in exp.settings()] == [(0.001, 0.005), (0.02, None)]
    assert exp.swept() == ["delay", "jitter"] and len(exp.runs()) == 2 * exp.reps
    with pytest.raises(Exception, match="axes"):
        Experiment("c", cases=[{"colour": "red"}])
    # a sweep without cases keeps its setting ids
    assert Experiment("h").settings()[0].setting_id == Experiment("h", cases=None).settings()[0].setting_id
