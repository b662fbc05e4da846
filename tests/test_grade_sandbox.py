"""Isolation of submissions: their own uid, limits that hold, a sure end; builds that fail are reported."""
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wirelab.grade.catalogue import Limits, load_catalogue
from wirelab.grade.runner import grade_submission
from wirelab.grade.sandbox import UidLease, kill_uid, limit_argv, processes_of

from ppcb_raw import wait_for


def test_limit_argv_drops_privileges_then_limits_then_lowers_priority():
    argv = limit_argv(61234, Limits(processes=7, file_size_bytes=1000, memory_bytes=2000, cpu_s=3))
    assert argv[:5] == ["setpriv", "--reuid=61234", "--regid=61234", "--clear-groups", "--no-new-privs"]
    assert {"--nproc=7", "--fsize=1000", "--as=2000", "--cpu=3:4", "--core=0"} <= set(argv)
    assert argv[-3:] == ["nice", "-n", "19"]


@pytest.mark.root
def test_a_fork_bomb_stays_under_the_process_limit_and_dies_with_its_uid():
    with UidLease() as lease:
        limits = Limits(processes=8)
        code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
        bomb = subprocess.Popen(limit_argv(lease.uid, limits) + ["python3", "-c", code], start_new_session=True)
        try:
            assert wait_for(lambda: len(processes_of(lease.uid)) >= 8, timeout=10)
            counts = []
            for _ in range(20):
                counts.append(len(processes_of(lease.uid)))
            assert max(counts) <= 8
        finally:
            assert kill_uid(lease.uid)
            bomb.wait(5)
        assert processes_of(lease.uid) == []


@pytest.mark.root
def test_a_flood_stops_at_the_file_size_limit(tmp_path):
    out = tmp_path / "stdout"
    with UidLease() as lease, open(out, "wb") as sink:
        done = subprocess.run(limit_argv(lease.uid, Limits(file_size_bytes=100_000)) + ["yes", "flood"],
                              stdout=sink, timeout=30)
    assert done.returncode != 0 and out.stat().st_size == 100_000


@pytest.mark.root
def test_each_submission_gets_its_own_uid_and_processes_that_escape_their_group_are_killed():
    with UidLease() as first, UidLease() as second:
        assert first.uid != second.uid
        escaped = subprocess.Popen(limit_argv(first.uid, Limits()) + ["setsid", "sleep", "60"])
        assert wait_for(lambda: processes_of(first.uid), timeout=5)
        started = time.monotonic()
        assert kill_uid(first.uid) and time.monotonic() - started < 3
        escaped.wait(5)


@pytest.mark.root
def test_a_failed_build_and_missing_programs_are_errors_with_the_reason(tmp_path):
    cat = load_catalogue().select(["client-udpr-1B", "server-udp-1B"])
    broken = tmp_path / "broken-build"
    broken.mkdir()
    (broken / "Makefile").write_text("all:\n\tcc -o ppcbc does-not-exist.c\n")
    graded = grade_submission("broken-build", broken, cat, tmp_path / "out", capture=False)
    assert graded.build_error and "build failed: make exited with status 2" in graded.build_error
    assert [t.status for t in graded.tests] == ["error", "error"] and graded.score == 0
    assert "does-not-exist.c" in graded.build_log
    empty = tmp_path / "half"
    empty.mkdir()
    (empty / "ppcbc").write_text("#!/bin/sh\nexit 0\n")
    graded = grade_submission("half", empty, cat, tmp_path / "out2", capture=False)
    assert "no ppcbs" in graded.tests[0].reason


@pytest.mark.root
@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_removes_every_namespace_and_process_of_the_grading(project_root, tmp_path, jobs):
    import os
    import re
    import signal

    from wirelab.link.netns import list_namespaces
    class_dir = project_root / "data" / "example-class"
    argv = [sys.executable, "-m", "wirelab", "grade", str(class_dir / "loops-forever.diff"), "--only", "client-tcp-*",
            "--jobs", str(jobs), "--out", str(tmp_path), "--no-progress"]
    if jobs > 1:
        argv.insert(5, str(class_dir / "forks-forever.diff"))
    grader = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    mine = re.compile(r"^wl-g(6\d{4})-\d+-(\d+)-[ab]$")

    def owners():                                       # the grader, or its worker processes
        found = {grader.pid}
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == grader.pid:
                    found.add(int(entry.name))
            except OSError:
                continue
        return found
    ours = lambda: [m for m in map(mine.match, list_namespaces()) if m and int(m[2]) in owners()]
    try:
        assert wait_for(lambda: ours() and any(processes_of(int(m[1])) for m in ours()), timeout=60)
        uids = {int(m[1]) for m in ours()}
        pids = {int(m[2]) for m in ours()}
        os.killpg(grader.pid, signal.SIGINT)            # what Ctrl-C in a terminal sends
        assert grader.wait(60) == 130
    finally:
        if grader.poll() is None:
            grader.kill()
    assert not [ns for ns in list_namespaces() if any(f"-{pid}-" in ns for pid in pids)]
    assert all(processes_of(uid) == [] for uid in uids)


@pytest.mark.root
def test_a_build_that_never_ends_is_stopped_at_its_time_limit(tmp_path):
    from dataclasses import replace
    cat = load_catalogue().select(["client-udpr-1B"])
    cat = replace(cat, limits=replace(cat.limits, build_s=2))
    slow = tmp_path / "slow-build"
    slow.mkdir()
    (slow / "Makefile").write_text("all:\n\tsleep 600\n")
    started = time.monotonic()
    graded = grade_submission("slow-build", slow, cat, tmp_path / "out", capture=False)
    assert time.monotonic() - started < 20
    assert "make did not finish within 2 s" in graded.build_error and graded.tests[0].status == "error"


@pytest.mark.root
def test_a_server_on_loopback_only_is_told_to_listen_everywhere(tmp_path):
    sub = tmp_path / "loopback-only"
    sub.mkdir()
    server = ("#!/usr/bin/env python3\nimport socket, sys, time\n"
              "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.bind(('127.0.0.1', int(sys.argv[2])))\n"
              "time.sleep(60)\n")
    for name, text in (("ppcbs", server), ("ppcbc", "#!/bin/sh\nexit 1\n")):
        (sub / name).write_text(text)
        (sub / name).chmod(0o755)
    graded = grade_submission("loopback-only", sub, load_catalogue().select(["server-udpr-1B"]), tmp_path / "out",
                              capture=False)
    assert graded.tests[0].status == "fail" and "127.0.0.1 only" in graded.tests[0].reason
