"""The sweep machinery with a fake engine: grid, failures, resume, reload, metadata."""
import json
import random

import pandas as pd
import pytest

from wirelab.errors import ExperimentError, TransferError, UsageError
from wirelab.experiment import Experiment, load, summarize
from wirelab.experiment import run as run_sweep
from wirelab.experiment.store import ResultStore

from fake_links import FakeLinks


class FakeEngine:
    """Goodput = 0.95 · rate · (1 − loss) ± 1 %, seeded; udpr with loss fails; counts calls."""
    name = "fake"

    def __init__(self, interrupt_after=None):
        self.calls = []
        self.interrupt_after = interrupt_after
        self.opened = self.closed = 0

    def open(self):
        self.opened += 1

    def close(self):
        self.closed += 1

    def unsupported(self, setting):
        return "fake cannot echo" if setting.workload == "echo" else None

    def run(self, setting, link, *, deadline, seed, workdir):
        assert link.spec is setting.link
        if self.interrupt_after is not None and len(self.calls) >= self.interrupt_after:
            raise KeyboardInterrupt
        self.calls.append((setting.setting_id, seed))
        if setting.proto == "udpr" and setting["loss"]:
            raise TransferError("retransmits exceeded", "raise MAX_RETRANSMITS")
        noise = random.Random(seed).uniform(-0.01, 0.01)
        goodput = 0.95 * setting["rate_bps"] * (1 - setting["loss"]) * (1 + noise)
        return {"ok": True, "goodput_bps": goodput, "sender_goodput_bps": goodput * 1.1,
                "bytes_delivered": int(setting["size_bytes"]), "proto": setting.proto,
                "rtt": {"count": 3, "mean_s": 0.04}, "samples": [1.0, 2.0, 3.0]}


def run(experiment, **kw):
    """The runner with the fake link layer."""
    return run_sweep(experiment, link_layer=FakeLinks, **kw)


def small(name="sweep", **kw):
    args = dict(proto=["tcp", "udp", "udpr"], size="100KB", rate=["10mbit", "20mbit"],
                delay=["0", "20ms"], loss=["0", "1%"], reps=3, engine="fake")
    args.update(kw)
    return Experiment(name, **args)


def test_grid_has_every_combination_and_stable_ids():
    exp = small()
    settings = exp.settings()
    assert len(settings) == 3 * 2 * 2 * 2
    assert len({s.setting_id for s in settings}) == len(settings)
    assert [s.setting_id for s in small().settings()] == [s.setting_id for s in settings]
    assert len(exp.runs()) == 72
    # every setting once before any setting twice
    assert [r for _, r in exp.runs()[:24]] == [0] * 24
    assert settings[0]["rate_bps"] == 10e6 and settings[-1]["loss"] == 0.01
    assert exp.swept() == ["proto", "rate", "delay", "loss"]


def test_bad_experiments_say_what_to_do():
    with pytest.raises(UsageError, match="tcp, udp, udpr"):
        small(proto="sctp")
    with pytest.raises(UsageError):
        small(reps=0)
    with pytest.raises(UsageError, match="folder"):
        small(name="../escape")
    with pytest.raises(UsageError, match="time="):
        small(workload="time")
    assert small(workload="time", time="2s").settings()[0]["size_bytes"] is None


