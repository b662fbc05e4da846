"""A submission: a folder with executables ``ppcbc`` and ``ppcbs``, or a Makefile that makes them,
handed in as a folder, an archive (``.tgz``, ``.zip``) or a patch over another one (handin.py).

``find_submissions`` turns command-line paths (or every sub-folder, archive
and patch of a class folder) into named sources; ``prepare`` lays one out on
the submission's own disk (``disk.py``), owned by its own uid, writes the
catalogue's MAX_WAIT and MAX_RETRANSMITS into its ``protconst.h``
(constants.py) and builds it there: ``make`` runs in the same sandbox as its
programs (``jail.py``), with the limits, in a network namespace of its own
(no network at all) and within ``limits.build_s``; the compiler's warnings
are kept for their own test. A failed build or an archive refused is
reported, never fatal: the
submission's tests are then all ``error`` with the reason.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .catalogue import Assignment
from .constants import Constants, settle
from .handin import HandInError, kind_of, lay_out, submission_name
from .sandbox import Program, kill_uid

__all__ = ["Submission", "find_submissions", "prepare", "PROGRAMS"]

PROGRAMS = ("ppcbc", "ppcbs")
MAKEFILES = ("Makefile", "makefile", "GNUmakefile")
#: A compiler's warning line (gcc, clang: "file.c:12:5: warning: ...").
WARNING = re.compile(r"^[^\s:][^:]*:\d+(?::\d+)?: warning: .*$", re.MULTILINE)


@dataclass
class Submission:
    """A submission ready to run (``error`` None) or the reason it cannot."""
    name: str
    source: Path
    workdir: Path | None = None
    error: str | None = None
    build_log: str = ""
    language: str = "?"
    built: bool = False                 # make ran (and succeeded)
    warnings: tuple[str, ...] = ()      # the compiler's warnings, one line each
    constants: Constants | None = None  # MAX_WAIT and MAX_RETRANSMITS as the programs use them

    def program(self, name: str) -> str:
        return str(self.workdir / name)


def _is_submission(path: Path) -> bool:
    return any((path / n).exists() for n in PROGRAMS + MAKEFILES)


def find_submissions(paths: list[str | Path] = (), *, class_dir: str | Path | None = None) -> list[tuple[str, Path]]:
    """(name, source) for each path given and each sub-folder, archive and patch of ``class_dir``, by
    name. Archives and patches are checked when they are laid out (``prepare``), one at a time."""
    found: list[tuple[str, Path]] = []
    if class_dir is not None:
        root = Path(class_dir)
        if not root.is_dir():
            raise UsageError(f"no class folder {root}", "give a folder with one sub-folder or archive per submission")
        found += [(submission_name(p), p) for p in sorted(root.iterdir())
                  if kind_of(p) in ("archive", "patch") or (p.is_dir() and _is_submission(p))]
        if not found:
            raise UsageError(f"no submissions in {root}", "each sub-folder needs ppcbc and ppcbs, or a Makefile "
                             "that builds them; archives (.tgz, .zip) are unpacked")
    for raw in paths:
        path = Path(raw)
        if kind_of(path) is None:
            raise UsageError(f"no submission folder or archive {path}",
                             "give a folder with ppcbc and ppcbs (or a Makefile), or a .tgz or .zip")
        if path.is_dir() and not _is_submission(path):
            raise UsageError(f"{path} has neither ppcbc/ppcbs nor a Makefile",
                             "a submission is a folder with executables ppcbc and ppcbs, or a Makefile")
        found.append((submission_name(path), path))
    names = [n for n, _ in found]
    if len(set(names)) != len(names):
        raise UsageError("two submissions have the same name (a folder and an archive?)", "rename one of them")
    return found


def _language(folder: Path) -> str:
    suffixes = {p.suffix for p in folder.rglob("*") if p.is_file()}
    for suffix, name in ((".c", "C"), (".cpp", "C++"), (".cc", "C++"), (".rs", "Rust"), (".go", "Go"),
                         (".java", "Java"), (".py", "Python")):
        if suffix in suffixes:
            return name
    for program in PROGRAMS:
        path = folder / program
        if path.is_file() and path.read_bytes()[:40].startswith(b"#!") and b"python" in path.read_bytes()[:40]:
            return "Python"
    return "?"


def _chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chown(os.path.join(folder, name), uid, uid, follow_symlinks=False)


def _build(jail) -> tuple[bool, str]:
    """Run make in the submission's sandbox without network, bounded by ``limits.build_s``: (ok, whole log).
    Its output goes to a file (a daemon it leaves cannot hold a pipe open; the file-size limit bounds it)."""
    limits, log_path = jail.limits, jail.scratch / "build.log"
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    with open(os.devnull, "rb") as fin, open(log_path, "wb") as log_file:
        proc, cgroup = jail.start(["make"], key="build", build=True, network=False, env=env, stdin=fin,
                                  stdout=log_file, stderr=log_file, start_new_session=True)
    make = Program("make", ["make"], proc, log_path, log_path, cgroup, wrapped=jail.sandboxed or cgroup is not None)
    try:
        code = make.wait(limits.build_s)
    finally:
        make.stop()
        kill_uid(jail.uid)
    log = log_path.read_bytes().decode("utf-8", "replace")
    full = jail.full()
    jail.clear("build")
    if code is None:
        return False, f"make did not finish within {limits.build_s:g} s\n{log}"
    if code != 0:
        last = [line for line in log.strip().splitlines() if line.strip()][-1:] or ["no output"]
        return False, f"make {make.describe_exit()}: {last[0][:300]}" + (f" ({full})" if full else "") + f"\n{log}"
    return True, log


def prepare(name: str, source: Path, jail, assignment: Assignment | None = None) -> Submission:
    """Lay ``source`` out on the submission's disk (owned by its uid), set its constants, build it in its
    sandbox, check the programs are there."""
    sub = Submission(name, Path(source))
    copy = jail.submission_dir
    try:
        lay_out(Path(source), copy)
    except HandInError as err:
        sub.error = f"the submission could not be unpacked: {err}"
        return sub
    except OSError as err:                       # its disk is full: a submission is sources, not data
        sub.error = f"the submission could not be laid out for grading: {jail.full() or err}"
        return sub
    sub.language = _language(copy)
    if not _is_submission(copy):
        sub.error = "neither ppcbc/ppcbs nor a Makefile in the submission's root (make must run there)"
        return sub
    sub.constants = settle(copy, assignment or Assignment())
    _chown_tree(copy, jail.uid)
    if any((copy / m).exists() for m in MAKEFILES):
        ok, log = _build(jail)
        sub.built, sub.warnings = ok, tuple(dict.fromkeys(WARNING.findall(log)))
        sub.build_log = log[:1000] + ("\n...\n" + log[-3000:] if len(log) > 4000 else log[1000:4000])
        if not ok:
            sub.error = "build failed: " + sub.build_log.splitlines()[0]
            return sub
    missing = [p for p in PROGRAMS if not (copy / p).is_file()]
    if missing:
        sub.error = f"no {' and no '.join(missing)} in the submission" + (" after make" if sub.build_log else "")
        return sub
    for program in PROGRAMS:
        if not os.access(copy / program, os.X_OK):
            sub.error = f"{program} is not executable (chmod +x {program}, or build it with make)"
            return sub
    sub.workdir = copy
    return sub
