"""Isolation of submissions: their own uid, a bubblewrap sandbox, limits that hold (memory by a cgroup, so
sanitizer builds start), a sure end; builds that fail are reported; no sandbox, no grading (unless --trust)."""
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wirelab.grade import cgroups
from wirelab.grade.catalogue import Limits, load_catalogue
from wirelab.grade.jail import HOME, SUBMISSION, bwrap_argv
from wirelab.grade.runner import grade_submission
from wirelab.grade.sandbox import UidLease, kill_uid, limit_argv, processes_of

from ppcb_raw import wait_for

SYSTEM = (("dir", "/usr"), ("dir", "/etc"), ("link", "/bin=usr/bin"), ("link", "/lib=usr/lib"))


def _binds(argv: list[str]) -> dict[str, tuple[str, str]]:
    """What the sandbox sees at each place: {inside: (option, host source)}."""
    found = {}
    for i, arg in enumerate(argv):
        if arg in ("--bind", "--ro-bind", "--symlink"):
            found[argv[i + 2]] = (arg, argv[i + 1])
        elif arg in ("--tmpfs", "--proc", "--dev"):
            found[argv[i + 1]] = (arg, "")
    return found


def test_the_sandbox_shows_the_system_read_only_and_of_the_host_nothing_else(tmp_path):
    folders = {name: tmp_path / name for name in ("home", "tmp", "var-tmp", "shm", "submission")}
    argv = bwrap_argv(SYSTEM, home=folders["home"], tmp=folders["tmp"], var_tmp=folders["var-tmp"],
                      shm=folders["shm"], submission=folders["submission"], network=True)
    seen = _binds(argv)
    assert seen["/usr"] == ("--ro-bind", "/usr") and seen["/etc"] == ("--ro-bind", "/etc")
    assert seen["/bin"] == ("--symlink", "usr/bin")
    assert seen["/tmp"] == ("--bind", str(folders["tmp"])) and seen["/var/tmp"] == ("--bind", str(folders["var-tmp"]))
    assert seen["/dev/shm"] == ("--bind", str(folders["shm"])) and seen[HOME] == ("--bind", str(folders["home"]))
    assert seen[SUBMISSION] == ("--ro-bind", str(folders["submission"]))        # tested read-only
    assert {"/proc", "/dev"} <= set(seen)
    sources = {source for _, source in seen.values()}
    assert not sources & {"/", "/home", "/root", "/run", "/tmp", "/var", "/var/tmp", "/dev/shm", "/work"}
    assert {"--unshare-pid", "--unshare-ipc", "--die-with-parent"} <= set(argv)
    assert "--unshare-net" not in argv and argv[-1] == "--"     # the testbed host's network, from ip netns exec
    build = bwrap_argv(SYSTEM, home=folders["home"], tmp=folders["tmp"], var_tmp=folders["var-tmp"],
                       shm=folders["shm"], submission=folders["submission"], network=False, writable_submission=True)
    assert "--unshare-net" in build and _binds(build)[SUBMISSION][0] == "--bind"
    assert build[build.index("--chdir") + 1] == SUBMISSION


def test_hidden_paths_under_a_system_folder_are_covered(tmp_path):
    folders = dict.fromkeys(("home", "tmp", "var_tmp", "shm", "submission"), tmp_path)
    course, hidden = "/usr/share", "/etc/passwd"                # a folder, covered by an empty tmpfs; a file
    argv = bwrap_argv(SYSTEM, network=True, hide=(course, hidden, "/usr/no-such.toml", str(tmp_path)), **folders)
    assert argv[argv.index(course) - 1] == "--tmpfs"
    assert argv[argv.index(hidden) - 2:argv.index(hidden)] == ["--ro-bind", "/dev/null"]
    assert "/usr/no-such.toml" not in argv                       # nothing there to cover
    assert argv.count(str(tmp_path)) == 5                        # not under a system folder: simply not shown