def test_sweep_records_every_run_with_parameters_results_and_predictions(tmp_path):
    engine = FakeEngine()
    df = run(small(), out=tmp_path / "s", engine=engine, progress=False)
    assert len(df) == 72 and engine.opened == engine.closed == 1
    assert set(df["status"]) == {"ok", "failed"}
    failed = df[df["status"] == "failed"]
    assert len(failed) == 2 * 2 * 3 and (failed["proto"] == "udpr").all()
    assert failed["error"].str.contains("retransmits exceeded").all()
    ok = df[df["status"] == "ok"]
    assert ok["goodput_bps"].notna().all() and ok["pred_goodput_bps"].notna().all()
    # the engine's own "proto" field does not overwrite the parameter column
    assert "result_proto" in df and (df["proto"] == df["result_proto"].fillna(df["proto"])).all()
    assert {"rtt_count", "rtt_mean_s", "samples_n", "samples_mean"} <= set(df.columns)
    assert (df["backend"] == "fake-wire").all() and df["tc_commands"].str.startswith("tc qdisc").all()
    # the prediction sees exactly the run's parameters
    tcp = df[(df["proto"] == "tcp") & (df["rate_bps"] == 10e6) & (df["delay_s"] == 0)]
    clean, lossy = tcp[tcp["loss"] == 0], tcp[tcp["loss"] > 0]
    assert clean["pred_goodput_bps"].round(0).eq(9564069).all() and set(clean["pred_binding"]) == {"link"}
    # no cc given: the machine's own congestion control is predicted, and loss costs goodput
    from wirelab.experiment.meta import read_sysctls
    machine_cc = read_sysctls(["net.ipv4.tcp_congestion_control"])["net.ipv4.tcp_congestion_control"]
    assert (lossy["pred_cc"] == machine_cc).all() and (lossy["pred_goodput_bps"] < 9564069).all()


def test_reload_gives_the_same_dataframe(tmp_path):
    df = run(small(proto="tcp", reps=2), out=tmp_path / "s", engine=FakeEngine(), progress=False)
    pd.testing.assert_frame_equal(df, load(tmp_path / "s"))
    pd.testing.assert_frame_equal(df, load(tmp_path / "s" / "results.parquet"))
    from_csv = pd.read_csv(tmp_path / "s" / "results.csv")
    assert list(from_csv.columns) == list(df.columns) and len(from_csv) == len(df)
    assert from_csv["goodput_bps"].sum() == pytest.approx(df["goodput_bps"].sum())


def test_interrupted_sweep_resumes_only_the_missing_runs(tmp_path):
    exp = small()
    with pytest.raises(KeyboardInterrupt):
        run(exp, out=tmp_path / "s", engine=FakeEngine(interrupt_after=20), progress=False)
    saved = load(tmp_path / "s")
    assert len(saved) == 20
    second = FakeEngine()
    df = run(exp, out=tmp_path / "s", engine=second, progress=False)
    assert len(second.calls) == 72 - 20
    assert len(df) == 72
    assert not df.duplicated(["setting_id", "rep"]).any()
    # a third run has nothing to do and returns the same table
    third = FakeEngine()
    again = run(exp, out=tmp_path / "s", engine=third, progress=False)
    assert third.calls == [] and third.opened == 0
    pd.testing.assert_frame_equal(again, df)
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    assert len(meta["sessions"]) == 2 and set(df["session"]) == {0, 1}


def test_retry_failed_reruns_only_failures(tmp_path):
    exp = small(proto=["tcp", "udpr"], rate="10mbit", delay="0", reps=1)
    run(exp, out=tmp_path / "s", engine=FakeEngine(), progress=False)
    engine = FakeEngine()
    df = run(exp, out=tmp_path / "s", engine=engine, progress=False, retry_failed=True)
    assert len(engine.calls) == 1          # only the udpr 1 % run failed
    assert len(df) == 5


def test_unsupported_runs_are_skipped_with_the_reason(tmp_path):
    exp = small(proto="tcp", workload="echo", echo=10, rate="10mbit", delay="0", loss="0", reps=2)
    df = run(exp, out=tmp_path / "s", engine=FakeEngine(), progress=False)
    assert (df["status"] == "skipped").all() and (df["error"] == "fake cannot echo").all()


def test_max_runs_and_seeds_are_reproducible(tmp_path):
    a, b = FakeEngine(), FakeEngine()
    run(small(), out=tmp_path / "a", engine=a, progress=False, max_runs=5)
    run(small(), out=tmp_path / "b", engine=b, progress=False, max_runs=5)
    assert a.calls == b.calls and len(a.calls) == 5
    c = FakeEngine()
    run(small(seed=1), out=tmp_path / "c", engine=c, progress=False, max_runs=5)
    assert [s for s, _ in c.calls] == [s for s, _ in a.calls] and c.calls != a.calls


