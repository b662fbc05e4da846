"""Document 000's sender, as the thesis paced it: each second's bytes at a 1 s timer tick."""
import pytest

from wirelab.labs import doc000


def test_the_thesis_sweeps_tick_and_the_bursts_raise_the_buffer_caps():
    lab = doc000.sweeps(quick=True)
    assert lab["offered-tick"].engine_options == {"pacing": "tick"} and lab["offered"].engine_options == {}
    assert lab["burst-1400"].engine_options == {"pacing": "tick"} and lab["burst-1400"].buffer_caps == 10_000_000
    assert lab["offered"].buffer_caps is None
    assert 500e6 * 8 / 8 in {s["offered_bps"] / 8 for s in doc000.sweeps()["offered"].experiment.settings()}


@pytest.mark.root
@pytest.mark.slow
def test_a_tick_makes_packets_wait_where_an_even_pace_does_not(tmp_path):
    lab = doc000.sweeps(quick=True, tick_packets=[65000], tick_offered=["10MB/s"], packets=[65000],
                        offered=["10MB/s"], repetitions=1)
    runs = {}
    for name in ("offered", "offered-tick"):
        frame = lab[name].run(tmp_path / name, progress=False)
        assert (frame["status"] == "ok").all(), frame["error"].tolist()
        assert set(frame["metadata_pacing"]) == {"even" if name == "offered" else "tick"}
        runs[name] = frame.set_index("proto")
    even, tick = runs["offered"], runs["offered-tick"]
    # the tick's second of data leaves at once, the even pace's over the second
    assert (tick["sender_duration_s"] < 0.5).all() and (even["sender_duration_s"] > 0.9).all()
    # TCP's 10 MB queue behind themselves in its send buffer: milliseconds, against a segment's own time
    assert tick.loc["tcp", "one_way_delay_mean_s"] > 3 * even.loc["tcp", "one_way_delay_mean_s"]


def test_the_theses_early_trials_and_findings_stand_beside_the_kit():
    from wirelab.labs import thesis_findings
    trials = thesis_findings.early_trials_table().set_index(["figure", "offered_bytes"])
    assert trials.loc[(21, 30000000), "received_udp_bytes"] == 22876500
    assert trials.loc[(25, 1000000), "received_udp_share"] == 0.54
    findings = thesis_findings.findings_table(repetitions=3, clock_fit={"fit": {"offset_error_ms": -0.002}})
    findings = findings.set_index("finding")
    assert findings.loc["tcp_header", "kit"] == 20 and findings.loc["udp_header", "kit"] == 8
    assert findings.loc["runs_averaged", ["value", "kit"]].tolist() == ["50", 3]
    assert findings.loc["one_host_offset", "kit"] == pytest.approx(2000)
    assert findings["here"].str.len().gt(0).all(), "every finding says where the kit stands"
