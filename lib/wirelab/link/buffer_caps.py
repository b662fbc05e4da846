"""The kernel's caps on socket buffers, raised for as long as a block runs.

Linux grants SO_SNDBUF / SO_RCVBUF up to twice ``net.core.wmem_max`` /
``net.core.rmem_max`` (4 MiB here), whatever a program asks. Document 000 raised them
as root (``sysctl -w net.core.rmem_max=1000000000``, and ``wmem_max``) before its
sockets could hold 10 MB. ``raised_caps(10_000_000)`` does that for one block and
puts back what it found when the block ends, Ctrl-C included::

    with raised_caps(10_000_000) as caps:     # root: both caps at least 10 MB inside
        ...                                   # caps["raised"], caps["before"], caps["why_not"]

The caps belong to the machine, not to a network namespace (a namespace reads the
host's and cannot write them), so every program on it sees the raise: it lasts only
the block, only ever raises (a cap already high enough is left alone), and gives
back a cap only if nobody changed it meanwhile. Without root nothing changes and
``why_not`` says so: sockets then get what the caps allow.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

__all__ = ["CAPS", "read_caps", "raised_caps"]

#: The caps, by sysctl name.
CAPS = ("net.core.rmem_max", "net.core.wmem_max")


def _path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def read_caps() -> dict[str, int]:
    """The caps now, in bytes."""
    return {name: int(_path(name).read_text().split()[0]) for name in CAPS}


@contextmanager
def raised_caps(nbytes: int):
    """Both caps at least ``nbytes`` inside the block (root), then as they were. Yields a dict:
    ``raised`` (what this block changed), ``before``, ``during`` and ``why_not``."""
    before = read_caps()
    state = {"raised": {}, "before": before, "during": dict(before), "why_not": None}
    wanted = {name: int(nbytes) for name, value in before.items() if value < nbytes}
    if wanted and os.geteuid() != 0:
        state["why_not"] = (f"raising {', '.join(wanted)} to {int(nbytes)} B needs root: sockets get at most "
                            f"twice {', '.join(f'{n}={v}' for n, v in before.items())}")
        wanted = {}
    try:
        for name, value in wanted.items():
            _path(name).write_text(str(value))
            state["raised"][name] = value
        state["during"] = read_caps()
        yield state
    finally:
        now = read_caps()
        for name, value in state["raised"].items():
            if now[name] == value:        # nobody raised it further meanwhile: give it back
                _path(name).write_text(str(before[name]))
