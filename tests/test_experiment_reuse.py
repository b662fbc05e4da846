"""A sweep keeps its link across consecutive runs of one spec, renewed and checked between runs,
and removes it at the end however the sweep ends (fake links here; real namespaces as root)."""
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from wirelab import link as links
from wirelab.errors import LinkError, TransferError
from wirelab.experiment import Experiment
from wirelab.experiment import run as run_sweep
from wirelab.experiment.calibration import PROBES
from wirelab.transfer.client import WarmClient
from wirelab.experiment.reuse import KeptLinks
from wirelab.link import LinkSpec
from wirelab.link.netns import list_namespaces

from fake_links import FakeLink, FakeLinks


class Engine:
    """Goodput from the setting; raises what it is told to on the n-th run."""
    name = "fake"

    def __init__(self, fail_on=None, error=TransferError("lost", "retry")):
        self.links, self.specs, self.fail_on, self.error = [], [], fail_on, error

    def run(self, setting, link, *, deadline, seed, workdir):
        self.links.append(link)
        self.specs.append(link.spec)
        if len(self.links) == self.fail_on:
            raise self.error
        return {"ok": True, "goodput_bps": 0.9 * setting["rate_bps"]}


class Link(FakeLink):
    """A link the runner can keep: ``renew`` says whether it is ready again; with ``mtus``
    it takes another spec in place when the MTU is one of them."""
    renewable = True

    def __init__(self, spec, ready=True, mtus=()):
        super().__init__(spec)
        self.ready, self.renewals, self.mtus, self.specs = ready, 0, mtus, [spec]

    def can_reshape(self, spec):
        return spec.mtu in self.mtus

    def renew(self, seed, spec=None):
        assert not self.closed
        self.renewals += 1
        if spec is not None:
            assert self.can_reshape(spec)
            self.spec = spec
            self.specs.append(spec)
        if self.ready == "raise":
            raise LinkError("a process is left", "open a new link")
        return {"a": []} if self.ready else None


def layer(**link_options):
    class Links(FakeLinks):
        opened: list = []

        @staticmethod
        def open(spec, *, backend, seed, name):
            made = Link(spec, **link_options)
            Links.opened.append(made)
            return made
    return Links


def sweep(**kw):
    args = dict(proto=["tcp", "udp"], size="100KB", rate="10mbit", reps=2, engine="fake")
    args.update(kw)
    return Experiment("reuse", **args)


def test_runs_of_one_spec_share_one_link_renewed_between_runs(tmp_path):
    Links = layer()
    df = run_sweep(sweep(), out=tmp_path / "s", engine=Engine(), progress=False, link_layer=Links)
    assert len(df) == 4 and (df["status"] == "ok").all()
    assert len(Links.opened) == 1, "one spec: one link for the whole sweep"
    kept = Links.opened[0]
    assert kept.renewals == 3 and kept.closed, "renewed before each later run, removed at the end"
    assert df["link_runs_before"].tolist() == [0, 1, 2, 3]


def test_a_new_spec_a_refused_renewal_or_a_failed_run_opens_a_new_link(tmp_path):
    Links = layer()
    df = run_sweep(sweep(rate=["10mbit", "20mbit"], proto="tcp"), out=tmp_path / "s", engine=Engine(),
                   progress=False, link_layer=Links)
    assert len(df) == 4 and len(Links.opened) == 4     # rates alternate: every run has a new spec
    assert all(made.closed for made in Links.opened) and set(df["link_runs_before"]) == {0}

    for ready in (None, "raise"):          # renew says "not ready" or finds a leftover
        Links = layer(ready=ready)
        run_sweep(sweep(proto="tcp"), out=tmp_path / f"r{ready}", engine=Engine(), progress=False,
                  link_layer=Links)
        assert len(Links.opened) == 2 and all(made.closed for made in Links.opened)

    Links = layer()
    df = run_sweep(sweep(), out=tmp_path / "f", engine=Engine(fail_on=2), progress=False, link_layer=Links)
    assert df["status"].tolist().count("failed") == 1
    assert len(Links.opened) == 2, "the link a run failed on is not trusted for the next"
    assert all(made.closed for made in Links.opened)


def test_a_link_that_can_take_the_next_spec_in_place_is_reshaped_not_reopened(tmp_path):
    Links = layer(mtus=(1500,))
    engine = Engine()
    df = run_sweep(sweep(rate=["10mbit", "20mbit"], loss=["0", "1%"], proto="tcp", reps=1),
                   out=tmp_path / "s", engine=engine, progress=False, link_layer=Links)
    assert len(df) == 4 and len(Links.opened) == 1, "one link, shaped anew for every setting"
    kept = Links.opened[0]
    assert kept.specs == [s.link for s, _ in sweep(rate=["10mbit", "20mbit"], loss=["0", "1%"],
                                                   proto="tcp", reps=1).runs()]
    assert engine.specs == kept.specs, "each run ran on its own spec"
    assert df["link_runs_before"].tolist() == [0, 1, 2, 3] and kept.closed

    Links = layer(mtus=(1500,))             # another MTU: the hosts' interfaces change, a new link
    run_sweep(sweep(mtu=[1500, 1400], proto="tcp", reps=1), out=tmp_path / "m", engine=Engine(),
              progress=False, link_layer=Links)
    assert len(Links.opened) == 2 and all(made.closed for made in Links.opened)


