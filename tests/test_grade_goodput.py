"""Goodput in the grade reports, on a shaped link, for every role and protocol: as the glossary defines
it (one clock, labelled with the instants used), never above the link's η·C, and for a client that sends
two 50 000-byte DATA no longer twice the stop-and-wait model (it was: one cycle timed for two packets)."""
import shutil
from dataclasses import replace

import pytest

from wirelab.grade import grade_class, load_catalogue
from wirelab.grade.catalogue import GradeTest

pytestmark = [pytest.mark.root, pytest.mark.slow]

LINK = {"rate": "10mbit", "delay": "10ms"}
SIZES = {"tcp": 1_000_000, "udp": 20_000, "udpr": 100_000}


def _catalogue():
    base = load_catalogue()
    tests = tuple(GradeTest(f"{role}-{proto}-shaped", role, proto, 1.0, 20.0, True, "goodput on a shaped link",
                            size=SIZES[proto], link={**LINK, "queue": "30KB" if proto == "tcp" else "150KB"})
                  for role in ("client", "server", "pair") for proto in ("tcp", "udp", "udpr"))
    return replace(base, tests=tests)


def test_goodput_is_the_glossarys_in_every_role_and_never_above_the_link(project_root, tmp_path):
    small = project_root / "data" / "example-class" / "correct-c"
    big = tmp_path / "big-chunks"
    shutil.copytree(small, big)
    header = big / "ppcb.h"
    header.write_text(header.read_text().replace("CHUNK = 1000", "CHUNK = 50000"))
    cat = _catalogue()
    graded = grade_class([("correct-c", small), ("big-chunks", big)], cat, tmp_path / "out", jobs=2, progress=False)
    for g in graded:
        for t in g.tests:
            assert t.status == "pass", (g.name, t.id, t.reason)
            assert t.goodput_flag is None and t.goodput_bps and t.link_limit_bps, (g.name, t.id, t.goodput_flag)
            assert t.goodput_bps <= t.link_limit_bps, (g.name, t.id, t.goodput_bps, t.link_limit_bps)
            assert "one clock" in t.goodput_at and t.completion_s > 0 and t.completion_at, (g.name, t.id)
            if t.role != "pair":          # pair: timed from ppcbc's start, which a 20 KB transfer is short beside
                assert t.goodput_bps > 0.2 * min(t.pred_goodput_bps, t.link_limit_bps), (g.name, t.id, t.goodput_bps)
    client_udpr = {g.name: next(t for t in g.tests if t.id == "client-udpr-shaped") for g in graded}
    assert client_udpr["big-chunks"].data_bytes == 50_000
    for t in client_udpr.values():          # stop-and-wait: the measurement sits at or under the model
        assert 0.6 < t.goodput_bps / t.pred_goodput_bps < 1.05, (t.goodput_bps, t.pred_goodput_bps)
