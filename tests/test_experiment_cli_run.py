"""`wirelab run`: sweep from the command line, table printed, files where it says, resumable."""
import json
import shutil

import pandas as pd
import pytest

from wirelab.cli import main

needs_iperf3 = pytest.mark.skipif(not shutil.which("iperf3"), reason="iperf3 not installed: apt-get install iperf3")


@needs_iperf3
def test_run_prints_the_table_and_where_the_files_are_and_resumes(tmp_path, capsys):
    out = tmp_path / "cli-sweep"
    argv = ["run", "--proto", "tcp,udp,udpr", "--size", "100KB", "--rate", "20mbit", "--reps", "2",
            "--engine", "iperf3", "--backend", "loopback", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "measured" in text and "predicted" in text and "iperf3" in text
    assert f"6 runs (2 not ok) in {out}/" in text            # udpr: iperf3 has none
    assert "no udpr" in text
    for name in ("results.parquet", "results.csv", "meta.json"):
        assert (out / name).is_file()
    before = pd.read_parquet(out / "results.parquet")
    assert main(argv) == 0                                    # again: nothing left to do
    capsys.readouterr()
    pd.testing.assert_frame_equal(before, pd.read_parquet(out / "results.parquet"))
    assert len(json.loads((out / "meta.json").read_text())["sessions"]) == 1


def test_bad_values_are_one_line_and_exit_2(tmp_path, capsys):
    assert main(["run", "--proto", "sctp", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tcp, udp or udpr" in err
    assert main(["run", "--rate", "10parsecs", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    assert "rate" in capsys.readouterr().err


@pytest.mark.root
def test_wirelab_and_iperf3_runs_of_one_setting_share_one_table(tmp_path, capsys):
    out = tmp_path / "both"
    assert main(["run", "--proto", "tcp", "--size", "300KB", "--rate", "10mbit", "--reps", "2",
                 "--engine", "wirelab,iperf3", "--out", str(out), "--no-progress"]) == 0
    df = pd.read_parquet(out / "results.parquet")
    assert set(df["engine"]) == {"wirelab", "iperf3"} and (df["status"] == "ok").all()
    # both see the same 10 Mbit/s link: within 10 % of the prediction (tight figures: bench/)
    ratio = df["goodput_bps"] / df["pred_goodput_bps"]
    assert ratio.between(0.9, 1.1).all(), ratio.tolist()
