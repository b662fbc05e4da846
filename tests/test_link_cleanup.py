"""Cleanup is a guarantee: after Ctrl-C, SIGTERM or a crash nothing of ours remains."""
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from wirelab.link import cleanup
from wirelab.link.netns import list_namespaces

HOLD = """
import sys
from wirelab.link import LinkSpec, Testbed
with Testbed(LinkSpec.parse(rate="10mbit", delay="10ms", loss="1%"), name="hold") as tb:
    server = tb.popen("b", ["iperf3", "-s"])
    print(tb.id, server.pid, flush=True)
    sys.stdin.read()
"""


def test_names_carry_the_owner_pid():
    assert cleanup.testbed_id("demo-1", 1234) == "wl-demo-1-1234"
    assert cleanup.parse_namespace("wl-demo-1-1234-r1") == ("wl-demo-1-1234", 1234, "r1")
    assert cleanup.parse_namespace("wlcap-a") is None and cleanup.parse_namespace("other") is None
    assert cleanup.valid_name("lab3") and not cleanup.valid_name("Bad Name")


def test_owner_alive_checks_the_start_time():
    me = os.getpid()
    assert cleanup.owner_alive(me, cleanup.process_start(me))
    assert not cleanup.owner_alive(me, cleanup.process_start(me) + 1)   # a recycled pid is not the owner


def _ours(testbed: str, owner: int) -> list[str]:
    """Namespaces, state files and processes that still belong to the testbed."""
    left = [ns for ns in list_namespaces() if ns.startswith(testbed + "-")]
    if (cleanup.state_dir() / f"{testbed}.json").exists():
        left.append("state file")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "wirelab.link.userspace" in line and f'"owner": {owner},' in line:
            left.append(f"link process {pid}")
    return left


def _hold_a_testbed():
    proc = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    assert ready, "the testbed did not come up in 30 s"
    testbed, server = proc.stdout.readline().split()
    assert _ours(testbed, proc.pid), "the testbed should exist while it is held"
    return proc, testbed, int(server)


def _poll(predicate, timeout_s: float = 10.0) -> bool:
    """True as soon as ``predicate()`` is, False after ``timeout_s`` (checked every 50 ms)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        select.select([], [], [], 0.05)
    return True


def _gone(pid: int) -> bool:
    return _poll(lambda: cleanup.exited(pid))


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_testbed_leaves_nothing(sig):
    proc, testbed, server = _hold_a_testbed()
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert _ours(testbed, proc.pid) == []
    assert _gone(server), "the iperf3 server started on a host must be stopped"


@pytest.mark.root
@pytest.mark.slow
def test_a_killed_owner_is_reaped():
    proc, testbed, server = _hold_a_testbed()
    proc.kill()
    proc.wait(timeout=10)
    cleanup.reap()                # (another test run's reaper may have been quicker: same result)
    _poll(lambda: not _ours(testbed, proc.pid))   # the link process notices its owner is gone
    assert _ours(testbed, proc.pid) == []
    assert _gone(server)


def test_a_name_is_read_back_exactly():
    assert cleanup.name_of("wl-demo-1-1234") == "demo-1" and cleanup.name_of("wl-demo-99") == "demo"


def test_sigterm_interrupts_its_owner_only_and_ends_a_forked_copy():
    """pyroute2 reads a namespace in a forked copy of the process and ends it with SIGTERM:
    the copy must die of it, not raise KeyboardInterrupt through a duplicate of our stack."""
    previous = signal.signal(signal.SIGTERM, cleanup.interrupt_in(os.getpid()))
    try:
        child = os.fork()
        if child == 0:                       # the copy: SIGTERM must end it right here
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                select.select([], [], [], 5)  # (the signal is delivered before this returns)
                os._exit(3)                   # survived the signal
            except BaseException:
                os._exit(4)                   # raised in the copy
        _, status = os.waitpid(child, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, status
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            select.select([], [], [], 5)
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.root
@pytest.mark.slow
def test_a_forked_copy_never_tears_down_the_testbed():
    from wirelab.link import LinkSpec, Testbed
    with Testbed(LinkSpec.parse(rate="10mbit"), name="forked") as tb:
        child = os.fork()
        if child == 0:
            try:
                tb.down()
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        left = [ns for ns in list_namespaces() if ns.startswith(tb.id + "-")]
        assert sorted(left) == sorted(tb.namespaces.values()), left
    assert not [ns for ns in list_namespaces() if ns.startswith(tb.id + "-")]


def test_after_one_interrupt_the_cleanup_it_starts_cannot_be_interrupted():
    """Ctrl-C reaches a grading worker twice (from the terminal, and passed on by its parent):
    the second must not cut short the cleanup the first one started."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, cleanup.interrupt_once)
    cleaned = []
    try:
        with pytest.raises(KeyboardInterrupt):
            try:
                os.kill(os.getpid(), signal.SIGINT)
                select.select([], [], [], 5)      # (the signal is delivered before this returns)
            finally:
                os.kill(os.getpid(), signal.SIGINT)     # the parent's copy of the interrupt
                os.kill(os.getpid(), signal.SIGTERM)
                cleaned.append(True)                    # reached only if neither raised
        assert cleaned == [True]
        assert all(signal.getsignal(sig) is signal.SIG_IGN for sig in previous)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def test_a_rooms_scratch_folder_in_the_temporary_directory_goes_with_it_and_nothing_elsewhere(tmp_path):
    scratch = Path(tempfile.mkdtemp(prefix="wirelab-test-room-"))
    (scratch / "a1").mkdir()
    elsewhere = tmp_path / "wirelab-not-in-tmp"          # a state file naming anything else is not obeyed
    elsewhere.mkdir()
    cleanup.remove({"id": f"wl-troom-{os.getpid()}", "namespaces": [], "scratch": str(scratch)})
    cleanup.remove({"id": f"wl-troom-{os.getpid()}", "namespaces": [], "scratch": str(elsewhere)})
    assert not scratch.exists() and elsewhere.exists()
