"""How close is every setting of a mixed sweep to the model, and why not closer?

The mixed sweep of issue 11, on the best backend of this machine, 10 Mbit/s:

    tcp   cubic and bbr × 200 kB and 2 MB × 0 and 15 ms one-way × 0 and 1 % loss
    udp   200 kB and 2 MB × 0 and 15 ms × 0 and 1 % loss
    udpr  1 MB × 0 and 15 ms × 2 % loss, MAX_WAIT 0.3 s

Each setting gets 3 repetitions, then more (up to ``--max-reps``, within a time
budget per protocol) while its 95 % interval is wider than ±10 % of the mean
(``Experiment(precision=0.10)``). UDPR's file is 1 MB because a timeout costs
MAX_WAIT: the spread of one run falls as 1/√packets (``adaptive.runs_needed``).

Printed: the residual table (measured ÷ predicted, interval, the named reasons,
what is left), the runs that failed, the settings outside ±10 % and whether a
reason explains them, and every UDP run's goodput against the link limit η·C.
Nothing is asserted: the numbers are for a person (and the lead) to read.

``--grid issue28``: the 24 settings of issue 28's sweep (TCP CUBIC and BBR × 200 kB
and 2 MB × 0 and 15 ms × 0 and 1 %; UDP 500 kB × 0 and 15 ms × 0 and 1 %; UDPR
100 kB × 0 and 5 ms × 0 and 2 %, MAX_WAIT 0.3 s), 3 runs each.

``--grid wide`` sweeps wider than any one notebook: ``--settings`` settings drawn
(seeded, ``--seed``) from sizes 20 kB–10 MB, one-way delays 0–100 ms, loss 0–5 %,
for Reno, CUBIC, BBR, UDP and UDPR (UDPR's file at most 200 kB: each lost packet
costs MAX_WAIT; a setting predicted to take longer than ``--longest`` s a run is drawn
again), 3 runs each, and prints the share of settings within ±10 % (and
within or with overlapping intervals) and the worst five with their reasons.

``--grid random`` (issue 32) draws a fresh grid each time (the seed is printed; ``--seed`` repeats
one): sizes 100 kB–20 MB, rates 5–100 Mbit/s (both drawn evenly on a log scale), one-way delays
0–100 ms, loss 0–3 % (a quarter of the draws without loss), Reno, CUBIC, BBR, UDP, UDPR and
Go-Back-N (UDPR and Go-Back-N: MAX_WAIT 0.3 s, files up to 400 kB and 2 MB, Go-Back-N's window
1, 2, 4, 8 or 16; a draw predicted to take longer than ``--longest`` s a run is drawn again).
Besides the share within ±10 % and the worst five, it prints the calibration of the per-run
interval: the share of single runs inside their 90 % interval (the model's 5-95 % of one run where
it simulates runs, ``model.window_runs``; else its mean ± 1.645 σ where it gives a σ), and every
run against η·C.

``--grid bbr`` draws a fresh grid of BBR files only (sizes 100 kB–5 MB, 4–100 Mbit/s, one-way delays
20–120 ms, loss 0.1–1 % in 3 of 10, the link's own queue or in 4 of 10 one of 15–100 frames): BBR's
paced start-up and its overshoot meeting small queues (``model.bbr_startup``).

Run: .venv/bin/python bench/bench_fidelity.py [--reps 3] [--max-reps 15] [--out /tmp/bench-fidelity]
     .venv/bin/python bench/bench_fidelity.py --grid wide [--settings 40] [--seed 1]
     .venv/bin/python bench/bench_fidelity.py --grid random [--settings 40] [--seed N] [--longest 8]
                                              [--adaptive --max-reps 12 --budget 900]
"""
from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from wirelab.analysis import residual_table
from wirelab.experiment import Experiment, run
from wirelab.model import predict

#: A receiver's goodput may exceed η·C by the clock's resolution on its two instants, no more.
CLOCK_S = 2e-6


def sweeps(reps: int, max_reps: int) -> dict[str, Experiment]:
    common = dict(rate="10mbit", reps=reps, precision=0.10, max_reps=max_reps)
    return {
        "tcp": Experiment("fidelity-tcp", proto="tcp", cc=["cubic", "bbr"], size=["200KB", "2MB"],
                          delay=["0", "15ms"], loss=["0", "1%"], budget_s=900, **common),
        "udp": Experiment("fidelity-udp", proto="udp", size=["200KB", "2MB"], delay=["0", "15ms"],
                          loss=["0", "1%"], budget_s=300, **common),
        "udpr": Experiment("fidelity-udpr", proto="udpr", size="1MB", delay=["0", "15ms"], loss="2%",
                           max_wait="0.3s", budget_s=900, **common),
    }


