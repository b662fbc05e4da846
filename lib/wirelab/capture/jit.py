"""Compiled kernels for reading captures (numba), and when to use them.

The reader has two implementations of its two hot loops, which give the
same answer: numpy (``walk.py``, ``fastpath.py``, ``dissect.py``) and
compiled (``walk_jit.py``, ``decode_jit.py``). numpy needs nothing beyond
numpy and is the reference; the compiled kernels are about twice as fast
on a large capture. They are used when:

- numba can be imported (it is a dependency, but a student's environment
  may lack it) and ``WIRELAB_NO_JIT`` is not set (``WIRELAB_NO_JIT=1``
  forces the numpy path, e.g. to compare);
- the window of the file is at least ``MIN_BYTES`` or the kernels are
  already loaded: importing numba and loading the kernels costs a few
  tenths of a second, more than numpy takes on a small capture.

numba compiles a kernel the first time it is needed (seconds) and keeps the
machine code on disk (``cache=True``: next to this file in ``__pycache__``,
else in the user's cache directory, or where ``NUMBA_CACHE_DIR`` says).
When no directory is writable (an installed package, a read-only home) the
kernels are compiled in memory, every session; when even that fails, the
numpy path is used. Either way, nothing is printed: a student sees no
warning from it. ``status()`` tells what happened (the bench prints it).
"""
from __future__ import annotations

import importlib
import os
import threading
import time
import warnings

import numpy as np

__all__ = ["njit", "kernels", "walker", "readonly", "status", "ENV_OFF", "MIN_BYTES"]

ENV_OFF = "WIRELAB_NO_JIT"
#: the record formats the kernels know
PCAP, PCAPNG = 0, 1
#: a window of the file smaller than this is read with numpy unless the kernels are loaded already
MIN_BYTES = 8 << 20
#: chains the compiled walker follows at once (walk_jit.py): enough reads in flight to hide
#: most of the memory's latency, few enough that seeding them costs little
CHAINS = 16
#: whether kernels are cached on disk (set to False when the cache cannot be written)
CACHE = True

_lock = threading.Lock()
_state: dict = {"kernels": None, "tried": False, "seconds": None, "cache": None, "why_not": None}


def njit(func):
    """Compile ``func`` with numba when first called: no GIL held (``read_capture`` decodes one
    window in a thread while the next is scanned), machine code cached on disk when possible."""
    import numba
    if CACHE:
        try:
            return numba.njit(nogil=True, cache=True)(func)
        except RuntimeError:          # numba found no writable cache directory: compile in memory
            pass
    return numba.njit(nogil=True)(func)


def enabled() -> bool:
    return os.environ.get(ENV_OFF, "").strip() in ("", "0")


def kernels(window_bytes: int = MIN_BYTES):
    """The compiled kernels (``walk_jit``, ``decode_jit`` modules) for a window of this many
    bytes, or None: use numpy."""
    if not enabled():
        return None
    loaded = _state["kernels"]
    if loaded is not None or _state["tried"] or window_bytes < MIN_BYTES:
        return loaded
    with _lock:
        if not _state["tried"]:
            _state["kernels"] = _load()
            _state["tried"] = True
    return _state["kernels"]


def readonly(u8: np.ndarray) -> np.ndarray:
    """The bytes as a read-only array: every call then has the types the kernels were compiled
    for (a writable array would make numba compile them again)."""
    if u8.flags.writeable:
        u8 = u8.view()
        u8.flags.writeable = False
    return u8


def walker(fb, fmt: int, big: bool, *, rec_len: int = 16, section: int = -1, sections: bool = False,
           ticks: int = 1_000_000, biggest: int = 0, first_ts: int = 0):
    """``start -> (offsets, kinds)``: the compiled ``walk.walk`` over the window ``fb``
    (a ``fields.FileBytes``), or None when the kernels are not to be used for it."""
    loaded = kernels(fb.n)
    if loaded is None:
        return None
    walk_jit, buf = loaded[0], readonly(fb.u8v)
    return lambda start: walk_jit.walk(buf, int(start), int(fmt), bool(big), int(rec_len), int(section),
                                       bool(sections), int(ticks), int(biggest), int(first_ts), CHAINS)


def status() -> dict:
    """Whether the kernels are loaded, how long loading took (import, compile or read from the
    cache, first call), whether they are cached on disk, and why not when they are not."""
    return {"enabled": enabled(), "loaded": _state["kernels"] is not None, "seconds": _state["seconds"],
            "cache": _state["cache"], "why_not": _state["why_not"]}


def _load():
    """Import numba, compile (or read from the cache) every kernel by calling it once on a tiny
    capture. On any failure with the disk cache, once more in memory; then give up (numpy)."""
    global CACHE
    t0 = time.perf_counter()
    for cache in (True, False):
        CACHE = cache
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # numba's warnings are not the student's
                from . import decode_jit, walk_jit
                if not cache:                             # decorate again, without the disk cache
                    walk_jit = importlib.reload(walk_jit)
                    decode_jit = importlib.reload(decode_jit)
                decode_jit.warm_up(walk_jit)
        except ImportError as err:                        # no numba: the numpy path, silently
            _state["why_not"] = f"numba is not installed ({err})"
            return None
        except Exception as err:                          # noqa: BLE001 - any failure: fall back
            _state["why_not"] = f"{type(err).__name__}: {err}"
            continue
        _state["seconds"] = time.perf_counter() - t0
        _state["cache"] = cache and _cached(walk_jit.walk)
        _state["why_not"] = None
        return walk_jit, decode_jit
    return None


def _cached(dispatcher) -> bool:
    """True when numba keeps this kernel's machine code on disk."""
    from numba.core.caching import NullCache
    return not isinstance(getattr(dispatcher, "_cache", NullCache()), NullCache)
