"""Many results folders (many sweeps, many students) as one DuckDB dataset, metadata joined."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from wirelab import ExperimentError
from wirelab.analysis.dataset import results_dataset


def _folder(path, rows: list[dict], sessions: list[dict] | None, experiment: str = "sweep"):
    """A results folder as the store writes it: results.parquet, results.csv, meta.json."""
    path.mkdir(parents=True)
    table = pd.DataFrame(rows)
    table.to_parquet(path / "results.parquet", index=False)
    table.to_csv(path / "results.csv", index=False)
    if sessions is not None:
        meta = {"experiment": {"name": experiment, "backend": "loopback"},
                "sessions": [{"session": i, "experiment": {"name": experiment, "backend": "loopback"},
                              "host": s["host"], "kernel": "Linux 6.1", "collected_at": "2026-01-01T00:00:00Z",
                              "sysctls": {"net.ipv4.tcp_congestion_control": s["cc"],
                                          "net.ipv4.tcp_timestamps": "1"}}
                             for i, s in enumerate(sessions)]}
        (path / "meta.json").write_text(json.dumps(meta))


def _runs(n: int, session: int, goodput: float, **extra) -> list[dict]:
    return [{"experiment": "sweep", "run_id": f"s{session}-r{i}", "setting_id": "a", "rep": i, "status": "ok",
             "proto": "tcp", "rate_bps": 1e7, "goodput_bps": goodput + i, "pred_goodput_bps": 9.4e6,
             "session": session, **extra} for i in range(n)]


@pytest.fixture
def course(tmp_path):
    _folder(tmp_path / "alice" / "data" / "runs" / "sweep", _runs(3, 0, 9e6) + _runs(2, 1, 8e6),
            [{"host": "lab-1", "cc": "cubic"}, {"host": "laptop", "cc": "bbr"}])
    _folder(tmp_path / "bob" / "data" / "runs" / "sweep", _runs(4, 0, 7e6, jitter_s=0.001),
            [{"host": "lab-2", "cc": "reno"}])
    _folder(tmp_path / "carol" / "data" / "runs" / "sweep", _runs(1, 0, 5e6), None)     # no meta.json
    broken = tmp_path / "dave" / "data" / "runs" / "sweep"
    broken.mkdir(parents=True)
    (broken / "results.parquet").write_bytes(b"not parquet")
    return tmp_path


def test_every_folder_is_one_table_with_its_sessions(course):
    with results_dataset(course) as ds:
        assert len(ds.folders) == 3 and ds.sql("SELECT count(*) AS n FROM runs")["n"][0] == 10
        assert ds.problems and "dave" in ds.problems[0][0]
        hosts = ds.sql("""SELECT split_part(folder, '/', 1) AS student, session, any_value(host) AS host,
                                 any_value(default_cc) AS cc, count(*) AS runs
                          FROM runs_meta GROUP BY ALL ORDER BY student, session""")
        assert hosts.astype(object).where(hosts.notna(), None).to_dict("records") == [
            {"student": "alice", "session": 0, "host": "lab-1", "cc": "cubic", "runs": 3},
            {"student": "alice", "session": 1, "host": "laptop", "cc": "bbr", "runs": 2},
            {"student": "bob", "session": 0, "host": "lab-2", "cc": "reno", "runs": 4},
            {"student": "carol", "session": 0, "host": None, "cc": None, "runs": 1}]
        jitter = ds.sql("SELECT folder, count(jitter_s) AS n FROM runs GROUP BY folder ORDER BY folder")
        assert jitter["n"].tolist() == [0, 4, 0]          # a column only bob's runs have
        assert "dave" in repr(ds)


def test_summary_per_setting_across_folders(course):
    with results_dataset(course) as ds:
        s = ds.summary(by=("proto", "rate_bps"))
        assert s["folders"].tolist() == [3] and s["runs"].tolist() == [10]
        assert s["pred_goodput_bps"].tolist() == [9.4e6]
        with pytest.raises(ExperimentError, match="no column"):
            ds.summary(by=("nope",))


def test_the_same_folder_under_two_roots_is_two_folders(course):
    roots = [course / "alice" / "data" / "runs", course / "bob" / "data" / "runs"]
    with results_dataset(roots) as ds:
        frame = ds.frame()
        assert len(frame) == 9 and set(frame["folder"]) == {"sweep"}
        assert frame.groupby("root")["host"].nunique().to_dict() == {str(roots[0]): 2, str(roots[1]): 1}


def test_no_results_yet_and_no_folder(tmp_path):
    with results_dataset(tmp_path) as ds:
        assert ds.frame().empty and "0 folders" in repr(ds)
        # a query written for real results (notebook 04's) gives no rows, not an error
        empty = ds.sql("""SELECT folder, any_value(host) AS host, any_value(default_cc) AS cc, count(*) AS runs,
                                 avg(goodput_bps) AS goodput, avg(pred_goodput_bps) AS predicted
                          FROM runs_meta WHERE status = 'ok' GROUP BY folder""")
        assert empty.empty and list(empty.columns) == ["folder", "host", "cc", "runs", "goodput", "predicted"]
        assert ds.summary().empty
    with pytest.raises(ExperimentError, match="no folder"):
        results_dataset(tmp_path / "missing")
