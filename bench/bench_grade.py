"""How long does a class of 20 take to grade, what does the sandbox cost, and what do parallel jobs buy?

The class: the example submissions (data/example-class) copied round-robin
into 20 folders, so it holds correct programs in C and Python, the broken
ones, and the ones that loop, fork or flood (as a real class might). Graded
with ``--jobs N`` as ``wirelab grade`` does it (the search for world-writable
folders started beside it, the sweep for leftovers after it) once in the
bubblewrap sandbox and once with ``--trust`` (no sandbox: the peer, same run,
same tests; ``--rounds`` alternates them to even out a shared machine's
load), and with ``--serial`` also with ``--jobs 1``. Prints the times, the
ratios, and whether the gradings agree test for test. By default a slice of
the catalogue (one test of each kind, about a minute per pass at --jobs 4
here); ``--full`` grades every test (about ten times longer).

Needs root.  Run: sudo .venv/bin/python bench/bench_grade.py [--jobs 4] [--rounds 2] [--serial] [--full]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from wirelab.grade import find_submissions, grade_class, load_catalogue
from wirelab.grade.jail import Policy
from wirelab.grade.leftovers import Places, sweep

ROOT = Path(__file__).resolve().parents[1]
SLICE = ["client-tcp-100KB", "server-udpr-1B", "pair-udpr-20KB-loss10", "client-udpr-100KB-10mbit-10ms",
         "server-udpr-out-of-order", "server-udpr-foreign-conn", "client-udpr-lost-acc",
         "server-tcp-silent-client"]


def make_class(folder: Path, size: int) -> list[tuple[str, Path]]:
    examples = sorted(p for p in (ROOT / "data" / "example-class").iterdir() if p.is_dir())
    for i in range(size):
        source = examples[i % len(examples)]
        shutil.copytree(source, folder / f"s{i + 1:02d}-{source.name}")
    return find_submissions(class_dir=folder)


def grade(submissions, catalogue, out: Path, *, jobs: int, trust: bool) -> tuple[float, list, str]:
    """One grading as the command runs it: (seconds, results, what the sweep said)."""
    start = time.monotonic()
    places = Places()
    try:
        results = grade_class(submissions, catalogue, out, jobs=jobs, progress=False, policy=Policy(trust=trust))
        swept = sweep(places)
    finally:
        places.close()
    return time.monotonic() - start, results, swept.summary()


def agree(a: list, b: list) -> str:
    differ = [(x.name, t.id, t.status, u.status) for x, y in zip(a, b)
              for t, u in zip(x.tests, y.tests) if (t.status == "pass") != (u.status == "pass")]
    return "agree test for test" if not differ else f"differ on {len(differ)} tests: {differ[:5]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--size", type=int, default=20, help="submissions in the class")
    parser.add_argument("--rounds", type=int, default=1, help="sandbox/trust pairs, alternated")
    parser.add_argument("--serial", action="store_true", help="also grade with --jobs 1 (sandboxed)")
    parser.add_argument("--full", action="store_true", help="every test of the catalogue, not a slice")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_grade: needs root (namespaces and a uid per submission); skipped")
        return 0
    catalogue = load_catalogue() if args.full else load_catalogue().select(SLICE)
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        tmp = Path(tmp)
        submissions = make_class(tmp / "class", args.size)
        print(f"{len(submissions)} submissions × {len(catalogue.tests)} tests, {os.cpu_count()} CPUs, "
              f"--jobs {args.jobs}")
        times, results = {"sandbox": [], "trust": []}, {}
        for i in range(args.rounds):
            for mode in (("sandbox", "trust") if i % 2 == 0 else ("trust", "sandbox")):
                seconds, results[mode], swept = grade(submissions, catalogue, tmp / f"{mode}-{i}", jobs=args.jobs,
                                                      trust=mode == "trust")
                times[mode].append(seconds)
                print(f"{mode:<8} {seconds:7.1f} s  ({seconds / len(submissions):.1f} s per submission); {swept}")
        sandbox, trust = (sum(times[m]) / len(times[m]) for m in ("sandbox", "trust"))
        print(f"sandbox / trust: {sandbox / trust:.2f}x (mean of {args.rounds}); the gradings "
              f"{agree(results['sandbox'], results['trust'])}")
        if args.serial:
            seconds, serial, _ = grade(submissions, catalogue, tmp / "serial", jobs=1, trust=False)
            print(f"--jobs 1 {seconds:7.1f} s; speed-up of --jobs {args.jobs}: {seconds / sandbox:.2f}x; the gradings "
                  f"{agree(results['sandbox'], serial)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
