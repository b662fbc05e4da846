"""Shared fixtures: root detection and the project root."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import settings

# CI shares two cores with the link emulator: judge properties, not speed.
settings.register_profile("wirelab", deadline=None, max_examples=100)
settings.load_profile("wirelab")

ROOT = Path(__file__).resolve().parents[1]

# A suite started in the background of a shell without job control (`make test &`) inherits
# SIGINT ignored, and so would every program it starts: the Ctrl-C tests would then test
# nothing the user meets. Handled here, a program started by a test gets Python's usual Ctrl-C.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def is_root() -> bool:
    return os.geteuid() == 0


@pytest.fixture
def project_root() -> Path:
    return ROOT


@pytest.hookimpl(trylast=True)            # after -k/-m deselection: judge what really runs
def pytest_collection_modifyitems(config, items):
    """Tests marked ``root`` are skipped, with the reason, when not root. A notebook that the
    browser test runs in JupyterLab in this session is not also run headless (CI time)."""
    _run_each_notebook_once(items)
    _plan_labs_without_root(config, items)
    if is_root():
        return
    skip = pytest.mark.skip(reason="needs root (namespaces, qdiscs): run the suite with sudo")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def testbed(request):
    """``wirelab.link.open`` for a test, like pyroute2's per-test namespaces: call it with a
    spec (and ``backend=``, ``seed=``); every link it opened is closed when the test ends,
    however it ends, and the test fails if a namespace of them is left behind."""
    from wirelab import link
    from wirelab.link.netns import list_namespaces

    opened = []

    def make(spec=None, **options):
        options.setdefault("name", "t" + str(len(opened)))
        made = link.open(spec, **options)
        opened.append(made)
        return made

    yield make
    for made in reversed(opened):
        made.close()
    ours = {ns for made in opened if hasattr(made, "testbed") for ns in made.testbed.namespaces.values()}
    left = ours & set(list_namespaces())
    assert not left, f"namespaces left behind: {sorted(left)}"


def _run_each_notebook_once(items) -> None:
    in_browser = {item.callspec.params["path"].name for item in items
                  if item.originalname in ("test_notebook_runs_in_jupyterlab",) and hasattr(item, "callspec")
                  and not item.get_closest_marker("skip") and not _skipped_if(item)}
    if any(item.originalname == "test_flagship_runs_and_its_control_panel_draws_a_plot" and not _skipped_if(item)
           for item in items):
        in_browser |= {p.name for p in (ROOT / "notebooks").glob("05-*.ipynb")}
    skip = pytest.mark.skip(reason="run in JupyterLab by tests/test_browser_lab.py in this session")
    for item in items:
        if item.originalname == "test_notebook_runs_in_quick_mode" and hasattr(item, "callspec") \
                and item.callspec.params["path"].name in in_browser:
            item.add_marker(skip)


LABS_WITHOUT_ROOT = pytest.StashKey[dict]()


def _plan_labs_without_root(config, items) -> None:
    """Which notebooks tests/test_notebooks_unprivileged.py runs as nobody, and whether that run
    goes beside the browser's (tests/nobody_labs.py says why it may)."""
    def runs(item) -> bool:
        return not item.get_closest_marker("skip") and not _skipped_if(item)
    nobody = [item.callspec.params["path"] for item in items
              if item.originalname == "test_notebook_runs_without_root" and runs(item)]
    wanted = any(item.path.name == "test_notebooks_unprivileged.py" and runs(item) for item in items)
    browser = any(item.path.name == "test_browser_lab.py" and runs(item) for item in items)
    config.stash[LABS_WITHOUT_ROOT] = {"wanted": wanted, "notebooks": nobody, "beside_browser": bool(nobody) and browser}


@pytest.fixture(scope="session")
def labs_without_root(request, tmp_path_factory):
    """The labs as nobody (tests/nobody_labs.py), one run for the session; None if none is selected.
    Started here when the browser's labs run in this session too: beside them."""
    from nobody_labs import LabsWithoutRoot
    plan = request.config.stash.get(LABS_WITHOUT_ROOT, {"wanted": False})
    if not plan["wanted"]:
        yield None
        return
    labs = LabsWithoutRoot(tmp_path_factory.mktemp("unprivileged"), plan["notebooks"])
    if plan["beside_browser"]:
        labs.start()
    try:
        yield labs
    finally:
        labs.stop()


class QuickOutputs:
    """The executed notebooks of this session's quick-mode run, by notebook name: the run that
    checks each lab (headless, tests/test_notebooks.py, or in JupyterLab, tests/test_browser_lab.py)
    records what it executed, and tests/test_notebooks.py's reference coverage reads it: the labs
    run once a session, not once per check."""

    def __init__(self, folder: Path):
        self.folder = folder

    def record(self, name: str, notebook: dict) -> None:
        import json
        (self.folder / name).write_text(json.dumps(notebook), encoding="utf-8")

    def recorded(self) -> dict[str, dict]:
        import json
        return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(self.folder.glob("*.ipynb"))}


@pytest.fixture(scope="session")
def quick_outputs(tmp_path_factory) -> QuickOutputs:
    return QuickOutputs(tmp_path_factory.mktemp("quick-outputs"))


def _skipped_if(item) -> bool:
    return any(m.args and m.args[0] for m in item.iter_markers("skipif"))