#: The wide grid's axes (issue 28 item 4).
WIDE_SIZES_KB = (20, 50, 200, 500, 2000, 10000)
WIDE_DELAYS_MS = (0, 5, 15, 40, 100)
WIDE_LOSSES = (0, 0.005, 0.01, 0.02, 0.05)
WIDE_KINDS = ("reno", "cubic", "bbr", "udp", "udpr")
UDPR_LARGEST_KB = 200


def predicted_s(kind: str, size_kb: int, delay_ms: float, loss: float) -> float:
    """The model's transfer time of a drawn setting at 10 Mbit/s (UDPR: MAX_WAIT 0.3 s)."""
    proto = kind if kind in ("udp", "udpr") else "tcp"
    p = predict(proto, 10e6, size=size_kb * 1000, rtt_s=2 * delay_ms / 1e3, loss=loss, max_wait_s=0.3,
                cc=None if proto != "tcp" else kind)
    return p.transfer.total_s if p.transfer is not None else math.inf


def wide_sweeps(count: int, seed: int, reps: int, longest_s: float = math.inf) -> dict[str, Experiment]:
    """``count`` distinct settings drawn from the wide grid, one Experiment of cases per protocol;
    a draw the model expects to take longer than ``longest_s`` a run is drawn again."""
    rng = random.Random(seed)
    drawn: dict[tuple, None] = {}
    while len(drawn) < count:
        kind = rng.choice(WIDE_KINDS)
        sizes = [s for s in WIDE_SIZES_KB if kind != "udpr" or s <= UDPR_LARGEST_KB]
        one = (kind, rng.choice(sizes), rng.choice(WIDE_DELAYS_MS), rng.choice(WIDE_LOSSES))
        if predicted_s(*one) <= longest_s:
            drawn[one] = None
    cases: dict[str, list[dict]] = {}
    for kind, size, delay, loss in drawn:
        proto = kind if kind in ("udp", "udpr") else "tcp"
        case = {"size": f"{size}KB", "delay": f"{delay}ms", "loss": f"{loss * 100:g}%"}
        cases.setdefault(proto, []).append(case | ({"cc": kind} if proto == "tcp" else {}))
    extra = {"udpr": {"max_wait": "0.3s"}}
    return {proto: Experiment(f"fidelity-wide-{proto}", proto=proto, rate="10mbit", reps=reps, cases=these,
                              shuffle=True, **extra.get(proto, {}))
            for proto, these in sorted(cases.items())}


#: The random grid's ranges (issue 32).
RANDOM_SIZES_B = (100e3, 20e6)
RANDOM_RATES_BPS = (5e6, 100e6)
RANDOM_DELAY_S = (0.0, 0.1)
RANDOM_LOSS = (0.0, 0.03)
UDPR_LARGEST_B = 400e3
#: Go-Back-N joins the random grid (issue 35): its window drawn from the CLI's choices.
RANDOM_KINDS = WIDE_KINDS + ("gbn",)
GBN_WINDOWS = (1, 2, 4, 8, 16)
GBN_LARGEST_B = 2e6


def _predicted_run_s(kind: str, size: int, rate: float, delay: float, loss: float, **options) -> float:
    proto = kind if kind in ("udp", "udpr", "gbn") else "tcp"
    p = predict(proto, rate, size=size, rtt_s=2 * delay, loss=loss, max_wait_s=0.3,
                cc=None if proto != "tcp" else kind, wire="emulated", timestamps=proto == "tcp", **options)
    return p.transfer.total_s if p.transfer is not None else math.inf


