"""The labs in a real browser: JupyterLab started here, Debian's chromium driven by Playwright.

Every notebook (quick mode) is opened and run cell by cell in JupyterLab, as a student
would with Run → Run All Cells; none may show an error. In 05 the control panel is
then run with its button, and its table must fill and its plot must be drawn: judged
by pixels (a screenshot of the plot, and the PNG compared with the same plot drawn here
from the runs the panel saved), not by an <img> being there. pyshark is used from a
running kernel (file and live capture) and must leave no tshark or dumpcap behind.

One JupyterLab page serves the module: the first notebook loads the app, each test opens its
notebook in a new panel with a new kernel, and closes it (unsaved) and its kernel after.

The labs as nobody (tests/nobody_labs.py), when selected too, run beside these from the
module's start: these labs mostly wait on their links' clocks. The labs that judge their own
measurements run last and alone, once that run has ended.
"""
from __future__ import annotations

import base64
import io
import json
import os
import shutil
from pathlib import Path

import pytest

import browser_lab as lab_tools
from nobody_labs import judges_itself
from pixels import inked_fraction

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
FLAGSHIP = next(p for p in NOTEBOOKS if p.name.startswith("05-"))
WHY_NOT = lab_tools.missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]

#: a cell's worth of time in quick mode is seconds; a notebook's, about a minute on 2 busy cores
NOTEBOOK_TIMEOUT_S = 420
PYSHARK_CELLS = [
    "import os\nfrom wirelab.capture import PysharkLive, pyshark_packets\nfrom wirelab.transfer import run_pair",
    'udpr = b"UDPRFILE".hex(":")          # the udpr transfer of captures/ppcb.pcapng\n'
    'rows = pyshark_packets("../captures/ppcb.pcapng", display_filter=f"ppcb.type == 5 and ppcb.session_id == {udpr}",\n'
    '                       fields={"no": "ppcb.packet_no"})\nprint("FILE", list(rows["no"]), list(rows["highest_layer"]))',
    'if os.geteuid() == 0:\n'
    '    with PysharkLive("lo", bpf_filter="host 127.0.0.69", probe_host="127.0.0.69",\n'
    '                     fields={"type": "ppcb.type"}) as live:\n'
    '        result = run_pair("udpr", 3000, chunk=1000, host="127.0.0.69")\n'
    '    print("LIVE", list(live.packets["type"]), result.ok)\n'
    'else:\n'
    '    print("LIVE skipped: capturing needs root")',
]


REDRAW = """import base64
from wirelab.experiment.store import load
from wirelab.viz.offscreen import figure_png
from wirelab.viz.panel import panel_figure
print(base64.b64encode(figure_png(panel_figure(load(r"{folder}")))).decode())"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """The labs as a student has them (quick mode injected as papermill would), in a temp folder."""
    import nbformat
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    root = tmp_path_factory.mktemp("lab")
    (root / "notebooks").mkdir()
    shutil.copytree(ROOT / "captures", root / "captures")
    # the data a lab reads (reference tables, the example class), not the runs saved here
    shutil.copytree(ROOT / "data", root / "data", ignore=lambda folder, names:
                    ["runs"] if Path(folder) == ROOT / "data" else [])
    (root / "data" / "runs").mkdir(parents=True)
    for path in NOTEBOOKS:
        nb = parameterize_notebook(load_notebook_node(str(path)), {"QUICK": True})
        nbformat.write(nb, root / "notebooks" / path.name)
    scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in PYSHARK_CELLS])
    scratch.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(scratch, root / "notebooks" / "pyshark-in-jupyter.ipynb")
    return root


@pytest.fixture(scope="module")
def lab(workspace, tmp_path_factory, labs_without_root):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT / "lib"), env.get("PYTHONPATH", "")] if p)
    with lab_tools.JupyterLab(workspace, state=tmp_path_factory.mktemp("lab-state"), env=env) as server:
        yield server


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = lab_tools.launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def lab_page(browser):
    """One JupyterLab page for the module: each test opens its notebook in it (open_notebook)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    yield page
    page.close()


