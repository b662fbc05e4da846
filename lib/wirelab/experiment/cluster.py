"""Sweeps across real machines: each run's server on host b's Dask worker, its client on a's.

    exp = Experiment("rates", rate=["1mbit", "5mbit", "10mbit"], hosts={"a": "pc07", "b": "pc08"},
                     cluster="tcp://10.0.0.1:8786")
    run(exp)             # the runner as ever: it hands each run to a pair of hosts through ``Cluster``

Design. A host is a Dask worker (``link.workers``); the cluster is any running scheduler
(``SSHCluster`` over a room's PCs, or ``dask scheduler`` and ``dask worker`` on each PC).
Decided once, before the runs (``Cluster``): the workers of every pair, by name, address or
IP (a PC that is missing is an error naming it and the command that starts it); each side's
facts, collected on its own worker (``meta.host_facts``: host name, kernel, congestion
control, qdisc, offloads, NIC speed, wirelab version: meta.json's ``hosts``); each pair
probed end to end (echo rounds: its round trip); whether it can be shaped (both workers
root) and, if not, one warning that its runs go unshaped and are predicted for the real path
(``HostsLayer.path_params``: the NIC's speed, a cable's 38 B a frame, the probed round trip).
The plan is the runner's (``plan.py``) with this module's link layer (backend ``hosts``);
engines do not change.

Each run is one Dask task on b's worker (``_run_on_b``): the runner's own ``run_one`` with
the plan bound to its pair, which opens a ``link.hosts.HostsLink`` (tc under a guard on each
interface; the clock's echo rounds before and after), runs the engine and sends back the rows,
the record and the capture's bytes. Pairs run side by side (a thread each here, one run in
flight each), and one run per host at a time across sweeps and notebooks too: a run holds a
Dask ``Semaphore`` per host, taken in one order (two pairs sharing a host cannot deadlock)
and given back by the scheduler if this process dies.

Faults. A worker that leaves mid-run costs that run only: it is recorded ``failed`` with the
reason (``status.LOST``), the host that is left is told to let go (its programs ended, its tc
removed; the lost host's guard removes its own as the worker dies), that pair takes no more
runs and the other pairs take the rest. Resume makes those runs again (the runner does not
count them as done). Ctrl-C sets the stop event of every run in flight and releases both of
its hosts before the interrupt reaches the user.
"""
from __future__ import annotations

import copy
import queue
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from .. import link as links
from ..errors import LinkError, UsageError
from ..link import workers
from ..link.commands import GSO_MAX_SEGS
from ..link.hostshaping import ROOT, Side
from .calibration import needs_probe
from .status import LOST

__all__ = ["Cluster", "HostsLayer", "Pair", "SLACK_S"]

#: Seconds a run's task may take beyond its deadline: its link's guards and two clock batches.
SLACK_S = 60.0
POLL_S = 0.25
SETUP_TIMEOUT_S = 120.0


@dataclass
class Pair:
    """Two hosts, a sends to b: their workers, each side's facts, the probed round trip."""
    a: workers.Worker
    b: workers.Worker
    facts: dict
    rtt_s: float | None = None

    def side(self, key: str) -> Side:
        worker, facts = (self.a, self.facts["a"]) if key == "a" else (self.b, self.facts["b"])
        ours = facts.get("root_handle") == ROOT          # another sweep's run on this host, in flight
        segments = facts.get("gso_max_segs")
        return Side(worker.name, facts.get("address") or worker.ip, facts.get("interface") or "eth0",
                    netem=bool(facts.get("netem")), root_qdisc=None if ours else facts.get("root_qdisc"),
                    gso_max_segs=GSO_MAX_SEGS if ours or segments in (None, 1) else int(segments))

    @property
    def root(self) -> dict:
        return {"a": bool(self.facts["a"].get("root")), "b": bool(self.facts["b"].get("root"))}

    @property
    def label(self) -> str:
        return f"{self.a.name} → {self.b.name}"

    @property
    def nic_bps(self) -> float | None:
        speeds = [f.get("nic_speed_bps") for f in self.facts.values() if f.get("nic_speed_bps")]
        return min(speeds) if speeds else None

    def summary(self) -> dict:
        return {"a": self.a.name, "b": self.b.name, "root": self.root, "path_rtt_s": self.rtt_s,
                "nic_speed_bps": self.nic_bps, "facts": self.facts}


