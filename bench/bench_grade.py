"""How long does a class of 20 take to grade, and what do parallel jobs buy?

The class: the 10 example submissions (data/example-class) laid out round-robin
into 20 folders, so it holds correct programs in C and Python, the broken
ones, and the ones that loop, fork or flood (as a real class might). Graded
with ``--jobs N`` and then with ``--jobs 1`` (the peer, same run, same
tests); prints both times, the ratio, and whether both gradings agree test
for test. By default a slice of the catalogue (one test of each kind, about
a minute per pass at --jobs 4 here); ``--full`` grades every test (about
ten times longer).

Needs root.  Run: sudo .venv/bin/python bench/bench_grade.py [--jobs 4] [--full]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from wirelab.grade import find_submissions, grade_class, load_catalogue
from wirelab.grade.handin import lay_out

ROOT = Path(__file__).resolve().parents[1]
SLICE = ["client-tcp-100KB", "server-udpr-1B", "pair-udpr-20KB-loss10", "client-udpr-100KB-10mbit-10ms",
         "server-udpr-out-of-order", "server-udpr-foreign-conn", "client-udpr-lost-acc",
         "server-tcp-silent-client"]


def make_class(folder: Path, size: int) -> list[tuple[str, Path]]:
    examples = find_submissions(class_dir=ROOT / "data" / "example-class")    # folders, archives, patches
    for i in range(size):
        name, source = examples[i % len(examples)]
        lay_out(source, folder / f"s{i + 1:02d}-{name}")
    return find_submissions(class_dir=folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--size", type=int, default=20, help="submissions in the class")
    parser.add_argument("--full", action="store_true", help="every test of the catalogue, not a slice")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_grade: needs root (namespaces and a uid per submission); skipped")
        return 0
    catalogue = load_catalogue() if args.full else load_catalogue().select(SLICE)
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        tmp = Path(tmp)
        submissions = make_class(tmp / "class", args.size)
        print(f"{len(submissions)} submissions × {len(catalogue.tests)} tests, {os.cpu_count()} CPUs")
        times, results = {}, {}
        for jobs in (args.jobs, 1):
            start = time.monotonic()
            results[jobs] = grade_class(submissions, catalogue, tmp / f"reports-{jobs}", jobs=jobs, progress=False)
            times[jobs] = time.monotonic() - start
            print(f"--jobs {jobs:<2} {times[jobs]:7.1f} s  ({times[jobs] / len(submissions):.1f} s per submission)")
    print(f"speed-up of --jobs {args.jobs} over --jobs 1: {times[1] / times[args.jobs]:.2f}x")
    differ = [(a.name, t.id, t.status, u.status) for a, b in zip(results[args.jobs], results[1])
              for t, u in zip(a.tests, b.tests) if (t.status == "pass") != (u.status == "pass")]
    print("both gradings agree test for test" if not differ else f"gradings differ on {len(differ)} tests: {differ[:5]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
