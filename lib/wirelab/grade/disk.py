"""A submission's disk: one size-limited tmpfs for everything it may write.

The submission's folder (its build included), each program's working folder
and its private ``/tmp``, ``/var/tmp`` and ``/dev/shm`` all live on one tmpfs
mounted for this submission alone (``mount -t tmpfs -o size=..,nr_inodes=..``),
so the total it writes is bounded, files included that each stay under the
file-size limit. When the bound is hit its writes fail with ENOSPC ("No space
left on device"); after each test ``full()`` looks at the tmpfs's own fill, so
the report can say so whether or not the program printed the error.
Unmounting frees everything at once. The mount's source is named
``wirelab-disk-<uid>``, so ``reap(uid)`` finds one a killed grader left.

Where no tmpfs can be mounted (a container without CAP_SYS_ADMIN, such as a
course platform's) and the grading trusts its container to be the sandbox
(``--trust``), the disk is a plain folder: each file is still bounded by the
file-size limit, the total is not, and ``describe()`` says so. Without
``--trust`` a disk that cannot be mounted stops the grading, as before.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .. import units
from ..errors import SetupError

__all__ = ["Disk", "reap"]

#: Files and folders a submission may make on its disk (a bomb of empty files ends here).
INODES = 100_000


class Disk:
    """The tmpfs at ``path``, ``size_bytes`` big, for the submission running as ``uid``."""

    def __init__(self, path: Path, uid: int, size_bytes: int, *, required: bool = True):
        self.path, self.uid, self.size_bytes = Path(path), uid, int(size_bytes)
        self.path.mkdir(parents=True, exist_ok=True)
        options = f"size={self.size_bytes},nr_inodes={INODES},mode=0755,nosuid,nodev"
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, _source(uid), str(self.path)],
                              capture_output=True, text=True)
        self.mounted = done.returncode == 0
        said = done.stderr.strip().splitlines()
        self.unbounded = None if self.mounted else (said[0] if said else f"mount exited {done.returncode}")
        if not self.mounted and required:
            raise SetupError(f"could not mount a tmpfs for a submission's files at {self.path}: "
                             f"{self.unbounded}", "grading needs root and a kernel with tmpfs")

    def folder(self, *parts: str) -> Path:
        """A fresh empty folder on the disk, owned by the submission's uid."""
        path = self.path.joinpath(*parts)
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        os.chown(path, self.uid, self.uid)
        return path

    def clear(self, *parts: str) -> None:
        shutil.rmtree(self.path.joinpath(*parts), ignore_errors=True)

    def full(self) -> str | None:
        """What ran out ('256 MB' or '100000 files and folders'), or None when there is room."""
        if not self.mounted:
            return None
        stat = os.statvfs(self.path)
        if stat.f_bavail * stat.f_frsize < max(self.size_bytes // 100, 64 * 1024):
            return units.format_size(self.size_bytes)
        if stat.f_favail < INODES // 100:
            return f"{INODES} files and folders"
        return None

    def describe(self, bound: str | None = None) -> str:
        if self.unbounded is not None:
            return f"a plain folder, no bound on the total (no tmpfs could be mounted here: {self.unbounded})"
        return f"{bound or units.format_size(self.size_bytes)} for its folder, /tmp, /var/tmp and /dev/shm together"

    def unmount(self) -> None:
        """Unmount (lazily if something still holds it: its files vanish from every view at once)."""
        if self.mounted:
            _unmount(self.path)
            self.mounted = False


def _source(uid: int) -> str:
    return f"wirelab-disk-{uid}"


def _unmount(path: Path | str) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "--lazy", str(path)], capture_output=True)


def reap(uid: int) -> list[str]:
    """Unmount the disks of ``uid`` a killed grader left; returns their mount points."""
    stale = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields = right.split()
        if len(fields) >= 2 and fields[0] == "tmpfs" and fields[1] == _source(uid):
            stale.append(left.split()[4].encode().decode("unicode_escape"))
    for point in stale:
        _unmount(point)
    return stale
