"""How long does a class of 20 take to grade, what does the sandbox cost, and what do parallel jobs buy?

The class: the 10 example submissions (data/example-class) laid out round-robin
into 20 folders, so it holds correct programs in C and Python, the broken
ones, and the ones that loop, fork or flood (as a real class might). Graded
with ``--jobs N`` as ``wirelab grade`` does it (the search for world-writable
folders started beside it, the sweep for leftovers after it, timed apart)
in the bubblewrap sandbox and with ``--trust`` (no sandbox), and with
``--base REV`` also by the code of an earlier commit (``git archive``; e.g.
the commit before the sandbox: today's time, same machine, same run).
``--rounds`` alternates the order to even out a shared machine's load;
``--serial`` adds a pass with ``--jobs 1``. Prints the times, the ratios,
and whether the gradings agree test for test. By default a slice of the
catalogue (one test of each kind, about a minute per pass at --jobs 4 here);
``--full`` grades every test (about ten times longer).

Needs root.  Run: sudo .venv/bin/python bench/bench_grade.py [--jobs 4] [--rounds 2] [--base REV] [--serial] [--full]
"""
from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from wirelab.grade import find_submissions, grade_class, load_catalogue
from wirelab.grade.handin import lay_out
from wirelab.grade.jail import Policy
from wirelab.grade.leftovers import Places, sweep

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


#: Grades with whatever ``wirelab`` is first on PYTHONPATH (an earlier commit's), prints seconds and passes.
BASE_RUN = """
import json, sys, time, wirelab
from wirelab.grade import find_submissions, grade_class, load_catalogue
assert wirelab.__file__.startswith(sys.argv[5]), wirelab.__file__
cat = load_catalogue().select(sys.argv[4].split(","))
start = time.monotonic()
graded = grade_class(find_submissions(class_dir=sys.argv[1]), cat, sys.argv[2], jobs=int(sys.argv[3]), progress=False)
print(json.dumps({"seconds": time.monotonic() - start, "passed": [[t.status == "pass" for t in g.tests] for g in graded]}))
"""


def grade(submissions, catalogue, out: Path, *, jobs: int, trust: bool) -> tuple[float, float, list, str]:
    """One grading as the command runs it: (seconds grading, seconds then waiting for the search and
    sweeping, passed per submission and test, what the sweep said)."""
    start = time.monotonic()
    places = Places()
    try:
        results = grade_class(submissions, catalogue, out, jobs=jobs, progress=False, policy=Policy(trust=trust))
        graded = time.monotonic()
        swept = sweep(places)
    finally:
        places.close()
    passed = [[t.status == "pass" for t in g.tests] for g in results]
    return graded - start, time.monotonic() - graded, passed, swept.summary()


def grade_base(lib: Path, class_dir: Path, catalogue, out: Path, *, jobs: int) -> tuple[float, float, list, str]:
    tests = ",".join(t.id for t in catalogue.tests)
    done = subprocess.run([sys.executable, "-c", BASE_RUN, str(class_dir), str(out), str(jobs), tests, str(lib)],
                          env={**os.environ, "PYTHONPATH": str(lib)}, capture_output=True, text=True, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["seconds"], 0.0, found["passed"], "(no sweep then)"


def checkout(rev: str, into: Path) -> Path:
    """``lib/`` of commit ``rev``, unpacked into ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "lib"], capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "lib"


def agree(a: list, b: list) -> str:
    differ = sum(x != y for p, q in zip(a, b) for x, y in zip(p, q))
    return "agree test for test" if not differ else f"differ on {differ} tests"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--size", type=int, default=20, help="submissions in the class")
    parser.add_argument("--rounds", type=int, default=1, help="passes of each mode, their order alternated")
    parser.add_argument("--base", metavar="REV", help="also grade with the code of commit REV (e.g. main)")
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
        base = checkout(args.base, tmp / "base") if args.base else None
        print(f"{len(submissions)} submissions × {len(catalogue.tests)} tests, {os.cpu_count()} CPUs, "
              f"--jobs {args.jobs}" + (f"; base: {args.base}" if base else ""))
        runs = {"sandbox": lambda out: grade(submissions, catalogue, out, jobs=args.jobs, trust=False),
                "trust": lambda out: grade(submissions, catalogue, out, jobs=args.jobs, trust=True)}
        if base is not None:
            runs["base"] = lambda out: grade_base(base, tmp / "class", catalogue, out, jobs=args.jobs)
        times, passed = {mode: [] for mode in runs}, {}
        for i in range(args.rounds):
            for mode in (list(runs) if i % 2 == 0 else list(runs)[::-1]):
                seconds, waited, passed[mode], swept = runs[mode](tmp / f"{mode}-{i}")
                times[mode].append(seconds + waited)
                print(f"{mode:<8} {seconds + waited:7.1f} s  (grading {seconds:.1f} s, then search and sweep "
                      f"{waited:.1f} s); {swept}")
        mean = {mode: sum(v) / len(v) for mode, v in times.items()}
        for peer in [m for m in ("trust", "base") if m in runs]:
            print(f"sandbox / {peer}: {mean['sandbox'] / mean[peer]:.2f}x (mean of {args.rounds}); the gradings "
                  f"{agree(passed['sandbox'], passed[peer])}")
        if args.serial:
            seconds, waited, serial, _ = grade(submissions, catalogue, tmp / "serial", jobs=1, trust=False)
            print(f"--jobs 1 {seconds + waited:7.1f} s; speed-up of --jobs {args.jobs}: "
                  f"{(seconds + waited) / mean['sandbox']:.2f}x; the gradings {agree(passed['sandbox'], serial)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
