"""100,000 damaged captures through both readers: nothing but CaptureError, no hang.

The mutations (tests/capture_mutants.py): files cut anywhere, bytes flipped,
ranges duplicated, record lengths and other 32-bit fields set to absurd
values, packet headers scrambled, two parts spliced. Each case is read by
``read_capture`` (in memory) and by ``iter_capture`` (streaming, windows of 1 KiB
to 64 KiB, small chunks). The CI test runs 2,000 of them (seeded); this runs
the full count once and prints what happened. Bounded by --hours.
``--reader compiled`` (the default) reads every case by the compiled path
(numba, capture.reader.jit: used for small files too here), ``--reader numpy`` by its
fallback.

Run: .venv/bin/python bench/fuzz_capture.py [--cases 100000] [--seed 16] [--reader numpy]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from capture_mutants import SEEDS, fuzz  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--hours", type=float, default=3.0, help="stop after this long")
    ap.add_argument("--reader", choices=["compiled", "numpy"], default="compiled",
                    help="the reader's compiled path (numba) or its numpy fallback")
    args = ap.parse_args(argv)
    from wirelab.capture.reader import jit
    os.environ[jit.ENV_OFF] = "1" if args.reader == "numpy" else "0"
    jit.MIN_BYTES = 0                               # (the compiled path for small files too)
    if args.reader == "compiled" and jit.kernels(0) is None:
        print(f"the compiled path is not available: {jit.status()}")
        return 1
    t0 = time.perf_counter()
    done = {"cases": 0, "read": 0, "capture_error": 0, "packets": 0, "slowest_s": 0.0}
    batch = 1000
    for start in range(0, args.cases, batch):       # batches: progress, and one seed per batch
        left = args.hours * 3600 - (time.perf_counter() - t0)
        if left <= 0:
            break
        counts = fuzz(min(batch, args.cases - start), seed=args.seed * 1_000_003 + start, seconds=left)
        for key in ("cases", "read", "capture_error", "packets"):
            done[key] += counts[key]
        done["slowest_s"] = max(done["slowest_s"], counts["slowest_s"])
        print(f"{done['cases']:>7} cases: {done['read']} read, {done['capture_error']} CaptureError, "
              f"slowest {done['slowest_s']:.2f} s of CPU, {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"\n{done['cases']} damaged captures (from {len(SEEDS)} seeds, seed {args.seed}, {args.reader} reader): "
          f"{done['read']} read ({done['packets']} packets), {done['capture_error']} CaptureError, "
          f"no other exception; slowest case {done['slowest_s']:.2f} s of CPU; "
          f"{time.perf_counter() - t0:.0f} s on {os.cpu_count()} cores (load {os.getloadavg()[0]:.1f})")
    return 0 if done["cases"] == args.cases else 1


if __name__ == "__main__":
    sys.exit(main())