def test_ctrl_c_in_a_run_removes_the_kept_link(tmp_path):
    Links = layer()
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep(), out=tmp_path / "s", engine=Engine(fail_on=3, error=KeyboardInterrupt()),
                  progress=False, link_layer=Links)
    assert len(Links.opened) == 1 and Links.opened[0].closed


def test_links_that_cannot_be_renewed_are_opened_and_removed_per_run(tmp_path):
    from test_experiment_sweep import FakeLinks     # the plain fake link: no renew at all

    engine = Engine()
    df = run_sweep(sweep(engine="fake"), out=tmp_path / "s", engine=engine, progress=False,
                   link_layer=FakeLinks)
    assert len(df) == 4 and len({id(made) for made in engine.links}) == 4
    assert all(made.closed for made in engine.links)
    kept = KeptLinks(layer(), "fake-wire", keep=False)   # run_one without a sweep: never kept
    with kept.lease(LinkSpec(), seed=1) as made:
        pass
    assert made.closed


# -- real links -------------------------------------------------------------------------

def _ours() -> list[str]:
    """This process's namespaces and warm clients still around."""
    left = [ns for ns in list_namespaces() if re.match(rf"wl-[a-z0-9_-]+-{os.getpid()}-", ns)]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            line = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ")
            parent = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            continue
        if b"wirelab.transfer.client --warm" in line and parent == os.getpid():
            left.append(f"warm client {pid}")
    return left


class Counting:
    """``wirelab.link`` with its opened links counted."""
    opened: list = []

    def __getattr__(self, name):
        return getattr(links, name)

    def open(self, *args, **kwargs):
        made = links.open(*args, **kwargs)
        Counting.opened.append(made)
        return made


@pytest.mark.root
@pytest.mark.slow
def test_a_namespaces_sweep_opens_its_link_once_and_leaves_nothing(tmp_path):
    exp = Experiment("kept", proto=["tcp", "udp", "udpr"], size="100KB", rate="10mbit", reps=2,
                     max_wait="0.5s", timeout=30, backend="namespaces")
    Counting.opened = []
    df = run_sweep(exp, out=tmp_path / "k", progress=False, link_layer=Counting())
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert (df["backend"] == "namespaces").all()
    # the udpr probe set (PROBES probes at the start) and all six runs: one testbed
    before = df["link_runs_before"].tolist()
    assert len(Counting.opened) == 1 and before[0] == PROBES and before == sorted(set(before)) and len(before) == 6
    assert before[-1] <= 6 + 2 * PROBES, before
    assert df["metadata_byte_exact"].fillna(True).all()
    assert df["tc_commands"].str.contains("tbf rate 10000000bit").all()
    assert _ours() == [], "namespaces and warm clients are removed when the sweep ends"