def test_meta_json_records_machine_and_experiment(tmp_path):
    run(small(proto="tcp", reps=1), out=tmp_path / "s", engine=FakeEngine(), progress=False)
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    session = meta["sessions"][0]
    assert meta["experiment"]["name"] == "sweep" and meta["experiment"]["engine"] == "fake"
    for key in ("kernel", "sysctls", "qdiscs", "offloads", "wirelab_version", "git_revision"):
        assert key in session
    assert "net.core.rmem_max" in session["sysctls"]
    assert "net.ipv4.tcp_congestion_control" in session["sysctls"]
    runs = list((tmp_path / "s" / "runs").glob("*.json"))
    assert len(runs) == 8 and "result" in json.loads(runs[0].read_text())


def test_a_second_writer_is_refused(tmp_path):
    with ResultStore(tmp_path / "s"):
        with pytest.raises(ExperimentError, match="another sweep"):
            run(small(proto="tcp", reps=1), out=tmp_path / "s", engine=FakeEngine(), progress=False)


def test_summary_has_mean_std_and_t_interval_per_setting(tmp_path):
    df = run(small(), out=tmp_path / "s", engine=FakeEngine(), progress=False)
    table = summarize(df)
    assert len(table) == 24
    assert (table.loc[table["n"] > 0, "n"] == 3).all()
    udpr_lossy = table[(table["proto"] == "udpr") & (table["loss"] > 0)]
    assert (udpr_lossy["n"] == 0).all() and (udpr_lossy["n_failed"] == 3).all()
    assert (table["n_skipped"] == 0).all()
    assert udpr_lossy["first_error"].str.contains("retransmits").all()
    row = table[(table["proto"] == "tcp") & (table["loss"] == 0)].iloc[0]
    assert row["goodput_bps_low"] < row["goodput_bps_mean"] < row["goodput_bps_high"]
    runs = df[(df["proto"] == "tcp") & (df["loss"] == 0) & (df["rate_bps"] == row["rate_bps"])
              & (df["delay_s"] == row["delay_s"])]["goodput_bps"]
    assert row["goodput_bps_mean"] == pytest.approx(runs.mean())
    assert row["goodput_bps_std"] == pytest.approx(runs.std())
    assert row["goodput_bps_ci"] == pytest.approx(4.302653 * runs.std() / 3 ** 0.5, rel=1e-5)
    assert "pred_goodput_bps" in table and "measured_over_predicted" in table
    lossless = table[(table["loss"] == 0) & (table["delay_s"] == 0)]
    assert lossless["measured_over_predicted"].between(0.9, 1.1).all()


def test_a_folder_of_the_first_format_still_loads_and_resumes(tmp_path):
    from wirelab.experiment.store import FORMAT, folder_format
    run(small(proto="tcp", reps=1), out=tmp_path / "s", engine=FakeEngine(), progress=False)
    assert folder_format(tmp_path / "s") == FORMAT == 2
    # make it look like a format-1 folder: no version, none of the columns format 2 added
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    del meta["format"], meta["format_written"]
    (tmp_path / "s" / "meta.json").write_text(json.dumps(meta))
    old = pd.read_parquet(tmp_path / "s" / "results.parquet")
    old = old.drop(columns=[c for c in old.columns if c in ("loss_reverse", "window_bytes", "omit_s")
                            or c.startswith("link_")])
    old.to_parquet(tmp_path / "s" / "results.parquet")
    assert folder_format(tmp_path / "s") == 1 and len(load(tmp_path / "s")) == 8
    engine = FakeEngine()
    df = run(small(proto="tcp", reps=1), out=tmp_path / "s", engine=engine, progress=False)
    assert engine.calls == [] and len(df) == 8           # every setting recognised: nothing re-run
    df = run(small(proto=["tcp", "udp"], reps=1), out=tmp_path / "s", engine=engine, progress=False)
    assert len(engine.calls) == 8 and len(df) == 16 and set(df["proto"]) == {"tcp", "udp"}
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    assert meta["format"] == 2 and meta["format_written"] == [1, 2]


