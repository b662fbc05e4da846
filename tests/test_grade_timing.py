"""Judged from the wire (grade/timing.py): the protocol's timing checked on canned exchanges, each finding
naming the frames that show it (issue 34, part 3)."""
import pandas as pd
import pytest

from wirelab.grade.timing import judge_timing

WAIT, MOST = 0.5, 5
CLIENT = {"client"}
SERVER = {"server"}


def table(*packets, session="5ee55001") -> pd.DataFrame:
    """(time_s, kind[, packet_no]) in order; frames numbered from 1 as in the capture."""
    rows = []
    for frame, (t, kind, *number) in enumerate(packets, start=1):
        rows.append({"time_s": t, "src": "10.77.0.1:40000" if kind in ("CONN", "DATA") else "10.77.0.2:5000",
                     "dst": "", "transport": "udp", "kind": kind, "session": session,
                     "packet_no": number[0] if number else None, "data_len": 1000 if kind == "DATA" else None,
                     "frame": frame})
    return pd.DataFrame(rows)


def judge(packets, sides, proto="udpr", **kw):
    return {f.rule: f for f in judge_timing(packets, proto=proto, max_wait_s=WAIT, max_retransmits=MOST,
                                            sides=sides, **kw)}


def good_client_with_losses():
    """CONN, DATA 0 lost twice (resent after MAX_WAIT each time), DATA 1, RCVD."""
    return table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.503, "DATA", 0), (1.005, "DATA", 0),
                 (1.006, "ACC", 0), (1.007, "DATA", 1), (1.008, "ACC", 1), (1.009, "RCVD"))


def test_resends_after_max_wait_and_an_ended_session_are_no_finding():
    assert judge(good_client_with_losses(), CLIENT | SERVER, ended_s=3.0) == {}


def test_a_client_that_resends_too_early_is_shown_with_both_frames():
    packets = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.102, "DATA", 0), (0.202, "DATA", 0),
                    (0.203, "ACC", 0), (0.204, "RCVD"))
    found = judge(packets, CLIENT)
    assert set(found) == {"early"}
    early = found["early"]
    assert early.frames == (3, 4) and early.count == 2 and early.side == "client"
    assert "DATA 0 0.100 s after it last sent it" in str(early) and "frames 3, 4; 2 such in all" in str(early)


def test_a_resend_on_an_older_ack_is_early_too():
    packets = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.003, "ACC", 0), (0.004, "DATA", 1),
                    (0.010, "ACC", 0), (0.011, "DATA", 1), (0.012, "ACC", 1), (0.013, "RCVD"))
    assert judge(packets, CLIENT)["early"].frames == (5, 7)


def test_a_resend_much_after_max_wait_is_late():
    packets = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (2.002, "DATA", 0), (2.003, "ACC", 0),
                    (2.004, "RCVD"))
    found = judge(packets, CLIENT)
    assert set(found) == {"late"} and found["late"].frames == (3, 4) and "2.000 s" in found["late"].sentence


def test_a_client_that_never_gives_up_sends_too_many():
    packets = table((0.0, "CONN"), *[(0.5 * i, "CONN") for i in range(1, 12)])
    found = judge(packets, CLIENT, ended_s=6.5)
    assert set(found) == {"too_many"}
    assert "CONN 12 times" in found["too_many"].sentence and found["too_many"].frames == (1, 2, 3, 11, 12)


def test_one_send_plus_max_retransmits_resends_is_the_most_allowed_and_max_retransmits_sends_the_fewest():
    plus = table(*[(0.5 * i, "CONN") for i in range(1 + MOST)])
    total = table(*[(0.5 * i, "CONN") for i in range(MOST)])
    assert judge(plus, CLIENT, ended_s=3.5, exited=True) == {}
    assert judge(total, CLIENT, ended_s=3.0, exited=True) == {}


def test_a_client_that_never_resends_gave_up_early_once_its_silence_or_its_exit_shows_it():
    packets = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.003, "ACC", 0), (0.004, "DATA", 1))
    assert judge(packets, CLIENT) == {}                              # the capture's end unknown: no claim
    assert judge(packets, CLIENT, ended_s=0.3) == {}                 # killed before MAX_WAIT: it could still
    silent = judge(packets, CLIENT, ended_s=2.0)["gave_up_early"]
    assert silent.frames == (5,) and "DATA 1 once, got no answer" in silent.sentence
    exited = judge(packets, CLIENT, ended_s=0.504, exited=True)["gave_up_early"]
    assert "ended without sending it again" in exited.sentence