def random_sweeps(count: int, seed: int, reps: int, longest_s: float, max_reps: int | None = None,
                  budget_s: float | None = None) -> dict[str, Experiment]:
    """``count`` settings drawn afresh from the random grid's ranges (module docstring), one
    Experiment of cases per protocol; a draw predicted to take longer than ``longest_s`` a run is
    drawn again. With ``max_reps`` a setting gets more runs while its interval (or the model's own
    spread over the runs made) is wider than ±10 %, within ``budget_s`` a protocol."""
    rng = random.Random(seed)
    log = lambda low, high: math.exp(rng.uniform(math.log(low), math.log(high)))     # noqa: E731
    cases: dict[str, list[dict]] = {}
    drawn = 0
    while drawn < count:
        kind = rng.choice(RANDOM_KINDS)
        # UDPR waits a round trip a packet: its files from the low end, or hardly any would fit in time
        largest = {"udpr": UDPR_LARGEST_B, "gbn": GBN_LARGEST_B}.get(kind, RANDOM_SIZES_B[1])
        size = int(log(RANDOM_SIZES_B[0], largest))
        rate = log(*RANDOM_RATES_BPS)
        delay = round(rng.uniform(*RANDOM_DELAY_S), 3)
        loss = 0.0 if rng.random() < 0.25 else round(rng.uniform(*RANDOM_LOSS), 4)
        options = {"window_packets": rng.choice(GBN_WINDOWS)} if kind == "gbn" else {}
        if _predicted_run_s(kind, size, rate, delay, loss, **options) > longest_s:
            continue
        proto = kind if kind in ("udp", "udpr", "gbn") else "tcp"
        case = {"size": f"{size}B", "rate": f"{rate / 1e6:.1f}mbit", "delay": f"{delay * 1e3:g}ms",
                "loss": f"{loss * 100:g}%", **options}
        cases.setdefault(proto, []).append(case | ({"cc": kind} if proto == "tcp" else {}))
        drawn += 1
    extra = {"udpr": {"max_wait": "0.3s"}, "gbn": {"max_wait": "0.3s"}}
    adaptive = dict(precision=0.10, max_reps=max_reps, budget_s=budget_s) if max_reps and max_reps > reps else {}
    return {proto: Experiment(f"fidelity-random-{proto}", proto=proto, reps=reps, cases=these, shuffle=True,
                              **extra.get(proto, {}), **adaptive)
            for proto, these in sorted(cases.items())}


#: The BBR grid's ranges: BBR's start-up (model.bbr_startup), paced, and its overshoot meeting small queues.
BBR_SIZES_B, BBR_RATES_BPS, BBR_DELAY_S, BBR_LOSS = (100e3, 5e6), (4e6, 100e6), (0.02, 0.12), (0.001, 0.01)
BBR_QUEUES = (15, 25, 40, 60, 100)


def bbr_sweeps(count: int, seed: int, reps: int) -> dict[str, Experiment]:
    """``count`` BBR files drawn afresh (module docstring, ``--grid bbr``): sizes, rates (log scale) and
    one-way delays from the ranges above, loss in 3 of 10, the link's own queue or (4 in 10) a small one."""
    rng = random.Random(seed)
    log = lambda low, high: math.exp(rng.uniform(math.log(low), math.log(high)))     # noqa: E731
    cases = []
    for _ in range(count):
        case = {"size": f"{int(log(*BBR_SIZES_B))}B", "rate": f"{log(*BBR_RATES_BPS) / 1e6:.2f}mbit",
                "delay": f"{rng.uniform(*BBR_DELAY_S) * 1e3:.1f}ms", "cc": "bbr",
                "loss": "0%" if rng.random() < 0.7 else f"{rng.uniform(*BBR_LOSS) * 100:.3f}%"}
        if rng.random() < 0.4:
            case["queue"] = rng.choice(BBR_QUEUES)
        cases.append(case)
    return {"tcp": Experiment("fidelity-bbr", proto="tcp", reps=reps, cases=cases, shuffle=True)}


def run_interval(runs: pd.DataFrame) -> pd.DataFrame:
    """Each measured file run beside its prediction's 90 % interval for one run's data time: the
    model's 5-95 % where it simulates runs, else mean ± 1.645 σ where it gives σ (NaN: none)."""
    ok = runs[runs["status"].isin(["ok"]) & runs["size_bytes"].notna()].copy()
    low = ok.get("pred_data_time_q05_s", pd.Series(math.nan, index=ok.index))
    high = ok.get("pred_data_time_q95_s", pd.Series(math.nan, index=ok.index))
    std = pd.to_numeric(ok.get("pred_transfer_std_s", pd.Series(math.nan, index=ok.index)), errors="coerce")
    mean = pd.to_numeric(ok["pred_data_time_s"], errors="coerce")
    ok["run_low_s"] = low.where(low.notna(), (mean - 1.645 * std).clip(lower=0))
    ok["run_high_s"] = high.where(high.notna(), mean + 1.645 * std)
    ok["interval_from"] = ["runs" if pd.notna(a) else "σ" if pd.notna(b) else None
                           for a, b in zip(low, ok["run_high_s"])]
    ok["inside"] = (ok["transfer_s"] >= ok["run_low_s"]) & (ok["transfer_s"] <= ok["run_high_s"])
    ok["faster"], ok["slower"] = ok["transfer_s"] < ok["run_low_s"], ok["transfer_s"] > ok["run_high_s"]
    return ok[ok["run_high_s"].notna() & (ok["run_high_s"] > ok["run_low_s"])]


