"""``wirelab run``: a sweep from the command line, saved to a folder, summarised as a table.

    wirelab run --proto tcp,udp,udpr --size 1MB --rate 10mbit --delay 0,20ms \\
                --loss 0,1% --reps 3 --out data/my-sweep [--engine wirelab,iperf3]

Every list is comma-separated; the sweep is every combination × --reps.
Running the same command again resumes: only the missing runs are made.

Across two machines (each a Dask worker of one scheduler; see the README):

    wirelab run --rate 1mbit,10mbit --hosts a=pc07,b=pc08 --cluster tcp://10.0.0.1:8786

The server runs on b, the client on a; --hosts again for another pair, run side by side.
"""
from __future__ import annotations

import sys
from pathlib import Path

from .. import transports
from ..errors import UsageError
from ..link.detect import BACKENDS
from . import args as types

#: option → Experiment field; values stay text, the experiment parses them (lists allowed).
GRID = {"proto": "tcp", "size": "1MB", "time": None, "offered": None, "packet": None, "echo": None,
        "rate": "10mbit", "rate_reverse": None, "delay": "0", "jitter": None, "loss": "0", "mtu": None,
        "queue": None, "wire": None, "pppoe": None,
        "sndbuf": None, "rcvbuf": None, "cc": None, "max_wait": None, "max_retransmits": None}
HELP = {"proto": f"{', '.join(transports.names())} or a list (default tcp)", "size": "file size per run, e.g. 1MB",
        "time": "seconds per run (workload time/load)", "offered": "offered load, e.g. 5MB/s",
        "packet": "bytes per write/datagram", "echo": "request/response rounds (workload echo)",
        "rate": "link rate(s), e.g. 10mbit,20mbit", "rate_reverse": "b → a rate (default: as --rate), e.g. 54mbit",
        "wire": "what a frame costs: emulated (IP + 14 B, default) or real (a cable: + 38 B)",
        "pppoe": "true: 8 B of PPPoE a frame more, MTU 1492 unless --mtu", "delay": "one-way delay(s), e.g. 0,20ms",
        "jitter": "delay jitter, e.g. 2ms", "loss": "loss per direction, e.g. 0,1%%",
        "mtu": "IP MTU in bytes", "queue": "queue limit in packets", "sndbuf": "SO_SNDBUF, e.g. 64KB",
        "rcvbuf": "SO_RCVBUF", "cc": "TCP congestion control, e.g. cubic,bbr",
        "max_wait": "udpr MAX_WAIT, e.g. 0.5s", "max_retransmits": "udpr MAX_RETRANSMITS"}


def add_parser(subparsers):
    p = subparsers.add_parser("run", help="run a sweep (protocols × link × repetitions) and summarise it",
                              description=__doc__.split("\n\n")[0] + " Resumable; results in "
                              "parquet + csv + meta.json.")
    for name, default in GRID.items():
        flag = "--" + name.replace("_", "-")
        p.add_argument(flag, dest=name, default=default, metavar="V[,V...]", help=HELP[name])
    types.add_transport_options(p, sweep=True)
    p.add_argument("--workload", choices=["file", "time", "load", "echo"], default=None,
                   help="file (default; time when --time is given), time, load or echo")
    p.add_argument("--reps", type=int, default=3, help="repetitions of each setting (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of data and loss patterns")
    p.add_argument("--engine", default="wirelab",
                   help="wirelab, iperf3, or both: wirelab,iperf3 (one table)")
    p.add_argument("--backend", default="auto", choices=list(BACKENDS),
                   help="link backend (default: the best this machine has)")
    p.add_argument("--hosts", action="append", default=None, metavar="a=HOST,b=HOST",
                   help="run across machines: the Dask workers of the client (a) and the server (b) "
                        "(repeat for more pairs, side by side); needs --cluster")
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="the Dask scheduler the hosts joined, e.g. tcp://10.0.0.1:8786")
    p.add_argument("--timeout", type=float, default=None,
                   help="deadline of each run in seconds (default: 3 × the predicted time + 10 s)")
    p.add_argument("--out", default=None, help="results folder (default data/<name>)")
    p.add_argument("--name", default=None, help="experiment name (default: the --out folder's name)")
    p.add_argument("--capture", action="store_true",
                   help="keep a pcapng of every run in <out>/captures/ (wirelab engine; needs root)")
    p.add_argument("--retry-failed", action="store_true", help="run failed/skipped runs again")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def run(args) -> int:
    # start-up: pandas only when run() runs
    import pandas as pd

    # start-up: numpy, pandas, pyarrow only when run() runs
    from ..experiment import Experiment, pretty, run as run_sweep, summarize

    name = args.name or (Path(args.out).name if args.out else "sweep")
    out = Path(args.out) if args.out else Path("data") / name
    workload = args.workload or ("time" if args.time and not args.offered else
                                 "load" if args.offered else "echo" if args.echo else "file")
    engines = [e.strip() for e in args.engine.split(",") if e.strip()]
    if not engines:
        raise UsageError("no engine given", "use --engine wirelab, iperf3 or wirelab,iperf3")
    grid = {**{k: getattr(args, k) for k in GRID}, **types.given_transport_options(args)}
    frame = None
    for engine in engines:
        experiment = Experiment(name, workload=workload, reps=args.reps, seed=args.seed, engine=engine,
                                backend=args.backend, timeout=args.timeout, capture=args.capture,
                                hosts=";".join(args.hosts) if args.hosts else None, cluster=args.cluster, **grid)
        frame = run_sweep(experiment, out=out, progress=not args.no_progress,
                          retry_failed=args.retry_failed)
    table = pretty(summarize(frame))
    with pd.option_context("display.max_rows", 500, "display.max_columns", 50, "display.width", 200,
                           "display.max_colwidth", 60):
        print(table.to_string(index=False))
    failed = int((frame["status"] != "ok").sum())
    print(f"\n{len(frame)} runs ({failed} not ok) in {out}/: results.parquet, results.csv, meta.json, runs/")
    sys.stdout.flush()
    return 0
