"""A fresh link for every run: a setting's link columns → ``LinkSpec`` → ``Testbed``,
and ``run_client`` to run a client program across it within a deadline.

Both engines use this. The backend is chosen once per sweep (``sweep_backend``)
so every setting of one sweep travels the same kind of link: on a kernel
without netem, a sweep with any delay runs entirely on the userspace link,
rather than mixing tbf runs (no delay) with userspace runs (delay).
Without root the backend is ``loopback`` and ``fresh_link`` yields ``None``.
"""
from __future__ import annotations

import subprocess
import time
from contextlib import contextmanager

from ..errors import LinkError, SetupError, TransferError, UsageError

__all__ = ["link_spec", "sweep_backend", "fresh_link", "link_layer"]


def link_layer():
    """``wirelab.link`` if it can be imported here, else None."""
    try:
        from .. import link
    except ImportError:
        return None
    return link


def link_spec(setting):
    """The ``LinkSpec`` of a setting (loss and delay alike in both directions, as tc would)."""
    link = link_layer()
    if link is None:
        raise SetupError("wirelab.link is not available", "use backend='loopback'")
    mtu = int(setting.get("mtu", 1500))
    queue = setting["queue_packets"]
    return link.LinkSpec.parse(rate=setting["rate_bps"] or None, delay=setting.get("delay_s", 0),
                               jitter=setting.get("jitter_s", 0), loss=setting.get("loss", 0),
                               mtu=mtu, queue=None if queue is None else int(queue) * (mtu + 14))


def sweep_backend(settings, requested: str = "auto") -> str:
    """The one backend that can run every setting: namespaces, userspace or loopback."""
    link = link_layer()
    if link is None:
        if requested not in ("auto", "loopback"):
            raise SetupError(f"the {requested} backend needs wirelab.link, which is missing",
                             "use backend='loopback'")
        return "loopback"
    if requested not in link.BACKENDS:
        raise UsageError(f"unknown backend {requested!r}", f"use one of {', '.join(link.BACKENDS)}")
    specs = [link_spec(s) for s in settings]
    probe = next((s for s in specs if s.needs_delay_line), specs[0] if specs else None)
    return link.choose_backend(probe, requested)


@contextmanager
def fresh_link(setting, backend: str, *, seed: int = 0, name: str = "exp"):
    """A new testbed for one run (torn down afterwards, Ctrl-C included); ``None`` on loopback."""
    if backend == "loopback":
        yield None
        return
    link = link_layer()
    with link.Testbed(link_spec(setting), name=name, backend=backend, seed=seed) as testbed:
        yield testbed


def describe_testbed(testbed) -> dict:
    """What a run's row keeps about its link: backend, tc commands, how it was emulated."""
    info = testbed.describe()
    return {"backend": info["backend"], "tc_commands": info["shaping_commands"],
            "emulated_by": info["emulated_by"], "shaping_note": info["shaping_note"],
            "testbed": info["testbed"]}


def run_client(testbed, argv: list[str], deadline: float, *, what: str,
               fix: str) -> subprocess.CompletedProcess:
    """Run a client's argv in host ``a`` (or here without a testbed), bounded by ``deadline``."""
    left = max(deadline - time.monotonic(), 0.1)
    try:
        if testbed is None:
            return subprocess.run(argv, capture_output=True, text=True, timeout=left)
        return testbed.exec("a", argv, timeout=left)
    except (subprocess.TimeoutExpired, LinkError):
        raise TransferError(f"{what} did not finish within the {left:.0f} s left", fix) from None
