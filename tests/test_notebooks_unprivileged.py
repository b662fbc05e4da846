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
otherwise do itself), not a second run of the labs.

What this run checks is the path without root (loopback, or a note of what needs root), not
quick mode's measurements, which the root run (tests/test_browser_lab.py) makes in full: where
quick mode spends long on measuring, this run gives smaller values (``wirelab report -p``, set
after the quick-mode cell), the same code paths with fewer or shorter runs.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
NOBODY = 65534
TOOLS = [t for t in ("unshare", "setpriv", "mount") if not shutil.which(t)]
#: per lab: smaller values for this run (each still takes every branch the lab has without root)
SMALLER = {
    "01": {"CABLE_TIME": "1s", "FTTC_TIME": "1s", "SIZES": [1472, 1473]},
    "03": {"REPETITIONS": 1, "RATES": ["10mbit"], "DELAYS": ["60ms"]},
    "05": {"REPS": 2, "MAX_REPS": 2, "DELAYS": ["0", "1ms"]},
    "07": {"PACKETS": [1400], "OFFERED": ["1MB/s", "1000MB/s"], "BUFFER_PACKETS": [1500], "SNDBUFS": [163840],
           "BURST": {1400: [10000000]}, "DELAY_PACKETS": [1400], "ECHO_ROUNDS": 100, "TICK_PACKETS": [65000],
           "TICK_OFFERED": ["10MB/s"]},
    "08": {"SECONDS": 1, "WINDOWS": [10000], "LENGTHS": ["128KiB"], "RATES": ["10mbit"], "DELAYS": ["25ms"],
           "BDP_WINDOWS": [9000]},
    "10": {"RATES": ["80mbit"], "RATE_FILE": "10KB", "PACKET_FILE": "10KB", "FILE_SIZES": ["20KB"]},
}

pytestmark = [
    pytest.mark.notebook,
    pytest.mark.skipif(os.geteuid() != 0, reason="already unprivileged: tests/test_notebooks.py is this run"),
    pytest.mark.skipif(bool(TOOLS), reason=f"needs {', '.join(TOOLS)} (util-linux, mount)"),
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A copy of the labs (library, notebooks, captures, reference data) that nobody owns."""
    base = tmp_path_factory.mktemp("unprivileged")
    ws = base / "ws"
    shutil.copytree(ROOT / "lib", ws / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "notebooks", ws / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(ROOT / "captures", ws / "captures")
    # the data a lab reads (reference tables, the example class), not the runs saved here
    shutil.copytree(ROOT / "data", ws / "data", ignore=lambda folder, names:
                    ["runs"] if Path(folder) == ROOT / "data" else [])
    for name in ("pyproject.toml", "README.md", ".binder"):          # what the course image's install reads
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy2)(ROOT / name, ws / name)
    for folder in (ws / "data" / "runs", ws / "home", ws / "reports"):
        folder.mkdir(parents=True)
    _fresh_venv(ws / "venv")
    for path in [ws, *ws.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    done = run_as_nobody(ws, [str(ws / ".binder" / "postBuild")], timeout=900)
    assert done.returncode == 0, f"postBuild as nobody: {done.stderr.strip()[-2000:]}"
    return ws                          # under pytest's 0700 temp root: run_as_nobody exposes it


def _fresh_venv(venv: Path) -> None:
    """A new venv that sees the suite's packages (not its wirelab: a .pth adds the folder only, whose
    own .pth files, the editable wirelab's among them, are not read) and has no wirelab of its own."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    site = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    mine = next((venv / "lib").glob("python*/site-packages"))
    (mine / "suite-packages.pth").write_text(f"{site}\n")


def run_as_nobody(ws: Path, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``argv`` as nobody in ``ws``, its ``python`` the course image's venv (``ws/venv``)."""
    env = {"HOME": str(ws / "home"), "LANG": "C.UTF-8",
           # the suite's Jupyter data (nbconvert's templates, the kernel spec), as its packages: a .pth
           "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter"),
           "PATH": os.pathsep.join([str(ws / "venv" / "bin"), "/usr/local/bin", "/usr/bin", "/bin",
                                    "/usr/sbin", "/sbin"])}
    expose = [sys.prefix, sys.base_prefix, str(ws)]
    command = ["unshare", "--mount", "--propagation", "private", "--", sys.executable,
               str(ROOT / "tests" / "unprivileged.py"), *[f"--expose={p}" for p in expose], "--",
               "env", "-i", *[f"{k}={v}" for k, v in env.items()], *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ws)


def test_nobody_has_no_privileges_but_has_the_kit(workspace):
    done = run_as_nobody(workspace, ["python", "-c", "import os, wirelab; from wirelab.link import "
                                     "capabilities; print(os.geteuid(), wirelab.__file__); "
                                     "print(capabilities().describe())"], timeout=120)
    assert done.returncode == 0, done.stderr
    uid, where = done.stdout.splitlines()[0].split()
    assert int(uid) == NOBODY and where.startswith(str(workspace / "lib"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_without_root(workspace, path):
    notebook = workspace / "notebooks" / path.name
    smaller = [arg for name, value in SMALLER.get(path.name[:2], {}).items() for arg in ("-p", name, repr(value))]
    done = run_as_nobody(workspace, ["python", "-m", "wirelab", "report", str(notebook),
                                     "--out", str(workspace / "reports"), *smaller], timeout=900)
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
