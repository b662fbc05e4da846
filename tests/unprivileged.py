"""Run a command as an unprivileged user (nobody), from root, even when what it needs lives
under a directory only root may enter (a clone under /root, a pyenv Python, its venv).

    unshare --mount --propagation private -- python tests/unprivileged.py \\
        --expose /root/repo/.venv --expose /root/.pyenv/versions/3.11.7 -- CMD ARGS...

Inside a private mount namespace (nothing changes for the rest of the machine, and it
vanishes with the command) every directory on the way to an exposed path that others may
not enter is covered with an empty tmpfs (mode 755), and the exposed paths are bound back
at their own paths. Then the command runs through ``setpriv`` as nobody: no
capabilities, no supplementary groups, no way to gain privileges. Files keep their own
permissions: only what others may read becomes readable.
"""
from __future__ import annotations

import argparse
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

NOBODY = 65534


def blocked(path: Path) -> list[Path]:
    """The directories above ``path`` (from the top) that others may not enter."""
    out = []
    for parent in reversed(Path(path).resolve().parents):
        if not parent.stat().st_mode & stat.S_IXOTH:
            out.append(parent)
    return out


def expose(paths: list[Path]) -> None:
    """Make ``paths`` reachable by others in this (private) mount namespace."""
    paths = [Path(p).resolve() for p in paths]
    covers = sorted({b for p in paths for b in blocked(p)}, key=lambda b: len(b.parts))
    tops = [c for c in covers if not any(c != o and c.is_relative_to(o) for o in covers)]
    if not tops:
        return
    stash = Path(tempfile.mkdtemp(prefix="wirelab-expose-"))
    kept = []
    for i, path in enumerate(paths):                    # keep the originals before covering them
        if any(path.is_relative_to(top) for top in tops):
            keep = stash / str(i)
            keep.mkdir()
            mount(["--bind", str(path), str(keep)])
            kept.append((keep, path))
    for top in tops:
        mount(["-t", "tmpfs", "-o", "mode=755", "tmpfs", str(top)])
    for keep, path in kept:
        path.mkdir(mode=0o755, parents=True, exist_ok=True)   # in the tmpfs: 755 all the way down
        mount(["--bind", str(keep), str(path)])


def mount(args: list[str]) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expose", action="append", default=[], help="a path the command needs")
    parser.add_argument("--uid", type=int, default=NOBODY)
    parser.add_argument("--gid", type=int, default=NOBODY)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if os.geteuid() != 0 or not command:
        parser.error("run as root, with a command after --")
    expose([Path(p) for p in args.expose])
    os.execvp("setpriv", ["setpriv", f"--reuid={args.uid}", f"--regid={args.gid}", "--clear-groups",
                          "--inh-caps=-all", "--no-new-privs", "--", *command])
    return 1


if __name__ == "__main__":
    sys.exit(main())
