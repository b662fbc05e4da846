"""Submissions as handed in: archives unpacked safely (or refused, saying why), patches applied, names."""
import io
import tarfile
import zipfile

import pytest

from wirelab.grade import find_submissions
from wirelab.grade.handin import MAX_BYTES, HandInError, lay_out


def _tgz(path, members):
    """members: (name, bytes | None for a folder | ("sym"|"lnk"|"fifo", target))."""
    with tarfile.open(path, "w:gz") as tar:
        for name, body in members:
            info = tarfile.TarInfo(name)
            if body is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif isinstance(body, tuple):
                info.type = {"sym": tarfile.SYMTYPE, "lnk": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE}[body[0]]
                info.linkname = body[1]
                tar.addfile(info)
            else:
                info.size, info.mode = len(body), 0o755 if name.endswith(("ppcbc", "ppcbs")) else 0o644
                tar.addfile(info, io.BytesIO(body))
    return path


def test_a_tgz_of_the_folder_is_laid_out_from_inside_it(tmp_path):
    archive = _tgz(tmp_path / "alice.tgz", [("work", None), ("work/Makefile", b"all:\n"),
                                            ("work/src", None), ("work/src/a.c", b"int x;\n")])
    lay_out(archive, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["Makefile", "src"]
    assert ("alice", archive) in find_submissions(class_dir=tmp_path)


@pytest.mark.parametrize("members, problem", [
    ([("../evil", b"x")], "outside the submission's folder"),
    ([("/etc/evil", b"x")], "outside the submission's folder"),
    ([("ok", b"x"), ("up", ("sym", "../../etc/passwd"))], "points outside"),
    ([("abs", ("sym", "/etc/passwd"))], "points outside"),
    ([("hard", ("lnk", "/etc/passwd"))], "points outside"),
    ([("pipe", ("fifo", ""))], "device or a pipe"),
])
def test_an_unsafe_tgz_is_refused_and_nothing_lands_outside(tmp_path, members, problem):
    archive = _tgz(tmp_path / "bob.tgz", members)
    with pytest.raises(HandInError, match=problem):
        lay_out(archive, tmp_path / "out" / "bob")
    assert not (tmp_path / "evil").exists() and not (tmp_path / "out" / "evil").exists()


def test_a_link_inside_the_submission_is_kept(tmp_path):
    archive = _tgz(tmp_path / "carol.tgz", [("real.c", b"int y;\n"), ("alias.c", ("sym", "real.c"))])
    lay_out(archive, tmp_path / "out")
    assert (tmp_path / "out" / "alias.c").read_text() == "int y;\n"


def test_size_and_member_bombs_are_refused_before_anything_is_written(tmp_path, monkeypatch):
    big = tmp_path / "big.tgz"
    with tarfile.open(big, "w:gz") as tar:                 # 2 × 120 MB of zeros: tiny compressed
        for name in ("a.bin", "b.bin"):
            info = tarfile.TarInfo(name)
            info.size = 120_000_000
            tar.addfile(info, io.BytesIO(bytes(info.size)))
    assert big.stat().st_size < 1_000_000
    with pytest.raises(HandInError, match=f"more than {MAX_BYTES // 1_000_000} MB"):
        lay_out(big, tmp_path / "out")
    assert not any((tmp_path / "out").iterdir())
    monkeypatch.setattr("wirelab.grade.handin.MAX_MEMBERS", 3)
    with pytest.raises(HandInError, match="more than 3 files"):
        lay_out(_tgz(tmp_path / "many.tgz", [(f"f{i}", b"") for i in range(5)]), tmp_path / "out2")


def test_a_zip_is_counted_as_it_is_read_not_as_its_headers_claim(tmp_path, monkeypatch):
    archive = tmp_path / "dave.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("Makefile", "all:\n")
        zf.writestr("data.bin", bytes(3_000_000))
    lay_out(archive, tmp_path / "ok")
    assert (tmp_path / "ok" / "data.bin").stat().st_size == 3_000_000
    monkeypatch.setattr("wirelab.grade.handin.MAX_BYTES", 1_000_000)
    with pytest.raises(HandInError, match="more than 1 MB"):
        lay_out(archive, tmp_path / "bomb")
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../../escape", "x")
    with pytest.raises(HandInError, match="outside"):
        lay_out(evil, tmp_path / "evil")


def test_junk_is_refused_with_the_file_named(tmp_path):
    junk = tmp_path / "eve.tgz"
    junk.write_bytes(b"not an archive at all")
    with pytest.raises(HandInError, match="eve.tgz is not a readable archive"):
        lay_out(junk, tmp_path / "out")


def test_a_patch_is_applied_to_the_folder_it_names(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    (base / "prog.py").write_text("a = 1\nb = 2\nc = 3\n")
    (base / "ppcbc").write_text("#!/bin/sh\n")
    (base / "ppcbc").chmod(0o755)
    (tmp_path / "fixed.diff").write_text("--- base/prog.py\n+++ fixed/prog.py\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 20\n"
                                         " c = 3\n--- /dev/null\n+++ fixed/new.h\n@@ -0,0 +1 @@\n+#define X 1\n")
    lay_out(tmp_path / "fixed.diff", tmp_path / "out")
    assert (tmp_path / "out" / "prog.py").read_text() == "a = 1\nb = 20\nc = 3\n"
    assert (tmp_path / "out" / "new.h").read_text() == "#define X 1\n"
    assert (tmp_path / "out" / "ppcbc").stat().st_mode & 0o111
    (tmp_path / "stale.diff").write_text("--- base/prog.py\n+++ stale/prog.py\n@@ -1,1 +1,1 @@\n-a = 9\n+a = 1\n")
    with pytest.raises(HandInError, match="does not match"):
        lay_out(tmp_path / "stale.diff", tmp_path / "out2")
