"""The labs as a student without root runs them: a copy nobody owns, installed as the course
image installs it, each notebook through ``wirelab report`` as nobody (tests/unprivileged.py).

``LabsWithoutRoot`` runs the selected notebooks one after another in a thread, so the run can
go beside the browser's (tests/test_browser_lab.py): measured, the root labs leave the two cores
70-80 % idle (they wait on emulated links' clocks: notebook 03 kept the machine 20 % busy, 08
32 %), and this run then costs the suite little time. The browser's labs that judge their own
measurements (``check_residuals``, ``check_expected``) wait until this run has ended
(``wait_done``), so nothing they judge shares the cores with it; tests/test_notebooks_unprivileged.py
reads each notebook's outcome (``outcome``) and waits for it if it is not there yet.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534
#: a lab's worth of time as nobody with the smaller values: under a minute; the course image's install
NOTEBOOK_TIMEOUT_S = 900
#: per lab: smaller values for this run (each still takes every branch the lab has without root)
SMALLER = {
    "01": {"CABLE_TIME": "1s", "FTTC_TIME": "1s", "SIZES": [1472, 1473]},
    "03": {"REPETITIONS": 1, "RATES": ["10mbit"], "DELAYS": ["60ms"]},
    "05": {"REPS": 2, "MAX_REPS": 2, "DELAYS": ["0", "1ms"]},
    "07": {"PACKETS": [1400], "OFFERED": ["1MB/s", "1000MB/s"], "BUFFER_PACKETS": [1500], "SNDBUFS": [163840],
           "BURST": {1400: [10000000]}, "DELAY_PACKETS": [1400], "ECHO_ROUNDS": 100, "TICK_PACKETS": [65000],
           "TICK_OFFERED": ["10MB/s"]},
    "08": {"SECONDS": 1, "WINDOWS": [10000], "LENGTHS": ["128KiB"], "RATES": ["10mbit"], "DELAYS": ["50ms"],
           "BDP_WINDOWS": [9000]},
    "10": {"RATES": ["80mbit"], "RATE_FILE": "10KB", "PACKET_FILE": "10KB", "FILE_SIZES": ["20KB"]},
}


def judges_itself(notebook: Path) -> bool:
    """Whether a lab fails on its own measurements (a ``check_`` call raises when they miss)."""
    return "check_residuals(" in notebook.read_text() or "check_expected(" in notebook.read_text()


def make_workspace(ws: Path) -> Path:
    """A copy of the labs (library, notebooks, captures, reference data) that nobody owns,
    installed by nobody with the course image's ``.binder/postBuild``."""
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
    done = run_as_nobody(ws, [str(ws / ".binder" / "postBuild")], timeout=NOTEBOOK_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"postBuild as nobody: {done.stderr.strip()[-2000:]}")
    return ws                          # under pytest's 0700 temp root: run_as_nobody exposes it


def _fresh_venv(venv: Path) -> None:
    """A new venv that sees the suite's packages (not its wirelab: a .pth adds the folder only, whose
    own .pth files, the editable wirelab's among them, are not read) and has no wirelab of its own."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    site = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    mine = next((venv / "lib").glob("python*/site-packages"))
    (mine / "suite-packages.pth").write_text(f"{site}\n")


def nobody_argv(ws: Path, argv: list[str]) -> list[str]:
    """``argv`` as nobody in ``ws``, its ``python`` the course image's venv (``ws/venv``)."""
    env = {"HOME": str(ws / "home"), "LANG": "C.UTF-8",
           # the suite's Jupyter data (nbconvert's templates, the kernel spec), as its packages: a .pth
           "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter"),
           "PATH": os.pathsep.join([str(ws / "venv" / "bin"), "/usr/local/bin", "/usr/bin", "/bin",
                                    "/usr/sbin", "/sbin"])}
    expose = [sys.prefix, sys.base_prefix, str(ws)]
    return ["unshare", "--mount", "--propagation", "private", "--", sys.executable,
            str(ROOT / "tests" / "unprivileged.py"), *[f"--expose={p}" for p in expose], "--",
            "env", "-i", *[f"{k}={v}" for k, v in env.items()], *argv]


