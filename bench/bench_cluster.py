"""Two host pairs against one: the wall time of the same sweep across hosts (goal: ≤ 0.6×).

A room of four hosts on this machine (``wirelab.link.room``: network namespaces on a switch,
each running a real ``dask worker``, the scheduler on the switch). The same sweep (document
004's rate sweep: TCP files at 1, 2 and 4 Mbit/s, ``--reps`` each) runs once on one pair (a1 → b1)
and once on two pairs side by side (a1 → b1, a2 → b2), each in a fresh folder, after one
untimed sweep that warms both pairs up. Prints both wall times, the ratio, and how much of a
run is the link's own time (what two pairs can overlap) against each run's set-up (guards,
the clock's echo rounds: Python processes on two shared cores). Needs root.

Run: sudo .venv/bin/python bench/bench_cluster.py [--reps 3] [--size 400KB]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from wirelab.experiment import Experiment, run
from wirelab.link.room import Room

GOAL = 0.6


def _sweep(room: Room, pairs: list[dict], out: Path, args) -> tuple[float, object]:
    exp = Experiment("bench-cluster", proto="tcp", size=args.size, rate=["1mbit", "2mbit", "4mbit"], reps=args.reps,
                     hosts=pairs, cluster=room.address)
    shutil.rmtree(out, ignore_errors=True)
    start = time.monotonic()
    frame = run(exp, out=out, progress=False)
    return time.monotonic() - start, frame


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--size", default="400KB")
    args = parser.parse_args(argv)
    one, two = [{"a": "a1", "b": "b1"}], [{"a": "a1", "b": "b1"}, {"a": "a2", "b": "b2"}]
    root = Path(tempfile.mkdtemp(prefix="wirelab-bench-cluster-"))
    with Room(["a1", "b1", "a2", "b2"], name="bench") as room:
        _sweep(room, two, root / "warm", args)                  # imports and first runs on every worker
        single, frame1 = _sweep(room, one, root / "one", args)
        double, frame2 = _sweep(room, two, root / "two", args)
    shutil.rmtree(root, ignore_errors=True)
    runs = len(frame1)
    for name, frame in (("one pair", frame1), ("two pairs", frame2)):
        ok = (frame["status"] == "ok").sum()
        link_s = frame.get("receiver_duration_s", frame["elapsed_s"] * 0).sum()
        print(f"  {name:9}  {len(frame)} runs ({ok} ok)  link time {link_s:.1f} s of {frame['elapsed_s'].sum():.1f} s "
              f"in runs  pairs used: {', '.join(sorted(set(frame['link_host_a'].dropna())))}")
        for error in frame['error'].dropna().unique():
            print(f"    not ok: {error}")
    ratio = double / single
    print(f"{runs} runs: one pair {single:.1f} s, two pairs {double:.1f} s: ratio {ratio:.2f} "
          f"({'meets' if ratio <= GOAL else 'misses'} the goal of ≤ {GOAL})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
