"""Acting on the kernel: run a command (logged, with a timeout) and enter a namespace.

``run`` is the only place the link layer starts `ip`/`tc`/`iptables`/`ethtool`;
every call is recorded so a testbed can show what it did. ``inside(ns)``
moves the *calling thread* into a network namespace for the length of a
``with`` block: sockets created there stay in that namespace afterwards,
which is how a notebook talks to host ``a`` and host ``b`` from one process.
"""
from __future__ import annotations

import ctypes
import os
import shlex
import shutil
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

from ..errors import LinkError, MissingToolError, NeedsRootError

__all__ = ["run", "inside", "list_namespaces", "namespace_pids", "is_root", "NETNS_DIR"]

NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
_PACKAGES = {"ip": "iproute2", "tc": "iproute2", "iptables": "iptables", "ethtool": "ethtool",
             "iperf3": "iperf3", "sysctl": "procps"}


def is_root() -> bool:
    return os.geteuid() == 0


def run(argv: list[str], *, log: list[str] | None = None, timeout: float = 15.0,
        check: bool = True) -> subprocess.CompletedProcess:
    """Run ``argv`` (no shell), append it to ``log``, raise ``LinkError`` with its stderr on failure."""
    tool = argv[0] if argv[:3] != ["ip", "netns", "exec"] else argv[4]
    if shutil.which(tool) is None and shutil.which(tool, path="/usr/sbin:/sbin") is None:
        raise MissingToolError(tool, _PACKAGES.get(tool))
    if log is not None:
        log.append(shlex.join(argv))
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LinkError(f"`{shlex.join(argv)}` did not finish in {timeout:g} s",
                        "the machine may be overloaded; run `wirelab testbed down --all` and retry") from None
    if check and done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        reason = message[-1] if message else f"exit status {done.returncode}"
        if not is_root() and ("Operation not permitted" in reason or "Permission denied" in reason):
            raise NeedsRootError(f"`{shlex.join(argv[:4])} ...`")
        raise LinkError(f"`{shlex.join(argv)}` failed: {reason}",
                        "check `wirelab testbed ls`; `wirelab testbed down --all` removes leftovers")
    return done


_libc = None


def _setns(fd: int) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NeedsRootError(f"entering a network namespace ({os.strerror(err)})")


@contextmanager
def inside(ns: str | None):
    """Run the body with this thread in namespace ``ns`` (``None``: stay where we are)."""
    if ns is None:
        yield
        return
    path = NETNS_DIR / ns
    if not path.exists():
        raise LinkError(f"no network namespace {ns!r}", "is the testbed up? see `wirelab testbed ls`")
    home = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
    target = os.open(path, os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


def list_namespaces() -> list[str]:
    """Names of every named network namespace (``ip netns list``), without running ip."""
    try:
        return sorted(p.name for p in NETNS_DIR.iterdir())
    except FileNotFoundError:
        return []


def namespace_pids(ns: str) -> list[int]:
    """Processes living in ``ns``: what ``ip netns pids`` answers, found the way it finds them
    (each process's /proc/<pid>/ns/net is the same namespace as /run/netns/<ns>), without
    starting it: a sweep asks between every two runs."""
    try:
        target = os.stat(NETNS_DIR / ns)
    except OSError:
        return []
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                mine = os.stat(f"/proc/{entry.name}/ns/net")
            except OSError:              # gone meanwhile, or a kernel thread we may not see
                continue
            if (mine.st_dev, mine.st_ino) == (target.st_dev, target.st_ino):
                found.append(int(entry.name))
    return found
