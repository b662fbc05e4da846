"""Nothing of a grading outlives it: no process, no file, no IPC object of a grading uid, anywhere.

After a grading (Ctrl-C included) ``sweep(places)`` looks for what the
grading uids (61000–61999, ``sandbox.UID_RANGE``) still own:

* processes: every ``/proc`` entry whose real uid is one of them;
* files: an unprivileged uid with no groups can create a file only in a
  world-writable directory or below one in a directory it made, so the sweep
  walks every world-writable directory of the machine (``Places``: ``find``
  over the local filesystems, skipping folders others cannot enter, started
  when the grading starts, niced, bounded in time) and descends only into
  directories such a uid could write;
* System V IPC objects (``/proc/sysvipc``), which outlive their processes.

A uid is touched only while the sweep holds its lease lock, so a grading
running beside this one (another ``wirelab grade``) keeps its own. What the
sweep finds it removes; ``Swept.summary()`` says what it checked and what it
found, the line ``wirelab grade`` prints. With the sandbox (``jail.py``) it
should find nothing: that is the check.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .sandbox import UID_RANGE, kill_uid, processes_by_uid, try_lock

__all__ = ["Places", "Swept", "sweep", "owned_by"]

#: Filesystems where nothing a program writes is stored (or that are not ours to walk).
PSEUDO = ("proc", "sysfs", "cgroup", "cgroup2", "devpts", "debugfs", "tracefs", "securityfs", "bpf", "pstore",
          "configfs", "fusectl", "hugetlbfs", "autofs", "binfmt_misc", "nsfs", "efivarfs", "rpc_pipefs",
          "nfs", "nfs4", "cifs", "smb3", "fuse.sshfs", "9p")
#: Where an unprivileged uid can always write on a Debian system, looked at even before ``find`` answers.
USUAL = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")
FIND_BOUND_S = 120.0


class Places:
    """The world-writable directories of this machine, found in the background by ``find``."""

    def __init__(self, bound_s: float = FIND_BOUND_S):
        self.found: set[str] = {p for p in USUAL if os.path.isdir(p)}
        self.complete = False
        prune = []
        for fstype in PSEUDO:
            prune += ["-fstype", fstype, "-o"]
        # a folder others cannot enter (no o+x) hides all below it from a uid without groups: not walked
        argv = ["nice", "-n", "19", "ionice", "-c", "2", "-n", "7", "find", "/", "(", *prune, "(", "-type", "d",
                "!", "-perm", "-0001", ")", ")", "-prune", "-o", "-type", "d", "-perm", "-0002", "-print"]
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._timer = threading.Timer(bound_s, self._proc.kill)
        self._timer.daemon = True
        self._timer.start()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self._proc.stdout:
            self.found.add(line.rstrip("\n"))
        self.complete = self._proc.wait() in (0, 1)     # 1: some folder could not be read, the rest was
        self._timer.cancel()

    def result(self) -> list[str]:
        self._thread.join()
        return sorted(self.found)

    def close(self) -> None:
        self._proc.kill()
        self._thread.join()


def _writable_by_grading_uid(st: os.stat_result) -> bool:
    return bool(st.st_mode & stat.S_IWOTH) or st.st_uid in UID_RANGE


def owned_by(uids, places: list[str]) -> dict[int, list[str]]:
    """Paths under ``places`` owned by one of ``uids``, by uid (a directory's contents are not listed)."""
    found: dict[int, list[str]] = defaultdict(list)
    seen: set[tuple[int, int]] = set()
    stack = list(places)
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            if st.st_uid in uids:
                found[st.st_uid].append(entry.path)
            elif stat.S_ISDIR(st.st_mode) and _writable_by_grading_uid(st):
                stack.append(entry.path)
    return dict(found)


def _ipc() -> dict[int, list[tuple[str, str]]]:
    """System V IPC objects of grading uids: (ipcrm option, id)."""
    found: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for table, option in (("shm", "-m"), ("msg", "-q"), ("sem", "-s")):
        try:
            lines = Path(f"/proc/sysvipc/{table}").read_text().splitlines()
        except OSError:
            continue
        header = lines[0].split() if lines else []
        for line in lines[1:]:
            row = dict(zip(header, line.split()))
            if int(row.get("uid", -1)) in UID_RANGE:
                found[int(row["uid"])].append((option, row["id"]))
    return dict(found)


@dataclass
class Swept:
    """What the sweep looked at and what it found (and removed)."""
    places: list[str]
    complete: bool
    removed: list[str] = field(default_factory=list)
    busy: list[int] = field(default_factory=list)       # uids a grading still running holds: not touched
    left: list[str] = field(default_factory=list)       # found and could not be removed

    @property
    def clean(self) -> bool:
        return not self.removed and not self.left

    def summary(self) -> str:
        where = (f"no file of one in the {len(self.places)} world-writable folders ({', '.join(self.places[:6])}"
                 + (", ..." if len(self.places) > 6 else "") + ")"
                 + ("" if self.complete else ", those found before the search stopped"))
        head = ("left behind: nothing (no process of a grading uid, " + where + ", no System V IPC object)"
                if self.clean else f"left behind and removed now: {len(self.removed)} item(s): "
                + "; ".join(self.removed[:8]) + (" ..." if len(self.removed) > 8 else ""))
        tail = "".join([f"; NOT removed: {'; '.join(self.left[:8])}" if self.left else "",
                        f"; uids in use by another grading, not checked: {self.busy}" if self.busy else ""])
        return head + tail


def sweep(places: Places | None = None) -> Swept:
    """Find and remove every process, file and IPC object of a grading uid no grading holds (see above)."""
    folders = places.result() if places is not None else sorted(p for p in USUAL if os.path.isdir(p))
    done = Swept(folders, places.complete if places is not None else False)
    files, procs, ipc = owned_by(UID_RANGE, folders), processes_by_uid(UID_RANGE), _ipc()
    for uid in sorted(set(files) | set(procs) | set(ipc)):
        lock = try_lock(uid)
        if lock is None:
            done.busy.append(uid)
            continue
        try:
            if procs.get(uid):
                done.removed.append(f"{len(procs[uid])} process(es) of uid {uid}")
                if not kill_uid(uid):
                    done.left.append(f"processes of uid {uid}")
            for path in files.get(uid, []):
                done.removed.append(path)
                _remove(path)
                if os.path.lexists(path):
                    done.left.append(path)
            for option, ipc_id in ipc.get(uid, []):
                done.removed.append(f"System V IPC {option} {ipc_id} of uid {uid}")
                subprocess.run(["ipcrm", option, ipc_id], capture_output=True)
        finally:
            os.close(lock)
    return done


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass                                    # the caller looks again and reports what is still there