class HostsLayer:
    """The link layer of a sweep across hosts: what the plan asks (``backend_for``, ``wire_of``,
    ``carriage``, ``facts``, ``sender_sysctls``, ``path_params``) and, bound to a pair for one run
    on b's worker (``bound``), ``open``."""

    backend = "hosts"
    wire_of = staticmethod(links.wire_of)

    def __init__(self, pairs: list[Pair], *, pair: Pair | None = None, token: str | None = None):
        self.pairs, self.pair, self.token = pairs, pair, token

    def bound(self, pair: Pair, token: str) -> "HostsLayer":
        return HostsLayer([pair], pair=pair, token=token)

    def backend_for(self, specs, requested: str = "auto", caps=None) -> str:
        if requested not in ("auto", "hosts"):
            raise UsageError(f"a sweep across hosts runs on the hosts backend, not {requested}",
                             "leave the backend unset")
        return "hosts"

    @staticmethod
    def carriage(backend: str, proto: str) -> str:
        return "packets"          # the programs' own packets cross the path

    def facts(self) -> dict:
        return {"pairs": [p.summary() for p in self.pairs]}

    def sender_sysctls(self) -> dict:
        """The sysctls of the (first) sending host: its TCP timestamps and congestion control."""
        return self.pairs[0].facts["a"].get("sysctls") or {}

    def path_params(self, setting) -> tuple[dict, str]:
        """What the model predicts a run of ``setting`` on: its own link, or where the pair cannot
        be shaped (not root) the real path: the NIC's speed, a cable's framing, the probed RTT."""
        pair = self.pair
        if pair is None or all(pair.root.values()) or links.wire_of(setting.link) == "none":
            return setting.params, links.wire_of(setting.link)
        half = (pair.rtt_s or 0.0) / 2
        return ({**setting.params, "rate_bps": pair.nic_bps, "rate_reverse_bps": None, "delay_s": half,
                 "jitter_s": None, "loss": 0.0, "loss_reverse": None, "link_wire": "real"},
                "real" if pair.nic_bps else "none")

    def open(self, spec, *, backend: str = "hosts", seed=None, name: str = "run"):
        if self.pair is None:
            raise UsageError("a link across hosts opens on host b's worker, within a sweep",
                             "run the experiment (wirelab.experiment.run) with hosts and cluster")
        if not isinstance(spec, links.LinkSpec):
            raise UsageError(f"across hosts a run has one link, not a {type(spec).__name__}",
                             "run topologies (the five-node network) in namespaces on one machine")
        from distributed import get_client
        from ..link.hosts import HostsLink
        from .clockrounds import ClockRounds
        pair = self.pair
        return HostsLink(spec, a=pair.side("a"), b=pair.side("b"), peer=workers.Peer(get_client(), pair.a, self.token),
                         token=self.token, root=pair.root, clock=ClockRounds())


def _run_on_b(plan, setting, rep: int, seed: int, capture: bool, host_rtt_s) -> dict:
    """One run, on host b's worker: the runner's ``run_one``, its capture's bytes sent back."""
    from distributed import secede
    secede()                  # it waits on host a: it must not hold one of this worker's threads
    from .runner import run_one
    with tempfile.TemporaryDirectory(prefix="wirelab-run-") as tmp:
        rows, raw = run_one(plan, setting, rep=rep, seed=seed, workdir=tmp, capture_dir=tmp if capture else None,
                            host_rtt_s=host_rtt_s)
        made = next(Path(tmp).glob("*.pcapng"), None)
        return {"rows": rows, "raw": raw, "capture": made.read_bytes() if made else None}


def _probe_pair(layer: HostsLayer) -> dict:
    """On b's worker: an unshaped link to a and back, for the pair's round trip and clocks."""
    with layer.open(links.LinkSpec()) as link:
        pass
    return link.describe()


