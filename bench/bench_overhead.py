"""What wirelab costs beyond the transfers themselves: per run of a sweep, and per command start.

Sweep overhead: a sweep of short transfers on the best backend this machine
has; overhead per run = (wall time − the time the programs themselves took,
client start to its end, ``completion_s``) ÷ runs: building and removing the
link, starting processes, predictions, saving, and the once-per-sweep work
(the host round-trip probes UDPR needs, machine metadata), which is also
printed apart. Goal (issue 16): ≤ 0.3 s. Where the time goes is printed per
phase (seconds per run), timed at the runner's seams: the link layer it is
given, the engine, the result store. Sweeps: one spec (delay 0 → namespaces,
20 ms → userspace link) and one over rate × delay × loss, where every setting
has its own spec and the kept link is reshaped in place.

Start-up: ``wirelab --help`` and ``wirelab send --help`` against the peer
``python -c pass`` (the interpreter alone), median of repeated runs.
Goal: ≤ 0.25 s.

    python bench/bench_overhead.py [--reps 3] [--sweep-only] [--delay 0 --delay 20ms] [--no-grid]

Python's bytecode cache matters for every process a run starts: with
``PYTHONDONTWRITEBYTECODE`` set and no cache written yet, each client process
compiles wirelab's modules again. The bench says which case it ran in.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import wirelab
from wirelab import link as links
from wirelab.experiment import Experiment, run
from wirelab.experiment import calibration, plan
from wirelab.transfer.client import WarmClient
from wirelab.experiment.engines import get_engine
from wirelab.experiment.store import ResultStore

WIRELAB = [sys.executable, "-m", "wirelab"]
STARTS = 9
GOAL_S = 0.3
CLIENT = "client process, whole (incl. its program)"
PROBE = "once: host round trip probe"
ONCE = (PROBE, "once: machine metadata")


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


class Phases:
    """Seconds spent in each named phase, summed over a sweep."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.probing = False                 # inside a host round-trip probe: its client is not a run's

    def client(self) -> str:
        return "probe's client process (in the probe's time)" if self.probing else CLIENT

    @contextmanager
    def timed(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start
            self.counts[name] += 1


class TimedLink:
    """A link whose opening, renewal, closing and client processes are timed."""

    def __init__(self, link, phases: Phases):
        self._link, self._phases = link, phases

    def __getattr__(self, name):
        return getattr(self._link, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        with self._phases.timed("link close"):
            self._link.close()

    def renew(self, seed=None, spec=None):
        name = "link renew (kept link made ready again)" if spec is None else \
            "link renew + reshape (kept link given the next spec)"
        with self._phases.timed(name):
            return self._link.renew(seed) if spec is None else self._link.renew(seed, spec)

    def run(self, host, argv, **kwargs):      # how an engine runs its client (``OpenLink.run``)
        with self._phases.timed(self._phases.client()):
            return self._link.run(host, argv, **kwargs)


class TimedLinks:
    """``wirelab.link`` as the runner sees it, with ``open`` timed."""

    def __init__(self, phases: Phases):
        self._phases = phases

    def __getattr__(self, name):
        return getattr(links, name)

    def open(self, *args, **kwargs):
        with self._phases.timed("link open"):
            return TimedLink(links.open(*args, **kwargs), self._phases)


class TimedEngine:
    """The wirelab engine with each run timed (server thread, client process, result)."""

    def __init__(self, phases: Phases):
        self._engine, self._phases = get_engine("wirelab"), phases

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def run(self, *args, **kwargs):
        with self._phases.timed("engine run, whole (server, client, result)"):
            return self._engine.run(*args, **kwargs)


@contextmanager
def patched(phases: Phases):
    """Time the runner's one-off work and the store's writes (restored afterwards)."""
    originals = (calibration.host_round_trip, plan.machine.collect, ResultStore.record, ResultStore.flush,
                 WarmClient.run, WarmClient.__init__)

    def wrap(name, fn):
        def timed(*args, **kwargs):
            with phases.timed(name() if callable(name) else name):
                return fn(*args, **kwargs)
        return timed

    def probe(*args, **kwargs):
        phases.probing = True
        try:
            with phases.timed(PROBE):
                return originals[0](*args, **kwargs)
        finally:
            phases.probing = False

    calibration.host_round_trip = probe
    plan.machine.collect = wrap("once: machine metadata", originals[1])
    ResultStore.record = wrap("store: run JSON (+ table rewrite when due)", originals[2])
    ResultStore.flush = wrap("store: table rewrite (parquet + csv)", originals[3])
    WarmClient.run = wrap(phases.client, originals[4])     # a client forked by a warm one (kept links)
    WarmClient.__init__ = wrap("warm client start (once per kept link)", originals[5])
    try:
        yield
    finally:
        (calibration.host_round_trip, plan.machine.collect, ResultStore.record, ResultStore.flush,
         WarmClient.run, WarmClient.__init__) = originals


def _report(label: str, df, wall: float, phases: Phases) -> float:
    programs = df["completion_s"].fillna(df["elapsed_s"]).sum()
    n = len(df)
    per_run = (wall - programs) / n
    once = sum(phases.seconds.get(name, 0.0) for name in ONCE)
    backends = ", ".join(sorted(set(df["backend"])))
    print(f"{label}: {n} runs on {backends} in {wall:.2f} s, programs {programs:.2f} s "
          f"→ overhead {per_run:.3f} s/run (goal ≤ {GOAL_S} s → {'met' if per_run <= GOAL_S else 'MISSED'}); "
          f"without the once-per-sweep work {(wall - programs - once) / n:.3f} s/run; "
          f"{int((df['status'] != 'ok').sum())} not ok")
    print("  phase (s per run, summed over the sweep ÷ runs; times called)")
    for name, seconds in sorted(phases.seconds.items(), key=lambda kv: -kv[1]):
        print(f"    {name:52} {seconds / n:6.3f}   ×{phases.counts[name]}")
    print(f"    {'programs themselves (completion_s)':52} {programs / n:6.3f}")
    client = phases.seconds.get(CLIENT, 0.0)
    print(f"    {'→ client process beyond its program':52} {(client - programs) / n:6.3f}")
    return per_run


def _sweep(exp: Experiment, out: Path, label: str) -> float:
    phases = Phases()
    with patched(phases):
        start = time.monotonic()
        df = run(exp, out=out, progress=False, engine=TimedEngine(phases), link_layer=TimedLinks(phases))
        wall = time.monotonic() - start
    return _report(label, df, wall, phases)


def sweep_overhead(reps: int, delays: list[str], grid: bool = True) -> list[float]:
    out = Path(tempfile.mkdtemp(prefix="wirelab-bench-overhead-"))
    cache = "off (PYTHONDONTWRITEBYTECODE: every process compiles wirelab again)" \
        if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"
    print(f"sweep overhead: wirelab from {Path(wirelab.__file__).parent}, bytecode cache {cache}, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    results = []
    try:
        for delay in delays:
            exp = Experiment("overhead", proto=["tcp", "udp", "udpr"], size="100KB", rate="10mbit",
                             delay=delay, reps=reps, max_wait="0.5s", timeout=60)
            results.append(_sweep(exp, out / f"d{delay}", f"sweep, delay {delay:>4}"))
        if grid:            # every setting its own spec: the kept link is reshaped, not reopened
            exp = Experiment("overhead-grid", proto=["tcp", "udpr"], size="100KB", rate=["5mbit", "10mbit"],
                             delay=["5ms", "20ms"], loss=["0", "1%"], reps=1, max_wait="0.5s", timeout=60)
            results.append(_sweep(exp, out / "grid", "sweep over rate × delay × loss"))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--delay", action="append", help="delays to sweep (default 0 and 20ms)")
    parser.add_argument("--sweep-only", action="store_true", help="skip the start-up timings")
    parser.add_argument("--no-grid", action="store_true", help="skip the sweep over rate × delay × loss")
    args = parser.parse_args(argv)
    if not args.sweep_only:
        start_up()
    sweep_overhead(args.reps, args.delay or ["0", "20ms"], grid=not args.no_grid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