def test_a_server_resending_its_ack_to_a_silent_client_on_time_is_no_finding():
    packets = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.003, "ACC", 0),
                    *[(0.003 + 0.5 * i, "ACC", 0) for i in range(1, MOST + 1)])
    assert judge(packets, SERVER, ended_s=5.0) == {}


def test_a_server_resending_too_early_too_often_or_never_is_found():
    early = table((0.0, "CONN"), (0.001, "CONACC"), (0.2, "CONACC"), (0.4, "CONACC"))
    assert judge(early, SERVER)["early"].frames == (2, 3)
    many = table((0.0, "CONN"), (0.001, "CONACC"), *[(0.001 + 0.5 * i, "CONACC") for i in range(1, 9)])
    assert "resent CONACC 8 times" in judge(many, SERVER, ended_s=6.0)["too_many"].sentence
    never = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.003, "ACC", 0))
    found = judge(never, SERVER, ended_s=3.0)
    assert set(found) == {"gave_up_early"} and found["gave_up_early"].frames == (4,)


def test_a_server_answering_each_duplicate_is_replying_not_resending():
    packets = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.003, "ACC", 0), (0.010, "DATA", 0),
                    (0.011, "ACC", 0), (0.020, "DATA", 1), (0.021, "ACC", 1), (0.022, "RCVD"))
    assert judge(packets, SERVER, ended_s=2.0) == {}


def test_data_after_rjt_over_udpr_and_after_conrjt_anywhere():
    after_rjt = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.003, "RJT", 0),
                      (0.004, "DATA", 0), (0.504, "DATA", 0))
    found = judge(after_rjt, CLIENT)
    assert found["after_reject"].frames == (4, 6) and "after the server's RJT" in found["after_reject"].sentence
    assert "after_reject" not in judge(after_rjt, CLIENT, proto="udp")   # a udp client reads RJT only at the end
    after_conrjt = table((0.0, "CONN"), (0.001, "CONRJT"), (0.01, "DATA", 0))
    assert judge(after_conrjt, CLIENT, proto="tcp")["after_reject"].frames == (2, 3)


def test_only_the_sides_asked_for_are_judged_and_other_rows_are_ignored():
    packets = pd.concat([table((0.0, "CONN"), (0.1, "CONN")),
                         pd.DataFrame([{"time_s": 0.05, "kind": "SYN", "frame": 9},
                                       {"time_s": 0.06, "kind": "not PPCB", "frame": 10}])])
    packets = packets.sort_values("time_s")
    assert judge(packets, SERVER) == {} and set(judge(packets, CLIENT)) == {"early"}
    assert judge(packets, CLIENT, proto="udp") == {}                         # no resends to judge over udp


def test_a_passed_tests_wire_findings_are_shown_beside_it_and_a_failed_tests_in_its_reason(tmp_path):
    from wirelab.grade import Graded, Outcome, load_catalogue, write_reports
    from wirelab.grade.formats.feedback import test_feedback
    finding = judge(table((0.0, "CONN"), (0.1, "CONN"), (0.101, "CONACC")), CLIENT)["early"]
    passed = Outcome("client-udpr-1B", "pass", "ok", 1, 1, details={"wire": [finding.to_dict()]})
    failed = Outcome("client-udpr-1MB", "fail", f"it broke; on the wire: {finding}", 0, 1,
                     details={"wire": [finding.to_dict()]})
    assert f"on the wire (no points lost): {finding}" in test_feedback(passed)
    assert "no points lost" not in test_feedback(failed) and str(finding) in test_feedback(failed)
    write_reports([Graded("someone", [passed, failed])], tmp_path, load_catalogue())
    page = (tmp_path / "someone" / "report.html").read_text()
    assert "on the wire (no points lost): ppcbc resent CONN 0.100 s" in page and "(frames 1, 2)" in page


