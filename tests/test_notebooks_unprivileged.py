"""Every lab once more as a student without root: each takes the loopback path or says
what needs root, and no cell fails.

When the suite runs as root (CI), each notebook runs through ``wirelab report`` (quick
mode) as nobody: no capabilities, no groups, in a private mount namespace that lets it
reach the venv and Python even when they live under /root (tests/unprivileged.py), on a
copy of the labs it owns. Without root the whole suite already is that run
(tests/test_notebooks.py), so this one skips.

The copy is installed as the course image installs it (.binder/, repo2docker's
conventions for Binder and JupyterHub, whose notebooks run without root): nobody runs
``.binder/postBuild`` in a fresh venv (wirelab editable from the copy, then the capture
reader's kernels compiled), whose other packages are the suite's (a .pth file, and
JUPYTER_PATH for Jupyter's data: conda's environment.yml is what repo2docker installs them
from); every lab then runs on that venv.
This adds about 40 s once (pip, about 10 s, and numba's compiling, which a lab would
otherwise do itself), not a second run of the labs. The run (tests/nobody_labs.py) goes on in
a thread beside the browser's labs when those run in the same session, whose clocks leave the
cores mostly idle; the tests here then read each lab's outcome.

What this run checks is the path without root (loopback, or a note of what needs root), not
quick mode's measurements, which the root run (tests/test_browser_lab.py) makes in full: where
quick mode spends long on measuring, this run gives smaller values (``wirelab report -p``, set
after the quick-mode cell), the same code paths with fewer or shorter runs.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from nobody_labs import NOBODY, run_as_nobody

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
TOOLS = [t for t in ("unshare", "setpriv", "mount") if not shutil.which(t)]

pytestmark = [
    pytest.mark.notebook,
    pytest.mark.skipif(os.geteuid() != 0, reason="already unprivileged: tests/test_notebooks.py is this run"),
    pytest.mark.skipif(bool(TOOLS), reason=f"needs {', '.join(TOOLS)} (util-linux, mount)"),
]


@pytest.fixture(scope="module")
def workspace(labs_without_root):
    """A copy of the labs that nobody owns, installed as the course image installs it."""
    return labs_without_root.workspace()


def test_nobody_has_no_privileges_but_has_the_kit(workspace):
    done = run_as_nobody(workspace, ["python", "-c", "import os, wirelab; from wirelab.link import "
                                     "capabilities; print(os.geteuid(), wirelab.__file__); "
                                     "print(capabilities().describe())"], timeout=120)
    assert done.returncode == 0, done.stderr
    uid, where = done.stdout.splitlines()[0].split()
    assert int(uid) == NOBODY and where.startswith(str(workspace / "lib"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_without_root(labs_without_root, workspace, path):
    done = labs_without_root.outcome(path)
    assert done.returncode == 0, f"as nobody: {done.stderr.strip()[-2000:]}"
    executed = json.loads((workspace / "reports" / path.name).read_text())
    outputs = [o for c in executed["cells"] for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "a lab shows at least one figure"
    text = "\n".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    if path.name.startswith("04-"):
        assert "no live capture here" in text            # it says so, and reads the committed captures
    if path.name.startswith(("03-", "05-")):
        assert "loopback" in text                        # the backend a student without root gets
