"""Sweeps across real machines: each run's server on host b's Dask worker, its client on a's.

    exp = Experiment("rates", rate=["1mbit", "5mbit", "10mbit"], hosts={"a": "pc07", "b": "pc08"},
                     cluster="tcp://10.0.0.1:8786")
    run(exp)             # the runner as ever: it hands each run to a pair of hosts through ``Cluster``

Design. A host is a Dask worker (``link.workers``); the cluster is any running scheduler
(``SSHCluster`` over a room's PCs, or ``dask scheduler`` and ``dask worker`` on each PC).
Decided once, before the runs (``hostpairs.find_pairs``): the workers of every pair, each
side's facts (meta.json's ``hosts``), each pair's round trip, whether it can be shaped. The
plan is the runner's (``plan.py``) with ``hostpairs.HostsLayer`` as its link layer (backend
``hosts``); engines do not change.

Each run is one Dask task on b's worker (``_run_on_b``): the runner's own ``run_one`` with
the plan bound to its pair, which opens a ``link.hosts.HostsLink`` (tc under a guard on each
interface; the clock's echo rounds before and after), runs the engine and sends back the rows,
the record, the capture's and the event stream's bytes (its events reach ``on_event`` when
it ends, not while it runs). Pairs run side by side (a thread each here, one run in
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
from pathlib import Path

from ..link import workers
from .calibration import needs_probe
from .events import EVENTS_SUFFIX, events_path
from .hostpairs import HostsLayer, Pair, find_pairs
from .status import LOST, failure

__all__ = ["Cluster", "SLACK_S"]

#: Seconds a run's task may take beyond its deadline: its link's guards and two clock batches.
SLACK_S = 60.0
POLL_S = 0.25


def _run_on_b(run_one, plan, setting, rep: int, seed: int, capture: bool, host_rtt_s) -> dict:
    """One run, on host b's worker: the runner's ``run_one``; its capture's and its event stream's
    bytes sent back with its rows."""
    # optional: distributed (the [cluster] extra)
    from distributed import secede
    secede()                  # it waits on host a: it must not hold one of this worker's threads
    with tempfile.TemporaryDirectory(prefix="wirelab-run-") as tmp:
        rows, raw = run_one(plan, setting, rep=rep, seed=seed, workdir=tmp, capture_dir=tmp if capture else None,
                            host_rtt_s=host_rtt_s)
        made = next(Path(tmp).glob("*.pcapng"), None)
        stream = next(Path(tmp).glob(f"*{EVENTS_SUFFIX}"), None)
        return {"rows": rows, "raw": raw, "capture": made.read_bytes() if made else None,
                "events": stream.read_bytes() if stream else None}


class Cluster:
    """The hosts of a sweep (see the module docstring). ``layer`` is its plan's link layer;
    ``runs(plan, batch, ...)`` yields ``(setting, rep, rows, raw)`` as each run ends."""

    def __init__(self, experiment, *, client=None):
        self.experiment = experiment
        self.client = client or workers.connect(experiment.cluster)
        self._alive_at, self._alive = 0.0, set()
        self._lock = threading.Lock()
        try:
            self.pairs = find_pairs(self.client, experiment)
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

    def _submit(self, worker, fn, *args):
        return self.client.submit(fn, *args, workers=[worker.address], allow_other_workers=False, pure=False)

    # -- the runs ---------------------------------------------------------------------------
    def runs(self, plan, batch, *, folder, run_one, new_row):
        """Run ``batch`` ((setting, rep) pairs) on the pairs side by side, each by the runner's own
        ``run_one`` on b's worker (a run that ends without it gets ``new_row``'s row); yield each
        run's ``(setting, rep, rows, raw)`` as it ends (captures written to ``folder/captures``)."""
        todo, ended, stop = deque(batch), queue.Queue(), threading.Event()
        flights: dict[str, Pair] = {}
        self._run_one, self._new_row = run_one, new_row
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
            print(f"wirelab: {len(todo)} run(s) not made: no pair of hosts is left to take them; start the missing "
                  "workers again and run the sweep again to make them", file=sys.stderr)

    def _drive(self, pair: Pair, plan, todo: deque, ended: queue.Queue, stop: threading.Event,
               flights: dict, folder) -> None:
        """One pair's loop: take the next run, hold both hosts, run it, hand the result on."""
        # optional: distributed (the [cluster] extra)
        from distributed import Semaphore
        holds = [Semaphore(max_leases=1, name=f"wirelab-host-{w.name}", scheduler_rpc=self.client.scheduler,
                           loop=self.client.loop)
                 for w in sorted((pair.a, pair.b), key=lambda w: w.name)]
        while not stop.is_set() and not self._lost(pair):
            try:
                setting, rep = todo.popleft()
            except IndexError:
                return
            held, item = [], None
            try:
                for hold in holds:
                    if not self._hold(hold, pair, stop):
                        break
                    held.append(hold)
                if len(held) < len(holds):
                    todo.appendleft((setting, rep))       # another pair (or a resume) makes it
                    return
                item = self._one(pair, plan, setting, rep, stop, flights, folder)
            except Exception as err:          # noqa: BLE001 - the scheduler gone, say: this pair stops
                todo.appendleft((setting, rep))
                print(f"wirelab: {pair.label} takes no more runs ({failure(err)})", file=sys.stderr)
                return
            finally:
                for hold in held:
                    try:
                        hold.release()
                    except Exception:         # noqa: BLE001 - its lease lapses on the scheduler by itself
                        pass
            if item is not None:
                ended.put(item)

    def _hold(self, hold, pair: Pair, stop) -> bool:
        """Take ``hold`` (a host's semaphore), waiting while another run has that host; False when
        the sweep stops or the pair loses a host first."""
        while not hold.acquire(timeout=POLL_S):
            if stop.is_set() or self._lost(pair):
                return False
        return True

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
        future = self._submit(pair.b, _run_on_b, self._run_one, bound, setting, rep, seed, self.experiment.capture,
                              host_rtt)
        try:
            while True:
                broke = None
                try:
                    got = future.result(timeout=POLL_S)
                    break
                except TimeoutError:
                    pass
                except Exception as err:      # noqa: BLE001 - the task itself broke: this run fails
                    broke = f"{type(err).__name__} on {pair.b.name}'s worker: {err}"
                lost, late = self._lost(pair), time.monotonic() > deadline
                if not (broke or lost or late or stop.is_set()):
                    continue
                self._let_go(token, pair)
                self._settle(future, pair)        # its hosts stay held until the task on b has let go too
                if stop.is_set() and not lost:
                    return None                   # interrupted: nothing recorded, resume makes it
                why = (f"{LOST}: {' and '.join(w.name for w in lost)} left the cluster during this run; run the "
                       "sweep again to make it") if lost else broke or \
                    f"{pair.b.name}'s worker sent nothing back within the run's deadline and {SLACK_S:g} s"
                return self._failed(bound, pair, setting, rep, seed, host_rtt, started, why)
        finally:
            flights.pop(token, None)
        rows, raw = got["rows"], got["raw"]
        if got.get("events") is not None:
            stream = events_path(folder, rows[0]["run_id"])
            stream.parent.mkdir(parents=True, exist_ok=True)
            stream.write_bytes(got["events"])
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
        row = self._new_row(plan, setting, rep=rep, seed=seed, host_rtt_s=host_rtt)
        row.update(status="failed", error=why, backend="hosts", link_host_a=pair.a.name, link_host_b=pair.b.name,
                   elapsed_s=time.monotonic() - started)
        return setting, rep, [row], {"run_id": row["run_id"], "setting": setting.columns(), "rep": rep, "error": why}

    def _settle(self, future, pair: Pair) -> None:
        """Wait (at most ``SLACK_S``) for a stopped run's task to end, unless b itself is gone."""
        until = time.monotonic() + SLACK_S
        while not future.done() and pair.b not in self._lost(pair) and time.monotonic() < until:
            try:
                future.result(timeout=POLL_S)
            except Exception:                 # noqa: BLE001 - ended (its result is not wanted) or not yet
                pass
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
            print(f"wirelab: could not release {pair.label} ({failure(err)}); its guards remove "
                  "their tc when its workers stop", file=sys.stderr)
