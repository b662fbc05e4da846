"""Cleanup is a guarantee: names that say who owns them, and a reaper.

Every testbed is called ``wl-<name>-<pid>`` where ``pid`` is the process that
owns it (a notebook kernel, a test, or the ``wirelab testbed up`` keeper);
its namespaces are ``wl-<name>-<pid>-<host>`` (and ``-wire`` for the
userspace link). Veths, qdiscs and iptables rules all live *inside* those
namespaces, so deleting the namespaces deletes them too; processes inside are
killed first. A state file (``/run/wirelab/<id>.json``) remembers the owner's
start time, so a recycled pid is not mistaken for a live owner.

``reap()`` removes testbeds whose owner is gone (every new testbed calls it);
``remove_all()`` is ``wirelab testbed down --all``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from .netns import is_root, list_namespaces, namespace_pids, run
from . import commands

__all__ = ["PREFIX", "name_of", "testbed_id", "parse_namespace", "state_dir", "read_states", "write_state",
           "owner_alive", "process_start", "exited", "testbeds", "reap", "remove", "remove_all", "stop_process",
           "interrupt_in", "interrupt_once"]

PREFIX = "wl-"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,23}$")
_NS = re.compile(r"^wl-(?P<name>.+)-(?P<pid>\d+)-(?P<host>[a-z0-9]+)$")
#: Command-line marks of our own processes (checked before any kill by pid).
OURS = ("wirelab.link.", "wirelab testbed")


def valid_name(name: str) -> bool:
    return bool(_NAME.match(name))


def testbed_id(name: str, pid: int) -> str:
    return f"{PREFIX}{name}-{pid}"


def name_of(tid: str) -> str:
    """``wl-demo-1-1234`` → ``demo-1``: the name a testbed was given."""
    parsed = parse_namespace(tid + "-x")
    return parsed[0][len(PREFIX):].rsplit("-", 1)[0] if parsed else tid


def parse_namespace(ns: str) -> tuple[str, int, str] | None:
    """``wl-demo-1234-a`` → (``wl-demo-1234``, 1234, ``a``); ``None`` if not ours."""
    match = _NS.match(ns)
    if not match:
        return None
    return f"{PREFIX}{match['name']}-{match['pid']}", int(match["pid"]), match["host"]


def state_dir() -> Path:
    if is_root():
        return Path("/run/wirelab")
    base = os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/wirelab-{os.getuid()}"
    return Path(base) / "wirelab"


def write_state(state: dict) -> Path:
    path = state_dir() / f"{state['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(path)
    return path


def read_states() -> dict[str, dict]:
    states = {}
    folder = state_dir()
    for path in sorted(folder.glob(f"{PREFIX}*.json")) if folder.is_dir() else []:
        try:
            states[path.stem] = json.loads(path.read_text())
        except (OSError, ValueError):
            states[path.stem] = {"id": path.stem}
    return states


def process_start(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), ``None`` if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def owner_alive(pid: int, start: int | None = None) -> bool:
    now = process_start(pid)
    return now is not None and (start is None or now == start)


def stop_process(pid: int, *, grace_s: float = 3.0, only_ours: bool = True) -> bool:
    """SIGTERM, then SIGKILL after ``grace_s``; with ``only_ours`` only kills a wirelab process."""
    if only_ours and not any(mark in _cmdline(pid) for mark in OURS):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if exited(pid):
            return True
        time.sleep(0.02)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True


def end_process(proc) -> None:
    """End a child we started (a ``subprocess.Popen``): SIGTERM, SIGKILL after 2 s, then
    close its pipes so no file descriptor outlives it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=2)
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()