@pytest.fixture
def page(lab_page, lab, labs_without_root, request):
    notebook = request.node.callspec.params.get("path") if hasattr(request.node, "callspec") else None
    if request.node.originalname == "test_flagship_runs_and_its_control_panel_draws_a_plot":
        notebook = FLAGSHIP
    if labs_without_root is not None and notebook is not None and judges_itself(notebook):
        labs_without_root.wait_done(NOTEBOOK_TIMEOUT_S)     # its measurements alone on the cores
    yield lab_page
    lab_tools.close_notebooks(lab_page)      # the next test opens its own, with its own kernel
    lab.shutdown_kernels()                   # one kernel at a time on two cores


def run_in_browser(page, lab, name: str, quick_outputs=None) -> None:
    lab_tools.open_notebook(page, lab, f"notebooks/{name}")
    outcome = lab_tools.run_all(page, NOTEBOOK_TIMEOUT_S)
    if quick_outputs is not None:           # this session's run of the lab: for its reference coverage
        quick_outputs.record(name, lab_tools.executed_notebook(page))
    errors = lab_tools.error_outputs(page)
    assert not errors, f"{name}: {errors}"
    assert outcome == "true", f"{name}: Run All ended with {outcome}; JupyterLab log:\n{lab.log_tail()}"
    assert lab_tools.unrun_cells(page) == 0, f"{name}: cells left unrun"
    shown = page.evaluate("""() => [...document.querySelectorAll('.jp-OutputArea-output img')]
        .map(img => img.complete && img.naturalWidth > 0)""")
    assert shown and all(shown), f"{name}: {shown.count(False)} of {len(shown)} figure(s) did not load"
    assert "Error displaying widget" not in page.inner_text("body"), f"{name}: a widget failed to render"


@pytest.mark.parametrize("path", sorted((p for p in NOTEBOOKS if not p.name.startswith("05-")), key=judges_itself),
                         ids=lambda p: p.stem)      # those judging their measurements last (module docstring)
def test_notebook_runs_in_jupyterlab(page, lab, path, quick_outputs):
    run_in_browser(page, lab, path.name, quick_outputs)
    if path.name.startswith("01-"):                       # the calculator: a widget with a drawn bar
        images = page.locator(".widget-output img")
        assert images.count() >= 1 and inked_fraction(images.first.screenshot()) > 0.01


def test_flagship_runs_and_its_control_panel_draws_a_plot(page, lab, workspace, quick_outputs):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    run_in_browser(page, lab, "05-predicted-vs-measured.ipynb", quick_outputs)
    button = page.locator("button.widget-button", has_text="Run")
    assert button.count() == 1
    status = page.locator(".widget-hbox", has=button).locator(".widget-html-content").first
    runs = workspace / "data" / "runs" / "05-panel"
    before = set(runs.glob("panel-*"))
    button.scroll_into_view_if_needed()
    button.click()
    page.wait_for_function("el => /running/.test(el.textContent)", arg=status.element_handle(), timeout=60_000)
    page.wait_for_function("el => /done|failed/.test(el.textContent)", arg=status.element_handle(),
                           timeout=NOTEBOOK_TIMEOUT_S * 1000)
    assert status.inner_text().startswith("done"), status.inner_text()
    (folder,) = set(runs.glob("panel-*")) - before              # this click's runs, saved
    output = page.locator(".widget-output", has=page.locator("table")).last
    rows = output.locator("table tbody tr")
    assert rows.count() >= 4 and "bit/s" in output.locator("table").inner_text()   # the table filled
    image = output.locator("img").last
    try:
        image.wait_for(timeout=30_000)
    except PlaywrightTimeout:
        pytest.fail("the panel showed its table but no plot after Run")
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    # the plot is drawn: a screenshot of it has ink, not axes titles alone (the bug: 0.4 %)
    drawn = inked_fraction(image.screenshot())
    assert drawn > 0.015, f"the panel's plot is nearly blank: {drawn:.2%} of its pixels inked"
    # ... and it is the plot of the runs the panel saved, as the same kernel draws it when
    # nothing else runs (a garbled plot has ink too: axes from one draw, points from another)
    shown = base64.b64decode(image.get_attribute("src").split(",", 1)[1])
    alone = base64.b64decode(lab_tools.in_kernel(page, REDRAW.format(folder=str(folder))))
    assert _pixel_difference(shown, alone) < 0.005


