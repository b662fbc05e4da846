"""Submissions as they are handed in: a folder, an archive (``.tgz``, ``.tar.gz``, ``.tar``, ``.zip``),
or a patch (``.diff``) over another submission of the same class folder.

The assignment asks for a ``*.tgz`` that builds ``ppcbc`` and ``ppcbs`` with
``make`` in its root. ``lay_out(source, dest)`` puts a submission's files in
the new folder ``dest``; an archive is unpacked only if every member is
safe: a relative path that stays inside ``dest``, links that point inside
it, no devices or pipes, at most ``MAX_MEMBERS`` members and ``MAX_BYTES``
unpacked in all (a zip's sizes are counted as it is read, not believed).
An archive whose files all sit in one top folder (a student packed the
folder, not its contents) is laid out from inside that folder. A patch
names its base in its ``---`` lines (``--- correct-python/ppcb_impl.py``);
it is applied to a copy of that sibling folder, hunk by hunk, each hunk's
context matching exactly. Every refusal is a ``HandInError`` that says what
was wrong; the grader reports it as that submission's error.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from ..errors import UsageError

__all__ = ["HandInError", "lay_out", "kind_of", "submission_name", "patch_base", "ARCHIVES", "PATCHES"]

ARCHIVES = (".tgz", ".tar.gz", ".tar", ".zip")
PATCHES = (".diff", ".patch")
MAX_MEMBERS = 2000
MAX_BYTES = 200_000_000
IGNORED = (".git", "__pycache__", "*.pyc", ".ipynb_checkpoints")


class HandInError(UsageError):
    """A submission that cannot be laid out safely (the message names the member and the problem)."""


def kind_of(path: Path) -> str | None:
    """'folder', 'archive', 'patch', or None when ``path`` is none of these."""
    name = path.name.lower()
    if path.is_dir():
        return "folder"
    if path.is_file() and name.endswith(ARCHIVES):
        return "archive"
    if path.is_file() and name.endswith(PATCHES):
        return "patch"
    return None


def submission_name(path: Path) -> str:
    """The student's name for ``path``: the folder's name, or the file's without its suffixes."""
    name = path.resolve().name if path.is_dir() else path.name
    for suffix in sorted(ARCHIVES + PATCHES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def lay_out(source: Path, dest: Path) -> None:
    """The submission at ``source`` as plain files in the new folder ``dest`` (``HandInError`` if unsafe)."""
    source = Path(source)
    kind = kind_of(source)
    if kind == "folder":
        shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED))
    elif kind == "archive":
        dest.mkdir(parents=True)
        (_unzip if source.name.lower().endswith(".zip") else _untar)(source, dest)
        _enter_single_folder(dest)
    elif kind == "patch":
        _apply_patch(source, dest)
    else:
        raise HandInError(f"{source} is neither a folder nor an archive ({', '.join(ARCHIVES)}) nor a patch",
                          "hand in a folder or a .tgz")


# ------------------------------------------------------------------------------- archives
def _safe_name(name: str, archive: Path) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not name.strip("/"):
        raise HandInError(f"{archive.name}: member {name!r} would land outside the submission's folder",
                          "pack the files with relative paths inside one folder (tar czf work.tgz -C folder .)")
    return path


def _budget(archive: Path, count: int, total: int) -> None:
    if count > MAX_MEMBERS:
        raise HandInError(f"{archive.name} holds more than {MAX_MEMBERS} files", "hand in the sources only")
    if total > MAX_BYTES:
        raise HandInError(f"{archive.name} unpacks to more than {MAX_BYTES // 1_000_000} MB",
                          "hand in the sources only (no data files, no build products)")


def _untar(archive: Path, dest: Path) -> None:
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            _budget(archive, len(members), sum(m.size for m in members if m.isfile()))
            for member in members:
                path = _safe_name(member.name, archive)
                if member.issym() or member.islnk():
                    target = PurePosixPath(member.linkname)
                    inside = target if member.islnk() else path.parent / target
                    if target.is_absolute() or ".." in PurePosixPath(os.path.normpath(inside)).parts:
                        raise HandInError(f"{archive.name}: link {member.name!r} points outside the submission "
                                          f"({member.linkname!r})", "hand in the files themselves, not links")
                elif not (member.isfile() or member.isdir()):
                    raise HandInError(f"{archive.name}: member {member.name!r} is a device or a pipe",
                                      "hand in plain files and folders only")
            tar.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, OSError, EOFError) as err:
        if isinstance(err, tarfile.FilterError):
            raise HandInError(f"{archive.name}: {err}", "hand in plain files with relative paths") from None
        raise HandInError(f"{archive.name} is not a readable archive ({err})",
                          "pack it with tar czf NAME.tgz -C folder .") from None


