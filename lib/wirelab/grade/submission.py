"""A submission: a folder with executables ``ppcbc`` and ``ppcbs``, or a Makefile that makes them,
handed in as a folder, an archive (``.tgz``, ``.zip``) or a patch over another one (handin.py).

``find_submissions`` turns command-line paths (or every sub-folder, archive
and patch of a class folder) into named sources; ``prepare`` lays one out in
the grader's scratch area, owned by the submission's own uid, writes the
catalogue's MAX_WAIT and MAX_RETRANSMITS into its ``protconst.h``
(constants.py) and builds it there: ``make`` runs as that uid, with the
limits, in a network namespace of its own (no network at all) and within
``limits.build_s``; the compiler's warnings are kept for their own test. A
failed build or an archive refused is reported, never fatal: the
submission's tests are then all ``error`` with the reason.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .catalogue import Assignment, Limits
from .constants import Constants, settle
from .handin import HandInError, kind_of, lay_out, submission_name
from .sandbox import kill_uid, limit_argv

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


def _build(copy: Path, uid: int, limits: Limits) -> tuple[bool, str]:
    """Run make as ``uid`` without network, bounded by ``limits.build_s``: (ok, whole log)."""
    argv = ["unshare", "--net", "--", *limit_argv(uid, limits, processes=max(limits.processes, 64),
                                                   cpu_s=int(limits.build_s)), "make"]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(copy), "LANG": "C.UTF-8"}
    try:
        done = subprocess.run(argv, cwd=copy, env=env, capture_output=True, timeout=limits.build_s,
                              start_new_session=True)
    except subprocess.TimeoutExpired as err:
        kill_uid(uid)
        log = (err.stdout or b"").decode("utf-8", "replace") + (err.stderr or b"").decode("utf-8", "replace")
        return False, f"make did not finish within {limits.build_s:g} s\n{log[-4000:]}"
    finally:
        kill_uid(uid)
    log = done.stdout.decode("utf-8", "replace") + done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        last = [line for line in log.strip().splitlines() if line.strip()][-1:] or ["no output"]
        return False, f"make exited with status {done.returncode}: {last[0][:300]}\n{log}"
    return True, log


def prepare(name: str, source: Path, scratch: Path, uid: int, limits: Limits,
            assignment: Assignment | None = None) -> Submission:
    """Lay ``source`` out in ``scratch/submission`` (owned by ``uid``), set its constants, build it,
    check the programs are there."""
    sub = Submission(name, Path(source))
    copy = scratch / "submission"
    try:
        lay_out(Path(source), copy)
    except HandInError as err:
        sub.error = f"the submission could not be unpacked: {err}"
        return sub
    sub.language = _language(copy)
    if not _is_submission(copy):
        sub.error = "neither ppcbc/ppcbs nor a Makefile in the submission's root (make must run there)"
        return sub
    sub.constants = settle(copy, assignment or Assignment())
    _chown_tree(copy, uid)
    if any((copy / m).exists() for m in MAKEFILES):
        ok, log = _build(copy, uid, limits)
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
