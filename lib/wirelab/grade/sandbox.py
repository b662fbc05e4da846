"""Who a submission's programs run as, their limits, and a sure end.

Each submission being graded gets a user id of its own (``UidLease``: a uid
from 61000–61999 with no passwd entry, held with a lock file so parallel
graders never share one). Inside its sandbox (``jail.py``) a program starts as

    setpriv --reuid U --regid U --clear-groups --no-new-privs --bounding-set=-all --inh-caps=-all \\
        prlimit --cpu=.. --fsize=.. --nproc=.. --nofile=.. --core=0 -- nice -n 19 <program> ...

* an unprivileged uid with no capabilities, because RLIMIT_NPROC does not
  bind root, and because ``kill -KILL -1`` run as that uid then ends every
  process it made, even ones that left their process group (a fork bomb
  cannot hide);
* setrlimit limits (CPU seconds, file size — stdout included, so a flood
  stops at the limit —, process count, open files, no core dumps); memory is
  bounded by a cgroup (``cgroups.py``), and by RLIMIT_AS (``--as``) only
  where no cgroup can be made;
* the lowest priority (nice 19), so the grader's own peers keep their timing
  even while another submission's fork bomb or busy loop runs beside them
  (a correct program needs little CPU: it mostly waits for packets).

``stop()`` kills the program's process group, then everything the uid owns,
then removes its cgroup.
"""
from __future__ import annotations

import fcntl
import os
import pwd
import signal
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import NeedsRootError, SetupError
from . import cgroups, disk

if TYPE_CHECKING:                  # (annotations only: catalogue sits above the sandbox)
    from .catalogue import Limits

__all__ = ["UidLease", "Program", "limit_argv", "kill_uid", "processes_of", "processes_by_uid", "try_lock"]

UID_RANGE = range(61000, 62000)
LOCK_DIR = Path("/run/wirelab")


class UidLease:
    """An unused uid, held (flock) until ``release()``."""

    def __init__(self):
        if os.geteuid() != 0:
            raise NeedsRootError("grading (network namespaces and a user id per submission)", "run with sudo")
        for uid in UID_RANGE:
            if _has_passwd_entry(uid):
                continue
            fd = try_lock(uid)
            if fd is None:
                continue
            self.uid, self._fd = uid, fd
            kill_uid(uid)                        # whatever a killed grader left behind
            cgroups.reap(uid)
            disk.reap(uid)
            return
        raise SetupError("no free user id for a submission in 61000-61999", "finish other gradings first")

    def release(self) -> None:
        if self._fd is not None:
            kill_uid(self.uid)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "UidLease":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def try_lock(uid: int) -> int | None:
    """The lease lock of ``uid`` (an open fd: closing it releases), or None while a grading holds it."""
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_DIR / f"grade-uid-{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _has_passwd_entry(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def limit_argv(uid: int, limits: Limits, *, processes: int | None = None, cpu_s: int | None = None,
               address_space: bool = False) -> list[str]:
    """The argv prefix that drops to ``uid`` and applies ``limits`` (see the module docstring);
    ``address_space`` adds RLIMIT_AS, the fallback where no cgroup bounds memory."""
    cpu = int(cpu_s or limits.cpu_s)
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
            "--bounding-set=-all", "--inh-caps=-all",
            "prlimit", f"--cpu={cpu}:{cpu + 1}", *([f"--as={limits.memory_bytes}"] if address_space else []),
            f"--fsize={limits.file_size_bytes}", f"--nproc={processes or limits.processes}",
            f"--nofile={limits.open_files}", "--core=0", "--", "nice", "-n", "19"]


def processes_of(uid: int) -> list[int]:
    """Live pids whose real uid is ``uid`` (from /proc; zombies are dead already and left out)."""
    return processes_by_uid({uid}).get(uid, [])


def processes_by_uid(uids) -> dict[int, list[int]]:
    """Live pids whose real uid is in ``uids``, by uid."""
    found: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines()
                          if line.startswith(("State:", "Uid:")))
            uid = int(fields["Uid"].split()[0])
            if uid in uids and not fields["State"].strip().startswith("Z"):
                found.setdefault(uid, []).append(int(entry.name))
        except (OSError, ValueError, KeyError):
            continue
    return found


def kill_uid(uid: int, *, timeout_s: float = 5.0) -> bool:
    """SIGKILL every process of ``uid`` (kill -1 as that uid: race-free against forks); True when none is left."""
    deadline = time.monotonic() + timeout_s
    while processes_of(uid):
        if time.monotonic() > deadline:
            return False
        try:
            subprocess.run(["kill", "-KILL", "-1"], user=uid, group=uid, extra_groups=[],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=5)
        except (OSError, subprocess.SubprocessError):
            for pid in processes_of(uid):         # kill(1) could not even start (pids exhausted)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.01)                           # let the kernel reap before counting again
    return True


class Program:
    """One started program of a submission: its process, output files and end."""

    def __init__(self, name: str, argv: list[str], popen: subprocess.Popen, stdout: Path, stderr: Path,
                 cgroup: "cgroups.Cgroup | None" = None, wrapped: bool = False):
        self.name, self.argv, self.proc, self.cgroup, self.wrapped = name, argv, popen, cgroup, wrapped
        self.stdout_path, self.stderr_path = stdout, stderr
        self.started = time.monotonic()
        self.ended: float | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        code = self.proc.poll()
        if code is not None and self.ended is None:
            self.ended = time.monotonic()
        return code

    def wait(self, timeout: float) -> int | None:
        """The exit status, or None if it still runs after ``timeout`` seconds."""
        try:
            self.proc.wait(max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            return None
        return self.poll()

    @property
    def runtime_s(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def stop(self) -> None:
        """Kill its process group (children included), reap it, remove its cgroup (what is left inside dies)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self.poll()
        if self.cgroup is not None:
            self.cgroup.remove()

    def stdout_size(self) -> int:
        return self.stdout_path.stat().st_size if self.stdout_path.exists() else 0

    def stderr_tail(self, limit: int = 300) -> str:
        try:
            with open(self.stderr_path, "rb") as f:
                f.seek(max(self.stderr_path.stat().st_size - limit, 0))
                text = f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return " / ".join(line.strip() for line in text.splitlines() if line.strip())[-limit:]

    def describe_exit(self) -> str:
        """'exited with status 1', 'was killed by SIGXFSZ (...)' or 'is still running'. Behind a launcher
        (flock, bwrap) a signal reaches us as status 128 + its number, as a shell reports it."""
        code = self.poll()
        if code is None:
            return "is still running"
        number = -code if code < 0 else code - 128 if self.wrapped and code > 128 else None
        if number not in signal.Signals._value2member_map_:
            return f"exited with status {code}"
        sig = signal.Signals(number).name
        why = {"SIGXFSZ": " (file size limit: it wrote too much, e.g. to stdout)",
               "SIGXCPU": " (CPU time limit)", "SIGKILL": " (killed)", "SIGSEGV": " (segmentation fault)"}
        if sig == "SIGKILL" and self.cgroup is not None and self.cgroup.oom_kills():
            why["SIGKILL"] = " (out of memory: its memory limit was reached)"
        return (f"was killed by {sig}{why.get(sig, '')}" if code < 0
                else f"ended with status {code}, killed by {sig}{why.get(sig, '')}")
