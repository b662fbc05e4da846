"""How long does the issue's sweep take, and how close are the kit and iperf3 to the model?

The sweep of the done-when: tcp, udp, udpr × 2 rates × 2 delays × 2 losses
with small files (100 kB, UDPR MAX_WAIT 0.2 s), on the best backend of this
machine. By default one repetition (24 runs, under a minute) and the time
for three repetitions extrapolated; ``--reps 3`` runs the whole 72.

Then the done-when's 2 % check and the peer: tcp at 10 Mbit/s, no delay, no
loss, with wirelab's programs and with iperf3 on the same backend in the same
run: a 1 MB file with wirelab (PPCB: 21 B of framing per 1000 B chunk, in the
prediction), and both engines in the time workload (2 s bulk, like iperf3's
-t; iperf3's -n ends before a slow link has carried the file), 5 runs each.

Run: .venv/bin/python bench/bench_experiment.py [--reps 3] [--out /tmp/bench-experiment]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from wirelab.experiment import Experiment, run, summarize


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="wirelab-bench-"))
    shutil.rmtree(out, ignore_errors=True)

    sweep = Experiment("bench-sweep", proto=["tcp", "udp", "udpr"], size="100KB",
                       rate=["10mbit", "20mbit"], delay=["0", "20ms"], loss=["0", "1%"],
                       max_wait="0.2s", reps=args.reps, timeout=60)
    start = time.monotonic()
    df = run(sweep, out=out / "sweep", progress=False)
    took = time.monotonic() - start
    per_run = took / len(df)
    print(f"sweep: {len(df)} runs on {', '.join(sorted(set(df['backend'])))} in {took:.1f} s "
          f"({per_run:.2f} s/run), {int((df['status'] != 'ok').sum())} not ok")
    print(f"  72 runs (3 repetitions) take about {72 * per_run:.0f} s: target < 300 s "
          f"→ {'met' if 72 * per_run < 300 else 'MISSED'}")

    backend = df["backend"].mode().iloc[0]
    run(Experiment("bench-peer", proto="tcp", size="1MB", rate="10mbit", reps=5, backend=backend,
                   timeout=60), out=out / "peer", progress=False)
    for engine in ("wirelab", "iperf3"):
        peer = run(Experiment("bench-peer", proto="tcp", workload="time", time="2s", rate="10mbit", reps=5,
                              engine=engine, backend=backend, timeout=60), out=out / "peer", progress=False)
    table = summarize(peer)
    print("\ntcp, 10 Mbit/s, no delay, no loss, 5 runs each (measured ÷ predicted):")
    for _, row in table.iterrows():
        ratio = row["measured_over_predicted"]
        what = "1 MB file" if row["workload"] == "file" else "2 s bulk"
        print(f"  {row['engine']:8} {what:10} {row['goodput_bps_mean'] / 1e6:7.3f} ± "
              f"{row['goodput_bps_ci'] / 1e6:.3f} Mbit/s  predicted {row['pred_goodput_bps'] / 1e6:.3f}"
              f"  ratio {ratio:.4f}  {'within 2 %' if abs(ratio - 1) <= 0.02 else 'OUTSIDE 2 %'}")
    bulk = table[table["workload"] == "time"].set_index("engine")["goodput_bps_mean"]
    print(f"  wirelab / iperf3 goodput (2 s bulk, same link): {bulk['wirelab'] / bulk['iperf3']:.3f}")
    print(f"\nresults kept in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
