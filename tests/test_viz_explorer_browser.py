"""wirelab.explore in JupyterLab in a real browser (issue 33, part 3): choosing a conversation, moving the
time brush and typing a filter each redraw the pictures, and none of them is blank (pixels, not <img> tags).

A tiny notebook of its own (one cell, a committed capture) in JupyterLab started here, driven in
Debian's chromium with Playwright as a student clicks; the kernel is asked what it drew between steps.
"""
import os
import shutil
import time
from pathlib import Path

import pytest

import browser_lab as lab_tools
from pixels import inked_fraction

ROOT = Path(__file__).resolve().parents[1]
WHY_NOT = lab_tools.missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]

CELL = 'import wirelab\nview = wirelab.explore("tcp-10mbit-loss2.pcapng")\nview'
SOURCES = """() => [...document.querySelectorAll('.jp-OutputArea-output img.widget-image')]
    .filter(img => img.offsetParent !== null).map(img => img.src)"""


def kernel_says(page, code: str, want, timeout_s: float = 30) -> str:
    """Poll the kernel with ``code`` until ``want(printed)`` holds (a deadline, no sleep)."""
    deadline = time.monotonic() + timeout_s
    while True:
        printed = lab_tools.in_kernel(page, code).strip()
        if want(printed) or time.monotonic() > deadline:
            return printed
        page.wait_for_timeout(200)


def pictures_changed(page, before: list[str]) -> list[str]:
    """Wait until the browser shows new pictures (new blob URLs, each loaded) and return their sources."""
    page.wait_for_function("""(before) => { const imgs = [...document.querySelectorAll(
            '.jp-OutputArea-output img.widget-image')].filter(img => img.offsetParent !== null);
        return imgs.length > 0 && imgs.every(img => img.complete && img.naturalWidth > 0)
            && imgs.some((img, i) => img.src !== before[i]); }""", arg=before, timeout=30_000, polling=200)
    return page.evaluate(SOURCES)


def assert_not_blank(page) -> None:
    images = page.locator(".jp-OutputArea-output img.widget-image:visible")
    assert images.count() >= 2
    for i in range(images.count()):
        inked = inked_fraction(images.nth(i).screenshot())
        assert inked > 0.01, f"picture {i} is nearly blank: {inked:.2%} inked"


def test_explore_redraws_in_jupyterlab_on_a_click_a_brush_and_a_filter(tmp_path):
    import nbformat
    from playwright.sync_api import sync_playwright

    root = tmp_path / "lab"
    root.mkdir()
    shutil.copy(ROOT / "captures" / "tcp-10mbit-loss2.pcapng", root)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "explore.ipynb")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT / "lib"), env.get("PYTHONPATH", "")] if p)
    with lab_tools.JupyterLab(root, state=tmp_path / "state", env=env) as lab, sync_playwright() as p:
        browser = lab_tools.launch(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            lab_tools.open_notebook(page, lab, "explore.ipynb")
            assert lab_tools.run_all(page, 120) == "true", lab_tools.error_outputs(page)
            shown = pictures_changed(page, [])
            assert len(shown) == 4
            assert_not_blank(page)

            # a click on the other conversation
            page.locator(".widget-select select").select_option(index=1)
            assert kernel_says(page, "print(view.selector.value)", lambda s: "0" in s) == "('tcp', 0)"
            shown = pictures_changed(page, shown)
            assert_not_blank(page)

            # the brush: drag its right handle a third of the way back
            handle = page.locator(".noUi-handle-upper")
            track = page.locator(".noUi-target").bounding_box()
            box = handle.bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.mouse.down()
            page.mouse.move(box["x"] - track["width"] / 3, box["y"] + box["height"] / 2, steps=8)
            page.mouse.up()
            printed = kernel_says(page, "print(view.redraws, view.brush.value[1] < view.brush.max * 0.9)",
                                  lambda s: s.endswith("True"))
            assert printed.split() == ["3", "True"], printed
            shown = pictures_changed(page, shown)
            assert_not_blank(page)

            # a filter typed in the box (Enter sends it)
            box = page.locator(".widget-text input").first
            box.fill("tcp.stream == 1")
            box.press("Enter")
            printed = kernel_says(page, "print(len(view.view), [v for _, v in view.selector.options])",
                                  lambda s: s.startswith("2326"))
            assert printed == "2326 [('tcp', 1)]", printed
            pictures_changed(page, shown)
            assert_not_blank(page)
            assert "2326 of 2353 frames" in " ".join(page.locator(".widget-html").all_inner_texts())
            if os.environ.get("WIRELAB_SCREENSHOT"):
                page.screenshot(path=os.environ["WIRELAB_SCREENSHOT"], full_page=True)
        finally:
            browser.close()
