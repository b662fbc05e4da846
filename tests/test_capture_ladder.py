"""The exchange as a text ladder (capture/ladder/, shown by viz/ladder.py): arrows each way, resends and
rejections marked, long exchanges folded to fit a platform's message (issue 34, part 2, text)."""
import pandas as pd

from wirelab.capture.ladder import ladder_text

C, S = "10.77.0.1:40000", "10.77.0.2:5000"


def table(*packets) -> pd.DataFrame:
    rows = []
    for frame, (t, kind, *rest) in enumerate(packets, start=1):
        number = rest[0] if rest else None
        right = kind in ("CONN", "DATA")
        rows.append({"time_s": t, "src": C if right else S, "dst": S if right else C, "transport": "udp",
                     "kind": kind, "session": "5ee55001", "packet_no": number,
                     "data_len": 1000 if kind == "DATA" else None, "frame": frame})
    return pd.DataFrame(rows)


def test_each_packet_is_an_arrow_with_its_type_number_length_time_and_frame():
    lines = ladder_text(table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0), (0.503, "DATA", 0),
                         (0.504, "RJT", 0)), marks={4: "resent early"})
    assert lines[0].split() == ["time", "(s)", "frame", "client", C, "server", S]
    conn, conacc, data, again, rjt = lines[1:]
    assert conn.split()[:3] == ["0.000", "1", "|--"] and conn.rstrip().endswith("->|")
    assert "|<" in conacc and "CONACC --|" in conacc
    assert "DATA 0, 1000 B" in data and "resend" not in data
    assert again.split()[:2] == ["0.503", "4"] and again.endswith("resend 1; resent early")
    assert "RJT 0 --|" in rjt and rjt.endswith("RJT")
    assert len({line.index("|") for line in lines[1:]}) == 1          # the client's column lines up


def test_a_long_stop_and_wait_run_is_folded_and_what_went_wrong_stays():
    packets = [(0.0, "CONN"), (0.001, "CONACC")]
    for n in range(100):
        packets += [(0.01 + 0.01 * n, "DATA", n), (0.015 + 0.01 * n, "ACC", n)]
    packets += [(1.6, "DATA", 100), (2.1, "DATA", 100), (2.2, "RJT", 100)]
    lines = ladder_text(table(*packets))
    assert len(lines) < 15
    assert any("... 197 packets: DATA 1..99 and their ACCs, 0.020 to 1.000 s" in line for line in lines)
    assert lines[-2].endswith("resend 1") and lines[-1].endswith("RJT")


def test_beyond_max_lines_the_beginning_and_the_end_are_kept():
    packets = [(0.0, "CONN"), *[(0.5 * i, "CONN") for i in range(1, 200)]]
    lines = ladder_text(table(*packets), max_lines=30)
    assert len(lines) == 31 and "lines not shown" in lines[11]
    assert lines[1].split()[1] == "1" and lines[-1].split()[1] == "200"


def test_other_clients_and_non_ppcb_rows_are_drawn_too():
    packets = table((0.0, "CONN"), (0.001, "CONACC"))
    intruder = pd.DataFrame([{"time_s": 0.002, "src": "10.77.0.1:40001", "dst": S, "transport": "udp",
                              "kind": "CONN", "session": "0badcafe", "packet_no": None, "frame": 3},
                             {"time_s": 0.003, "src": S, "dst": "10.77.0.1:40001", "transport": "udp",
                              "kind": "CONRJT", "session": "0badcafe", "packet_no": None, "frame": 4},
                             {"time_s": 0.004, "src": "10.77.0.2", "dst": "10.77.0.1", "transport": "icmp",
                              "kind": "ICMP port unreachable", "frame": 5}])
    lines = ladder_text(pd.concat([packets, intruder], ignore_index=True))
    assert "CONN (10.77.0.1:40001)" in lines[3] and "resend" not in lines[3]
    assert lines[4].endswith("CONRJT") and "|<" in lines[4]
    assert "ICMP port unreachable" in lines[5] and "|<" in lines[5]
    assert ladder_text(table())[1] == "(no PPCB packet in the capture)"


def test_the_explorer_and_the_grader_draw_with_one_function():
    from wirelab import viz
    assert viz.ladder_text is ladder_text


def test_the_expected_step_is_a_dashed_arrow_where_the_program_went_wrong():
    expected = [{"time_s": 0.502, "right": True, "label": "expected: DATA 0 resent after MAX_WAIT (0.5 s)"},
                {"time_s": 0.0025, "right": None, "side": "client", "label": "expected: a note"}]
    lines = ladder_text(table((0.0, "CONN"), (0.001, "CONACC"), (0.002, "DATA", 0)), expected=expected)
    assert lines[4].split()[0] == "0.003" and lines[4].endswith("|   expected: a note")     # in time order
    dashed = lines[5]
    assert dashed.split()[0] == "0.502" and "- - -" in dashed and ">|" in dashed
    assert dashed.endswith("expected: DATA 0 resent after MAX_WAIT (0.5 s)")            # never cut


def test_the_picture_draws_the_same_steps_as_the_text():
    import json
    import xml.etree.ElementTree as ET
    from wirelab.capture.ladder import ladder
    from wirelab.capture.ladder import ladder_svg
    packets = [(0.0, "CONN"), (0.001, "CONACC")]
    for n in range(20):
        packets += [(0.01 + 0.01 * n, "DATA", n), (0.015 + 0.01 * n, "ACC", n)]
    packets += [(0.3, "DATA", 20), (0.4, "DATA", 20), (0.41, "RJT", 20)]
    expected = [{"time_s": 0.9, "right": True, "label": "expected: DATA 20 resent after MAX_WAIT"}]
    drawing = json.loads(json.dumps(ladder(table(*packets), marks={44: "<< resent before MAX_WAIT"},
                                           expected=expected)))           # what a grader saves, reloaded
    assert ladder_text(drawing) == ladder_text(table(*packets), marks={44: "<< resent before MAX_WAIT"},
                                               expected=expected)
    svg = ET.fromstring(ladder_svg(drawing, title="client-udpr-20KB-loss10"))
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text for t in svg.iter(f"{ns}text")]
    shown = [s for s in drawing["steps"] if s["step"] == "packet"]
    arrows = [line for line in svg.iter(f"{ns}line") if line.get("x1") != line.get("x2")]
    assert len(arrows) == len(shown) + 1                                  # each packet, and the expected one
    assert [a.get("stroke-dasharray") for a in arrows].count("6 4") == 1
    assert "DATA 20, 1000 B" in texts and "expected: DATA 20 resent after MAX_WAIT" in texts
    assert "resend 1; << resent before MAX_WAIT" in texts and any(t and t.startswith("... ") for t in texts)
    assert "client-udpr-20KB-loss10" in texts
