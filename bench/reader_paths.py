"""The capture reader's two paths in one bench run: compiled (numba, capture.reader.jit) and numpy (its
fallback), read on the same files one after the other; and what loading the compiled kernels
costs the first time a process reads a big capture, with and without numba's disk cache.
Used by bench_capture.py and bench_dataset.py."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from wirelab.capture.reader import jit

PATHS = ("compiled", "numpy")


@contextmanager
def reader_path(name: str):
    """Reads inside take the ``compiled`` or the ``numpy`` path (WIRELAB_NO_JIT)."""
    before = os.environ.get(jit.ENV_OFF)
    os.environ[jit.ENV_OFF] = "1" if name == "numpy" else "0"
    try:
        if name == "compiled" and jit.kernels(jit.MIN_BYTES) is None:
            raise RuntimeError(f"the compiled path is not available: {jit.status()}")
        yield
    finally:
        if before is None:
            os.environ.pop(jit.ENV_OFF, None)
        else:
            os.environ[jit.ENV_OFF] = before


CHILD = """
import sys, time
t = time.perf_counter()
from wirelab.capture.reader import jit, read_capture
jit.MIN_BYTES = 0
read_capture(sys.argv[1])
print(time.perf_counter() - t, jit.status()["seconds"], jit.status()["compiled"])
"""


def first_call(capture: Path) -> dict:
    """A fresh process reading ``capture``: seconds to load the kernels (importing numba, then
    compiling them, or reading them from the cache) with an empty cache directory, then again
    with the cache that first run left; and the whole read each time."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="wirelab-numba-cache-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, jit.ENV_OFF: "0"}
        for label in ("no cache (compiles)", "cached"):
            done = subprocess.run([sys.executable, "-c", CHILD, str(capture)], env=env, capture_output=True,
                                  text=True, timeout=600)
            if done.returncode:
                out[label] = {"failed": done.stderr.strip().splitlines()[-1:]}
                continue
            total, load, compiled = done.stdout.split()[-3:]
            out[label] = {"load_s": float(load), "whole_read_s": float(total), "compiled": compiled == "True"}
    return out


def describe_first_call(capture: Path) -> str:
    lines = []
    for label, r in first_call(capture).items():
        if "failed" in r:
            lines.append(f"   {label}: FAILED {r['failed']}")
        else:
            lines.append(f"   {label:20} loading the kernels {r['load_s']:6.2f} s (compiled: {r['compiled']}); "
                         f"import + read of {capture.name} {r['whole_read_s']:.2f} s")
    return "\n".join(lines)