def exited(pid: int) -> bool:
    """True once ``pid`` is gone or a zombie (dead, waiting for its parent to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def testbeds() -> dict[str, dict]:
    """Every testbed we can see, from namespaces and state files, with ``alive``."""
    found: dict[str, dict] = {}
    for ns in list_namespaces():
        parsed = parse_namespace(ns)
        if parsed:
            tid, pid, _ = parsed
            found.setdefault(tid, {"id": tid, "owner": pid, "namespaces": []})["namespaces"].append(ns)
    for tid, state in read_states().items():
        entry = found.setdefault(tid, {"id": tid, "namespaces": []})
        entry.update({k: v for k, v in state.items() if k != "namespaces"})
        entry["state"] = True
    for entry in found.values():
        owner = entry.get("owner") or (parse_namespace(entry["id"] + "-x") or (0, 0))[1]
        entry["alive"] = bool(owner) and owner_alive(owner, entry.get("owner_start"))
    return found


def remove(entry: dict, *, log: list[str] | None = None) -> list[str]:
    """Tear one testbed down completely: its link process, every process in its
    namespaces, the namespaces (and with them veths, qdiscs, iptables rules), its scratch
    folder in the temporary directory, the state."""
    problems = []
    if entry.get("link_pid"):
        stop_process(entry["link_pid"])
    namespaces = sorted(set(entry.get("namespaces", [])) | set(entry.get("all_namespaces", [])))
    present = set(list_namespaces())
    for ns in namespaces:
        if ns in present:
            for pid in namespace_pids(ns):
                if pid != os.getpid():
                    stop_process(pid, grace_s=1.0, only_ours=False)
    for ns in namespaces:
        if ns in present:
            done = run(commands.netns_del(ns), log=log, check=False)
            if done.returncode != 0:
                problems.append(f"{ns}: {done.stderr.strip()}")
    scratch = Path(entry.get("scratch") or "/")
    if scratch.parent == Path(tempfile.gettempdir()) and scratch.name.startswith("wirelab-"):
        shutil.rmtree(scratch, ignore_errors=True)     # a room's folder (world-writable) outlives a killed owner
    path = state_dir() / f"{entry['id']}.json"
    path.unlink(missing_ok=True)
    return problems


def reap(*, log: list[str] | None = None) -> list[str]:
    """Remove every testbed whose owner process is gone; returns their ids."""
    stale = [e for e in testbeds().values() if not e["alive"]]
    for entry in stale:
        remove(entry, log=log)
    return [e["id"] for e in stale]


def remove_all(*, log: list[str] | None = None) -> list[str]:
    """Everything wirelab ever made on this machine: keepers, link processes, testbeds."""
    entries = list(testbeds().values())
    for entry in entries:
        if entry.get("keeper_pid"):
            stop_process(entry["keeper_pid"])
        remove(entry, log=log)
    for pid_dir in Path("/proc").iterdir():   # stray link processes whose testbed is gone
        if pid_dir.name.isdigit() and int(pid_dir.name) != os.getpid():
            line = _cmdline(int(pid_dir.name))
            if "wirelab.link.userspace" in line or "wirelab.link.keeper" in line:
                stop_process(int(pid_dir.name))
    return [e["id"] for e in entries]


def interrupt_in(owner_pid: int):
    """A SIGTERM/SIGHUP handler that raises KeyboardInterrupt in process ``owner_pid`` only, so
    that `kill` cleans up as Ctrl-C does. A copy of that process made by fork keeps the handler:
    pyroute2 reads a namespace in such a copy and ends it with SIGTERM, and raising there would
    unwind the copy's duplicate of our stack, whose cleanup removes what the original still
    uses. In a copy the signal does what it does by default: the copy ends."""
    def handler(signum, frame):
        if os.getpid() != owner_pid:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise KeyboardInterrupt(f"signal {signum}")
    return handler


def interrupt_once(signum, frame):
    """A SIGINT/SIGTERM handler that raises KeyboardInterrupt for the first signal and ignores
    every later one, for a process whose only job after an interrupt is to clean up and end (a
    grading worker). Ctrl-C in a terminal reaches such a worker twice: from the terminal and
    again from its parent passing the interrupt on. A second KeyboardInterrupt in the middle of
    the first one's cleanup would skip the rest of it and leave namespaces behind."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt(f"signal {signum}")
