"""What wirelab costs beyond the transfers themselves: per run of a sweep, and per command start.

Sweep overhead: a sweep of short transfers on the best backend this machine
has; overhead per run = (wall time − the time the programs themselves took,
client start to its end, ``completion_s``) ÷ runs: building and removing the
link, starting processes, predictions, saving. Goal (issue 16): ≤ 0.3 s.

Start-up: ``wirelab --help`` and ``wirelab send --help`` against the peer
``python -c pass`` (the interpreter alone), median of repeated runs.
Goal: ≤ 0.25 s.

    python bench/bench_overhead.py [--reps 3]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wirelab.experiment import Experiment, run

WIRELAB = [sys.executable, "-m", "wirelab"]
STARTS = 9


def start_up() -> None:
    def median_time(argv):
        times = []
        for _ in range(STARTS):
            t = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            times.append(time.perf_counter() - t)
        return statistics.median(times)
    base = median_time([sys.executable, "-c", "pass"])
    print(f"start-up (median of {STARTS}): python -c pass {base:.3f} s (the peer)")
    for args in (["--help"], ["send", "--help"], ["serve", "--help"]):
        took = median_time(WIRELAB + args)
        print(f"  wirelab {' '.join(args):12} {took:.3f} s  ({took / base:.1f}× the bare interpreter)  "
              f"goal ≤ 0.25 s → {'met' if took <= 0.25 else 'MISSED'}")


def sweep_overhead(reps: int) -> None:
    out = Path(tempfile.mkdtemp(prefix="wirelab-bench-overhead-"))
    try:
        for delay in ("0", "20ms"):
            exp = Experiment("overhead", proto=["tcp", "udp", "udpr"], size="100KB", rate="10mbit",
                             delay=delay, reps=reps, max_wait="0.5s", timeout=60)
            start = time.monotonic()
            df = run(exp, out=out / f"d{delay}", progress=False)
            wall = time.monotonic() - start
            programs = df["completion_s"].fillna(df["elapsed_s"]).sum()
            per_run = (wall - programs) / len(df)
            print(f"sweep, delay {delay:>4}: {len(df)} runs on {', '.join(sorted(set(df['backend'])))} in "
                  f"{wall:.1f} s, programs {programs:.1f} s → overhead {per_run:.3f} s/run "
                  f"(goal ≤ 0.3 s → {'met' if per_run <= 0.3 else 'MISSED'}); "
                  f"{int((df['status'] != 'ok').sum())} not ok")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    start_up()
    sweep_overhead(args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