def test_a_link_that_duplicates_makes_copies_that_are_not_resends_and_jitter_widens_the_bounds():
    packets = table((0.0, "CONN"), (0.001, "CONACC"), (0.0012, "CONACC"), (0.002, "DATA", 0), (0.003, "ACC", 0),
                    (0.011, "ACC", 0), (0.012, "DATA", 1), (0.013, "ACC", 1), (0.014, "RCVD"))
    assert set(judge(packets, SERVER, ended_s=2.0)) == {"early"}
    assert judge(packets, SERVER, ended_s=2.0, copies_s=0.03) == {}
    jittered = table((0.0, "CONN"), (0.42, "CONN"), (0.5, "CONACC"))
    assert "early" in judge(jittered, CLIENT) and judge(jittered, CLIENT, jitter_s=0.02) == {}


def test_the_links_noise_comes_from_its_spec():
    from wirelab.grade.wire_feedback import link_noise
    from wirelab.link import LinkSpec
    assert link_noise(LinkSpec.parse(rate="10mbit", delay="5ms", duplicate="20%")) == pytest.approx((0.03, 0.0))
    assert link_noise(LinkSpec.parse(rate="10mbit", delay="5ms", loss="10%")) == (0.0, 0.0)


def test_a_client_that_ends_on_another_sessions_packet_did_not_give_up_early():
    """The reading 'a foreign ACC ends the client' (readings.py): it ended on a packet, not a timeout."""
    packets = pd.concat([table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0)),
                         table((0.003, "ACC", 0), session="0badcafe").assign(frame=4)], ignore_index=True)
    assert judge(packets, CLIENT, ended_s=0.25, exited=True) == {}
    assert "gave_up_early" in judge(packets.iloc[:3], CLIENT, ended_s=0.25, exited=True)


def test_an_older_ack_of_its_own_session_does_not_excuse_a_client_that_never_resent():
    """The kit's server resends ACC 3 while the client waits for ACC 4: the client ended on its timer."""
    packets = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.003, "ACC", 0), (0.004, "DATA", 1),
                    (0.503, "ACC", 0))
    assert "gave_up_early" in judge(packets, CLIENT, ended_s=0.51, exited=True)


def test_a_server_silent_after_a_duplicate_data_gave_up_and_one_resending_after_it_did_not():
    """server-udpr-resends-acc: the client resends DATA 0 (ignored: a duplicate), then waits for ACC 0 again."""
    base = [(0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.003, "ACC", 0), (0.1, "DATA", 0)]
    assert set(judge(table(*base), SERVER, ended_s=1.6)) == {"gave_up_early"}
    assert judge(table(*base, (0.6, "ACC", 0), (1.1, "ACC", 0)), SERVER, ended_s=1.6) == {}


def test_where_the_program_went_wrong_the_ladder_shows_what_was_expected():
    """Each finding gives a step ppcb.md asks for instead, at the time it was due (grade/wire_feedback.py)."""
    from wirelab.grade.wire_feedback import expected_steps
    never = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0))
    step, = expected_steps(judge_timing(never, proto="udpr", max_wait_s=WAIT, max_retransmits=MOST,
                                        sides=CLIENT, ended_s=1.5, exited=True), never, WAIT, MOST)
    assert step == {"time_s": pytest.approx(0.502), "right": True,
                    "label": "expected: DATA 0 resent after MAX_WAIT (0.5 s)"}
    early = table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.102, "DATA", 0), (0.103, "ACC", 0),
                  (0.104, "RCVD"))
    step, = expected_steps(judge_timing(early, proto="udpr", max_wait_s=WAIT, max_retransmits=MOST,
                                        sides=CLIENT), early, WAIT, MOST)
    assert step["time_s"] == pytest.approx(0.502) and "resent only after MAX_WAIT" in step["label"]
    endless = table((0.0, "CONN"), (0.001, "CONACC"), *[(0.002 + 0.5 * i, "DATA", 0) for i in range(9)])
    steps = {s["label"]: s for s in expected_steps(
        judge_timing(endless, proto="udpr", max_wait_s=WAIT, max_retransmits=MOST, sides=CLIENT), endless, WAIT, MOST)}
    gives_up = steps["expected: no DATA 0 again: ppcbc gives up: ERROR, exit"]
    assert gives_up["right"] is None and 0.002 + 0.5 * 5 < gives_up["time_s"] < 0.002 + 0.5 * 6   # before the 7th send