def _unzip(archive: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            _budget(archive, len(infos), 0)
            written = 0
            for info in infos:
                path = _safe_name(info.filename, archive)
                mode = info.external_attr >> 16
                if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):    # 0: no type recorded
                    raise HandInError(f"{archive.name}: member {info.filename!r} is a link or a special file",
                                      "hand in plain files and folders only")
                target = dest.joinpath(*path.parts)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as fin, open(target, "wb") as fout:
                    while chunk := fin.read(1 << 16):         # sizes in a zip's headers can lie: count
                        written += len(chunk)
                        _budget(archive, 0, written)
                        fout.write(chunk)
                if mode & 0o111:
                    target.chmod(0o755)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise HandInError(f"{archive.name} is not a readable zip archive ({err})", "pack it again") from None


def _enter_single_folder(dest: Path) -> None:
    """A student who packed their folder (work/ppcbc.c ...) rather than its contents: use work/."""
    entries = [p for p in dest.iterdir() if p.name not in ("__MACOSX",)]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        inner = entries[0]
        for child in list(inner.iterdir()):
            child.rename(dest / child.name)
        inner.rmdir()


# ------------------------------------------------------------------------------- patches
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def patch_base(patch: Path) -> Path:
    """The folder a patch applies to: the one its ``---`` lines name, beside the patch."""
    lines = patch.read_text(encoding="utf-8").splitlines()
    olds = [line[4:].split("\t")[0].strip() for line in lines if line.startswith("--- ")]
    bases = {PurePosixPath(o).parts[0] for o in olds if o != "/dev/null"}
    if len(bases) != 1:
        raise HandInError(f"{patch.name} does not name one base folder in its --- lines",
                          "make it with diff -ruN BASE SUBMISSION from the class folder")
    base = patch.parent / bases.pop()
    if not base.is_dir():
        raise HandInError(f"{patch.name} applies to {base.name}/, which is not in {patch.parent}",
                          "keep the patch beside the folder it was made from")
    return base


def _apply_patch(patch: Path, dest: Path) -> None:
    """Copy the base folder the patch names, then apply every file's hunks to it."""
    lines = patch.read_text(encoding="utf-8").splitlines(keepends=True)
    lay_out(patch_base(patch), dest)
    i = 0
    while i < len(lines):
        if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            new = PurePosixPath(lines[i + 1][4:].split("\t")[0].strip())
            i = _apply_file(lines, i + 2, dest.joinpath(*new.parts[1:]), patch)
        else:
            i += 1


def _apply_file(lines: list[str], i: int, target: Path, patch: Path) -> int:
    text = target.read_text(encoding="utf-8").splitlines(keepends=True) if target.exists() else []
    out, at = [], 0
    while i < len(lines) and (match := _HUNK.match(lines[i])):
        old_left = int(match[2]) if match[2] is not None else 1      # lines the hunk reads from the base
        new_left = int(match[4]) if match[4] is not None else 1      # and writes
        start = int(match[1]) - (1 if old_left else 0)
        out += text[at:start]
        at = start
        i += 1
        while i < len(lines) and (old_left or new_left or lines[i].startswith("\\")):
            line, body = lines[i], lines[i][1:]
            if line.startswith("\\"):                      # "\ No newline at end of file"
                if out:
                    out[-1] = out[-1].rstrip("\n")
            elif line[0] in " -":
                if at >= len(text) or text[at].rstrip("\n") != body.rstrip("\n"):
                    raise HandInError(f"{patch.name}: a hunk for {target.name} does not match its base at "
                                      f"line {at + 1}", "make the patch again from the current base")
                if line[0] == " ":
                    out.append(text[at])
                    new_left -= 1
                old_left -= 1
                at += 1
            elif line[0] == "+":
                out.append(body)
                new_left -= 1
            else:
                raise HandInError(f"{patch.name}: a hunk for {target.name} ends early", "make the patch again")
            i += 1
    out += text[at:]
    mode = target.stat().st_mode if target.exists() else 0o644
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(out), encoding="utf-8")
    target.chmod(stat.S_IMODE(mode))
    return i
