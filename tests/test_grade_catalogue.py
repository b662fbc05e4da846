"""The test catalogue: data that covers the assignment, read with clear errors; the reports it feeds."""
import itertools
import json

import pytest

from wirelab.errors import UsageError
from wirelab.grade import Graded, Outcome, class_table, json_summary, load_catalogue, pass_rates, write_reports
from wirelab.grade.catalogue import PROTOS, ROLES
from wirelab.grade.checks_build import BUILD_CHECKS
from wirelab.grade.expected import check_expected, expected_failures, load_expected
from wirelab.grade.prediction import predict_test
from wirelab.grade.scenarios import SCENARIOS
from wirelab.grade.scenarios_client import CLIENT_SCENARIOS
from wirelab.grade.scenarios_server import SERVER_SCENARIOS
from wirelab.grade.scenarios_tcp import TCP_SCENARIOS
from wirelab.link import LinkSpec
from wirelab.model import stop_and_wait


@pytest.fixture(scope="module")
def cat():
    return load_catalogue()


def test_every_role_and_transport_is_tested_by_a_transfer(cat):
    transfers = {(t.role, t.proto) for t in cat.tests if t.scenario == "transfer"}
    assert transfers == set(itertools.product([r for r in ROLES if r != "build"], PROTOS))


def test_sizes_and_links_span_what_the_issue_asks(cat):
    sizes = [t.size for t in cat.tests if t.scenario == "transfer"]
    assert min(sizes) == 1 and max(sizes) == 10_000_000
    links = [LinkSpec.parse(**t.link) for t in cat.tests]
    assert any(not s.needs_delay_line and s.forward.rate_bps is None for s in links)           # clean
    assert any(s.forward.delay_s for s in links) and any(s.forward.rate_bps for s in links)
    assert max(s.forward.loss for s in links) == pytest.approx(0.20)
    assert any(s.forward.duplicate for s in links) and any(s.forward.reorder for s in links)


def test_every_error_scenario_of_ppcb_md_has_a_test(cat):
    used = {t.scenario for t in cat.tests if t.role != "build"}
    assert used == set(SCENARIOS), "every scenario is used, none is missing"
    assert {t.scenario for t in cat.tests if t.role == "build"} == set(BUILD_CHECKS)
    for must in ("foreign_conn", "foreign_data", "out_of_order", "duplicate_data", "duplicate_conn",
                 "tcp_wrong_type", "tcp_bad_length", "udp_bad_length", "silent_client", "silent_server",
                 "server_stops", "tcp_busy", "lost_acc", "resends_acc", "conrjt", "rjt"):
        assert must in used
    for t in cat.tests:      # scenarios play the other side: the role must fit
        assert t.scenario not in {**SERVER_SCENARIOS, **TCP_SCENARIOS} or t.role == "server", t.id
        assert t.scenario not in TCP_SCENARIOS or t.proto == "tcp", t.id
        assert t.scenario not in CLIENT_SCENARIOS or t.role == "client", t.id


def test_tests_have_what_a_grader_needs(cat):
    ids = [t.id for t in cat.tests]
    assert len(ids) == len(set(ids))
    for t in cat.tests:
        assert t.id.startswith(f"{t.role}-") and t.points > 0 and t.deadline_s > 0 and t.checks
    public = cat.public()
    assert 0 < len(public.tests) < len(cat.tests) and all(t.public for t in public.tests)


def test_loss_tests_cannot_fail_a_correct_program_by_bad_luck(cat):
    """Loss is forward only and MAX_RETRANSMITS resends make a give-up (1-q)^(R+1) per packet rare."""
    a = cat.assignment
    for t in cat.tests:
        spec = LinkSpec.parse(**t.link)
        if spec.forward.loss:
            assert spec.reverse.loss == 0, t.id
            packets = t.size // a.chunk + 2
            sw = stop_and_wait(a.chunk, spec.forward.rate_bps, loss_forward=spec.forward.loss,
                               timeout_s=a.max_wait_s, max_retransmits=a.max_retransmits)
            assert packets * sw.failure_probability < 2e-3, t.id


