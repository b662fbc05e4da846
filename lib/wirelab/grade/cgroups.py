"""Memory and process-count bounds per program by a cgroup, not by RLIMIT_AS.

RLIMIT_AS bounds the address space a program *reserves*, not the memory it
uses: AddressSanitizer reserves terabytes of shadow at start, the JVM and Go
reserve large heap arenas; under ``prlimit --as=1GB`` all three abort though
they would use little. A memory cgroup bounds what is resident (page cache
and tmpfs pages included), so they start, and a program that really takes
too much is killed by the kernel's OOM killer, which the cgroup counts: the
report can say "memory limit" instead of a bare SIGKILL.

What this machine offers is detected, never assumed (``detect()``, once per
process):

* cgroup v2 with the memory controller: our cgroups live under
  ``<cgroup2 root>/wirelab-grade/`` (a parent with no processes of its own, as
  v2's no-internal-processes rule asks; removed by the last grading to end),
  with ``memory.max``, ``memory.swap.max`` = 0 and ``pids.max``;
* cgroup v1 (or hybrid): under the grader's own cgroup of the ``memory``
  hierarchy (so a limit on the grader binds its programs too), with
  ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes`` (no swap
  beyond it), and in the ``pids`` hierarchy ``pids.max``;
* neither writable (or ``WIRELAB_GRADE_CGROUP=off``): ``None`` with the
  reason; the caller falls back to RLIMIT_AS and every report says so.

Each cgroup is named ``wirelab-g<uid>-<pid>-<n>`` (uid of the submission, pid of
the grader), so ``reap(uid)`` finds what a killed grader left, and is removed
when its program ends.
"""
from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Controllers", "Cgroup", "detect", "reap", "release", "ENV_OFF"]

#: Set to ``off`` to grade without cgroups (the RLIMIT_AS fallback), e.g. to test that path.
ENV_OFF = "WIRELAB_GRADE_CGROUP"
V2_PARENT = "wirelab-grade"
_counter = itertools.count()


@dataclass(frozen=True)
class Controllers:
    """Where this machine lets us make cgroups: one folder per hierarchy (v2: one for all)."""
    version: int
    memory: Path                # the folder new cgroups go in, for memory (v2: every controller)
    pids: Path | None           # v1's pids hierarchy folder (None on v2, or when v1 has no pids)
    handed: tuple[str, ...] = ()     # v2: the controllers its parent folder hands down

    def describe(self) -> str:
        return f"cgroup v{self.version}"


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, filesystem type, super options) of every cgroup mount, from /proc/self/mountinfo."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype, _source, options = (right.split() + ["", ""])[:3]
        if fstype in ("cgroup", "cgroup2"):
            found.append((left.split()[4], fstype, set(options.split(","))))
    return found


def _own(hierarchy: str) -> str:
    """The grader's own cgroup path in a v1 ``hierarchy`` ('memory', 'pids') or v2 (''), from /proc/self/cgroup."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _id, names, path = line.split(":", 2)
        if (hierarchy and hierarchy in names.split(",")) or (not hierarchy and _id == "0" and not names):
            return path
    return "/"


def _probe(folder: Path, files: dict[str, str]) -> None:
    """Make a cgroup in ``folder``, write ``files``, remove it: raises OSError if any step fails."""
    probe = folder / f"wirelab-probe-{os.getpid()}-{next(_counter)}"
    probe.mkdir()
    try:
        for name, value in files.items():
            (probe / name).write_text(value)
    finally:
        probe.rmdir()


def _v2(root: Path) -> Controllers:
    offered = set((root / "cgroup.controllers").read_text().split())
    if "memory" not in offered:
        raise OSError(f"the cgroup v2 root {root} offers no memory controller")
    wanted = ["memory"] + (["pids"] if "pids" in offered else [])
    enabled = set((root / "cgroup.subtree_control").read_text().split())
    if not set(wanted) <= enabled:
        (root / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
    controllers = Controllers(2, root / V2_PARENT, None, tuple(wanted))
    _v2_parent(controllers)
    _probe(controllers.memory, {"memory.max": "1000000000"})
    return controllers


def _v2_parent(controllers: Controllers) -> None:
    """(Re)make v2's parent folder with the controllers handed down: the last grader to end removes it."""
    controllers.memory.mkdir(exist_ok=True)
    (controllers.memory / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in controllers.handed))


def release(controllers: Controllers | None) -> None:
    """Remove v2's parent folder once no grader uses it (v1's cgroups live in the grader's own)."""
    if controllers is not None and controllers.version == 2:
        try:
            controllers.memory.rmdir()
        except OSError:
            pass                              # another grading still has cgroups in it: it removes it