def test_pyshark_in_a_running_kernel_leaves_no_tshark_behind(page, lab):
    before = [p for p in lab_tools.descendants(lab.proc.pid) if p[1] in ("tshark", "dumpcap")]
    lab_tools.open_notebook(page, lab, "notebooks/pyshark-in-jupyter.ipynb")
    assert lab_tools.run_all(page, 180) == "true", lab_tools.error_outputs(page)
    text = "\n".join(page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.widgets
        .flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])
        .filter(o => o.output_type === 'stream').map(o => o.text)"""))
    assert "FILE ['0', '1', '2', '3'] ['PPCB', 'PPCB', 'PPCB', 'PPCB']" in text, text
    if os.geteuid() == 0:
        assert "LIVE ['1', '2', '4', '5', '4', '5', '4', '5', '7'] True" in text, text
    else:
        assert "LIVE skipped" in text
    after = [p for p in lab_tools.descendants(lab.proc.pid) if p[1] in ("tshark", "dumpcap")]
    assert before == [] and after == [], after            # none running, none a zombie


def _pixel_difference(a: bytes, b: bytes) -> float:
    """Fraction of pixels that differ clearly (1.0 if the sizes differ)."""
    import numpy as np
    from PIL import Image
    first, second = (np.asarray(Image.open(io.BytesIO(x)).convert("RGB")).astype(int) for x in (a, b))
    if first.shape != second.shape:
        return 1.0
    return float((np.abs(first - second).max(axis=2) > 60).mean())


def test_the_workspace_is_quick_mode(workspace):
    """What the browser ran is the quick mode CI runs headless (papermill's injected cell)."""
    for path in NOTEBOOKS:
        nb = json.loads((workspace / "notebooks" / path.name).read_text())
        injected = [c for c in nb["cells"] if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
        assert injected and "QUICK = True" in "".join(injected[0]["source"])


LIVE_CELLS = [
    "from wirelab.experiment import Experiment\nfrom wirelab.viz.live import watch",
    'exp = Experiment("live-10s", proto="tcp", workload="time", time="10s", rate="10mbit", delay="20ms",\n'
    '                 cc="cubic", reps=1)\n'
    'frame = watch(exp, out="../data/runs/live-10s")\n'
    'print("STATUS", frame["status"].iloc[0], frame["events_file"].iloc[0])',
]
START_ALL = """() => { window.__wlRun = 'running';
    window.jupyterapp.commands.execute('notebook:run-all-cells').then(v => { window.__wlRun = String(v); });
    return true; }"""
REDRAW_LIVE = """import base64
from wirelab.experiment.events import read_events
from wirelab.viz.live import live_png
print(base64.b64encode(live_png(read_events(r"{path}"))).decode())"""


def test_a_live_plot_moves_while_a_run_goes_and_ends_as_the_saved_run_draws(page, lab, workspace):
    """A 10 s run watched in a cell: screenshots of its plot a second apart differ at least 5 times
    while it runs, and the plot the cell ends with is the one drawn from the saved event stream."""
    import time

    import nbformat
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in LIVE_CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, workspace / "notebooks" / "live-plot.ipynb")
    lab_tools.open_notebook(page, lab, "notebooks/live-plot.ipynb")
    page.evaluate(START_ALL)
    image = page.locator(".jp-OutputArea-output img").last
    image.wait_for(timeout=120_000)                       # the prediction, drawn before the first byte
    # the cell's output area stays while each redraw replaces the <img> inside it
    area = page.locator(".jp-Cell", has=page.locator("img")).last.locator(".jp-OutputArea")
    shots, deadline = [], time.monotonic() + 120
    while page.evaluate("() => window.__wlRun") == "running" and time.monotonic() < deadline:
        began = time.monotonic()
        shots.append(area.screenshot(animations="disabled"))
        page.wait_for_timeout(max(0, 1000 - (time.monotonic() - began) * 1000))   # a second apart
    assert page.evaluate("() => window.__wlRun") == "true", lab_tools.error_outputs(page)
    changes = sum(a != b for a, b in zip(shots, shots[1:]))
    assert changes >= 5, f"the plot changed {changes} times in {len(shots)} screenshots a second apart"
    text = "\n".join(page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.widgets
        .flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])
        .filter(o => o.output_type === 'stream').map(o => o.text)"""))
    status, events_file = text.split("STATUS ", 1)[1].split()[:2]
    assert status == "ok", text
    shown = base64.b64decode(image.get_attribute("src").split(",", 1)[1])
    saved = workspace / "data" / "runs" / "live-10s" / events_file
    redrawn = base64.b64decode(lab_tools.in_kernel(page, REDRAW_LIVE.format(path=str(saved))))
    assert _pixel_difference(shown, redrawn) == 0.0
