"""Each program of a submission, and its build, in a bubblewrap sandbox of its own.

Why bubblewrap: it is packaged by Debian (``bubblewrap``), small, audited as
Flatpak's sandbox, needs no daemon and no setuid bit when root runs it, and
takes the whole sandbox on its command line, so ``bwrap_argv`` is a pure
function tested without root. nsjail would also fit (it even sets cgroups
itself) but is not in Debian 12; firejail is setuid and driven by profiles
made for desktop programs.

A program of a submission starts as (``Jail.start``)::

    [ip netns exec <host>] flock --close <lock> bwrap <view> -- setpriv <uid> prlimit <limits> -- nice -n 19 <program>

* ``flock``: the grader holds ``<lock>`` while it moves the new process into
  the program's cgroup (``cgroups.py``: resident memory, no swap, pids);
  flock starts the rest only once the lock is free, so nothing of the
  submission ever runs outside its bounds;
* ``bwrap``, as root, gives new mount, pid, ipc, uts and cgroup namespaces
  and this view: the system folders (``/usr``, ``/etc`` and the ``/bin``,
  ``/lib*`` links) read-only; the submission's folder at ``/submission``
  (read-only while it is tested, writable for ``make``); its own working
  folder at ``/home/student``; private ``/tmp``, ``/var/tmp`` and ``/dev/shm``;
  a fresh ``/proc`` (its own processes only) and a minimal ``/dev``. Nothing
  else: not the class folder, the hidden tests, other submissions, the
  reports, ``/root``, ``/home``, ``/run`` (host sockets such as D-Bus's) or
  the host's ``/tmp`` (where pathname unix sockets live); the ``hide`` paths
  are covered even where they sit under a system folder. The network
  namespace is the testbed host's (``ip netns exec``, outside bwrap), whose
  abstract unix sockets are its own; ``make`` gets a new, empty one;
* ``setpriv``/``prlimit``/``nice`` (``sandbox.limit_argv``): the
  submission's own uid, CPU, file-size, process and open-file limits, no
  capabilities, the lowest priority.

Every folder it may write is on the submission's disk (``disk.py``), so the
total it writes is bounded. With ``trust`` (code the instructor trusts, or a
machine without bubblewrap, never silently) the same chain runs without
bwrap: host folders, the host's ``/tmp``; and where this machine cannot make
network namespaces (a course platform's container), ``make`` runs in the
grader's own network.
"""
from __future__ import annotations

import fcntl
import functools
import itertools
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import SetupError
from . import cgroups
from .catalogue import Limits
from .disk import Disk
from .machine import why_no_namespaces
from .sandbox import limit_argv

__all__ = ["Policy", "Jail", "bwrap_argv", "bwrap_version", "require_sandbox", "SUBMISSION", "HOME"]

SUBMISSION = "/submission"
HOME = "/home/student"
#: The launcher's own processes in a program's cgroup (flock, bwrap's monitor, its pid 1 and setup helper).
LAUNCHER_PIDS = 4
SYSTEM = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32")


@dataclass(frozen=True)
class Policy:
    """How submissions are run: ``trust`` runs them without bubblewrap (and, where this machine cannot
    mount one, without a disk of their own: disk.py); ``hide`` lists paths no program may see (the class
    folder, hidden tests, reports) even if they lie under a system folder; ``links``: the tests' links,
    ``namespaces`` or ``loopback`` (machine.py: on loopback the tests on shaped links are skipped)."""
    trust: bool = False
    hide: tuple[str, ...] = ()
    links: str = "namespaces"


#: How long to keep trying the sandbox's probe: creating network namespaces waits behind the
#: kernel's teardown of earlier ones, so on a busy machine one probe can take seconds or fail.
PROBE_S = 30.0


def bwrap_version() -> str | None:
    """'bubblewrap 0.8.0' when bwrap is installed and works here, else None (``bwrap_problem`` says why)."""
    try:
        return _bwrap_works()
    except _NoSandbox:
        return None


def bwrap_problem() -> str | None:
    """Why bwrap cannot sandbox here, or None when it can."""
    try:
        _bwrap_works()
    except _NoSandbox as why:
        return str(why)
    return None


class _NoSandbox(Exception):
    pass