def _v1(mounts) -> Controllers:
    def folder(name: str) -> Path | None:
        for point, fstype, options in mounts:
            if fstype == "cgroup" and name in options:
                return Path(point) / _own(name).lstrip("/")
        return None
    memory, pids = folder("memory"), folder("pids")
    if memory is None:
        raise OSError("no cgroup v1 memory hierarchy is mounted")
    _probe(memory, {"memory.limit_in_bytes": "1000000000"})
    if pids is not None:
        try:
            _probe(pids, {"pids.max": "16"})
        except OSError:
            pids = None
    return Controllers(1, memory, pids)


_detected: tuple[Controllers | None, str] | None = None
_lock = threading.Lock()


def detect() -> tuple[Controllers | None, str]:
    """(controllers, '') where memory cgroups can be made here, else (None, why not). Once per process."""
    global _detected
    with _lock:
        if _detected is None:
            _detected = _detect()
        return _detected


def _detect() -> tuple[Controllers | None, str]:
    if os.environ.get(ENV_OFF, "").lower() in ("off", "0", "no"):
        return None, f"cgroups switched off ({ENV_OFF}=off)"
    if os.geteuid() != 0:
        return None, "not root"
    try:
        mounts = _mounts()
    except OSError as err:
        return None, f"cannot read /proc/self/mountinfo ({err})"
    reasons = []
    for point, fstype, _ in mounts:
        if fstype == "cgroup2":
            try:
                return _v2(Path(point)), ""
            except OSError as err:
                reasons.append(f"cgroup v2 at {point}: {err}")
    try:
        return _v1(mounts), ""
    except OSError as err:
        reasons.append(f"cgroup v1: {err}")
    return None, "; ".join(reasons) or "no cgroup filesystem is mounted"


def _make(folder: Path, controllers: Controllers) -> None:
    """mkdir, and on v2 (re)make the shared parent first: another grading may just have removed it."""
    for attempt in range(3):
        try:
            if controllers.version == 2:
                _v2_parent(controllers)
            folder.mkdir()
            return
        except FileNotFoundError:
            if attempt == 2:
                raise


class Cgroup:
    """One program's cgroup: memory (no swap) and pid bounds; ``add`` a pid before it execs the program."""

    def __init__(self, controllers: Controllers, uid: int, memory_bytes: int, pids: int):
        self.controllers = controllers
        name = f"wirelab-g{uid}-{os.getpid()}-{next(_counter)}"
        self.folders = [controllers.memory / name] + ([controllers.pids / name] if controllers.pids else [])
        self._oom: int | None = None
        self._lock = threading.Lock()
        made = []
        try:
            for folder in self.folders:
                _make(folder, controllers)
                made.append(folder)
            if controllers.version == 2:
                self._write("memory.max", memory_bytes)
                self._write_if("memory.swap.max", 0)
                self._write_if("pids.max", pids)
            else:
                self._write("memory.limit_in_bytes", memory_bytes)
                self._write_if("memory.memsw.limit_in_bytes", memory_bytes)   # after the limit: it must be >= it
                if controllers.pids:
                    (self.folders[1] / "pids.max").write_text(str(pids))
        except OSError:
            for folder in reversed(made):
                folder.rmdir()
            raise

    def _write(self, name: str, value: int) -> None:
        (self.folders[0] / name).write_text(str(value))

    def _write_if(self, name: str, value: int) -> None:
        if (self.folders[0] / name).exists():
            self._write(name, value)

    def add(self, pid: int) -> None:
        """Move ``pid`` into this cgroup (every hierarchy); its children are born inside."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid))

    def pids(self) -> list[int]:
        found = set()
        for folder in self.folders:
            try:
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return sorted(found)

    def oom_kills(self) -> int:
        """How many of its processes the kernel killed for want of memory (0 when it cannot tell)."""
        if self._oom is not None:
            return self._oom
        events = "memory.events" if self.controllers.version == 2 else "memory.oom_control"
        try:
            for line in (self.folders[0] / events).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except OSError:
            pass
        return 0

    def remove(self, timeout_s: float = 5.0) -> bool:
        """Kill what is still inside, then remove the folders; True when they are gone. Safe to call twice."""
        with self._lock:
            if self._oom is None:
                self._oom = self.oom_kills()
            return _remove(self.folders, timeout_s)


def _remove(folders: list[Path], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    for folder in folders:
        while folder.exists():
            try:
                for pid in (folder / "cgroup.procs").read_text().split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                folder.rmdir()
            except FileNotFoundError:
                break
            except OSError:                   # EBUSY: a killed process is still on its way out
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.005)
    return True


def reap(uid: int) -> list[str]:
    """Remove the cgroups of ``uid`` a grader left behind (it was killed); returns their paths."""
    controllers, _ = detect()
    if controllers is None:
        return []
    left = []
    for base in filter(None, (controllers.memory, controllers.pids)):
        stale = sorted(base.glob(f"wirelab-g{uid}-*"))
        if _remove(stale, 5.0):
            left += [str(p) for p in stale]
    return left