def run_as_nobody(ws: Path, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(nobody_argv(ws, argv), capture_output=True, text=True, timeout=timeout, cwd=ws)


def report_argv(ws: Path, notebook: Path) -> list[str]:
    smaller = [arg for name, value in SMALLER.get(notebook.name[:2], {}).items() for arg in ("-p", name, repr(value))]
    return ["python", "-m", "wirelab", "report", str(ws / "notebooks" / notebook.name),
            "--out", str(ws / "reports"), *smaller]


class LabsWithoutRoot:
    """``notebooks`` run as nobody, in order, in one thread (see the module docstring)."""

    def __init__(self, base: Path, notebooks: list[Path]):
        self.ws = base / "ws"
        self.notebooks = list(notebooks)
        self.ready, self.done = threading.Event(), threading.Event()
        self.finished = {p.name: threading.Event() for p in self.notebooks}
        self.outcomes: dict[str, subprocess.CompletedProcess | BaseException] = {}
        self.setup_error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._running: subprocess.Popen | None = None
        self._stopping = threading.Event()

    def start(self) -> "LabsWithoutRoot":
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="labs-without-root", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        try:
            make_workspace(self.ws)
        except BaseException as err:       # reported by every test that needs the workspace
            self.setup_error = err
        finally:
            self.ready.set()
        for notebook in self.notebooks:
            if self.setup_error is None and not self._stopping.is_set():
                try:
                    self.outcomes[notebook.name] = self._nobody(report_argv(self.ws, notebook))
                except BaseException as err:
                    self.outcomes[notebook.name] = err
            self.finished[notebook.name].set()
        self.done.set()

    def _nobody(self, argv: list[str]) -> subprocess.CompletedProcess:
        # a session of its own: stop() ends the report, its kernel and its links together
        with subprocess.Popen(nobody_argv(self.ws, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=self.ws, start_new_session=True) as proc:
            self._running = proc
            try:
                out, err = proc.communicate(timeout=NOTEBOOK_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._end(proc)
                raise
            finally:
                self._running = None
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    @staticmethod
    def _end(proc: subprocess.Popen) -> None:
        for sig, grace in ((signal.SIGINT, 10), (signal.SIGKILL, 10)):   # Ctrl-C first: the kit cleans up
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(grace)
                return
            except subprocess.TimeoutExpired:
                continue

    def workspace(self) -> Path:
        """The workspace, once made (its making bounded by the postBuild's timeout)."""
        self.start()
        if not self.ready.wait(2 * NOTEBOOK_TIMEOUT_S):
            raise TimeoutError("the workspace for nobody was not made in time")
        if self.setup_error is not None:
            raise self.setup_error
        return self.ws

    def outcome(self, notebook: Path) -> subprocess.CompletedProcess:
        """How ``wirelab report`` as nobody ended for ``notebook`` (waits for it: at most its timeout
        once the labs before it have run)."""
        self.workspace()
        if not self.finished[notebook.name].wait(NOTEBOOK_TIMEOUT_S + 60):
            raise TimeoutError(f"{notebook.name} as nobody did not end within {NOTEBOOK_TIMEOUT_S} s")
        outcome = self.outcomes.get(notebook.name)
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome is None:
            raise RuntimeError(f"{notebook.name} as nobody was not run (the run was stopped)")
        return outcome

    def wait_done(self, timeout: float) -> bool:
        """Wait until every lab has run (or the run was never started): True when it has."""
        return self._thread is None or self.done.wait(timeout)

    def stop(self) -> None:
        """End the run (the session is over, or Ctrl-C): the lab running now is interrupted."""
        self._stopping.set()
        if self._running is not None:
            self._end(self._running)
        if self._thread is not None:
            self._thread.join(60)
