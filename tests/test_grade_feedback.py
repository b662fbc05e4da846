"""A failed test's reason names the student's bug, found by the grader on a real submission (issue 34):
a C client that reads stdin up to EOF-as-a-delimiter stops at the input's first 0xFF."""
import re
import shutil
import zlib

import pytest

from wirelab.grade import grade_submission, load_catalogue
from wirelab.transfer import make_data

pytestmark = pytest.mark.root

#: The failure of a public implementation: ``getdelim`` with EOF (-1, so 0xFF as a char) as the delimiter.
GETDELIM = """static uint8_t *read_all(size_t *n) {
    char *buf = NULL;
    size_t cap = 0;
    ssize_t r = getdelim(&buf, &cap, EOF, stdin);
    *n = r < 0 ? 0 : (size_t)r;
    return (uint8_t *)buf;
}
"""


def test_a_client_reading_stdin_up_to_eof_as_a_delimiter_is_told_about_0xff(project_root, tmp_path):
    sub = tmp_path / "getdelim-c"
    shutil.copytree(project_root / "data" / "example-class" / "correct-c", sub)
    source = (sub / "ppcbc.c").read_text()
    start = source.index("static uint8_t *read_all(size_t *n) {")
    end = source.index("\n}\n", start) + 3
    (sub / "ppcbc.c").write_text(source[:start] + GETDELIM + source[end:])
    graded = grade_submission("getdelim-c", sub, load_catalogue().select(["client-tcp-100KB", "pair-udp-10KB"]),
                              tmp_path / "out", capture=False)
    assert graded.build_error is None, graded.build_log
    outcome, pair = graded.tests
    data = make_data(100_000, seed=zlib.crc32(b"client-tcp-100KB"))         # the test's input
    first = data.index(0xFF)
    assert outcome.status == "fail", outcome.reason
    assert f"delivered {first + 1} of 100000 B" in outcome.reason
    assert f"the first {first + 1} of the 100000 B input exactly" in outcome.reason
    assert re.search(rf"input byte {first}, is the input's first 0xFF", outcome.reason)
    assert "getdelim" in outcome.reason and "flush" not in outcome.reason
    data = make_data(10_000, seed=zlib.crc32(b"pair-udp-10KB"))                # its own server, the same cut
    first = data.index(0xFF)
    assert pair.status == "fail" and f"ppcbs wrote to stdout the first {first + 1} of the 10000 B" in pair.reason
    assert "getdelim" in pair.reason and "flush" not in pair.reason


#: correct-python with one typical bug in its udp server: (the change, a test it fails, what its reason says)
SERVER_BUGS = {
    "debug-on-stdout": (("        out.write(body)\n",
                         "        out.write(body)\n        out.write(f'got {no}\\n'.encode())\n"),
                        "server-udp-20KB", ["B that are not the input's at byte 1000 ('got 0\\n')", "stderr"]),
    "writes-duplicates": (("            continue                                    # a duplicate: ignore\n",
                           "            out.write(body)\n            continue\n"),
                          "server-udpr-duplicate-data", ["twice", "duplicate DATA"]),
}


@pytest.mark.parametrize("bug", sorted(SERVER_BUGS))
def test_a_server_writing_more_than_the_data_is_told_what_it_added(project_root, tmp_path, bug):
    (old, new), test_id, words = SERVER_BUGS[bug]
    sub = tmp_path / bug
    shutil.copytree(project_root / "data" / "example-class" / "correct-python", sub)
    source = (sub / "ppcb_impl.py").read_text()
    assert source.count(old) == 1
    (sub / "ppcb_impl.py").write_text(source.replace(old, new))
    graded = grade_submission(bug, sub, load_catalogue().select([test_id]), tmp_path / "out", capture=False)
    outcome, = graded.tests
    assert outcome.status == "fail" and all(w in outcome.reason for w in words), outcome.reason
    assert "flush" not in outcome.reason


#: correct-python with one typical timing bug in udpr: (the change, the test, whose packets, the wire's findings)
TIMING_BUGS = {
    "resends-too-early": (("wait_packet(sock, sid, time.monotonic() + MAX_WAIT, accept)",
                           "wait_packet(sock, sid, time.monotonic() + MAX_WAIT / 5, accept)"),
                          "client-udpr-silent-server", "client", {"early"}),
    "never-gives-up": (("    for _ in range(1 + (MAX_RETRANSMITS if reliable else 0)):",
                        "    for _ in range(10 ** 9):"), "client-udpr-silent-server", "client", {"too_many"}),
    "never-resends": (("    for _ in range(1 + (MAX_RETRANSMITS if reliable else 0)):", "    for _ in range(1):"),
                      "client-udpr-silent-server", "client", {"gave_up_early"}),
    "server-never-resends": (("                sock.sendto(s.last, s.addr)\n", ""),
                             "server-udpr-silent-client", "server", {"gave_up_early"}),
}


@pytest.mark.parametrize("bug", sorted(TIMING_BUGS))
def test_a_program_resending_too_early_for_ever_or_never_is_judged_from_the_wire_with_its_frames(
        project_root, tmp_path, bug):
    (old, new), test_id, side, rules = TIMING_BUGS[bug]
    sub = tmp_path / bug
    shutil.copytree(project_root / "data" / "example-class" / "correct-python", sub)
    source = (sub / "ppcb_impl.py").read_text()
    assert source.count(old) == 1
    (sub / "ppcb_impl.py").write_text(source.replace(old, new))
    graded = grade_submission(bug, sub, load_catalogue().select([test_id]), tmp_path / "out")
    outcome, = graded.tests
    assert outcome.status != "pass"
    found = {f["rule"]: f for f in outcome.details["wire"]}
    assert set(found) == rules and all(f["side"] == side and f["frames"] for f in found.values())
    program = {"client": "ppcbc", "server": "ppcbs"}[side]
    assert re.search(rf"on the wire: {program} (re)?sent CON", outcome.reason), outcome.reason
    assert re.search(r"\(frames? \d+", outcome.reason)
    ladder = outcome.details["ladder"]                      # the exchange drawn, the finding's frame marked
    assert ladder[0].split()[:4] == ["time", "(s)", "frame", "client"] and len(ladder) <= 41
    last = found[next(iter(rules))]["frames"][-1]
    assert any(line.split()[1] == str(last) and "<<" in line for line in ladder[1:] if len(line.split()) > 1)
    assert any("expected: " in line for line in ladder)      # what ppcb.md asks there, drawn dashed
    drawing = outcome.details["ladder_drawing"]              # the same steps, for the HTML report's picture
    assert any(s["step"] == "expected" for s in drawing["steps"])
    from wirelab.grade.formats.feedback import test_feedback
    assert "\n".join(ladder) in test_feedback(outcome)        # what Gradescope and PrairieLearn show