@functools.lru_cache(maxsize=1)          # a working bwrap is remembered; a failure is tried again next time
def _bwrap_works() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise _NoSandbox("bwrap is not installed")
    probe = [path, "--unshare-pid", "--unshare-ipc", "--unshare-net", "--ro-bind", "/", "/",
             "--proc", "/proc", "--dev", "/dev", "--", "true"]
    deadline = time.monotonic() + PROBE_S
    while True:
        left = max(1.0, deadline - time.monotonic())
        try:
            version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=left)
            done = subprocess.run(probe, capture_output=True, text=True, timeout=left)
            if done.returncode == 0:
                return version.stdout.strip()
            why = f"its probe ended with {done.returncode}: {done.stderr.strip()[-300:]}"
        except subprocess.TimeoutExpired:
            why = f"its probe did not end within {left:.0f} s"
        except OSError as err:
            raise _NoSandbox(f"bwrap cannot be started: {err}") from None
        if time.monotonic() >= deadline:
            raise _NoSandbox(why)
        threading.Event().wait(0.5)      # a busy kernel, not a missing feature: try again shortly


def require_sandbox(policy: Policy) -> None:
    """Refuse untrusted code where bubblewrap is missing (a clear error, not a silent downgrade)."""
    problem = None if policy.trust else bwrap_problem()
    if problem is not None:
        raise SetupError(f"bubblewrap (bwrap) is not installed or cannot run here ({problem}), so submissions "
                         "cannot be sandboxed: they could read the class folder, the hidden tests and each other",
                         "run `make setup` (or `sudo apt-get install bubblewrap`); or, only for code you "
                         "trust, grade without a sandbox: wirelab grade --trust")


@functools.lru_cache(maxsize=1)
def _system() -> tuple[tuple[str, str], ...]:
    """The host's system folders as (kind, value): ('dir', '/usr') or ('link', '/bin=usr/bin')."""
    found = []
    for name in SYSTEM:
        path = Path("/") / name
        if path.is_symlink():
            found.append(("link", f"{path}={os.readlink(path)}"))
        elif path.is_dir():
            found.append(("dir", str(path)))
    return tuple(found)


def bwrap_argv(system, *, home: Path, tmp: Path, var_tmp: Path, shm: Path, submission: Path, network: bool,
               writable_submission: bool = False, hide: tuple[str, ...] = ()) -> list[str]:
    """The bwrap command line (up to ``--``) for one program; host folders in, the sandbox's view out."""
    argv = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "ppcb"]
    if not network:
        argv.append("--unshare-net")
    roots = []
    for kind, value in system:
        if kind == "link":
            where, target = value.split("=", 1)
            argv += ["--symlink", target, where]
        else:
            argv += ["--ro-bind", value, value]
            roots.append(value)
    argv += ["--proc", "/proc", "--dev", "/dev", "--bind", str(shm), "/dev/shm", "--bind", str(tmp), "/tmp",
             "--perms", "0755", "--dir", "/var", "--bind", str(var_tmp), "/var/tmp",
             "--bind" if writable_submission else "--ro-bind", str(submission), SUBMISSION,
             "--perms", "0755", "--dir", "/home", "--bind", str(home), HOME,
             "--chdir", SUBMISSION if writable_submission else HOME]
    for path in sorted(set(hide)):
        if Path(path).exists() and any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots):
            argv += ["--tmpfs", path] if Path(path).is_dir() else ["--ro-bind", "/dev/null", path]
    return argv + ["--"]


_launches = itertools.count()


@functools.lru_cache(maxsize=1)
def _own_network() -> bool:
    """Can a program be given a network namespace of its own here (``unshare --net``)?"""
    return why_no_namespaces() is None