def test_without_bubblewrap_untrusted_code_is_refused_with_the_package_and_the_fix(monkeypatch, tmp_path, capsys):
    import wirelab.grade.jail as jail
    from wirelab.cli import main
    from wirelab.errors import SetupError
    from wirelab.grade.classroom import grade_class
    monkeypatch.setattr(jail, "bwrap_problem", lambda: "bwrap is not installed")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "Makefile").write_text("all:\n\ttouch ran\n")
    with pytest.raises(SetupError, match=r"bubblewrap.*not installed.*make setup.*--trust"):
        grade_class([("sub", sub)], load_catalogue(), tmp_path / "out", policy=jail.Policy())
    jail.require_sandbox(jail.Policy(trust=True))               # told --trust: it goes on
    if jail.os.geteuid() == 0:                                   # the command says the same, before grading
        assert main(["grade", str(sub), "--out", str(tmp_path / "out")]) == 2
        assert "apt-get install bubblewrap" in capsys.readouterr().err
    assert not (sub / "ran").exists() and not (tmp_path / "out").exists()


def test_limit_argv_drops_privileges_then_limits_then_lowers_priority():
    limits = Limits(processes=7, file_size_bytes=1000, memory_bytes=2000, cpu_s=3)
    argv = limit_argv(61234, limits)
    assert argv[:5] == ["setpriv", "--reuid=61234", "--regid=61234", "--clear-groups", "--no-new-privs"]
    assert {"--bounding-set=-all", "--inh-caps=-all"} <= set(argv)          # no capability survives
    assert {"--nproc=7", "--fsize=1000", "--cpu=3:4", "--core=0"} <= set(argv)
    assert argv[-3:] == ["nice", "-n", "19"]
    assert not any(a.startswith("--as") for a in argv)       # memory: a cgroup, so sanitizers, Java and Go start
    assert "--as=2000" in limit_argv(61234, limits, address_space=True)   # the fallback where no cgroup is usable


def test_cgroups_switched_off_are_detected_as_absent_with_the_reason(monkeypatch):
    monkeypatch.setattr(cgroups, "_detected", None)
    monkeypatch.setenv(cgroups.ENV_OFF, "off")
    assert cgroups.detect() == (None, f"cgroups switched off ({cgroups.ENV_OFF}=off)")
    monkeypatch.setattr(cgroups, "_detected", None)              # the next caller detects afresh


@pytest.mark.root
def test_a_cgroup_kills_a_hog_counts_it_and_is_removed():
    controllers, why = cgroups.detect()
    if controllers is None:
        pytest.skip(f"no usable cgroup here: {why}")
    group = cgroups.Cgroup(controllers, 61999, 50_000_000, 8)
    limit = "memory.max" if controllers.version == 2 else "memory.limit_in_bytes"
    assert int((group.folders[0] / limit).read_text()) <= 50_000_000
    hog = subprocess.Popen(["python3", "-c", "x = bytearray(b'x') * 200_000_000"])
    group.add(hog.pid)
    assert hog.wait(30) == -9 and group.oom_kills() >= 1
    assert group.remove() and not any(folder.exists() for folder in group.folders)


@pytest.mark.root
def test_a_program_is_in_its_cgroup_from_its_first_instruction(tmp_path, monkeypatch):
    """The launcher waits (flock) until the grader has moved it into the cgroup: at the move the program has
    not started (no child yet), and its first read of /proc/self/cgroup already shows the cgroup."""
    from wirelab.grade.jail import Jail, Policy
    if cgroups.detect()[0] is None:
        pytest.skip(f"no usable cgroup here: {cgroups.detect()[1]}")
    at_the_move = []
    add = cgroups.Cgroup.add

    def watched_add(self, pid):
        cmdline = Path(f"/proc/{pid}/cmdline")
        wait_for(lambda: cmdline.read_bytes(), timeout=5)      # exec'd, its arguments not yet laid out
        children = Path(f"/proc/{pid}/task/{pid}/children")
        at_the_move.append((cmdline.read_bytes().split(b"\0")[0], children.read_text()))
        add(self, pid)
    monkeypatch.setattr(cgroups.Cgroup, "add", watched_add)
    with UidLease() as lease:
        jail = Jail(lease.uid, Limits(), tmp_path, Policy(trust=True))      # no bwrap: its cgroup is visible
        try:
            proc, group = jail.start(["cat", "/proc/self/cgroup"], key="t", stdout=subprocess.PIPE, text=True)
            seen = proc.communicate(timeout=30)[0]
            assert proc.returncode == 0 and group.remove()
        finally:
            jail.close()
    assert at_the_move == [(b"flock", "")]
    assert group.folders[0].name in seen