class Cluster:
    """The hosts of a sweep (see the module docstring). ``layer`` is its plan's link layer;
    ``runs(plan, batch, ...)`` yields ``(setting, rep, rows, raw)`` as each run ends."""

    def __init__(self, experiment, *, client=None):
        self.experiment = experiment
        self.client = client or workers.connect(experiment.cluster)
        self._alive_at, self._alive = 0.0, set()
        self._lock = threading.Lock()
        try:
            self.pairs = self._pairs(experiment.hosts)
        except BaseException:
            self.close()
            raise
        self.layer = HostsLayer(self.pairs)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    # -- before the runs ----------------------------------------------------------------
    def _submit(self, worker, fn, *args):
        return self.client.submit(fn, *args, workers=[worker.address], allow_other_workers=False, pure=False)

    def _pairs(self, hosts) -> list[Pair]:
        from .meta import host_facts
        found = workers.find(self.client, sorted({h for pair in hosts for h in pair}))
        ends = [(found[a], found[b]) for a, b in hosts]
        facts = [{"a": self._submit(a, host_facts, b.ip), "b": self._submit(b, host_facts, a.ip)} for a, b in ends]
        pairs = [Pair(a, b, {k: f.result(timeout=SETUP_TIMEOUT_S) for k, f in got.items()})
                 for (a, b), got in zip(ends, facts)]
        probes = [self._submit(p.b, _probe_pair, HostsLayer([p]).bound(p, f"probe-{uuid.uuid4().hex[:8]}"))
                  for p in pairs]
        for pair, probe in zip(pairs, probes):
            try:
                described = probe.result(timeout=SETUP_TIMEOUT_S)
            except Exception as err:       # noqa: BLE001 - said with the pair's names
                raise LinkError(f"{pair.a.name} cannot run a program against {pair.b.name} ({err})",
                                "check both workers run wirelab (make setup) and that nothing blocks "
                                "UDP between them") from None
            pair.rtt_s = described.get("path_rtt_s")
        shaping = any(links.wire_of(s.link) != "none" for s in self.experiment.settings())
        for pair in pairs:
            if shaping and not all(pair.root.values()):
                who = " and ".join(w.name for w, key in ((pair.a, "a"), (pair.b, "b")) if not pair.root[key])
                speed = f"{pair.nic_bps / 1e6:g} Mbit/s" if pair.nic_bps else "an unknown speed"
                print(f"wirelab: {who} is not root: runs {pair.label} go unshaped and are predicted for the real "
                      f"path ({speed} NIC, {1e3 * (pair.rtt_s or 0):.2f} ms round trip); start the worker "
                      "with sudo to shape", file=sys.stderr)
        return pairs

    # -- the runs ---------------------------------------------------------------------------
    def runs(self, plan, batch, *, experiment, folder):
        """Run ``batch`` ((setting, rep) pairs) on the pairs side by side; yield each run's
        ``(setting, rep, rows, raw)`` as it ends (captures written to ``folder/captures``)."""
        todo, ended, stop = deque(batch), queue.Queue(), threading.Event()
        flights: dict[str, Pair] = {}
        drivers = [threading.Thread(target=self._drive, args=(pair, plan, todo, ended, stop, flights, folder),
                                    name=f"wirelab-pair-{pair.label}", daemon=True) for pair in self.pairs]
        for driver in drivers:
            driver.start()
        try:
            for _ in range(len(batch)):
                while True:
                    try:
                        item = ended.get(timeout=POLL_S)
                        break
                    except queue.Empty:
                        if not any(d.is_alive() for d in drivers) and ended.empty():
                            item = None
                            break
                if item is None:
                    break
                yield item
        finally:
            stop.set()
            for token, pair in list(flights.items()):
                self._let_go(token, pair)
            for driver in drivers:
                driver.join(timeout=SLACK_S)
        if todo:
            print(f"wirelab: {len(todo)} run(s) not made: every pair lost a host; start its worker again and "
                  "run the sweep again to make them", file=sys.stderr)

    def _drive(self, pair: Pair, plan, todo: deque, ended: queue.Queue, stop: threading.Event,
               flights: dict, folder) -> None:
        """One pair's loop: take the next run, hold both hosts, run it, hand the result on."""
        from distributed import Semaphore
        holds = [Semaphore(max_leases=1, name=f"wirelab-host-{w.name}", scheduler_rpc=self.client.scheduler,
                           loop=self.client.loop)
                 for w in sorted((pair.a, pair.b), key=lambda w: w.name)]
        while not stop.is_set() and not self._lost(pair):
            try:
                setting, rep = todo.popleft()
            except IndexError:
                return
            held = []
            try:
                for hold in holds:
                    while not hold.acquire(timeout=POLL_S):
                        if stop.is_set() or self._lost(pair):
                            break
                    else:
                        held.append(hold)
                        continue
                    break
                if len(held) < len(holds):
                    todo.appendleft((setting, rep))       # another pair (or a resume) makes it
                    return
                item = self._one(pair, plan, setting, rep, stop, flights, folder)
            finally:
                for hold in held:
                    hold.release()
            if item is not None:
                ended.put(item)

    def _one(self, pair: Pair, plan, setting, rep: int, stop, flights: dict, folder):
        token = uuid.uuid4().hex[:12]
        bound = copy.copy(plan)
        bound.link_layer, bound._predicted, bound._flows = self.layer.bound(pair, token), {}, None
        sysctls = pair.facts["a"].get("sysctls") or {}
        bound.default_cc = sysctls.get("net.ipv4.tcp_congestion_control") or plan.default_cc
        seed = self.experiment.run_seed(setting, rep)
        host_rtt = pair.rtt_s if needs_probe([setting]) else None
        deadline = time.monotonic() + bound.deadline(setting, host_rtt_s=host_rtt) + SLACK_S
        started = time.monotonic()
        flights[token] = pair
        future = self._submit(pair.b, _run_on_b, bound, setting, rep, seed, self.experiment.capture, host_rtt)
        try:
            while True:
                try:
                    got = future.result(timeout=POLL_S)
                    break
                except TimeoutError:
                    pass
                except Exception as err:      # noqa: BLE001 - the task itself broke: this run fails
                    return self._failed(bound, pair, setting, rep, seed, host_rtt, started,
                                        f"{type(err).__name__} on {pair.b.name}'s worker: {err}")
                lost = self._lost(pair)
                if stop.is_set() or lost or time.monotonic() > deadline:
                    self._let_go(token, pair)
                    self._settle(future, pair)    # its hosts stay held until the task on b has let go too
                    if stop.is_set() and not lost:
                        return None               # interrupted: nothing recorded, resume makes it
                    why = (f"{LOST}: {' and '.join(w.name for w in lost)} left the cluster during this run; run the "
                           "sweep again to make it") if lost else \
                        f"{pair.b.name}'s worker sent nothing back within the run's deadline and {SLACK_S:g} s"
                    return self._failed(bound, pair, setting, rep, seed, host_rtt, started, why)
        finally:
            flights.pop(token, None)
        rows, raw = got["rows"], got["raw"]
        if got.get("capture") is not None:
            path = Path(folder) / "captures" / f"{rows[0]['run_id']}.pcapng"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(got["capture"])
            if isinstance(raw.get("result"), dict):
                raw["result"]["capture_file"] = str(path)
            for row in rows:
                if "result_capture_file" in row:
                    row["result_capture_file"] = str(path)
        return setting, rep, rows, raw

    def _failed(self, plan, pair: Pair, setting, rep, seed, host_rtt, started: float, why: str):
        from .runner import new_row
        row = new_row(plan, setting, rep=rep, seed=seed, host_rtt_s=host_rtt)
        row.update(status="failed", error=why, backend="hosts", link_host_a=pair.a.name, link_host_b=pair.b.name,
                   elapsed_s=time.monotonic() - started)
        return setting, rep, [row], {"run_id": row["run_id"], "setting": setting.columns(), "rep": rep, "error": why}

    def _settle(self, future, pair: Pair) -> None:
        """Wait (at most ``SLACK_S``) for a stopped run's task to end, unless b itself is gone."""
        until = time.monotonic() + SLACK_S
        while not future.done() and pair.b not in self._lost(pair) and time.monotonic() < until:
            time.sleep(POLL_S)
        future.cancel()

    def _lost(self, pair: Pair) -> list:
        """The hosts of ``pair`` the scheduler no longer knows (asked at most every ``POLL_S``)."""
        with self._lock:
            if time.monotonic() - self._alive_at > POLL_S:
                self._alive = set(workers.workers_now(self.client))
                self._alive_at = time.monotonic()
            alive = self._alive
        return [w for w in (pair.a, pair.b) if w.address not in alive]

    def _let_go(self, token: str, pair: Pair) -> None:
        """Stop a run in flight: its stop event, then both hosts (those still there) let go."""
        try:
            workers.stop(self.client, token).set()
            left = [w.address for w in (pair.a, pair.b) if w not in self._lost(pair)]
            if left:
                self.client.run(workers.release_here, token, workers=left, wait=True)
        except Exception as err:           # noqa: BLE001 - said, and the guards still undo by themselves
            print(f"wirelab: could not release {pair.label} ({type(err).__name__}: {err}); its guards remove "
                  "their tc when its workers stop", file=sys.stderr)
