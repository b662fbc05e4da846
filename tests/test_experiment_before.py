"""Sweeps saved before the one-runner change (tests/data/before-one-runner, made with main's code
of then) still load, resume, and the same sweeps run now keep every column."""
import shutil
from pathlib import Path

import pytest

from wirelab.experiment import Experiment, load, run
from wirelab.experiment.store import ResultStore

BEFORE = Path(__file__).parent / "data" / "before-one-runner"
FILES = dict(proto=["tcp", "udp", "udpr"], size="20KB", rate="10mbit", reps=1, max_wait="0.2s",
             backend="loopback", seed=3)
FLOWS = dict(flows=["tcp", "tcp + udp rate=1mbit"], workload="time", time="1s", rate="10mbit", reps=1,
             engine="iperf3", backend="loopback")
needs_iperf3 = pytest.mark.skipif(not shutil.which("iperf3"), reason="iperf3 not installed: apt-get install iperf3")


# Features since these sweeps were saved add columns (a run's event stream, RFC 6349's metrics,
# prediction intervals, a reader's length...): what these tests hold is that none was lost,
# but one gone with the event stream: a receiver's series is the stream's series event, not a list in
# the run's record (whose length made this column)
GONE_SINCE = {"receiver_series_n"}


def _copy(name, tmp_path) -> Path:
    folder = tmp_path / name
    shutil.copytree(BEFORE / name, folder)
    return folder


def test_a_sweep_saved_before_loads_and_has_nothing_left_to_run(tmp_path):
    folder = _copy("files", tmp_path)
    before = load(folder)
    assert len(before) == 3 and set(before["status"]) == {"ok"}
    # the same experiment finds every run done: setting ids are what they were
    with ResultStore(folder) as store:
        done = store.done()
    assert done == {(s.setting_id, 0) for s in Experiment("before-files", **FILES).settings()}
    again = run(Experiment("before-files", **FILES), out=folder, progress=False)
    assert len(again) == 3 and list(again["run_id"]) == list(before["run_id"])


def test_the_same_sweep_now_keeps_every_column(tmp_path):
    before = load(BEFORE / "files")
    now = run(Experiment("before-files", **FILES), out=tmp_path / "files", progress=False)
    assert set(before.columns) - set(now.columns) <= GONE_SINCE
    assert set(now["setting_id"]) == set(before["setting_id"]) and set(now["status"]) == {"ok"}


@needs_iperf3
def test_flows_now_keep_every_column_and_add_their_deadline(tmp_path):
    before = load(BEFORE / "flows")
    now = run(Experiment("before-flows", **FLOWS), out=tmp_path / "flows", progress=False)
    # one road for every run: a run of flows now records its deadline like any other run
    assert "deadline_s" not in before.columns and "deadline_s" in now.columns
    assert set(before.columns) - set(now.columns) <= GONE_SINCE
    assert list(now["status"]) == list(before["status"]) == ["ok", "skipped", "skipped"]
    assert now["deadline_s"].iloc[0] > 1.0