@pytest.mark.root
def test_a_program_that_cannot_be_put_in_its_cgroup_never_starts(tmp_path, monkeypatch):
    from wirelab.grade.jail import Jail, Policy
    if cgroups.detect()[0] is None:
        pytest.skip(f"no usable cgroup here: {cgroups.detect()[1]}")

    def refused(self, pid):
        raise PermissionError("cgroup.procs: refused")
    monkeypatch.setattr(cgroups.Cgroup, "add", refused)
    with UidLease() as lease:
        jail = Jail(lease.uid, Limits(), tmp_path, Policy(trust=True))
        marker = jail.submission_dir / "started"
        try:
            with pytest.raises(PermissionError):
                jail.start(["touch", str(marker)], key="t")
        finally:
            ran = marker.exists()
            jail.close()
    assert not ran


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
        assert [uid for uid in uids if f" wirelab-disk-{uid} " in Path("/proc/self/mountinfo").read_text()]
        os.killpg(grader.pid, signal.SIGINT)            # what Ctrl-C in a terminal sends
        assert grader.wait(60) == 130
        assert "left behind: nothing" in grader.stderr.read().decode()   # the sweep ran, Ctrl-C or not
    finally:
        if grader.poll() is None:
            grader.kill()
    assert not [ns for ns in list_namespaces() if any(f"-{pid}-" in ns for pid in pids)]
    assert all(processes_of(uid) == [] for uid in uids)
    mounts = Path("/proc/self/mountinfo").read_text()
    assert not [uid for uid in uids if f" wirelab-disk-{uid} " in mounts]          # each submission's tmpfs
    controllers, _ = cgroups.detect()
    if controllers is not None:                                                    # and every cgroup
        assert not [g for uid in uids for pid in pids for g in controllers.memory.glob(f"wirelab-g{uid}-{pid}-*")]


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


@pytest.mark.root
def test_an_address_sanitizer_build_starts_and_passes_under_the_cgroup_where_rlimit_as_made_it_abort(
        project_root, tmp_path):
    """ASan reserves terabytes of shadow memory at start: a cgroup (resident memory) lets it run; RLIMIT_AS,
    the fallback (forced here), makes it abort, and the report says why."""
    if cgroups.detect()[0] is None:
        pytest.skip(f"no usable cgroup here: {cgroups.detect()[1]}")
    asan = tmp_path / "asan-c"
    shutil.copytree(project_root / "data" / "example-class" / "correct-c", asan)
    makefile = (asan / "Makefile").read_text()
    (asan / "Makefile").write_text(makefile.replace("CFLAGS ?= -O2", "CFLAGS ?= -fsanitize=address -g -O1", 1))
    tests = "client-udpr-1B,server-udp-1B,pair-udp-10KB"

    def grade(out: str, **env) -> dict:
        done = subprocess.run([sys.executable, "-m", "wirelab", "grade", str(asan), "--only", tests, "--json",
                               "--out", str(tmp_path / out), "--no-capture"], capture_output=True, text=True,
                              timeout=600, env={**__import__("os").environ, **env})
        return json.loads(done.stdout)["submissions"][0]
    bounded = grade("cgroup")
    assert bounded["score"] == 100.0, bounded["tests"]
    assert "-fsanitize=address" in json.loads((tmp_path / "cgroup" / "asan-c" / "report.json").read_text())["build_log"]
    address_space = grade("rlimit-as", **{cgroups.ENV_OFF: "off"})
    assert address_space["score"] == 0.0
    assert all("AddressSanitizer" in t["reason"] for t in address_space["tests"]), address_space["tests"]
    confinement = json.loads((tmp_path / "rlimit-as" / "asan-c" / "report.json").read_text())["confinement"]
    assert "RLIMIT_AS: no usable cgroup, cgroups switched off" in confinement