class Jail:
    """One submission's confinement: its disk, its cgroups, and how its programs start (see the docstring)."""

    def __init__(self, uid: int, limits: Limits, scratch: Path, policy: Policy = Policy()):
        require_sandbox(policy)
        self.uid, self.limits, self.policy, self.scratch = uid, limits, policy, Path(scratch)
        self.sandboxed = not policy.trust
        self.controllers, self.no_cgroup = cgroups.detect()
        self.disk = Disk(self.scratch / "disk", uid, limits.disk_bytes, required=not policy.trust)
        self.submission_dir = self.disk.path / "submission"     # laid out by submission.prepare
        (self.scratch / "locks").mkdir(exist_ok=True)
        self._cgroups: list[cgroups.Cgroup] = []

    # -- paths as the program sees them --------------------------------------------------
    def program(self, name: str) -> str:
        return f"{SUBMISSION}/{name}" if self.sandboxed else str(self.submission_dir / name)

    # -- starting ------------------------------------------------------------------------
    def start(self, argv: list[str], *, key: str, popen=subprocess.Popen, network: bool = True,
              build: bool = False, env: dict | None = None, **kwargs) -> tuple[subprocess.Popen, "cgroups.Cgroup | None"]:
        """Start ``argv`` (its first item a program path from ``program()``, or a command like ``make``)
        confined; ``popen(full_argv, **kwargs)`` starts it (a testbed host's, or plain Popen).
        ``key`` names the folder its files go to (cleared by ``clear(key)``)."""
        if not self.submission_dir.exists():            # nothing laid out (yet): an empty folder to show
            self.disk.folder("submission")
        run = self.disk.folder("runs", key, str(next(_launches)))
        home, tmp, var_tmp, shm = (self.disk.folder("runs", key, run.name, part)
                                   for part in ("home", "tmp", "var-tmp", "shm"))
        processes = max(self.limits.processes, 64) if build else self.limits.processes
        cpu_s = int(self.limits.build_s) if build else None
        inner = limit_argv(self.uid, self.limits, processes=processes, cpu_s=cpu_s,
                           address_space=self.controllers is None)
        env = dict(env or {})
        if self.sandboxed:
            env["HOME"] = HOME if not build else SUBMISSION
            prefix = bwrap_argv(_system(), home=home, tmp=tmp, var_tmp=var_tmp, shm=shm,
                                submission=self.submission_dir, network=network, writable_submission=build,
                                hide=self.policy.hide)
            cwd = None
        else:
            env["HOME"] = str(home if not build else self.submission_dir)
            # no network of its own for make, where this machine can make one (a container may not)
            prefix = [] if network or not _own_network() else ["unshare", "--net", "--"]
            cwd = self.submission_dir if build else home
        if self.controllers is None:
            return popen(prefix + inner + argv, env=env, cwd=cwd, **kwargs), None
        group = cgroups.Cgroup(self.controllers, self.uid, self.limits.memory_bytes, processes + LAUNCHER_PIDS)
        self._cgroups.append(group)
        lock = self.scratch / "locks" / f"{run.name}.lock"
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                proc = popen(["flock", "--close", str(lock)] + prefix + inner + argv, env=env, cwd=cwd, **kwargs)
            except BaseException:
                group.remove()
                raise
            try:
                group.add(proc.pid)
            except ProcessLookupError:
                pass                                  # it ended already (ip netns exec failed): nothing to bound
            except OSError:
                proc.kill()                           # never let it start unbounded (the lock is still ours)
                proc.wait()
                raise
        finally:
            os.close(fd)                              # releases the lock: flock goes on, inside the cgroup
        return proc, group

    # -- after a test --------------------------------------------------------------------
    def full(self) -> str | None:
        """'its files filled its disk (256 MB for ...)' when the submission's disk is full, else None."""
        bound = self.disk.full()
        return None if bound is None else f"its files filled its disk ({self.disk.describe(bound)})"

    def clear(self, key: str) -> None:
        """Forget the folders of the programs started under ``key`` (their processes are gone)."""
        self.disk.clear("runs", key)

    def describe(self) -> str:
        """One line for the report: how this submission was confined."""
        how = (f"{bwrap_version()} sandbox (read-only system, private /tmp, no view of other files)"
               if self.sandboxed else "no sandbox (--trust)")
        memory = (f"memory {self.limits.memory_bytes / 1e9:g} GB resident per program ({self.controllers.describe()})"
                  if self.controllers else f"memory {self.limits.memory_bytes / 1e9:g} GB of address space per "
                  f"program (RLIMIT_AS: no usable cgroup, {self.no_cgroup}; sanitizer builds, Java and Go may "
                  "fail to start)")
        disk = self.disk.describe() + ("" if self.disk.unbounded else " (a tmpfs of its own)")
        links = "; links on 127.0.0.1 (no network namespaces)" if self.policy.links == "loopback" else ""
        return f"{how}; {memory}; disk {disk}{links}"

    def close(self) -> None:
        """Remove every cgroup it made (killing what is left inside) and its disk."""
        for group in self._cgroups:
            group.remove()
        cgroups.release(self.controllers)
        self.disk.unmount()