def above_eta_c(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs of any protocol whose receiver goodput exceeds η·C beyond the clock's resolution."""
    ok = runs[runs["status"].isin(["ok", "incomplete"])]
    limit = ok["pred_efficiency"] * ok["rate_bps"] * (1 + 2 * CLOCK_S / ok["transfer_s"])
    return ok[ok["goodput_bps"] > limit]


def worst(table: pd.DataFrame, count: int = 5) -> pd.DataFrame:
    """The settings furthest from their prediction (by |measured ÷ predicted − 1|)."""
    compared = table[table["within"].notna()]
    return compared.reindex(compared["residual"].abs().sort_values(ascending=False).index).head(count)


def issue28_sweeps(reps: int) -> dict[str, Experiment]:
    """The mixed sweep a user ran with ``wirelab run`` (24 settings), ``--grid issue28``."""
    common = dict(rate="10mbit", reps=reps)
    return {
        "tcp": Experiment("fidelity28-tcp", proto="tcp", cc=["cubic", "bbr"], size=["200KB", "2MB"],
                          delay=["0", "15ms"], loss=["0", "1%"], **common),
        "udp": Experiment("fidelity28-udp", proto="udp", size="500KB", delay=["0", "15ms"], loss=["0", "1%"],
                          **common),
        "udpr": Experiment("fidelity28-udpr", proto="udpr", size="100KB", delay=["0", "5ms"], loss=["0", "2%"],
                           max_wait="0.3s", **common),
    }


def above_link(runs: pd.DataFrame) -> pd.DataFrame:
    """UDP runs whose receiver goodput exceeds η·C beyond the clock's resolution."""
    udp = runs[(runs["proto"] == "udp") & runs["status"].isin(["ok", "incomplete"])]
    limit = udp["pred_efficiency"] * udp["rate_bps"] * (1 + 2 * CLOCK_S / udp["transfer_s"])
    return udp[udp["goodput_bps"] > limit]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--max-reps", type=int, default=15)
    parser.add_argument("--out", default=None)
    parser.add_argument("--only", default="tcp,udp,udpr,gbn", help="which groups, e.g. tcp,udpr")
    parser.add_argument("--adaptive", action="store_true",
                        help="random grid: more runs (up to --max-reps) where an interval is wider than ±10 %%")
    parser.add_argument("--budget", type=float, default=900.0, help="random grid, --adaptive: seconds of runs a protocol")
    parser.add_argument("--grid", choices=("mixed", "issue28", "wide", "random", "bbr"), default="mixed")
    parser.add_argument("--settings", type=int, default=40, help="wide grid: how many settings")
    parser.add_argument("--seed", type=int, default=None,
                        help="wide grid: which settings (default 1); random grid: default a fresh one, printed")
    parser.add_argument("--longest", type=float, default=30.0,
                        help="wide grid: draw again a setting predicted to take longer (s a run)")
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = int(time.time()) % 100_000 if args.grid in ("random", "bbr") else 1
    if args.grid in ("random", "bbr"):
        longest = f", at most {args.longest:g} s a run predicted" if args.grid == "random" else ""
        print(f"{args.grid} grid: seed {args.seed}, {args.settings} settings{longest}")
    out = Path(args.out or tempfile.mkdtemp(prefix="wirelab-bench-fidelity-"))
    load = os.getloadavg()
    print(f"load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")
    frames, tables = [], []
    groups = {"mixed": lambda: sweeps(args.reps, args.max_reps), "issue28": lambda: issue28_sweeps(args.reps),
              "wide": lambda: wide_sweeps(args.settings, args.seed, args.reps, args.longest),
              "random": lambda: random_sweeps(args.settings, args.seed, args.reps, args.longest,
                                              args.max_reps if args.adaptive else None, args.budget),
              "bbr": lambda: bbr_sweeps(args.settings, args.seed, args.reps)}[args.grid]()
    for group, exp in groups.items():
        if group not in args.only.split(","):
            continue
        shutil.rmtree(out / group, ignore_errors=True)
        start = time.monotonic()
        df = run(exp, out=out / group, progress=False)
        print(f"{group}: {len(df)} runs in {time.monotonic() - start:.0f} s on "
              f"{', '.join(sorted(set(df['backend'])))}; status {df['status'].value_counts().to_dict()}")
        frames.append(df)
        tables.append(residual_table(df, precision=exp.precision, max_reps=exp.max_reps))
        if args.grid != "mixed":        # kept as it goes: a long sweep cut short still says something
            pd.concat(tables, ignore_index=True).to_csv(out / "residuals.csv", index=False)
    runs = pd.concat(frames, ignore_index=True)
    table = pd.concat(tables, ignore_index=True)
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")

    with pd.option_context("display.width", 250, "display.max_colwidth", 120, "display.max_rows", 200):
        shown = table.assign(**{"measured/predicted": table["measured/predicted"].round(3),
                                "±interval": (100 * table["±interval"]).round(1),
                                "left": (100 * table["left"]).round(1)})
        print("\nresidual table (±interval and left in %):")
        print(shown[["setting", "n", "measured/predicted", "±interval", "left", "explained",
                     "reasons"]].to_string(index=False))
    failed = runs[runs["status"] == "failed"]
    print(f"\nfailed runs: {len(failed)}")
    for _, row in failed.iterrows():
        print(f"  {row['proto']} {row.get('cc') or ''} {row['size_bytes']:.0f} B {row['delay_s'] * 1e3:g} ms "
              f"{row['loss']:.0%}: {row['error']}")
    outside = table[table["within"] == False]                       # noqa: E712 - None: not compared
    print(f"settings within ±10 %: {int((table['within'] == True).sum())} of {len(table)}; "  # noqa: E712
          f"outside: {len(outside)}, of which explained: {int(outside['explained'].sum())}")
    for _, row in outside.iterrows():
        print(f"  {row['setting']}: {row['measured/predicted']:.3f} ({row['reasons']})")
    compared = table[table["within"].notna()]
    met = compared["within"].astype(bool) | (compared["overlap"] == True)          # noqa: E712
    print(f"share within ±10 %: {compared['within'].astype(bool).mean():.0%}; within or intervals overlapping: "
          f"{met.mean():.0%} ({int(met.sum())} of {len(compared)} compared)")
    print("worst five:")
    for _, row in worst(table).iterrows():
        print(f"  {row['setting']}: {row['measured/predicted']:.3f} ±{row['±interval']:.0%} ({row['reasons']})")
    high = above_link(runs)
    print(f"UDP runs above the link limit η·C: {len(high)} of {int((runs['proto'] == 'udp').sum())}"
          + (f" (highest {(high['goodput_bps'] / (high['pred_efficiency'] * high['rate_bps'])).max():.4f} × η·C)"
             if len(high) else ""))
    compared_runs = run_interval(runs)
    if len(compared_runs):
        print(f"single runs inside their 90 % interval: {compared_runs['inside'].mean():.0%} of {len(compared_runs)} "
              f"(simulated runs: {compared_runs.loc[compared_runs['interval_from'] == 'runs', 'inside'].mean():.0%} "
              f"of {int((compared_runs['interval_from'] == 'runs').sum())}; mean ± 1.645 σ: "
              f"{compared_runs.loc[compared_runs['interval_from'] == 'σ', 'inside'].mean():.0%} of "
              f"{int((compared_runs['interval_from'] == 'σ').sum())}); faster than their 5 %: "
              f"{compared_runs['faster'].mean():.0%}, slower than their 95 %: {compared_runs['slower'].mean():.0%} "
              "(5 % each if the model is unbiased)")
    beyond = compared[compared["residual"].abs() > 0.25]
    print(f"settings beyond ±25 %: {len(beyond)} of {len(compared)}")
    fast = above_eta_c(runs)
    print(f"runs above η·C, any protocol: {len(fast)} of {int(runs['status'].isin(['ok', 'incomplete']).sum())}")
    print(f"\nresults kept in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