def test_a_folder_from_a_newer_wirelab_is_refused(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "meta.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(ExperimentError, match="newer wirelab"):
        run(small(proto="tcp", reps=1), out=tmp_path / "s", engine=FakeEngine(), progress=False)


def test_runs_saved_after_the_last_table_rewrite_are_not_lost(tmp_path, monkeypatch):
    from wirelab.experiment import store as store_module
    run(small(proto="tcp", reps=1), out=tmp_path / "s", engine=FakeEngine(), progress=False)
    monkeypatch.setattr(store_module, "FLUSH_S", 1e9)          # no rewrite during the next sweep
    killed = store_module.ResultStore(tmp_path / "s").__enter__()
    for i in range(3):
        row = {"run_id": f"orphan{i}", "setting_id": "x", "rep": i, "status": "ok", "goodput_bps": 1e6 + i,
               "started_at": f"2026-01-01T00:00:0{i}Z"}
        killed.record(row, {"run_id": row["run_id"]})
    killed._unlock()                      # the process died here: the tables were never rewritten
    assert len(pd.read_parquet(tmp_path / "s" / "results.parquet")) == 8
    df = load(tmp_path / "s")
    assert len(df) == 11 and df["run_id"].tolist()[-3:] == ["orphan0", "orphan1", "orphan2"]
    with store_module.ResultStore(tmp_path / "s") as again:          # a writer takes them back for good
        assert {("x", 0), ("x", 1), ("x", 2)} <= again.done()
    assert len(pd.read_parquet(tmp_path / "s" / "results.parquet")) == 11


def test_each_run_is_saved_at_once_and_the_tables_are_written_when_the_sweep_ends(tmp_path, monkeypatch):
    """The per-run JSON is the append-only log; the whole table is not rewritten after every run,
    and Ctrl-C still leaves every finished run in the tables themselves (not only in the log)."""
    from wirelab.experiment import store as store_module
    writes = []
    real = store_module.atomic_write

    def counted(path, data):
        writes.append(path.name)
        real(path, data)
    monkeypatch.setattr(store_module, "atomic_write", counted)
    exp = small(proto=["tcp", "udp"], delay="0", loss="0", reps=3)        # 12 runs
    with pytest.raises(KeyboardInterrupt):
        run(exp, out=tmp_path / "s", engine=FakeEngine(interrupt_after=7), progress=False)
    assert sum(name.endswith(".json") and name != "meta.json" for name in writes) == 7, "one JSON a run"
    assert writes.count("results.parquet") == 1 and writes.count("results.csv") == 1, "written once, on leaving"
    assert len(pd.read_parquet(tmp_path / "s" / "results.parquet")) == 7, "Ctrl-C: the tables hold every run"
    writes.clear()
    df = run(exp, out=tmp_path / "s", engine=FakeEngine(), progress=False)
    assert len(df) == 12 and writes.count("results.parquet") == 1
    assert len(pd.read_parquet(tmp_path / "s" / "results.parquet")) == 12


def test_a_long_sweep_rewrites_its_tables_now_and_then_within_their_share_of_the_time(tmp_path, monkeypatch):
    from wirelab.experiment import store as store_module
    clock = [1000.0]
    monkeypatch.setattr(store_module.time, "monotonic", lambda: clock[0])
    with store_module.ResultStore(tmp_path / "s") as store:
        for i in range(6):
            clock[0] += store_module.FLUSH_S / 2          # a run takes half the flush interval
            store.record({"run_id": f"r{i}", "setting_id": "x", "rep": i, "status": "ok"}, {})
        assert store.rewrites == 3, "every FLUSH_S, not after every run"
        store._flush_cost = store_module.FLUSH_S          # rewrites grew slow: they wait longer
        for i in range(6, 12):
            clock[0] += store_module.FLUSH_S / 2
            store.record({"run_id": f"r{i}", "setting_id": "x", "rep": i, "status": "ok"}, {})
        assert store.rewrites == 3
    assert store.rewrites == 4 and len(pd.read_parquet(tmp_path / "s" / "results.parquet")) == 12
