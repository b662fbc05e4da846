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
    # timed runs: iperf3 -n ends a TCP test before the relays have delivered (such runs are incomplete)
    argv = ["run", "--proto", "tcp,udp,udpr", "--time", "1", "--rate", "20mbit", "--reps", "2",
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
    assert err.count("\n") == 1 and "tcp, udp, udpr" in err
    assert main(["run", "--rate", "10parsecs", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    assert "rate" in capsys.readouterr().err


@pytest.mark.root
def test_wirelab_and_iperf3_runs_of_one_setting_share_one_table(tmp_path, capsys):
    out = tmp_path / "both"
    # 3 s: a timed run counts its interval as iperf3 does, and slow start's overflow of tbf's queue at no
    # delay (80-3000 segments resent) can stall the first seconds by an RTO: 0.4 s of 1.5 s read 0.66
    assert main(["run", "--proto", "tcp", "--time", "3", "--rate", "10mbit", "--reps", "2",
                 "--engine", "wirelab,iperf3", "--out", str(out), "--no-progress"]) == 0
    df = pd.read_parquet(out / "results.parquet")
    assert set(df["engine"]) == {"wirelab", "iperf3"} and (df["status"] == "ok").all()
    # both see the same 10 Mbit/s link: near the prediction (tight figures: bench/bench_experiment.py)
    ratio = df["goodput_bps"] / df["pred_goodput_bps"]
    assert ratio.between(0.8, 1.2).all(), ratio.tolist()


@needs_iperf3
@pytest.mark.slow
def test_ctrl_c_then_run_again_completes_only_the_missing_runs(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "interrupted"
    argv = [sys.executable, "-m", "wirelab", "run", "--proto", "tcp,udp", "--workload", "time", "--time", "1s",
            "--rate", "10mbit,20mbit", "--reps", "2", "--engine", "iperf3", "--backend", "loopback",
            "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    saved = 0
    while time.monotonic() < deadline and proc.poll() is None:
        # each run is saved at once as runs/<run_id>.json; the tables follow when the sweep ends
        saved = len(list((out / "runs").glob("*.json"))) if (out / "runs").is_dir() else 0
        if saved >= 2:
            break
        try:
            proc.wait(timeout=0.1)      # wakes early if the sweep ends by itself
        except subprocess.TimeoutExpired:
            pass
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    first = pd.read_parquet(out / "results.parquet")     # Ctrl-C: every saved run is in the tables
    assert 2 <= len(first) < 8 and len(first) == len(list((out / "runs").glob("*.json")))
    again = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    df = pd.read_parquet(out / "results.parquet")
    assert len(df) == 8 and not df.duplicated(["setting_id", "rep"]).any()
    kept = ["run_id", "setting_id", "rep", "status", "goodput_bps"]
    pd.testing.assert_frame_equal(df.iloc[:len(first)][kept], first[kept])   # earlier runs untouched
    meta = json.loads((out / "meta.json").read_text())
    assert len(meta["sessions"]) == 2 and (df["session"] == 1).sum() == 8 - len(first)
