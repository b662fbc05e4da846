"""How fairly do concurrent flows share one link, and how does it depend on where the queue is?

Two TCP flows (CUBIC) on a 10 Mbit/s link, wirelab's programs, and iperf3 -P 2
beside them (its two streams in one process: the peer), on the namespaces
backend (tbf on the sender's own interface) and on the userspace link (the
queue is a node between the hosts), ``--reps`` runs each (default 5). Prints
each flow's share of the total, Jain's index (mean ± 95 % CI) and the total
against the model's η·C. The test suite only asks "each near 5 Mbit/s"
(3.5–6.5) on the userspace link; the tight figures are here.

Run: .venv/bin/python bench/bench_flows.py [--reps 5] [--seconds 5] [--out /tmp/bench-flows]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from wirelab.experiment import Experiment, fairness, run, summarize


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="wirelab-bench-flows-"))
    shutil.rmtree(out, ignore_errors=True)
    print(f"two TCP flows (CUBIC), 10 Mbit/s, {args.seconds:g} s runs, {args.reps} runs each")
    for backend in ("namespaces", "userspace"):
        for engine, flows in (("wirelab", "tcp + tcp"), ("iperf3", "tcp streams=2")):
            exp = Experiment(f"flows-{backend}-{engine}", flows=flows, engine=engine, backend=backend,
                             workload="time", time=args.seconds, rate="10mbit", cc="cubic", reps=args.reps,
                             timeout=4 * args.seconds + 30)
            start = time.monotonic()
            frame = run(exp, out=out / exp.name, progress=False)
            runs = fairness(frame)
            runs["smaller_share"] = runs["min_stream_bps"] / runs["total_goodput_bps"]
            row = summarize(runs, metrics=["jain_index", "smaller_share", "total_goodput_bps"]).iloc[0]
            predicted = runs["pred_total_bps"].iloc[0]
            print(f"  {backend:10} {engine:7} {flows:14}  Jain {row['jain_index_mean']:.3f} ± "
                  f"{row['jain_index_ci']:.3f}  smaller share {row['smaller_share_mean']:.2f} ± "
                  f"{row['smaller_share_ci']:.2f}  total/η·C {row['total_goodput_bps_mean'] / predicted:.3f}  "
                  f"({row['n']} ok, {time.monotonic() - start:.0f} s)")
    print(f"results kept in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