@pytest.mark.root
def test_a_jvm_starts_in_the_sandbox_under_the_cgroup_and_not_under_rlimit_as(tmp_path):
    """The JVM reserves its heap and code cache at start (gigabytes of address space, little memory).
    It also starts ~20 threads, which RLIMIT_NPROC counts: the catalogue's own limits allow them."""
    from wirelab.grade.jail import Jail
    if shutil.which("java") is None or cgroups.detect()[0] is None:
        pytest.skip("needs java and a usable cgroup")
    with UidLease() as lease:
        jail = Jail(lease.uid, load_catalogue().limits, tmp_path)

        def java() -> tuple[int, str]:
            proc, group = jail.start(["java", "-version"], key="java", network=False, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
            out = proc.communicate(timeout=120)[0]
            if group is not None:
                group.remove()
            return proc.returncode, out
        try:
            code, out = java()
            assert code == 0 and "Server VM" in out, out
            jail.controllers = None                              # the RLIMIT_AS fallback
            code, out = java()
            assert code != 0 and "Server VM" not in out, out
        finally:
            jail.close()


def test_a_probe_that_fails_on_a_busy_kernel_is_tried_again_and_a_failure_is_not_remembered(monkeypatch):
    """Creating a network namespace can wait behind the teardown of earlier ones: one failed probe
    (seen in CI with two grading workers) must not leave a worker refusing to sandbox for good."""
    import subprocess
    import wirelab.grade.jail as jail

    answers = []

    def fake_run(argv, **kwargs):
        if "--version" in argv:
            return subprocess.CompletedProcess(argv, 0, "bubblewrap 0.8.0\n", "")
        answers.append(argv)
        ok = len(answers) not in failing
        return subprocess.CompletedProcess(argv, 0 if ok else 1, "", "" if ok else "setting up uid map: busy")

    monkeypatch.setattr(jail.shutil, "which", lambda name: "/usr/bin/bwrap")
    monkeypatch.setattr(jail.subprocess, "run", fake_run)
    jail._bwrap_works.cache_clear()
    try:
        failing = {1}                                     # the first probe fails, the next works
        assert jail.bwrap_version() == "bubblewrap 0.8.0" and len(answers) == 2
        jail._bwrap_works.cache_clear()
        answers.clear()
        failing = set(range(1, 10 ** 6))                  # every probe fails until the deadline
        monkeypatch.setattr(jail, "PROBE_S", 0.0)
        assert "ended with 1: setting up uid map: busy" in jail.bwrap_problem()
        assert jail.bwrap_version() is None
        failing = set()                                   # the kernel is free again: asked afresh
        assert jail.bwrap_version() == "bubblewrap 0.8.0" and jail.bwrap_problem() is None
    finally:
        jail._bwrap_works.cache_clear()                  # the next test probes the real bwrap


@pytest.mark.root
def test_a_testbed_an_interrupted_worker_left_is_removed_by_the_class_grader():
    from wirelab.grade.classroom import _remove_workers_testbeds
    from wirelab.link.netns import list_namespaces
    worker = subprocess.Popen([sys.executable, "-c", "pass"])      # a worker that has ended
    worker.wait(10)
    left = [f"wl-gtest-{worker.pid}-{host}" for host in ("a", "b")]
    other = f"wl-gtest-{worker.pid + 1}-a"                           # another owner's: not ours to remove
    for ns in left + [other]:
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        _remove_workers_testbeds([worker.pid])
        present = set(list_namespaces())
        assert not present & set(left) and other in present
    finally:
        for ns in left + [other]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
