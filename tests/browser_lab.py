"""JupyterLab in a real browser for the tests: a server the test starts (127.0.0.1, a free
port, a token, its own config/workspace folders) and Debian's chromium driven by Playwright.

Playwright's own browser download is not used (not reachable here): we launch the system
``/usr/bin/chromium`` with the flags that keep it quiet on a closed network. The lab is
started with ``expose_app_in_browser`` so the test can run JupyterLab commands
(``notebook:run-all-cells``) and read the notebook model instead of scraping pixels for text.
"""
from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

CHROMIUM = os.environ.get("WIRELAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-default-apps", "--disable-extensions",
                 "--metrics-recording-only", "--no-default-browser-check"]


def missing() -> str | None:
    """Why a browser test cannot run here (None when it can)."""
    if not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM} (make setup installs it: apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[dev]')"
    return None


def launch(playwright):
    """Debian's chromium, headless; as root it needs --no-sandbox."""
    args = CHROMIUM_ARGS + (["--no-sandbox"] if os.geteuid() == 0 else [])
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class JupyterLab:
    """``with JupyterLab(root) as lab:`` a JupyterLab server on 127.0.0.1 serving ``root``."""

    def __init__(self, root: Path, *, state: Path, env: dict | None = None, start_timeout: float = 90):
        self.root, self.state, self.start_timeout = Path(root), Path(state), start_timeout
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = dict(env or os.environ)
        self.proc: subprocess.Popen | None = None

    def start(self) -> "JupyterLab":
        config = self.state / "config"
        config.mkdir(parents=True, exist_ok=True)
        # Our own config: no user settings, no announcements or update checks over the network.
        (config / "jupyter_server_config.json").write_text(json.dumps({
            "ServerApp": {"ip": "127.0.0.1", "port": self.port, "port_retries": 0, "open_browser": False,
                          "root_dir": str(self.root), "allow_root": True},
            "IdentityProvider": {"token": self.token},
            "LabApp": {"expose_app_in_browser": True, "news_url": None,
                       "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate",
                       "workspaces_dir": str(self.state / "workspaces"),
                       "user_settings_dir": str(self.state / "settings")}}))
        env = {**self.env, "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(self.state / "runtime")}
        self.log = open(self.state / "jupyterlab.log", "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "jupyterlab"], env=env, cwd=self.root,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited: {self.log_tail()}")
            try:
                self.api("GET", "/api/status", timeout=2)
                return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                try:
                    self.proc.wait(0.2)          # poll with a deadline; wakes at once if it died
                except subprocess.TimeoutExpired:
                    pass
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer within {self.start_timeout:g} s: {self.log_tail()}")

    def api(self, method: str, path: str, timeout: float = 10):
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            body = reply.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        for session in self.api("GET", "/api/sessions") or []:
            self.api("DELETE", f"/api/sessions/{session['id']}", timeout=30)

    def log_tail(self, lines: int = 15) -> str:
        path = self.state / "jupyterlab.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                self.shutdown_kernels()
            except Exception:  # noqa: BLE001 - the server is going away anyway
                pass
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if getattr(self, "log", None):
            self.log.close()

    def __enter__(self) -> "JupyterLab":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


KERNEL_IDLE = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return !!(k && k.status === 'idle' && w.content && w.content.widgets); }"""

RUN_ALL = """async (ms) => {
    const run = window.jupyterapp.commands.execute('notebook:run-all-cells').then(v => String(v));
    const late = new Promise(done => setTimeout(() => done('timeout'), ms));
    return await Promise.race([run, late]); }"""

ERRORS = """() => window.jupyterapp.shell.currentWidget.content.widgets.flatMap(cell =>
    cell.model.type !== 'code' ? [] : cell.model.outputs.toJSON()
        .filter(o => o.output_type === 'error').map(o => `${o.ename}: ${o.evalue}`))"""

UNRUN = """() => window.jupyterapp.shell.currentWidget.content.widgets.filter(cell =>
    cell.model.type === 'code' && cell.model.sharedModel.getSource().trim() !== ''
    && cell.model.executionCount === null).length"""


READY = """() => !!(window.jupyterapp && window.jupyterapp.commands.hasCommand('docmanager:open'))
    && !document.querySelector('.jp-Dialog')
    && !Array.from(window.jupyterapp.shell.widgets('main')).some(w => w.context)"""

OPEN = """async (path) => { await window.jupyterapp.restored;
    const widget = await window.jupyterapp.commands.execute('docmanager:open', {path: path, factory: 'Notebook'});
    window.jupyterapp.shell.activateById(widget.id); return widget.id; }"""

CLOSE = """() => { for (const w of Array.from(window.jupyterapp.shell.widgets('main'))) {
        if (w.context && w.context.model) { w.context.model.dirty = false; }   // closed unsaved, as page.close() did
        w.dispose(); }
    return true; }"""


def open_notebook(page, lab: JupyterLab, path: str, timeout_s: float = 120) -> None:
    """Open ``path`` (relative to the lab's root) in a notebook panel of its own with a new kernel;
    wait until the kernel is idle. The first time JupyterLab is loaded, in a fresh workspace
    (``?reset``); after that the same JupyterLab opens it, as a student opens one lab after
    another (loading the app again cost 4 to 6 s a notebook on two busy cores). A page left
    with a dialog or a document open (a test that failed midway) is loaded afresh."""
    if page.evaluate(READY):
        page.evaluate(OPEN, path)
    else:
        page.goto(f"{lab.url}/lab/tree/{path}?reset&token={lab.token}")
    page.wait_for_function(KERNEL_IDLE, timeout=timeout_s * 1000, polling=250)


def close_notebooks(page) -> None:
    """Close every document panel without saving (the next test opens its own)."""
    try:
        page.evaluate(CLOSE)
    except Exception:  # noqa: BLE001 - no app there (never loaded, or crashed): the next open reloads it
        pass


def run_all(page, timeout_s: float) -> str:
    """Run every cell (Run → Run All Cells); "true" when all ran without error."""
    return page.evaluate(RUN_ALL, timeout_s * 1000)


def error_outputs(page) -> list[str]:
    return page.evaluate(ERRORS)


def executed_notebook(page) -> dict:
    """The open notebook's outputs, cell by cell, as nbformat has them (what papermill would save)."""
    return {"cells": [{"outputs": outputs} for outputs in page.evaluate(OUTPUTS)]}


OUTPUTS = """() => window.jupyterapp.shell.currentWidget.content.widgets
    .map(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])"""


def unrun_cells(page) -> int:
    return page.evaluate(UNRUN)


IN_KERNEL = """async (code) => {
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    const future = kernel.requestExecute({code: code, silent: false, store_history: false});
    let out = "", error = null;
    future.onIOPub = msg => {
        if (msg.header.msg_type === 'stream') out += msg.content.text;
        if (msg.header.msg_type === 'error') error = msg.content.ename + ': ' + msg.content.evalue; };
    await future.done;
    if (error) throw new Error(error);
    return out; }"""


def in_kernel(page, code: str) -> str:
    """Run ``code`` in the open notebook's kernel (not as a cell); its printed output."""
    return page.evaluate(IN_KERNEL, code)


def descendants(pid: int) -> list[tuple[int, str, str]]:
    """(pid, name, state) of every process below ``pid`` (zombies included), from /proc."""
    children: dict[int, list[int]] = {}
    info = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        head, rest = text.split(" (", 1)
        name, fields = rest.rsplit(") ", 1)
        state, ppid = fields.split()[:2]
        children.setdefault(int(ppid), []).append(int(head))
        info[int(head)] = (name, state)
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append((child, *info[child]))
            todo.append(child)
    return out


def copy_tree(source: Path, target: Path) -> None:
    shutil.copytree(source, target, dirs_exist_ok=True)