def test_an_instructors_file_adds_hidden_tests_and_errors_are_clear(tmp_path, cat):
    hidden = tmp_path / "hidden.toml"
    hidden.write_text('[[test]]\nid = "hidden-udpr-5KB"\nrole = "pair"\nproto = "udpr"\nsize = "5KB"\n'
                      'points = 3\ndeadline_s = 9\npublic = false\nchecks = "secret"\n')
    both = load_catalogue(extra=[hidden])
    assert len(both.tests) == len(cat.tests) + 1 and both["hidden-udpr-5KB"].size == 5000
    assert both.select(["hidden-*"]).tests[0].points == 3
    assert "hidden-udpr-5KB" not in {t.id for t in both.public().tests}
    bad = tmp_path / "bad.toml"
    for text, words in [('[[test]]\nid = "x"\n', "missing"),
                        ('[[test]]\nid="client-tcp-1B"\nrole="client"\nproto="tcp"\nsize="1B"\npoints=1\n'
                         'deadline_s=1\npublic=true\nchecks="c"\n', "twice"),
                        ('[[test]]\nid="y"\nrole="boss"\nproto="tcp"\npoints=1\ndeadline_s=1\npublic=true\n'
                         'checks="c"\n', "role"),
                        ('[[test]]\nid="z"\nrole="pair"\nproto="tcp"\nsize="1B"\npoints=1\ndeadline_s=1\n'
                         'public=true\nchecks="c"\nlink={speed="1mbit"}\n', "link option"),
                        ("not = [toml", "not valid TOML")]:
        bad.write_text(text)
        with pytest.raises(UsageError, match=words):
            load_catalogue(extra=[bad])
    with pytest.raises(UsageError, match="no test matches"):
        cat.select(["nothing-*"])


def test_predictions_name_the_model_and_are_absent_without_a_rate(cat):
    a = cat.assignment
    udpr = predict_test(cat["client-udpr-100KB-10mbit-10ms"], a, 1000)
    expected = LinkSpec.parse(rate="10mbit", delay="10ms").predict("udpr", payload=1000, max_wait_s=0.5)
    assert udpr["pred_goodput_bps"] == pytest.approx(expected.goodput_bps)
    assert udpr["pred_binding"] == "stop_and_wait" and "stop-and-wait" in udpr["pred_note"]
    tcp = predict_test(cat["client-tcp-1MB-10mbit-10ms"], a, 1000)
    assert tcp["pred_goodput_bps"] < 10e6 * 1000 / 1021 and "slow start" in tcp["pred_note"]
    clean = predict_test(cat["client-tcp-1B"], a, None)
    assert clean["pred_goodput_bps"] is None and "no rate" in clean["pred_note"]


def _graded():
    ok = Outcome("t-a", "pass", "ok", 2, 2, "client", "udpr", "transfer", goodput_bps=1e6,
                 pred_goodput_bps=1.1e6)
    bad = Outcome("t-b", "fail", "expected RJT for packet 2, got nothing within 1 s", 0, 1, "server", "udp",
                  "ordering", capture="captures/t-b.pcapng")
    late = Outcome("t-b", "timeout", "ppcbc was still running", 0, 1, "server", "udp", "ordering")
    return [Graded("alice", [ok, bad]), Graded("bob", [Outcome(**{**ok.to_dict(), "status": "pass"}), late])]


def test_reports_and_the_exact_json_shape(tmp_path, cat):
    graded = _graded()
    summary = json_summary(graded)
    assert list(summary) == ["submissions"]
    assert [list(s) for s in summary["submissions"]] == [["name", "score", "tests"]] * 2
    assert all(list(t) == ["id", "status", "reason", "points"] for s in summary["submissions"] for t in s["tests"])
    assert summary["submissions"][0]["score"] == pytest.approx(66.7)
    files = write_reports(graded, tmp_path, cat)
    for key in ("csv", "parquet", "json", "html", "results"):
        assert files[key].exists()
    assert json.loads(files["json"].read_text()) == summary
    assert (tmp_path / "alice" / "report.html").read_text().count("expected RJT for packet 2") == 1
    assert "captures/t-b.pcapng" in (tmp_path / "alice" / "report.html").read_text()
    rates = pass_rates(class_table(graded))
    assert list(rates["test"]) == ["t-b", "t-a"] and list(rates["pass_rate"]) == [0.0, 1.0]


def test_expected_failures_are_checked_exactly():
    graded = _graded()
    assert expected_failures(["t-*"], ["t-a", "t-b", "u"]) == {"t-a", "t-b"}
    assert check_expected(graded, {"alice": {"fails": ["t-b"]}, "bob": {"fails": ["t-b"]}}) == []
    problems = check_expected(graded, {"alice": {"fails": []}, "bob": {"fails": ["t-*"], "bug": "all"}})
    assert len(problems) == 2 and "failed t-b unexpectedly" in problems[0] and "passed t-a" in problems[1]


def test_the_example_class_expectations_name_real_tests(project_root, cat):
    expected = load_expected(project_root / "data" / "example-class" / "expected.toml")
    from wirelab.grade import find_submissions
    assert set(expected) == {name for name, _ in find_submissions(class_dir=project_root / "data" / "example-class")}
    ids = [t.id for t in cat.tests]
    for name, entry in expected.items():
        for pattern in entry["fails"]:
            assert expected_failures([pattern], ids), f"{name}: {pattern} names no test"


def test_the_example_hidden_tests_load_and_stay_hidden(project_root, cat):
    both = load_catalogue(extra=[project_root / "data" / "example-class" / "hidden.toml"])
    hidden = both.select(["hidden-*"]).tests
    assert len(hidden) == 2 and not any(t.public for t in hidden)
    assert len(both.public().tests) == len(cat.public().tests)