@pytest.mark.root
def test_renew_empties_tcp_metrics_replays_the_qdiscs_and_refuses_a_leftover(testbed):
    link = testbed(LinkSpec.parse(rate="10mbit", loss="1%"), backend="namespaces")
    assert link.renewable
    ns = link.testbed.namespaces
    server = link.popen("b", [sys.executable, "-m", "http.server", "--bind", link.address("b"), "8000"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # a closed connection leaves metrics for its peer unless it backed off or had no RTT sample
    # (tcp_metrics.c, tcp_update_metrics): at 1 % loss a lost SYN or SYN-ACK does that, so connect
    # again until one has (CI saw a run without)
    poll_until = time.monotonic() + 10
    while True:
        connected = link.exec("a", [sys.executable, "-c", f"import socket; socket.create_connection(("
                                    f"'{link.address('b')}', 8000), timeout=1).close()"]).returncode == 0
        metrics = subprocess.run(["ip", "-n", ns["a"], "tcp_metrics", "show"], capture_output=True, text=True)
        if connected and link.address("b") in metrics.stdout:
            break
        assert time.monotonic() < poll_until, ("the server did not listen" if not connected else
                                               "a closed connection leaves metrics for its peer")
    state = link.renew(seed=7)
    assert server.poll() is not None, "a process the run started is stopped"
    for host in ("a", "b"):
        shown = subprocess.run(["ip", "-n", ns[host], "tcp_metrics", "show"], capture_output=True, text=True)
        assert shown.stdout.strip() == ""
        tbf = [q for q in state[host] if q["kind"] == "tbf"]
        assert len(tbf) == 1 and tbf[0]["options"]["rate"] == 10_000_000 // 8 and tbf[0]["backlog"] == 0
    rules = subprocess.run(["ip", "netns", "exec", ns["b"], "iptables", "-t", "raw", "-S"],
                           capture_output=True, text=True).stdout
    assert rules.count("statistic") == 1, "loss rules are not added twice"
    # a process left behind that the link did not start: not a fresh link any more
    link.exec("a", ["sh", "-c", "sleep 30 >/dev/null 2>&1 &"])
    with pytest.raises(LinkError, match="still runs"):
        link.renew(seed=8)


@pytest.mark.root
def test_a_warm_client_forks_each_run_and_kills_a_late_one(testbed):
    from wirelab.transfer import start_server

    link = testbed(LinkSpec.parse(rate="10mbit"), backend="namespaces")
    warm = WarmClient(link)
    with link.inside("b"):
        port, stop, thread, results = start_server("udpr", host=link.address("b"), max_wait=0.5, sessions=1)
    try:
        config = {"call": "send_udp", "host": link.address("b"), "port": port, "size": 20_000, "seed": 3,
                  "proto": "udpr", "max_wait": 0.5, "max_retransmits": 5, "chunk": 1000, "sndbuf": None}
        done = warm.run(config, time.monotonic() + 20, what="the udpr client", fix="-")
        assert done.returncode == 0 and '"bytes_sent": 20000' in done.stdout
        thread.join(5)
        assert results and results[0].bytes_delivered == 20_000
    finally:
        stop.set()
        thread.join(2)
    # a server that never answers: the client would wait MAX_WAIT × retransmits; the deadline is first
    with link.inside("b"), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind((link.address("b"), 0))
        late = dict(config, port=silent.getsockname()[1], max_wait=5.0)
        with pytest.raises(TransferError, match="did not finish"):
            warm.run(late, time.monotonic() + 0.5, what="the udpr client", fix="-")
    assert not warm.alive()
    assert link.testbed.renew() is not None, "no forked client is left on host a"


def _arrivals(link, count: int = 200) -> set[int]:
    """Which of ``count`` numbered datagrams from host a reach host b."""
    import select as waiting

    with link.inside("b"):
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.bind((link.address("b"), 0))
    with link.inside("a"):
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    got = set()
    with rx, tx:
        for i in range(count):
            tx.sendto(i.to_bytes(2, "big"), rx.getsockname())
        while waiting.select([rx], [], [], 0.5)[0]:     # until nothing more for 0.5 s
            got.add(int.from_bytes(rx.recv(16), "big"))
    return got


@pytest.mark.root
def test_a_renewed_userspace_link_draws_what_a_new_link_with_that_seed_draws(testbed):
    spec = LinkSpec.parse(delay="1ms", loss="30%")
    fresh = _arrivals(testbed(spec, backend="userspace", seed=11))
    kept = testbed(spec, backend="userspace", seed=5)
    assert kept.renewable
    first = _arrivals(kept)
    assert first != fresh, "another seed, other losses"
    assert kept.describe()["counters"]["a->b"]["packets"] == 200
    assert kept.renew(seed=11) is not None
    assert kept.describe()["counters"]["a->b"]["packets"] == 0, "counters start again"
    assert _arrivals(kept) == fresh, "the run's seed means what it means on a new link"
    assert kept.describe()["counters"]["a->b"]["dropped_loss"] == 200 - len(fresh)


@pytest.mark.root
@pytest.mark.slow
def test_a_userspace_sweep_keeps_its_link_and_counts_each_run_alone(tmp_path):
    exp = Experiment("kept-us", proto="udpr", size="20KB", delay="5ms", reps=3, max_wait="0.5s",
                     timeout=30, backend="userspace")
    df = run_sweep(exp, out=tmp_path / "u", progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    # the sweep's udpr host round-trip probe set (the same link without delay) ran on it first, once
    assert df["link_runs_before"].tolist() == [PROBES, PROBES + 1, PROBES + 2]
    assert df["link_link"].str.contains("delay 5").all(), "each run on the spec it asked for"
    sent = df["link_counters_a->b_packets"].tolist()
    assert sent[0] >= 20 and sent == [sent[0]] * 3, f"each run's own frames, not a running total: {sent}"
    assert _ours() == []


def test_an_engine_that_wants_a_link_of_its_own_gets_it_after_the_kept_one_is_gone(tmp_path):
    """Flows run on a link built for each run: the link the sweep kept for its other runs is removed
    first (both would be the sweep's testbed, of one name)."""
    Links = layer()
    open_at_once = []

    class Counting(Engine):
        def run(self, setting, link, *, deadline, seed, workdir):
            open_at_once.append(sum(not made.closed for made in Links.opened))
            return super().run(setting, link, deadline=deadline, seed=seed, workdir=workdir)

    exp = Experiment("mixed", flows=[None, "tcp + tcp"], workload="time", time="1s", rate="10mbit",
                     reps=2, engine="fake")
    df = run_sweep(exp, out=tmp_path / "s", engine=Counting(), progress=False, link_layer=Links)
    assert set(df["status"]) == {"ok"} and max(open_at_once) == 1
    assert all(made.closed for made in Links.opened)
