"""Compiled kernels for reading captures (numba), and when to use them.

The reader has two implementations of its two hot loops, which give the
same answer: numpy (``walk.py``, ``fastpath.py``, ``dissect.py``) and
compiled (``walk_jit.py``, ``decode_jit.py``); so has the numbering of
conversations above it (``conversations.py``, ``number_jit.py``). numpy needs nothing beyond
numpy and is the reference; the compiled kernels read a large capture two
to three times as fast. They are used when:

- numba can be imported (it is a dependency, but a student's environment
  may lack it) and ``WIRELAB_NO_JIT`` is not set (``WIRELAB_NO_JIT=1``
  forces the numpy path, e.g. to compare);
- the window of the file is at least ``MIN_BYTES`` or the kernels are
  already loaded: importing numba and loading the kernels costs a few
  tenths of a second (and ~120 MB of memory), more than numpy takes on a
  small capture; a process that reads one capture and ends (``wirelab
  analyze``, ``one_shot``) loads them only for a file of ``ONE_SHOT_BYTES``;
- numba can keep the compiled kernels on disk (next to this file in
  ``__pycache__``, else in the user's cache directory, or where
  ``NUMBA_CACHE_DIR`` says): compiling them takes 15 to 40 s, once; with
  no writable directory it would be every session, more than it saves;
- the address space is not limited (``ulimit -v``, RLIMIT_AS): numba's
  compiler (LLVM) reserves ~200 MB of it and, when an allocation fails,
  ends the whole process (``std::bad_alloc``) where no Python code can
  catch it. (bench/bench_dataset.py converts a capture under such a limit:
  that conversion takes the numpy path.)

Whatever happens, nothing is printed but a progress bar while the kernels
are compiled the first time: a student sees no warning from numba. On any
failure the numpy path is used; ``status()`` tells what happened and why
(the benches print it). ``python -m wirelab.capture.reader.jit`` compiles them
ahead (``make setup`` does).
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from contextlib import contextmanager

import numpy as np

from .formats import RECORD_FORMATS

__all__ = ["kernels", "walker", "readonly", "status", "one_shot", "ENV_OFF", "numbering", "MIN_BYTES", "ONE_SHOT_BYTES", "PCAP",
           "PCAPNG"]

ENV_OFF = "WIRELAB_NO_JIT"
#: the record formats the kernels know
PCAP, PCAPNG = RECORD_FORMATS["pcap"], RECORD_FORMATS["pcapng"]
#: a window of the file smaller than this is read with numpy unless the kernels are loaded already
MIN_BYTES = 8 << 20
#: the same for a process that reads one capture and ends (``wirelab analyze``): loading the
#: kernels from their cache takes 0.4 to 0.9 s, and numpy reads ~750,000 packets/s against the
#: kernels' ~1,100,000 (measured on a 57,000-frame, 78 MB capture): they pay off from ~2 GB
ONE_SHOT_BYTES = 2 << 30
#: what a frame counts for when deciding whether to load the kernels only to number
#: conversations (``numbering``): numpy numbers ~15 M frames/s (pandas loaded), the kernel
#: ~70 M, loading the kernels costs 0.4 to 0.9 s: that pays from ~8 M frames (``MIN_BYTES``)
FRAME_BYTES = 1
#: chains the compiled walker follows at once (walk_jit.py): enough reads in flight to hide
#: most of the memory's latency, few enough that seeding them costs little (a 128 MiB window of
#: 1 kB records: 3.7 ms with 16, 2.3 ms with 32, 2.4 ms with 64)
CHAINS = 32

_lock = threading.Lock()
_state: dict = {"kernels": None, "tried": False, "seconds": None, "compiled": None, "why_not": None,
                "not_here": False}


@contextmanager
def one_shot(file_bytes: int):
    """Inside: one capture of ``file_bytes`` is read by a process that then ends (``wirelab
    analyze``): the kernels are loaded only when they pay for their loading there, for a file of
    ``ONE_SHOT_BYTES`` or more."""
    before, _state["not_here"] = _state["not_here"], file_bytes < ONE_SHOT_BYTES
    try:
        yield
    finally:
        _state["not_here"] = before


def enabled() -> bool:
    return os.environ.get(ENV_OFF, "").strip() in ("", "0")


def kernels(window_bytes: int = MIN_BYTES):
    """The compiled kernels (the ``walk_jit`` and ``decode_jit`` modules) for a window of this
    many bytes, or None: use numpy. The reader asks once per window of the file
    (``decode.scans``) and reads the whole window, walk and decode, the way it was told."""
    if not enabled():
        return None
    loaded = _state["kernels"]
    if loaded is not None or _state["tried"] or _state["not_here"] or window_bytes < MIN_BYTES:
        return loaded
    limit = _address_space_limit()
    if limit is not None:
        _state["why_not"] = f"the address space is limited to {limit >> 20} MiB (RLIMIT_AS)"
        return None
    with _lock:
        if not _state["tried"]:
            _state["kernels"] = _load()
            _state["tried"] = True
    return _state["kernels"]


def numbering(frames: int):
    """The compiled conversation numbering (``number_jit``) for a capture of ``frames`` frames,
    or None: numpy (``conversations``). Used when the reader loaded the kernels (a capture of
    8 MB or more, ``MIN_BYTES``), else loaded as ``kernels`` is, for ``FRAME_BYTES`` a frame."""
    loaded = kernels(frames * FRAME_BYTES)
    return None if loaded is None else loaded[2]


def readonly(u8: np.ndarray) -> np.ndarray:
    """The bytes as a read-only array: every call then has the types the kernels were compiled
    for (a writable array would make numba compile them again)."""
    if u8.flags.writeable:
        u8 = u8.view()
        u8.flags.writeable = False
    return u8


def walker(loaded, fb, fmt: int, big: bool, *, rec_len: int = 16, section: int = -1, sections: bool = False,
           ticks: int = 1_000_000, biggest: int = 0, first_ts: int = 0):
    """``start -> (offsets, kinds)``: the compiled ``walk.walk`` over the window ``fb``
    (a ``fields.FileBytes``), or None when the window is read with numpy (``loaded``: what
    ``kernels`` decided for the window, in ``decode.scans``)."""
    if loaded is None:
        return None
    walk_jit, buf = loaded[0], readonly(fb.u8v)
    return lambda start: walk_jit.walk(buf, int(start), int(fmt), bool(big), int(rec_len), int(section),
                                       bool(sections), int(ticks), int(biggest), int(first_ts), CHAINS)


def status() -> dict:
    """Whether the kernels are loaded; how long loading took (importing numba, then compiling
    them or reading them from the disk cache, and a first call); whether they were compiled
    (no cache yet); why they are not used when they are not."""
    return {"enabled": enabled(), "loaded": _state["kernels"] is not None, "seconds": _state["seconds"],
            "compiled": _state["compiled"], "why_not": _state["why_not"]}


def _load():
    """Import numba and every kernel, and call each once on a tiny capture (numba compiles it or
    reads it from the cache). A progress bar shows when that takes more than a second."""
    t0 = time.perf_counter()
    done, result = threading.Event(), {}

    def work():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # numba's warnings are not the student's
                from . import decode_jit, number_jit, walk_jit     # (numba: here, not at start-up)
                steps = decode_jit.warm_up_steps(walk_jit) + number_jit.warm_up_steps()
                result["steps"] = len(steps)
                for i, step in enumerate(steps):
                    step()
                    result["done"] = i + 1
            result["kernels"] = walk_jit, decode_jit, number_jit
        except ImportError as err:                       # no numba: the numpy path, silently
            result["why_not"] = f"numba is not installed ({err})"
        except RuntimeError as err:                      # (numba: "no locator available")
            result["why_not"] = f"numba has no writable cache directory ({err})"
        except Exception as err:                         # noqa: BLE001 - any failure: numpy
            result["why_not"] = f"{type(err).__name__}: {err}"
        finally:
            done.set()

    threading.Thread(target=work, name="wirelab-jit", daemon=True).start()
    if not done.wait(1.0):
        _progress(done, result)
    loaded = result.get("kernels")
    _state["seconds"] = time.perf_counter() - t0
    _state["why_not"] = result.get("why_not")
    if loaded is not None:
        _state["compiled"] = any(sum(k.stats.cache_misses.values()) for k in (loaded[0].walk, loaded[1].decode,
                                                                           loaded[2]._run))
    return loaded


def _progress(done: threading.Event, result: dict) -> None:
    """A bar while the kernels compile (the first time: 15 to 40 s), gone when they are ready."""
    # start-up: tqdm only when _progress() runs
    from tqdm.auto import tqdm
    with tqdm(total=result.get("steps"), desc="compiling the capture reader (once)", unit="kernel",
              leave=False) as bar:
        while not done.wait(0.5):
            bar.total = result.get("steps")
            bar.update(result.get("done", 0) - bar.n)


def _address_space_limit() -> int | None:
    """The process's address-space limit in bytes (RLIMIT_AS), None when unlimited."""
    try:
        # optional: resource (not on every system)
        import resource
    except ImportError:                   # (not on Windows)
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


if __name__ == "__main__":               # compile ahead: ``python -m wirelab.capture.reader.jit``
    kernels(MIN_BYTES)
    print("wirelab capture kernels:", status())
