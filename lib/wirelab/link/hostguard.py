"""What wirelab changes on a real host is undone however the run ends: a guard process holds it.

    guard = Guard(apply=[["tc", ...], ...], undo=[["tc", "qdisc", "del", ...]])   # applied now
    guard.release()                                  # undone now (and the guard ends)

The guard is a small process of its own (``python -m wirelab.link.hostguard``) in a session of
its own, so the Ctrl-C of a terminal or a kill of its owner's process group does not reach it.
It reads one JSON line ``{"apply": [...], "undo": [...]}`` on stdin, runs ``apply`` (on the first
failure it runs ``undo`` and says why), answers one JSON line, then waits for the end of its
stdin. Only its owner (the Dask worker that started it) holds the other end of that pipe, so the
end comes when the owner releases it, or when the owner dies however it dies (SIGKILL and a
lost worker included: the kernel closes the pipe). Then, or on SIGTERM/SIGINT/SIGHUP, it runs
``undo``, every command whatever the ones before did, and ends. A host switched off takes the
qdiscs with it. Standard library only, and fast to start.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

__all__ = ["Guard", "main", "APPLY_TIMEOUT_S"]

#: Seconds the guard may take to start and apply its commands.
APPLY_TIMEOUT_S = 15.0
COMMAND_TIMEOUT_S = 10.0


def _run(argv: list[str]) -> tuple[bool, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, str(err)
    text = (done.stderr or done.stdout).strip().splitlines()
    return done.returncode == 0, text[-1] if text else f"exit status {done.returncode}"


def _undo(undo: list[list[str]]) -> list[str]:
    """Run every undo command; the ones that failed, with why (a qdisc already gone is fine)."""
    return [f"{' '.join(argv)}: {why}" for argv in undo for ok, why in [_run(argv)] if not ok]


def main() -> int:
    plan = json.loads(sys.stdin.readline())
    undo = plan["undo"]
    undone = False

    def leave(*_):
        nonlocal undone
        if not undone:
            undone = True
            _undo(undo)
        os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, leave)
    for argv in plan["apply"]:
        ok, why = _run(argv)
        if not ok:
            undone = True
            _undo(undo)
            print(json.dumps({"ok": False, "error": f"`{' '.join(argv)}` failed: {why}"}), flush=True)
            return 1
    print(json.dumps({"ok": True}), flush=True)
    while sys.stdin.buffer.read(4096):       # until the owner lets go, or is gone
        pass
    undone = True
    problems = _undo(undo)
    try:
        print(json.dumps({"removed": True, "problems": problems}), flush=True)
    except BrokenPipeError:                  # the owner is gone: nobody to tell
        pass
    return 0


class Guard:
    """A running guard (see the module docstring): applied when made, undone by ``release``."""

    def __init__(self, apply: list[list[str]], undo: list[list[str]], *, timeout: float = APPLY_TIMEOUT_S):
        self.apply, self.undo = apply, undo
        self.proc = subprocess.Popen([sys.executable, "-m", "wirelab.link.hostguard"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self.proc.stdin.write(json.dumps({"apply": apply, "undo": undo}).encode() + b"\n")
        self.proc.stdin.flush()
        answer = self._line(time.monotonic() + timeout)
        if not answer.get("ok"):
            self.release()
            self.error = answer.get("error") or "the guard did not answer"
        else:
            self.error = None

    def _line(self, deadline: float) -> dict:
        fd = self.proc.stdout.fileno()
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return {}
            chunk = os.read(fd, 4096)
            if not chunk:
                return {}
            data += chunk
        return json.loads(data)

    def release(self, timeout: float = 2 * COMMAND_TIMEOUT_S) -> dict:
        """Undo now and wait for the guard to end (safe to call twice)."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        answer = self._line(time.monotonic() + timeout) if self.proc.poll() is None else {}
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()            # its handler still undoes
            self.proc.wait(timeout=timeout)
        self.proc.stdout.close()
        return answer


if __name__ == "__main__":
    sys.exit(main())
