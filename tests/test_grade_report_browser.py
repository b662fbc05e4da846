"""The HTML report's ladder of a failed test is a picture a browser draws (issue 34, part 2): the SVG the report
inlines (capture/ladder/svg.py) is checked not blank in Debian's chromium."""
import pandas as pd
import pytest

import browser_lab as lab_tools
from pixels import inked_fraction
from wirelab.capture.ladder import ladder
from wirelab.grade import load_catalogue
from wirelab.grade.outcome import Graded, Outcome
from wirelab.grade.report import write_submission_report

WHY_NOT = lab_tools.missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]


def failed_outcome() -> Outcome:
    rows = []
    for frame, (t, kind, number) in enumerate([(0.0, "CONN", None), (0.001, "CONACC", None), (0.002, "DATA", 0),
                                               (0.004, "ACC", 0), (0.005, "DATA", 1)], start=1):
        right = kind in ("CONN", "DATA")
        rows.append({"time_s": t, "src": "10.77.0.1:40000" if right else "10.77.0.2:5000",
                     "dst": "10.77.0.2:5000" if right else "10.77.0.1:40000", "kind": kind, "session": "5ee55001",
                     "packet_no": number, "data_len": 1000 if kind == "DATA" else None, "frame": frame})
    drawing = ladder(pd.DataFrame(rows), marks={5: "<< never sent again"},
                     expected=[{"time_s": 0.505, "right": True, "label": "expected: DATA 1 resent after MAX_WAIT (0.5 s)"}])
    return Outcome("client-udpr-20KB-loss10", "fail", "ppcbc exited 1", 0.0, 2.0, "client", "udpr", "retransmission",
                   details={"ladder": ["(text)"], "ladder_drawing": drawing})


def test_a_failed_tests_ladder_is_drawn_in_the_browser(tmp_path):
    from playwright.sync_api import sync_playwright
    page_path = write_submission_report(Graded("s1234567", [failed_outcome()]), tmp_path, load_catalogue())
    with sync_playwright() as p:
        browser = lab_tools.launch(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(page_path.resolve().as_uri())
            picture = page.locator(".ladder-svg svg")
            assert picture.count() == 1
            box = picture.bounding_box()
            assert box["width"] > 400 and box["height"] > 100
            assert inked_fraction(picture.screenshot()) > 0.02
            assert "expected: DATA 1 resent after MAX_WAIT (0.5 s)" in picture.text_content()
        finally:
            browser.close()
