"""`wirelab --help`, `send` and `serve` start fast because they import no heavy library
(issue 16: ≤ 0.25 s; bench/bench_overhead.py times it). What is imported is behaviour:
a module that pulls numpy in at import time (a model formula did) shows here."""
import subprocess
import sys

import pytest

HEAVY = ("numpy", "pandas", "scapy", "pyshark", "matplotlib", "duckdb", "pyarrow", "numba", "llvmlite")

PROGRAM = """
import runpy, sys
sys.argv = ["wirelab", *sys.argv[1:]]
try:
    runpy.run_module("wirelab", run_name="__main__")
except SystemExit:
    pass
print("HEAVY", sorted(m for m in %r if m in sys.modules))
""" % (HEAVY,)


@pytest.mark.parametrize("argv", [["--help"], ["send", "--help"], ["serve", "--help"]])
def test_the_command_line_starts_without_heavy_libraries(argv):
    done = subprocess.run([sys.executable, "-c", PROGRAM, *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout.lower()
    assert done.stdout.strip().splitlines()[-1] == "HEAVY []"


@pytest.mark.parametrize("argv", [["analyze", "captures/ppcb.pcapng"], ["analyze", "--rate", "10mbit", "--json",
                                                                       "captures/tcp-10mbit-loss2.pcapng"]])
def test_analyze_reads_a_capture_with_numpy_alone(argv, project_root):
    """pandas would cost more than the whole analysis of a small capture (bench/bench_analyze.py),
    and numba's kernels only pay for their loading on a file of gigabytes."""
    done = subprocess.run([sys.executable, "-c", PROGRAM, *argv], capture_output=True, text=True, timeout=120,
                          cwd=project_root)
    assert done.returncode == 0, done.stderr
    assert "TCP analysis" in done.stdout or '"tcp_analysis"' in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "HEAVY ['numpy']"
